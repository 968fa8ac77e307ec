"""Lowering of the layers the engine assignment gives the NPU into ``NeurekaConv`` jobs
(``ops.py``): weights encoded offline (``weights.py``), the requantization's scale
and bias as one int32 per output channel with the rounding term folded into the bias (the engine
does not round) and the power of two scales and shift share divided out (``normquant_terms``);
the scales are stored as uint8 when they fit (the engine's 8-bit scale mode; its driver's tests
use unsigned 8-bit scales, the spec does not say: *unverified*), else int32; a GEMM's rows are
refactored into the plane that best fills the PE array. ``make_assign_engines(excluded)`` makes
the target's pass: it lowers every layer the assignment (``assign.decisions``) gives the NPU and
logs every decision with its reason (verbose mode); names in ``excluded`` (``--no-npu-for``)
stay on the cluster."""

from __future__ import annotations

from typing import Callable, Iterable

import numpy as np

from Deeploy.errors import DeeployError
from Deeploy.ir.dtypes import INT32, UINT8
from Deeploy.ir.graph import Graph, Node
from Deeploy.ops.fused import is_fused
from Deeploy.targets.siracusa_w_neureka.assign import (CONVS, NPU_OPS, decisions, normquant_terms, npu_mode,
                                                       refactor_plane)
from Deeploy.targets.siracusa_w_neureka.ops import MODE_NAMES
from Deeploy.targets.siracusa_w_neureka.weights import encode_weights

__all__ = ["lower_node", "make_assign_engines", "assign_engines"]


def _values(graph: Graph, name: str) -> np.ndarray:
    return np.asarray(graph.tensors[name].value, dtype=np.int64)


def _weights_oihw(node: Node, graph: Graph) -> tuple[np.ndarray, tuple[int, int], tuple[int, ...]]:
    """The weights as [Cout, Cin/group, kh, kw], the input plane and the padding."""
    requant = is_fused(node.op)
    p = node.params.base if requant else node.params
    w = _values(graph, node.inputs[1])
    if node.op in CONVS:
        return w.transpose(0, 3, 1, 2), p.in_hw, tuple(p.pads)       # channels-last [K, kh, kw, C/g]
    w = w.reshape(w.shape[-2:])                                        # [K, N] (or [N, K] transposed)
    return (w if p.trans_b else w.T)[:, :, None, None], refactor_plane(p.m), (0, 0, 0, 0)


def lower_node(node: Node, graph: Graph) -> Node:
    """The NeurekaConv job replacing ``node`` (accepted by ``npu_reason``); adds its constants to ``graph``."""
    mode = npu_mode(node)
    w, plane, pads = _weights_oihw(node, graph)
    enc = encode_weights(w, mode)
    cout = w.shape[0]
    cin = cout if mode == "3x3dw" else w.shape[1]
    attrs = {"mode": MODE_NAMES.index(mode), "cout": cout, "cin": cin, "plane": list(plane),
             "pads": list(pads), "weight_offset": enc.offset}
    inputs = [node.inputs[0], graph.add_constant(f"{node.name}.npu_weights", enc.data, UINT8)]
    if is_fused(node.op):
        mul, bias, shift = normquant_terms(node, graph, cout)
        attrs.update(normquant=1, shift=shift, out_signed=int(node.params.rq.lo < 0))
        scale_type = UINT8 if 0 <= mul.min() and mul.max() <= 255 else INT32     # 8-bit scales when they fit
        inputs += [graph.add_constant(f"{node.name}.npu_scale", np.ascontiguousarray(mul), scale_type),
                   graph.add_constant(f"{node.name}.npu_bias", np.ascontiguousarray(bias), INT32)]
    return Node(node.name, "NeurekaConv", inputs, list(node.outputs), attrs)


def make_assign_engines(excluded: Iterable[str] = ()) -> Callable:
    """The assignment pass: every layer the NPU takes becomes its ``NeurekaConv`` job
    (``lower_node``); nodes named in ``excluded`` stay on the cluster. Verbose mode logs each
    candidate's engine and reason."""
    excluded = frozenset(excluded)

    def assign_engines(graph: Graph, log: Callable[[str], None] | None = None) -> tuple[Graph, bool]:
        unknown = sorted(excluded - {n.name for n in graph.nodes})
        if unknown:
            candidates = [n.name for n, engine, _ in decisions(graph) if engine == "neureka"]
            error = DeeployError(f"--no-npu-for: no layer named {', '.join(repr(u) for u in unknown)}: name layers the "
                                 "NPU runs (-v lists them)")
            error.details = f"layers on the NPU: {', '.join(candidates) or 'none'}"
            raise error
        chosen = []
        for node, engine, why in decisions(graph, excluded):
            if log and node.op in NPU_OPS:
                log(f"engine {engine} for {node.op} '{node.name}': {why}")
            if engine == "neureka":
                chosen.append(node.name)
        if not chosen:
            return graph, False
        work = graph.copy()
        work.nodes = [lower_node(n, work) if n.name in chosen else n for n in work.nodes]
        return work, True

    return assign_engines


assign_engines = make_assign_engines()
