"""An NPU job op (``NpuSpec.op``: NeurekaConv, Ne16Conv), registered by its engine's package
(``register_job_op``) with the engine's weight decoder and limits.

Inputs: ``x`` channels-last activations (8-bit; uint8 only for an engine without signed inputs)
whose last axis is ``cin`` and whose other axes hold ``batch`` planes of ``plane = (h, w)`` pixels;
``w`` the encoded weight blob (the engine's layout, stored as ``W - weight_offset``); with
``normquant``, ``scale`` (uint8 or int32) and ``bias`` (int32), one per output channel.
Attributes: ``mode`` (0 3x3 dense, 1 3x3 depthwise, 2 1x1: both engines' mode bits), ``cout``,
``cin``, ``plane``, ``pads`` (top, left, bottom, right; at most ``max_pad``), ``pad_value`` (the
input value the padding stands for, 0..255: 128 for inputs shifted to uint8), ``weight_offset``,
``normquant`` (0: raw int32 accumulators), ``shift`` (0..max_shift), ``out_signed`` (1: int8
outputs; 0: uint8 with ReLU), ``wmem`` (1: the weights live in a weight memory, read through its
own port).
Semantics: 32-bit wrapping accumulators of ``x * (stored + weight_offset)``; with normquant
``y = sat8(relu?(sat_i32(wrap_i32(acc * scale) + bias)) >> shift)`` (no rounding: a rounding
term belongs in the bias). The output has ``x``'s leading axes with the convolved plane and
``cout`` channels: a 1x1 job without padding keeps ``x``'s shape but for the last axis.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from Deeploy.errors import OpError
from Deeploy.ir.dtypes import INT8, INT32, UINT8
from Deeploy.ops._attrs import attr_int, attr_ints
from Deeploy.ops._registry import Cost, OpDef, register
from Deeploy.ops.examples import I32, U8, Case, act, const, rand
from Deeploy.targets.npu.spec import MODES, NpuSpec

__all__ = ["NpuConvParams", "npu_job", "register_job_op"]


@dataclass(frozen=True)
class NpuConvParams:
    mode: str
    cout: int
    cin: int
    batch: int
    plane: tuple[int, int]
    out_plane: tuple[int, int]
    pads: tuple[int, int, int, int]
    weight_offset: int
    normquant: bool
    shift: int
    out_signed: bool
    in_shape: tuple[int, ...]
    wmem: bool = False
    scale8: bool = False       # the normquant scales are stored as uint8 (else int32)
    pad_value: int = 0         # what a padded input pixel reads

    @property
    def out_shape(self) -> tuple[int, ...]:
        if self.out_plane == self.plane:
            return self.in_shape[:-1] + (self.cout,)
        return (self.batch, *self.out_plane, self.cout)

    @property
    def taps(self) -> int:
        return 1 if self.mode == "1x1" else 9

    @property
    def padding_word(self) -> int:
        """The padding register (both engines, pulp-nnx): top [31:28], right [27:24], bottom [23:20],
        left [19:16], the padding value [7:0]."""
        top, left, bottom, right = self.pads
        return (top << 28) | (right << 24) | (bottom << 20) | (left << 16) | self.pad_value


def _parser(spec: NpuSpec):
    def parse(node, graph):
        mode = attr_int(node, "mode")
        if mode not in (0, 1, 2):
            raise OpError(node, f"mode {mode}: expected 0 (3x3), 1 (3x3 depthwise) or 2 (1x1)")
        name = MODES[mode]
        normquant = bool(attr_int(node, "normquant", 0))
        if len(node.inputs) != (4 if normquant else 2):
            raise OpError(node, f"expected {'x, w, scale, bias' if normquant else 'x, w'} as inputs")
        x = graph.tensors[node.inputs[0]]
        if x.dtype == INT8 and not spec.signed_input:
            raise OpError(node, f"int8 input: {spec.op} reads uint8 activations (add 128 first)")
        cout, cin = attr_int(node, "cout"), attr_int(node, "cin")
        h, w = attr_ints(node, "plane")
        pads = attr_ints(node, "pads", (0, 0, 0, 0))
        shift = attr_int(node, "shift", 0)
        pad_value = attr_int(node, "pad_value", 0)
        if not 0 <= pad_value <= (0 if spec.signed_input else 255):
            raise OpError(node, f"pad_value {pad_value}: {spec.op} pads with "
                                f"{'0 (it reads signed inputs)' if spec.signed_input else 'a uint8 value'}")
        if x.shape[-1] != cin or (x.size // (h * w * cin)) * h * w * cin != x.size:
            raise OpError(node, f"input of shape {list(x.shape)} is not planes of {h}x{w} pixels x {cin} channels")
        if name == "3x3dw" and cout != cin:
            raise OpError(node, "a depthwise job has as many output as input channels")
        if (max(pads) > spec.max_pad or min(pads) < 0 or (name == "1x1" and any(pads))
                or not 0 <= shift <= spec.max_shift):
            raise OpError(node, f"padding {list(pads)} or shift {shift} outside the NPU's range")
        scale8 = normquant and graph.tensors[node.inputs[2]].dtype == UINT8   # the 8-bit scale mode, else 32-bit
        k = 1 if name == "1x1" else 3
        out_plane = (h + pads[0] + pads[2] - k + 1, w + pads[1] + pads[3] - k + 1)
        return NpuConvParams(name, cout, cin, x.size // (h * w * cin), (h, w), out_plane, tuple(pads),
                             attr_int(node, "weight_offset", 0), normquant, shift,
                             bool(attr_int(node, "out_signed", 1)), tuple(x.shape), bool(attr_int(node, "wmem", 0)),
                             scale8, pad_value)
    return parse


def _infer(p: NpuConvParams, ins):
    dtype = (INT8 if p.out_signed else UINT8) if p.normquant else INT32
    return [(p.out_shape, dtype)]


def _wrap32(v: np.ndarray) -> np.ndarray:
    return ((v + 2**31) % 2**32) - 2**31


def npu_job(p: NpuConvParams, x: np.ndarray, weights: np.ndarray, scale=None, bias=None) -> np.ndarray:
    """The job's output from int64 ``x`` and decoded weights ``[cout, cin or 1, k, k]``."""
    k = 1 if p.mode == "1x1" else 3
    xs = x.reshape(p.batch, *p.plane, p.cin)
    xs = np.pad(xs, ((0, 0), (p.pads[0], p.pads[2]), (p.pads[1], p.pads[3]), (0, 0)), constant_values=p.pad_value)
    ho, wo = p.out_plane
    acc = np.zeros((p.batch, ho, wo, p.cout), dtype=np.int64)
    for dy in range(k):
        for dx in range(k):
            window = xs[:, dy:dy + ho, dx:dx + wo, :]
            if p.mode == "3x3dw":
                acc += window * weights[:, 0, dy, dx]
            else:
                acc += window @ weights[:, :, dy, dx].T
    acc = _wrap32(acc)
    if not p.normquant:
        return acc.reshape(p.out_shape)
    v = np.clip(_wrap32(acc * scale.reshape(-1)) + bias.reshape(-1), -2**31, 2**31 - 1)
    if not p.out_signed:
        v = np.maximum(v, 0)
    v = v >> p.shift
    v = np.clip(v, -128, 127) if p.out_signed else np.clip(v, 0, 255)
    return v.reshape(p.out_shape)


def _referencer(spec: NpuSpec):
    def reference(p: NpuConvParams, xs):
        weights = spec.decode(np.asarray(xs[1]).astype(np.uint8), p.mode, p.weight_offset, p.cout, p.cin)
        scale, bias = (xs[2], xs[3]) if p.normquant else (None, None)
        return [npu_job(p, np.asarray(xs[0], dtype=np.int64), weights, scale, bias)]
    return reference


def _cost(p: NpuConvParams, ins, outs):
    macs = int(np.prod(p.out_shape[:-1])) * p.cout * p.taps * (1 if p.mode == "3x3dw" else p.cin)
    return Cost(2 * macs, sum(t.nbytes for t in ins if t is not None) + outs[0].nbytes)


def _case_maker(spec: NpuSpec):
    lo = -128 if spec.signed_input else 0     # activations the engine reads

    def cases(rng):
        def case(label, mode, x, w, pads=(0, 0, 0, 0), rq=None, signed=True, scale_type=I32, pad_value=0):
            enc = spec.encode(w, mode)
            cout = w.shape[0]
            attrs = {"mode": MODES.index(mode), "cout": cout, "cin": x.shape[-1], "plane": list(x.shape[-3:-1]),
                     "pads": list(pads), "weight_offset": enc.offset}
            if pad_value:
                attrs["pad_value"] = pad_value
            operands = [act(x), const(enc.data, U8)]
            if rq is not None:
                scale, bias, shift = rq
                attrs.update(normquant=1, shift=shift, out_signed=int(signed))
                operands += [const(scale, scale_type), const(bias, I32)]
            return Case(label, tuple(operands), attrs)
        unsigned_only = [] if spec.signed_input else [      # int8 inputs shifted by 128: so is their padding
            case("3x3_pad_value_128", "3x3", rand(rng, [1, 4, 5, 20], 0, 255), rand(rng, [6, 20, 3, 3]), (1, 2, 2, 0),
                 rq=(rand(rng, [6], 1, 30), rand(rng, [6], -2**12, 2**12), 13), pad_value=128)]
        return [
            case("1x1_plain", "1x1", rand(rng, [1, 3, 4, 40], lo, lo + 255), rand(rng, [5, 40, 1, 1])),
            case("1x1_requant_unsigned", "1x1", rand(rng, [1, 6, 6, 8], 0, 255), rand(rng, [33, 8, 1, 1]),
                 rq=(rand(rng, [33], -50, 50), rand(rng, [33], -2**16, 2**16), 12), signed=False),
            case("3x3_pad2_requant", "3x3", rand(rng, [1, 5, 4, 30], lo, lo + 255), rand(rng, [4, 30, 3, 3]),
                 (2, 1, 0, 2), rq=(rand(rng, [4], 1, 30), rand(rng, [4], -2**12, 2**12), 14)),
            case("1x1_requant_scale8", "1x1", rand(rng, [1, 2, 7, 40], lo, lo + 255), rand(rng, [6, 40, 1, 1]),
                 rq=(rand(rng, [6], 0, 255), rand(rng, [6], -2**16, 2**16), 15), scale_type=U8),
            case("3x3dw_plain_batch2", "3x3dw", rand(rng, [2, 4, 5, 29], lo, lo + 255), rand(rng, [29, 1, 3, 3]),
                 (1, 1, 1, 1)),
        ] + unsigned_only
    return cases


def register_job_op(spec: NpuSpec) -> None:
    """Register ``spec.op``: the job op of the engine ``spec`` (its package calls this when imported)."""
    register(OpDef(spec.op, _parser(spec), _infer, _referencer(spec), _cost, tiling="npu", examples=_case_maker(spec),
                   value_attrs=frozenset({"shift", "weight_offset"})))
