"""Offline encoding of 8-bit weights into NE16's layout (``specs/gap9.md`` §3 "Weight layout",
[NX] pulp-nnx ``test/Ne16Weight.py``).

Layer-wise weight offset (CONF0 bit 15): the stored weights are ``u = W - min(W)`` (uint8), the
engine adds ``offset = min(W)`` back (as on Neureka). Per output channel, the input channels are
zero-padded (stored ``u = 0``) to groups of 16; per group, per bit plane (LSB first), per tap
(row-major over the window) one 16-bit mask over the group's 16 channels, 2 bytes little endian
(channel ``c`` of the group at bit ``c``): a blob of shape ``(Cout, ceil(Cin/16), 8, taps * 2)``.
Depthwise swaps output and input channels: one "output channel" over the C channels,
``(1, ceil(C/16), 8, 9 * 2)``. The spec gives this order; bits inside a mask follow the channel
order (its "16-bit mask over the 16 input channels"; *choice*: channel c at bit c).
"""

from __future__ import annotations

import numpy as np

from Deeploy.targets.gap9_w_ne16.params import NE16
from Deeploy.targets.npu.spec import EncodedWeights

__all__ = ["encode_weights", "decode_weights"]


def _as_oihw(w: np.ndarray, mode: str) -> np.ndarray:
    w = np.asarray(w, dtype=np.int64)
    if w.ndim == 2:
        w = w[:, :, None, None]
    taps = (1, 1) if mode == "1x1" else (3, 3)
    if mode not in ("1x1", "3x3", "3x3dw") or w.ndim != 4 or w.shape[2:] != taps or (
            mode == "3x3dw" and w.shape[1] != 1):
        raise ValueError(f"weights of shape {list(w.shape)} do not fit NE16 mode {mode}")
    if w.size == 0 or w.min() < -128 or w.max() > 127:
        raise ValueError("NE16 weights must be non-empty int8 values")
    return w


def encode_weights(w: np.ndarray, mode: str) -> EncodedWeights:
    """Encode int8 weights ``[Cout, Cin, kh, kw]`` (depthwise ``[C, 1, 3, 3]``; 1x1 also ``[Cout, Cin]``)."""
    w = _as_oihw(w, mode)
    offset = int(w.min())
    u = (w - offset).astype(np.uint8)
    if mode == "3x3dw":
        u = u.transpose(1, 0, 2, 3)                       # depthwise swaps cout/cin: [1, C, 3, 3]
    cout, cin = u.shape[:2]
    taps = u.shape[2] * u.shape[3]
    sub, bits = NE16.in_subtile, NE16.weight_bits
    groups = -(-cin // sub)
    padded = np.zeros((cout, groups * sub, taps), dtype=np.uint8)
    padded[:, :cin] = u.reshape(cout, cin, taps)
    g = padded.reshape(cout, groups, sub, taps)            # [K, group, c, t]
    planes = (g[..., None] >> np.arange(bits, dtype=np.uint8)) & 1   # [K, group, c, t, b]
    masks = planes.transpose(0, 1, 4, 3, 2)                # [K, group, b, t, c]
    data = np.packbits(masks, axis=-1, bitorder="little")  # [K, group, b, t, 2]
    return EncodedWeights(mode, data.reshape(cout, groups, bits, taps * 2), offset, w.shape[0],
                          w.shape[1] if mode != "3x3dw" else w.shape[0])


def decode_weights(data: np.ndarray, mode: str, offset: int, cout: int, cin: int) -> np.ndarray:
    """The weights ``encode_weights`` stored, as int64 ``[Cout, Cin, kh, kw]`` (depthwise ``[C, 1, 3, 3]``)."""
    taps = 1 if mode == "1x1" else 9
    bits = NE16.weight_bits
    data = np.asarray(data, dtype=np.uint8)
    data = data.reshape(data.shape[0], -1, bits, taps, 2)
    planes = np.unpackbits(data, axis=-1, bitorder="little").astype(np.int64)   # [K, group, b, t, 16]
    u = np.einsum("kgbtc,b->kgct", planes, 1 << np.arange(bits, dtype=np.int64))
    u = u.reshape(u.shape[0], -1, taps)                    # [K, channels, t]
    k = 1 if mode == "1x1" else 3
    if mode == "3x3dw":
        return (u[0, :cin] + offset).reshape(cin, 1, 3, 3)
    return (u[:, :cin] + offset).reshape(cout, cin, k, k)
