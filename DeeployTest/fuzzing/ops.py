"""One random node (or short chain) per supported integer op, added to a graph under construction.

Every maker takes the graph context, hypothesis' ``draw`` and a source tensor from the graph's
pool, and returns the new tensor (or None when the op does not apply to that tensor, e.g. a
convolution on a rank-2 tensor). Arithmetic takes 8-bit operands only and wide results are
requantised (calibrated RequantShift) back to 8 bits, so every accumulator provably fits int32
and every value stays exact in onnxruntime's float32; data movement also takes the wide tensors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from hypothesis import strategies as st

from Deeploy.ir.graph import fresh_name
from DeeployTest.generators.builder import Net, tensor_attr
from DeeployTest.generators.integer import igelu_attrs, isoftmax_attrs

__all__ = ["GraphContext", "MAKERS", "CUSTOM_OPS", "ZERO_SIZED_MAKERS", "COMPILER_SUFFIXES"]

# What a pass makes for a node or a tensor is named after it: nodes (the layout pass's transposes,
# the reduction split) and constants (the NPU lowering's, div folding's) for a node, tensors (the
# layout pass's, the reduction split's, the output and region-entry copies') for a tensor
FOR_NODE = ("_in_hwc", "_w_hwc", "_out_chw", "_transpose", "_part")
FOR_NODE_CONSTANTS = (".npu_weights", ".npu_scale", ".npu_bias", ".mul_folded")
FOR_TENSOR = ("_hwc", "_pre_transpose", "_part", "_out0", "_out1", "_entry")
COMPILER_SUFFIXES = FOR_NODE + FOR_NODE_CONSTANTS + FOR_TENSOR


@dataclass
class GraphContext:
    """One random graph being added to a shared ``Net``: its name prefix, its data generator and
    the tensors later nodes may consume. ``clash``: its nodes and tensors are often named after
    what the compiler makes for their neighbours (``name``)."""

    net: Net
    prefix: str
    rng: np.random.Generator
    pool: list[str] = field(default_factory=list)
    ops: list[str] = field(default_factory=list)      # ops added, for the example's description
    clash: bool = False
    names: list[str] = field(default_factory=list)    # names given in a clash graph
    nodes: list[str] = field(default_factory=list)    # its node names, in order

    def name(self, default: str, nodes: list[str] = (), tensors: list[str] = (), node: bool = False) -> str:
        """``default``, or in a ``clash`` graph a name not in the net, two times in three: half the
        time the stem of one of ``nodes`` (a node) or ``tensors`` (a tensor) that ends in a compiler
        suffix (what a pass makes for this node or tensor is then that name), else as likely: what a
        pass makes for one of ``nodes`` (a node, or for a tensor a constant), for one of ``tensors``
        (for a tensor), or ``default`` plus a suffix (a stem a later node or tensor may take)."""
        if not self.clash:
            return default
        own = FOR_NODE if node else FOR_TENSOR
        kinds = [[n + s for n in nodes for s in (FOR_NODE if node else FOR_NODE_CONSTANTS)],
                 [] if node else [t + s for t in tensors for s in FOR_TENSOR],
                 [n[:-len(s)] for n in (nodes if node else tensors) for s in own if n.endswith(s)],
                 [default + s for s in own]]
        if self.rng.integers(0, 3):
            stems, kinds = kinds[2], [k for k in kinds if k]
            pick = stems if stems and self.rng.integers(0, 2) else kinds[self.rng.integers(0, len(kinds))]
            default = str(self.rng.choice(pick))
        default = fresh_name(default, self.net._used | set(self.names))
        self.names.append(default)
        return default

    def node(self, op: str, inputs: list[str], attrs: dict | None = None, **kw) -> str:
        self.ops.append(op)
        if not self.clash:
            return self.net.node(op, inputs, attrs, name=f"{self.prefix}{op}", **kw)
        name = self.node_name(op)
        near = [name, *self.producers(inputs)]
        return self.net.node(op, inputs, attrs, name=name, outputs=[self.name(f"{name}_output_0", near, inputs)], **kw)

    def node_name(self, op: str) -> str:
        """A node's name; in a clash graph, maybe, after what a pass makes for an earlier node."""
        name = self.name(f"{self.prefix}{op}", self.nodes, node=True)
        self.nodes.append(name)
        return name

    def producers(self, tensors: list[str]) -> list[str]:
        made_by = {o: n.name for n in self.net.graph.nodes for o in n.outputs}
        return [made_by[t] for t in tensors if t in made_by]

    def const(self, value, what: str, dtype=np.float32) -> str:
        """A constant; in a clash graph named, maybe, after what a pass makes for a recent node."""
        return self.net.const(value, self.name(f"{self.prefix}{what}", self.nodes[-3:]), dtype=dtype)

    def i64(self, values, what: str) -> str:
        return self.const(np.asarray(values, dtype=np.int64), what, dtype=np.int64)

    def shape(self, x: str) -> tuple[int, ...]:
        return self.net.shape(x)

    def narrow(self, x: str) -> bool:
        return self.net.graph.tensors[x].dtype.bits <= 8

    def operand(self, x: str) -> bool:
        """8-bit, or a 16-bit graph input (samples within +-2000): accumulators stay exact in float32."""
        return self.narrow(x) or (self.net.graph.tensors[x].dtype.bits == 16 and x in self.net.inputs)

    def requant(self, draw, y: str) -> str:
        """A RequantShift calibrated on ``y``'s values, per tensor or per channel (axis 1)."""
        rank = len(self.shape(y))
        per_channel = rank >= 2 and draw(st.booleans())
        signed = draw(st.booleans())
        self.ops.append("RequantShift")
        if not self.net.values[y].size:   # nothing to calibrate on
            return self.net.rqs(y, 1, 0, 4, signed=signed, name=self.node_name("RequantShift"))
        return self.net.calib_rqs(y, signed=signed, axis=1 if per_channel else None, offset_rng=self.rng,
                                  name=self.node_name("RequantShift"))


Maker = Callable[[GraphContext, Callable, str], "str | None"]


def _weights(rng: np.random.Generator, shape) -> np.ndarray:
    return np.clip(np.round(rng.normal(0, 40, size=shape)), -127, 127).astype(np.int64)


# ---- arithmetic ----------------------------------------------------------------------------
def _partner(g: GraphContext, draw, x: str) -> str:
    """A second operand for x: x itself, another pool tensor that broadcasts with it, or a
    constant (scalar, last-axis vector, or per-channel)."""
    shape = g.shape(x)
    others = [t for t in g.pool if t != x and g.net.graph.tensors[t].dtype.bits <= 16
              and _broadcasts(g.shape(t), shape)]
    kind = draw(st.sampled_from(["self", "other", "scalar", "vector", "channel", "folded"] if others
                                else ["self", "scalar", "vector", "channel", "folded"]))
    if kind == "self":
        return x
    if kind == "folded":                     # a constant subgraph the compiler folds
        a = g.const(g.rng.integers(-10, 11, size=shape[-1:]), "folded_a")
        return g.node(draw(st.sampled_from(["Add", "Sub", "Mul"])), [a, g.const(int(g.rng.integers(-5, 6)), "folded_b")])
    if kind == "other":
        return draw(st.sampled_from(others))
    if kind == "scalar" or not shape:
        return g.const(int(g.rng.integers(-100, 101)), "scalar")
    if kind == "vector":
        return g.const(g.rng.integers(-100, 101, size=shape[-1:]), "vector")
    ch = (shape[1] if len(shape) >= 2 else shape[0],) + (1,) * (len(shape) - 2 if len(shape) >= 2 else 0)
    return g.const(g.rng.integers(-100, 101, size=ch), "channel")


def _broadcasts(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    try:
        return tuple(np.broadcast_shapes(a, b)) == tuple(b) or tuple(np.broadcast_shapes(a, b)) == tuple(a)
    except ValueError:
        return False


def binary(g: GraphContext, draw, x: str) -> str | None:
    if g.net.graph.tensors[x].dtype.bits > 16:
        return None
    op = draw(st.sampled_from(["Add", "Sub", "Mul"]))
    y = _partner(g, draw, x)
    ins = [y, x] if draw(st.booleans()) else [x, y]
    out = g.node(op, ins)
    return out if draw(st.integers(0, 4)) == 0 else g.requant(draw, out)


def clip(g: GraphContext, draw, x: str) -> str | None:
    t = g.net.graph.tensors[x].dtype
    if t.bits > 16:
        return None
    if draw(st.booleans()):
        return g.node("Relu", [x])
    lo = draw(st.integers(int(t.min), int(t.max)))
    hi = draw(st.integers(lo, int(t.max)))
    ins = [x, g.const(lo, "min")] + ([g.const(hi, "max")] if draw(st.booleans()) else [])
    return g.node("Clip", ins)


def conv(g: GraphContext, draw, x: str) -> str | None:
    shape = g.shape(x)
    if not g.operand(x) or len(shape) not in (3, 4):
        return None
    spatial = shape[2:]
    ch_in = shape[1]
    kernel = [draw(st.integers(1, min(3, s + 2))) for s in spatial]
    dilation = [draw(st.integers(1, 2)) for _ in spatial]
    pads_b = [draw(st.integers(0, 1)) for _ in spatial]
    pads_e = [draw(st.integers(0, 1)) for _ in spatial]
    for k, s, d, pb, pe in zip(kernel, spatial, dilation, pads_b, pads_e):
        if s + pb + pe < (k - 1) * d + 1:
            return None
    stride = [draw(st.integers(1, 2)) for _ in spatial]
    group = draw(st.sampled_from(sorted({1, ch_in} | {d for d in range(1, ch_in + 1) if ch_in % d == 0})))
    ch_out = group * draw(st.integers(1, max(1, 6 // group))) if group > 1 else draw(st.integers(1, 6))
    w = g.const(_weights(g.rng, (ch_out, ch_in // group, *kernel)), "weight")
    ins = [x, w] + ([g.const(g.rng.integers(-2000, 2001, size=ch_out), "bias")] if draw(st.booleans()) else [])
    attrs = {"kernel_shape": kernel, "strides": stride, "dilations": dilation, "pads": pads_b + pads_e,
             "group": group}
    return g.requant(draw, g.node("Conv", ins, attrs))


def gemm(g: GraphContext, draw, x: str) -> str | None:
    shape = g.shape(x)
    if not g.operand(x) or len(shape) != 2 or max(shape) > 32:
        return None
    trans_a, trans_b = draw(st.booleans()), draw(st.booleans())
    m, k = (shape[1], shape[0]) if trans_a else shape
    n = draw(st.integers(1, 9))
    b = g.const(_weights(g.rng, (n, k) if trans_b else (k, n)), "weight")
    ins = [x, b]
    if draw(st.booleans()):
        c_shape = draw(st.sampled_from([(n,), (1, n), (m, n), (m, 1), ()]))
        ins.append(g.const(g.rng.integers(-3000, 3001, size=c_shape), "bias"))
    attrs = {"transA": int(trans_a), "transB": int(trans_b), "alpha": float(draw(st.sampled_from([1, 1, 2, -1, 3]))),
             "beta": float(draw(st.sampled_from([1, 1, 0, -2, 4])))}
    return g.requant(draw, g.node("Gemm", ins, attrs))


def matmul(g: GraphContext, draw, x: str) -> str | None:
    shape = g.shape(x)
    if not g.operand(x) or len(shape) < 2 or shape[-1] > 32:
        return None
    k = shape[-1]
    others = [t for t in g.pool if g.operand(t) and len(g.shape(t)) >= 2 and g.shape(t)[-2] == k
              and _batch_ok(g.shape(t)[:-2], shape[:-2])]
    if others and draw(st.booleans()):
        b = draw(st.sampled_from(others))          # activation x activation (x itself when square)
    else:
        batch = draw(st.sampled_from([(), shape[:-2]])) if len(shape) > 2 else ()
        b = g.const(_weights(g.rng, (*batch, k, draw(st.integers(1, 9)))), "weight")
    return g.requant(draw, g.node("MatMul", [x, b]))


def _batch_ok(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """Batch dims MatMul takes: broadcastable, each operand either full or a single matrix."""
    try:
        size = int(np.prod(np.broadcast_shapes(a, b)))
    except ValueError:
        return False
    return all(int(np.prod(s)) in (1, size) for s in (a, b))


def reduce(g: GraphContext, draw, x: str) -> str | None:
    shape = g.shape(x)
    if not g.narrow(x) or not shape:
        return None
    axes = sorted(draw(st.sets(st.integers(0, len(shape) - 1), min_size=1, max_size=len(shape))))
    keep = draw(st.integers(0, 1))
    if draw(st.booleans()):
        out = g.node("ReduceSum", [x, g.i64(axes, "axes")], {"keepdims": keep})
        return g.requant(draw, out) if draw(st.booleans()) else out
    return g.node("ReduceMean", [x], {"axes": axes, "keepdims": keep})


# ---- data movement -------------------------------------------------------------------------
def transpose(g: GraphContext, draw, x: str) -> str | None:
    rank = len(g.shape(x))
    if rank < 2:
        return None
    return g.node("Transpose", [x], {"perm": list(draw(st.permutations(range(rank))))})


def view(g: GraphContext, draw, x: str) -> str | None:
    """A chain of 1-3 aliases: Reshape, Flatten, Squeeze, Unsqueeze, Identity."""
    y = x
    for _ in range(draw(st.integers(1, 3))):
        shape = g.shape(y)
        kind = draw(st.sampled_from(["Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"]))
        if kind == "Reshape" and shape and 0 not in shape:
            size = int(np.prod(shape))
            first = draw(st.sampled_from([d for d in range(1, size + 1) if size % d == 0] or [1]))
            target = draw(st.sampled_from([[first, -1], [-1], [1, first, size // max(first, 1)], [0, -1] if shape else [-1]]))
            y = g.node("Reshape", [y, g.i64(target, "shape")])
        elif kind == "Flatten" and shape:
            y = g.node("Flatten", [y], {"axis": draw(st.integers(-len(shape), len(shape)))})
        elif kind == "Squeeze" and 1 in shape:
            axes = [k for k, d in enumerate(shape) if d == 1]
            chosen = draw(st.sets(st.sampled_from(axes), min_size=1))
            y = g.node("Squeeze", [y, g.i64(sorted(chosen), "axes")])
        elif kind == "Unsqueeze" and len(shape) < 5:
            y = g.node("Unsqueeze", [y, g.i64([draw(st.integers(0, len(shape)))], "axes")])
        else:
            y = g.node("Identity", [y])
    return y


def slice_(g: GraphContext, draw, x: str) -> str | None:
    shape = g.shape(x)
    if not shape:
        return None
    axis = draw(st.integers(0, len(shape) - 1))
    d = shape[axis]
    step = draw(st.sampled_from([1, 1, 2, -1, -2]))
    start = draw(st.integers(0, d - 1))
    if step > 0:
        end = draw(st.integers(start + 1, d))
        end = end - d if end < d and draw(st.booleans()) else end     # negative index form
    else:
        end = draw(st.integers(-1, start - 1))
        end = -d - 1 if end == -1 else end                           # -d-1: through index 0
    start = start - d if draw(st.booleans()) else start
    axis = axis - len(shape) if draw(st.booleans()) else axis
    ins = [x] + [g.i64([v], what) for v, what in ((start, "starts"), (end, "ends"), (axis, "axes"), (step, "steps"))]
    return g.node("Slice", ins)


def gather(g: GraphContext, draw, x: str) -> str | None:
    shape = g.shape(x)
    if not shape:
        return None
    axis = draw(st.integers(0, len(shape) - 1))
    d = shape[axis]
    ishape = draw(st.sampled_from([(), (2,), (2, 2), (3,)]))
    idx = g.rng.integers(-d, d, size=ishape)
    return g.node("Gather", [x, g.i64(idx, "indices")], {"axis": axis})


def concat(g: GraphContext, draw, x: str) -> str | None:
    shape = g.shape(x)
    if not shape:
        return None
    axis = draw(st.integers(0, len(shape) - 1))
    same = [t for t in g.pool if len(g.shape(t)) == len(shape) and
            all(a == b for k, (a, b) in enumerate(zip(g.shape(t), shape)) if k != axis)]
    ins = [x] + [draw(st.sampled_from(same)) for _ in range(draw(st.integers(1, 2)))]
    return g.node("Concat", ins, {"axis": axis - len(shape) if draw(st.booleans()) else axis})


def pad(g: GraphContext, draw, x: str) -> str | None:
    shape = g.shape(x)
    if not shape:
        return None
    pads = [draw(st.integers(0, 2)) for _ in range(2 * len(shape))]
    t = g.net.graph.tensors[x].dtype
    value = draw(st.integers(int(max(t.min, -128)), int(min(t.max, 127))))
    return g.node("Pad", [x, g.i64(pads, "pads"), g.const(np.array(value), "value")], {"mode": "constant"})


def maxpool(g: GraphContext, draw, x: str) -> str | None:
    shape = g.shape(x)
    if len(shape) not in (3, 4):
        return None
    spatial = shape[2:]
    kernel = [draw(st.integers(1, min(3, s))) for s in spatial]
    pads = [draw(st.integers(0, k // 2)) for k in kernel] * 2
    stride = [draw(st.integers(1, 2)) for _ in spatial]
    attrs = {"kernel_shape": kernel, "strides": stride, "pads": pads, "ceil_mode": draw(st.integers(0, 1))}
    return g.node("MaxPool", [x], attrs)


# ---- integer custom ops (goldens from the references only) ---------------------------------
def custom(g: GraphContext, draw, x: str) -> str | None:
    shape = g.shape(x)
    if not g.narrow(x) or not shape or g.net.graph.tensors[x].dtype.bits != 8:
        return None
    op = draw(st.sampled_from(CUSTOM_OPS))
    last = shape[-1]
    if op == "iSoftmax":
        return g.node("iSoftmax", [x], isoftmax_attrs(draw(st.sampled_from([24, 63, 255]))))
    if op == "ITAMax":
        return g.node("ITAMax", [x], {"n_levels": 256})
    if op == "ITAPartialMax":
        return g.node("ITAPartialMax", [x], {"group_width": draw(st.sampled_from([2, 4, 8])), "n_levels": 256})
    if op == "iGELU":
        return g.requant(draw, g.node("iGELU", [x], igelu_attrs(draw(st.sampled_from([3, 4, 8])) / 128)))
    if op == "iHardswish":
        return g.requant(draw, g.node("iHardswish", [x], {"one_over_six": 21, "three": 48, "six": 96}))
    if op == "TrueIntegerDiv":
        return g.requant(draw, g.node("TrueIntegerDiv", [x], {"Delta": 4096, "eps": 1, "eta": 65536, "y": 4}))
    shift = 12
    weight = np.round(g.rng.uniform(0.5, 1.5, size=last) * 50 * (1 << shift)).astype(np.int64)
    if op == "iRMSNorm":
        return g.node("iRMSNorm", [x, g.const(weight, "weight")], {"D": 1 << shift, "n_levels": 256})
    bias = g.rng.integers(-2000, 2001, size=last)
    return g.node("iLayerNorm", [x, g.const(weight, "weight"), g.const(bias, "bias")],
                  {"D": tensor_attr(1 << shift), "n_levels": tensor_attr(256)})


CUSTOM_OPS = ["iSoftmax", "ITAMax", "ITAPartialMax", "iGELU", "iHardswish", "TrueIntegerDiv", "iRMSNorm",
              "iLayerNorm"]

MAKERS: dict[str, Maker] = {
    "binary": binary, "clip": clip, "conv": conv, "gemm": gemm, "matmul": matmul, "reduce": reduce,
    "transpose": transpose, "view": view, "slice": slice_, "gather": gather, "concat": concat, "pad": pad,
    "maxpool": maxpool,
}

# the makers that take tensors with a zero-sized dim
ZERO_SIZED_MAKERS = ("binary", "clip", "transpose", "concat", "pad", "view")
