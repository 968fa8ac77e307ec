"""The NPU jobs' oracles: specs/neureka.md and specs/gap9.md §3 restated with Python ints and
loops, the weights read back bit by bit from the layouts the specs describe (independent of the
encoders and of the ops' reference)."""

from __future__ import annotations

import numpy as np

MODES = ("3x3", "3x3dw", "1x1")


def row_bit(row, i: int) -> int:
    return (int(row[i // 8]) >> (i % 8)) & 1


def naive_npu_weights(blob: np.ndarray, mode: str, offset: int, cout: int, cin: int) -> np.ndarray:
    """The weights of an encoded blob: [Cout, Cin, kh, kw] (depthwise [C, 1, 3, 3])."""
    if mode == "1x1":
        w = np.zeros((cout, cin, 1, 1), np.int64)
        for k in range(cout):
            for c in range(cin):
                row = blob[k, c // 32]
                w[k, c, 0, 0] = sum(row_bit(row, b * 32 + c % 32) << b for b in range(8)) + offset
        return w
    w = np.zeros((cin, 1, 3, 3) if mode == "3x3dw" else (cout, cin, 3, 3), np.int64)
    for k in range(1 if mode == "3x3dw" else cout):
        for c in range(cin):
            rows = blob[k, c // 28]
            for t in range(9):
                value = sum(row_bit(rows[b], t * 28 + c % 28) << b for b in range(8)) + offset
                if mode == "3x3dw":
                    w[c, 0, t // 3, t % 3] = value
                else:
                    w[k, c, t // 3, t % 3] = value
    return w


def _wrap(v: int) -> int:
    return (v + 2**31) % 2**32 - 2**31


def naive_ne16_weights(blob: np.ndarray, mode: str, offset: int, cout: int, cin: int) -> np.ndarray:
    """NE16's blob read back: per output channel (depthwise: one, over the C channels) 16-channel
    groups x 8 bit planes x taps x a 16-bit little-endian mask (channel c of a group at bit c)."""
    taps = 1 if mode == "1x1" else 9
    flat, groups = np.asarray(blob).reshape(-1), -(-cin // 16)
    w = np.zeros((cin, 1, 3, 3) if mode == "3x3dw" else (cout, cin, *((1, 1) if mode == "1x1" else (3, 3))), np.int64)
    for k in range(1 if mode == "3x3dw" else cout):
        for c in range(cin):
            for t in range(taps):
                value = 0
                for b in range(8):
                    at = (k * groups + c // 16) * 8 * taps * 2 + (b * taps + t) * 2
                    value |= (((int(flat[at]) | int(flat[at + 1]) << 8) >> (c % 16)) & 1) << b
                if mode == "3x3dw":
                    w[c, 0, t // 3, t % 3] = value + offset
                else:
                    w[k, c, t // w.shape[3], t % w.shape[3]] = value + offset
    return w


def naive_neureka_conv(xs, attrs):
    mode = MODES[int(attrs["mode"])]
    cout, cin = int(attrs["cout"]), int(attrs["cin"])
    return _naive_job(xs, attrs, naive_npu_weights(np.asarray(xs[1]).reshape(cout if mode != "3x3dw" else 1, -1, *(
        (32,) if mode == "1x1" else (8, 32))), mode, int(attrs["weight_offset"]), cout, cin))


def naive_ne16_conv(xs, attrs):
    mode = MODES[int(attrs["mode"])]
    return _naive_job(xs, attrs, naive_ne16_weights(xs[1], mode, int(attrs["weight_offset"]), int(attrs["cout"]),
                                                    int(attrs["cin"])))


def _naive_job(xs, attrs, weights):
    """The job's output with the decoded ``weights``; padded pixels read ``pad_value``."""
    mode = MODES[int(attrs["mode"])]
    cout, cin = int(attrs["cout"]), int(attrs["cin"])
    h, w = (int(v) for v in attrs["plane"])
    pt, pl, pb, pr = (int(v) for v in attrs.get("pads", (0, 0, 0, 0)))
    pad_value = int(attrs.get("pad_value", 0))
    x = xs[0].reshape(-1, h, w, cin)
    k = 1 if mode == "1x1" else 3
    ho, wo = h + pt + pb - k + 1, w + pl + pr - k + 1
    y = np.zeros((x.shape[0], ho, wo, cout), np.int64)
    for n, i, j, o in np.ndindex(*y.shape):
        acc = 0
        for dy in range(k):
            for dx in range(k):
                yy, xx = i + dy - pt, j + dx - pl
                inside = 0 <= yy < h and 0 <= xx < w
                if mode == "3x3dw":
                    acc += (int(x[n, yy, xx, o]) if inside else pad_value) * int(weights[o, 0, dy, dx])
                else:
                    acc += sum((int(x[n, yy, xx, c]) if inside else pad_value) * int(weights[o, c, dy, dx])
                               for c in range(cin))
        acc = _wrap(acc)
        if int(attrs.get("normquant", 0)):
            scale, bias = xs[2].reshape(-1), xs[3].reshape(-1)
            v = min(max(_wrap(acc * int(scale[o])) + int(bias[o]), -2**31), 2**31 - 1)
            signed = int(attrs.get("out_signed", 1))
            v = (v if signed else max(v, 0)) >> int(attrs.get("shift", 0))
            acc = min(max(v, -128), 127) if signed else min(v, 255)
        y[n, i, j, o] = acc
    out_shape = xs[0].shape[:-1] + (cout,) if (ho, wo) == (h, w) else y.shape
    return y.reshape(out_shape)
