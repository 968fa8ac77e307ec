"""Engine assignment: which layers an NPU runs (its ``NpuSpec``; ``specs/neureka.md`` "What it
computes", ``specs/gap9.md`` §3).

``npu_reason(node, graph, spec)`` gives None when the NPU can run the node bit-exactly, else why
not; ``npu_mode`` gives the NPU mode of an accepted node. Rules:
- Conv / RequantizedConv: channels-last, 2-D, 1x1 dense, 3x3 dense or 3x3 depthwise, stride 1,
  no dilation, padding at most ``spec.max_pad`` per side, 8-bit activations, int8 constant weights;
- Gemm / MatMul (plain or requantized) with a constant, unbatched, untransposed-or-transposed
  weight matrix: a 1x1 convolution over an ``h x w`` plane (``refactor_plane``);
- plain layers produce raw int32 accumulators and must not carry a bias (the engine adds a bias
  only in normquant) and their sums must fit int32 (the accumulators wrap);
- requantized layers: one shift 0..31, scale and bias per tensor or per output channel, int8
  or (ReLU) uint8 outputs, and ``acc * scale + bias + rounding`` provably within int32 once the
  power of two the scales share with ``2**shift`` is divided out (the engine wraps the product
  and does not round: the rounding term goes into the bias; ``normquant_terms``);
- an engine that reads only unsigned activations (``spec.signed_input`` false) takes int8 inputs
  as ``x + 128`` (uint8): requantized layers only, the bias less ``128 * sum(w) * scale``
  (``input_offset``), the bound taken over the shifted inputs.
``decisions`` gives every node's engine and reason (with ``spec.cluster_tiles``: the NPU only where
it pays off, ``npu_cycles`` against ``cluster_cycles``, each with the cost of starting its work: a
job's programming on core 0, a kernel's fork and join); the pass that applies them is
``lower.make_assign_engines``.
"""

from __future__ import annotations

import numpy as np

from Deeploy.ir.dtypes import INT8, INT32, UINT8
from Deeploy.ir.graph import Graph, Node
from Deeploy.ops import Trait, op_named
from Deeploy.ops.bounds import conv_sum_bound, gemm_sum_bound
from Deeploy.ops.fused import is_fused
from Deeploy.targets.npu.spec import NpuSpec

__all__ = ["npu_reason", "npu_mode", "refactor_plane", "decisions", "weights_oihw", "input_offset",
           "npu_cycles", "cluster_cycles", "NPU_OPS", "normquant_terms"]

CONVS = ("Conv", "RequantizedConv")
GEMMS = ("Gemm", "MatMul", "RequantizedGemm", "RequantizedMatMul")
NPU_OPS = CONVS + GEMMS
INT32_MAX = 2**31 - 1
UNSIGNED_SHIFT = 128         # int8 -> uint8 for an engine that reads unsigned activations only


def refactor_plane(m: int, array: int) -> tuple[int, int]:
    """``(h, w)`` with ``h * w == m`` using the fewest ``array x array`` spatial subtiles (ties:
    the squarest plane), so that the rows of a GEMM fill the NPU's PE array."""
    best = None
    for h in range(1, m + 1):
        if m % h:
            continue
        w = m // h
        key = (-(-h // array) * -(-w // array), abs(h - w))
        if best is None or key < best[0]:
            best = (key, (h, w))
    return best[1]


def npu_mode(node: Node) -> str:
    """"1x1", "3x3" or "3x3dw" for a node ``npu_reason`` accepted (a GEMM is a 1x1 conv)."""
    if node.op in GEMMS:
        return "1x1"
    p = node.params.base if is_fused(node.op) else node.params
    if p.kernel == (1, 1):
        return "1x1"
    return "3x3dw" if p.depthwise else "3x3"


def _is_const(graph: Graph, name: str) -> bool:
    return bool(name) and graph.tensors[name].is_constant


def _values(graph: Graph, name: str) -> np.ndarray:
    return np.asarray(graph.tensors[name].value, dtype=np.int64)


def weights_oihw(node: Node, graph: Graph, array: int) -> tuple[np.ndarray, tuple[int, int], tuple[int, ...]]:
    """The weights as [Cout, Cin/group, kh, kw], the input plane (a GEMM's rows refactored for an
    ``array x array`` subtile) and the padding."""
    requant = is_fused(node.op)
    p = node.params.base if requant else node.params
    w = _values(graph, node.inputs[1])
    if node.op in CONVS:
        return w.transpose(0, 3, 1, 2), p.in_hw, tuple(p.pads)       # channels-last [K, kh, kw, C/g]
    w = w.reshape(w.shape[-2:])                                        # [K, N] (or [N, K] transposed)
    return (w if p.trans_b else w.T)[:, :, None, None], refactor_plane(p.m, array), (0, 0, 0, 0)


def input_offset(node: Node, graph: Graph, spec: NpuSpec) -> int:
    """What the job's inputs carry more than the layer's: 128 when int8 activations reach an
    engine that reads uint8 only, else 0."""
    signed = graph.tensors[node.inputs[0]].dtype == INT8
    return UNSIGNED_SHIFT if signed and not spec.signed_input else 0


def shift_source(graph: Graph, x: str, readers: list[str]) -> tuple[Node, list[Node]] | None:
    """(requantisation, the ops between it and ``x``) when the int8 -> uint8 shift of ``x``, read by
    exactly ``readers``, can be folded into the RequantShift, fused requantisation or iRMSNorm to
    levels -128..127 producing it, directly or through ops that only move its values
    (``Trait.QUANT_TRANSPARENT``, constant other inputs), each value read by the next node only;
    else None."""
    users = graph.consumers()
    chain, t = [], x
    while True:
        p = graph.producer(t)
        if (p is None or p.params is None or t in graph.outputs or t in graph.state.values()
                or [n.name for n in users.get(t, [])] != readers):
            return None
        if p.op in ("RequantShift", "iRMSNorm") or is_fused(p.op):
            params = p.params.rq if is_fused(p.op) else p.params
            return (p, chain) if (params.lo, params.hi) == (-UNSIGNED_SHIFT, UNSIGNED_SHIFT - 1) else None
        if not op_named(p.op).has(Trait.QUANT_TRANSPARENT) or any(i and not graph.is_constant(i) for i in p.inputs[1:]):
            return None
        chain.append(p)
        t, readers = p.inputs[0], [p.name]


def _shift_folds(node: Node, graph: Graph, spec: NpuSpec) -> bool:
    """Whether lowering will fold the shift of ``node``'s input into its producer: every reader of
    the input can run on the NPU (they share one shift) and ``shift_source`` accepts it."""
    x = node.inputs[0]
    readers = graph.consumers().get(x, [])
    return (all(npu_reason(r, graph, spec) is None for r in readers)
            and shift_source(graph, x, [r.name for r in readers]) is not None)


def _own_bias(node: Node, graph: Graph, cout: int) -> np.ndarray:
    """The layer's own bias (conv bias or GEMM C) per output channel, 0 without one."""
    slots = 5 if is_fused(node.op) else 3
    if len(node.inputs) < slots or not node.inputs[2]:
        return np.zeros(cout, np.int64)
    return np.broadcast_to(_values(graph, node.inputs[2]).reshape(-1), (cout,))


def normquant_terms(node: Node, graph: Graph, cout: int, offset: int = 0) -> tuple[np.ndarray, np.ndarray, int]:
    """The NPU's normquant scale and bias per output channel and its shift for a requantized
    node with constant scale and bias: the bias carries the layer's own bias times the scale,
    the requantization's offset and the rounding term (the engine does not round), and, for
    inputs shifted by ``offset``, ``-offset * sum(w) * scale`` (``input_offset``); the power of
    two the scales and ``2**shift`` share is divided out (``floor((acc*m + b) / 2**s) ==
    floor((acc*(m/2**k) + floor(b/2**k)) / 2**(s-k))``, exactly), so the engine's products stay
    small."""
    rq = node.params.rq
    mul = np.broadcast_to(_values(graph, node.inputs[-2]).reshape(-1), (cout,)).copy()
    add = np.broadcast_to(_values(graph, node.inputs[-1]).reshape(-1), (cout,))
    rounding = (1 << (rq.shift - 1)) if rq.shift > 0 else 0
    bias = _own_bias(node, graph, cout) * mul + add + rounding
    if offset:
        w = weights_oihw(node, graph, 1)[0]
        bias = bias - offset * w.reshape(w.shape[0], -1).sum(axis=1) * mul
    k = rq.shift
    for m in np.abs(mul[mul != 0]).tolist():
        k = min(k, (m & -m).bit_length() - 1)
    return mul >> k, bias >> k, rq.shift - k


def _requant_reason(node: Node, graph: Graph, channels: int, acc_bound: int, spec: NpuSpec) -> str | None:
    rq = node.params.rq
    if not 0 <= rq.shift <= spec.max_shift:
        return f"requant shift {rq.shift} outside the NPU's 0..{spec.max_shift}"
    if (rq.lo, rq.hi) not in ((-128, 127), (0, 255)):
        return f"requant output range [{rq.lo}, {rq.hi}] is neither int8 nor uint8 (ReLU)"
    if rq.channels not in (1, channels) or rq.inner != 1:
        return "requant scale/bias are neither per tensor nor per output channel"
    mul, add = node.inputs[-2], node.inputs[-1]
    if not (_is_const(graph, mul) and _is_const(graph, add)):
        return "requant scale/bias are not constants"
    offset = input_offset(node, graph, spec)
    if offset:   # the bound over the shifted (uint8) inputs, from the weights themselves
        w = weights_oihw(node, graph, 1)[0]
        acc_bound = 255 * int(np.abs(w).reshape(w.shape[0], -1).sum(axis=1).max())
    scale, bias, _ = normquant_terms(node, graph, channels, offset)
    if np.abs(scale).max() > INT32_MAX or np.abs(bias).max() > INT32_MAX:
        return "requant scale or bias (with its rounding term) beyond int32"
    bound = acc_bound * int(np.abs(scale).max()) + int(np.abs(bias).max())
    if bound > INT32_MAX:
        return f"requant sum up to {bound} may exceed int32 (the NPU wraps it)"
    return None


def _plain_reason(node: Node, graph: Graph, has_bias: bool, acc_bound: int, spec: NpuSpec) -> str | None:
    if input_offset(node, graph, spec):
        return "int8 activations without requantization (the NPU reads uint8 and corrects the shift in its bias)"
    if has_bias:
        return "a bias without requantization (the NPU adds a bias only in normquant)"
    if graph.tensors[node.outputs[0]].dtype != INT32 or acc_bound > INT32_MAX:
        return "accumulators may exceed int32 (the NPU's wrap at 32 bits)"
    return None


def _conv_reason(node: Node, graph: Graph, spec: NpuSpec) -> str | None:
    requant = is_fused(node.op)
    p = node.params.base if requant else node.params
    if not p.channels_last or p.dims != 2:
        return "not a channels-last 2-D convolution"
    if p.kernel not in ((1, 1), (3, 3)):
        return f"kernel {p.kernel[0]}x{p.kernel[1]} (the NPU has 1x1 and 3x3 filters)"
    if p.group != 1 and not (p.depthwise and p.kernel == (3, 3)):
        return f"group {p.group} (only dense convolutions and 3x3 depthwise)"
    if p.stride != (1, 1):
        return f"stride {p.stride[0]}x{p.stride[1]} (the driver supports stride 1)"
    if p.dilation != (1, 1):
        return "dilation (the NPU has none)"
    if max(p.pads) > spec.max_pad:
        return f"padding {max(p.pads)} beyond the NPU's {spec.max_pad} per side"
    if not _is_const(graph, node.inputs[1]) or graph.tensors[node.inputs[1]].dtype != INT8:
        return "weights are not int8 constants"
    bias = len(node.inputs) > (4 if requant else 2) and bool(node.inputs[2])
    bound = conv_sum_bound(node, graph)
    return (_requant_reason(node, graph, p.ch_out, bound, spec) if requant
            else _plain_reason(node, graph, bias, bound, spec))


def _gemm_reason(node: Node, graph: Graph, spec: NpuSpec) -> str | None:
    requant = is_fused(node.op)
    p = node.params.base if requant else node.params
    w = node.inputs[1]
    if not _is_const(graph, w) or graph.tensors[w].dtype != INT8:
        return "the weight matrix is not an int8 constant (activation x activation stays on the cluster)"
    if p.b_batched:
        return "a batched weight matrix"
    if p.trans_a:
        return "transposed activations"
    if p.alpha != 1:
        return f"alpha {p.alpha}"
    has_c = len(node.inputs) > (4 if requant else 2) and bool(node.inputs[2])
    if has_c and (p.beta != 1 or p.c_rows > 1 or not _is_const(graph, node.inputs[2])):
        return "a bias that is not one constant value per output column"
    bound = gemm_sum_bound(node, graph)
    return (_requant_reason(node, graph, p.n, bound, spec) if requant
            else _plain_reason(node, graph, has_c, bound, spec))


def npu_reason(node: Node, graph: Graph, spec: NpuSpec) -> str | None:
    """None when the NPU ``spec`` can run ``node`` bit-exactly, else the reason it stays on the cluster."""
    if node.op not in NPU_OPS:
        return f"{node.op} is not a convolution or GEMM"
    x = graph.tensors[node.inputs[0]]
    if x.dtype not in (INT8, UINT8):
        return f"{x.dtype} activations (the NPU reads 8-bit inputs)"
    return _conv_reason(node, graph, spec) if node.op in CONVS else _gemm_reason(node, graph, spec)


def npu_cycles(node: Node, graph: Graph, spec: NpuSpec) -> int:
    """Modelled cycles of an accepted node on the NPU: its jobs (one per plane), each with the
    core's cost of running it (``spec.job_setup_cycles``), and, for an input shifted to uint8 (not
    folded into its producer), that RequantShift at the cluster's ops per cycle (4 ops per element,
    its cost)."""
    requant = is_fused(node.op)
    p = node.params.base if requant else node.params
    mode = npu_mode(node)
    x = graph.tensors[node.inputs[0]]
    if node.op in CONVS:
        k = 1 if mode == "1x1" else 3
        (h, w), (top, left, bottom, right) = p.in_hw, p.pads
        plane, cin, cout = (h + top + bottom - k + 1, w + left + right - k + 1), p.ch_in, p.ch_out
        batch = x.size // (h * w * cin)
    else:
        plane, cin, cout = refactor_plane(p.m, spec.array), p.k, p.n
        batch = x.size // (p.m * p.k)
    cycles = batch * (spec.job_cycles(mode, *plane, cout, cin, 1 if requant else 4) + spec.job_setup_cycles)
    if input_offset(node, graph, spec) and not _shift_folds(node, graph, spec):
        cycles += -(-4 * x.size // int(spec.cluster_tiles.ops_per_cycle))
    return cycles


def cluster_cycles(node: Node, graph: Graph, tiles) -> int:
    """The tiler's price of ``node`` as one tile on the cluster (its kernel's cycle model, else ops
    per cycle) with the call's fork and join on the cores."""
    from Deeploy.tiling.costs import compute_cycles
    from Deeploy.tiling.families import layer_spec
    from Deeploy.tiling.network import with_kernel_cycles
    spec = with_kernel_cycles(layer_spec(node, graph), node, graph, tiles)
    return compute_cycles(spec, {d.name: d.size for d in spec.dims}, tiles) + tiles.fork_cycles + tiles.barrier_cycles


def decisions(graph: Graph, spec: NpuSpec, excluded: frozenset[str] = frozenset()) -> list[tuple[Node, str, str]]:
    """(node, engine name, reason) for every node of ``graph``."""
    out = []
    for node in graph.nodes:
        if node.name in excluded:
            out.append((node, "cluster", "kept on the cluster by --no-npu-for"))
            continue
        reason = npu_reason(node, graph, spec)
        if reason is not None:
            out.append((node, "cluster", reason))
        elif spec.cluster_tiles is None:
            out.append((node, spec.engine, f"NPU {npu_mode(node)} mode"))
        else:
            npu, cluster = npu_cycles(node, graph, spec), cluster_cycles(node, graph, spec.cluster_tiles)
            versus = f"{npu} modelled cycles on the NPU, {cluster} on the cluster"
            out.append((node, spec.engine, f"NPU {npu_mode(node)} mode: {versus}") if npu < cluster
                       else (node, "cluster", f"the NPU does not pay off: {versus}"))
    return out

