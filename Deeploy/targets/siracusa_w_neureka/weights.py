"""Offline encoding of 8-bit weights into Neureka's layout (``specs/neureka.md`` "Offline weight
layout" and "weight offset").

Layer-wise weight offset: the stored weights are ``u = W - min(W)`` (uint8), the engine adds
``offset = min(W)`` back. Input channels are padded with zeros (stored ``u = 0``) to the channel
subtile (32 in 1x1, 28 in 3x3 modes) and each ``u`` is split into its 8 bit planes. Rows are
32 bytes, bits packed little endian (bit ``i`` of a row is bit ``i % 8`` of byte ``i // 8``):
- 1x1 ``(Cout, ceil(Cin/32), 32 B)``: a row holds plane ``b`` of input channel ``c`` at bit
  ``b * 32 + c`` (8 planes x 32 channels);
- 3x3 dense ``(Cout, ceil(Cin/28), 8, 32 B)``: row ``b`` holds plane ``b``, tap ``t`` (row-major
  over the 3x3 window) of channel ``c`` at bit ``t * 28 + c`` (252 bits, 4 zero bits);
- 3x3 depthwise ``(1, ceil(C/28), 8, 32 B)``: as 3x3 dense with one filter over the C channels.
The order of planes, taps and channels inside a row follows the driver's weight encoder
(pulp-nnx ``test/NeurekaWeight.py``: planes, then spatial, then channels fastest) as the spec
summarises it; the spec gives the row shapes, not this bit order (*unverified*).
"""

from __future__ import annotations

import numpy as np

from Deeploy.targets.npu.spec import EncodedWeights
from Deeploy.targets.siracusa_w_neureka.params import NEUREKA

__all__ = ["EncodedWeights", "encode_weights", "decode_weights", "MODES"]

MODES = ("1x1", "3x3", "3x3dw")


def _bits_to_rows(bits: np.ndarray) -> np.ndarray:
    """[..., 256] bits -> [..., 32] bytes, little endian."""
    return np.packbits(bits.astype(np.uint8), axis=-1, bitorder="little")


def encode_weights(w: np.ndarray, mode: str) -> EncodedWeights:
    """Encode int8 weights ``w`` given as ``[Cout, Cin, kh, kw]`` (depthwise: ``[C, 1, 3, 3]``;
    1x1 may also be ``[Cout, Cin]``) for ``mode`` ("1x1", "3x3", "3x3dw")."""
    if mode not in MODES:
        raise ValueError(f"unknown NPU mode '{mode}' (one of {', '.join(MODES)})")
    w = np.asarray(w, dtype=np.int64)
    if w.ndim == 2:
        w = w[:, :, None, None]
    taps = (1, 1) if mode == "1x1" else (3, 3)
    if w.ndim != 4 or w.shape[2:] != taps or (mode == "3x3dw" and w.shape[1] != 1):
        raise ValueError(f"weights of shape {list(w.shape)} do not fit NPU mode {mode}")
    if w.size == 0 or w.min() < -128 or w.max() > 127:
        raise ValueError("NPU weights must be non-empty int8 values")
    offset = int(w.min())
    u = (w - offset).astype(np.uint8)                     # 0..255
    planes = NEUREKA.weight_bits
    row_bits = NEUREKA.row_bytes * 8
    if mode == "3x3dw":
        u = u[:, 0].reshape(1, w.shape[0], 9)             # one filter over C channels: [1, C, taps]
    else:
        u = u.reshape(w.shape[0], w.shape[1], -1)         # [Cout, Cin, taps]
    cout, cin, ntaps = u.shape
    sub = NEUREKA.in_subtile(mode)
    majors = -(-cin // sub)
    padded = np.zeros((cout, majors * sub, ntaps), dtype=np.uint8)
    padded[:, :cin] = u
    blocks = padded.reshape(cout, majors, sub, ntaps)     # [Cout, Ki, c, t]
    bits = (blocks[..., None] >> np.arange(planes, dtype=np.uint8)) & 1   # [Cout, Ki, c, t, b]
    if mode == "1x1":
        rows = bits[:, :, :, 0, :].transpose(0, 1, 3, 2).reshape(cout, majors, planes * sub)  # b, c
        data = _bits_to_rows(_pad_bits(rows, row_bits))
    else:
        rows = bits.transpose(0, 1, 4, 3, 2).reshape(cout, majors, planes, ntaps * sub)      # b; t, c
        data = _bits_to_rows(_pad_bits(rows, row_bits))
    return EncodedWeights(mode, data, offset, w.shape[0], w.shape[1] if mode != "3x3dw" else w.shape[0])


def _pad_bits(rows: np.ndarray, row_bits: int) -> np.ndarray:
    pad = row_bits - rows.shape[-1]
    return np.concatenate([rows, np.zeros(rows.shape[:-1] + (pad,), dtype=rows.dtype)], axis=-1) if pad else rows


def decode_weights(data: np.ndarray, mode: str, offset: int, cout: int, cin: int) -> np.ndarray:
    """The weights ``encode_weights`` stored, as int64 ``[Cout, Cin, kh, kw]`` (depthwise ``[C, 1, 3, 3]``)."""
    planes, row_bits = NEUREKA.weight_bits, NEUREKA.row_bytes * 8
    sub = NEUREKA.in_subtile(mode)
    bits = np.unpackbits(np.asarray(data, dtype=np.uint8), axis=-1, bitorder="little").astype(np.int64)
    weights = 1 << np.arange(planes, dtype=np.int64)
    if mode == "1x1":
        b = bits.reshape(cout, -1, row_bits)[..., :planes * sub].reshape(cout, -1, planes, sub)
        u = np.einsum("kmbc,b->kmc", b, weights).reshape(cout, -1)[:, :cin]
        return (u + offset)[:, :, None, None]
    b = bits.reshape(-1, bits.shape[1], planes, row_bits)[..., :9 * sub].reshape(-1, bits.shape[1], planes, 9, sub)
    u = np.einsum("kmbtc,b->kmct", b, weights).reshape(b.shape[0], -1, 9)   # [K, channels, taps]
    if mode == "3x3dw":
        return (u[0, :cin] + offset).reshape(cin, 1, 3, 3)
    return (u[:, :cin] + offset).reshape(cout, cin, 3, 3)
