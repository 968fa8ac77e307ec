"""Lowering of the layers the engine assignment gives an NPU into its job op (``job.py``): weights
encoded offline by the engine's encoder, the requantization's scale and bias as one int32 per
output channel with the rounding term folded into the bias (the engine does not round) and the
power of two scales and shift share divided out (``assign.normquant_terms``); the scales are
stored as uint8 when they fit (the engine's 8-bit scale mode; the drivers' tests use unsigned
8-bit scales, the specs do not say: *unverified*), else int32; a GEMM's rows are refactored into
the plane that best fills the engine's subtile. An engine that reads only uint8 activations gets
an int8 input through a RequantShift adding 128 (on the cluster, bit-exact: ``x + 128`` is in
0..255), its bias corrected (``assign.input_offset``) and its padding value 128 (the int8 zero); the
shift is folded into the requantisation or iRMSNorm producing the input, directly or through ops
that only move values, when nothing else reads them (``_fold_shift``). ``make_assign_engines(spec, excluded)``
makes the target's pass: it lowers every layer the assignment (``assign.decisions``) gives the
NPU and logs every decision with its reason (verbose mode); names in ``excluded``
(``--no-npu-for``) stay on the cluster."""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Iterable

import numpy as np

from Deeploy.errors import DeeployError
from Deeploy.ir.dtypes import INT32, UINT8
from Deeploy.ir.graph import Graph, Node
from Deeploy.ops.fused import is_fused
from Deeploy.targets.npu.assign import (NPU_OPS, decisions, input_offset, normquant_terms, npu_mode, shift_source,
                                        weights_oihw)
from Deeploy.targets.npu.overlap import reordered
from Deeploy.targets.npu.spec import MODES, NpuSpec

__all__ = ["lower_node", "make_assign_engines"]


def _unsigned_input(node: Node, graph: Graph, offset: int, shifted: dict[str, str]) -> tuple[str, list[Node]]:
    """The job's input: ``node``'s, or (``offset``) a RequantShift node adding it, as uint8; one
    such node per tensor (``shifted``: tensor -> its uint8 copy, shared by the jobs reading it)."""
    x = node.inputs[0]
    if not offset:
        return x, []
    if x in shifted:
        return shifted[x], []
    y = shifted[x] = graph.add_tensor(f"{node.name}.npu_input", graph.tensors[x].shape, UINT8)
    shift = Node(graph.fresh(f"{node.name}.npu_unsigned"), "RequantShift",
                 [x, graph.add_constant(f"{node.name}.npu_one", np.array(1)),
                  graph.add_constant(f"{node.name}.npu_offset", np.array(offset))],
                 [y], {"div": 1, "n_levels": 256, "signed": 0})
    return y, [shift]


def _offset_output(p: Node, graph: Graph, offset: int) -> Node:
    """The requantisation ``p`` (RequantShift, a fused one or iRMSNorm) to signed levels
    -offset..offset-1 (``shift_source`` checked them) writing its values plus ``offset`` as
    unsigned levels (clip(v, -o, o - 1) + o = clip(v + o, 0, 2o - 1)): a RequantShift adds
    offset << shift to its offset input, iRMSNorm to its output offset."""
    params = p.params.rq if is_fused(p.op) else p.params
    if p.op == "iRMSNorm":
        return replace(p, attrs={**p.attrs, "signed": 0, "offset": params.offset + offset}, params=None)
    add = np.asarray(graph.tensors[p.inputs[-1]].value, np.int64) + (offset << params.shift)
    return replace(p, inputs=[*p.inputs[:-1], graph.add_constant(f"{p.name}.npu_add", add)],
                   attrs={**p.attrs, "signed": 0}, params=None)


def _fold_shift(graph: Graph, x: str, y: str) -> None:
    """Folds the shift writing ``y`` (``x`` plus an offset, unsigned) into the requantisation that
    produces ``x`` (``_offset_output``), directly or through ops that only move its values
    (``Trait.QUANT_TRANSPARENT``: the shift commutes with them), each value read by the next node
    only: the requantisation writes uint8, exactly the shift's values, and the ops moving them
    move uint8."""
    shift = graph.producer(y)
    offset = int(graph.tensors[shift.inputs[2]].value)
    found = shift_source(graph, x, [shift.name])
    if found is None:
        return
    p, chain = found
    t = chain[-1].inputs[0] if chain else x
    unsigned = _offset_output(p, graph, offset)
    # the requantisation and the moves (in execution order) write uint8 tensors, the last one ``y``
    moves = chain[::-1]
    outs = [graph.add_tensor(f"{u}.npu", graph.tensors[u].shape, UINT8)
            for u in [t] + [m.outputs[0] for m in moves[:-1]]] if chain else []
    outs.append(y)
    new = {id(p): replace(unsigned, outputs=[outs[0]])}
    for k, m in enumerate(moves):
        new[id(m)] = replace(m, inputs=[outs[k], *m.inputs[1:]], outputs=[outs[k + 1]], params=None)
    graph.nodes = [new.get(id(n), n) for n in graph.nodes if n is not shift]
    for name in (t, *(m.outputs[0] for m in chain), *shift.inputs[1:]):
        del graph.tensors[name]


def lower_node(node: Node, graph: Graph, spec: NpuSpec, shifted: dict[str, str] | None = None) -> list[Node]:
    """The nodes replacing ``node`` (accepted by ``npu_reason``): its ``spec.op`` job, after the
    input's shift to uint8 when the engine needs it (once per tensor over the calls sharing
    ``shifted``); adds their tensors to ``graph``."""
    mode = npu_mode(node)
    w, plane, pads = weights_oihw(node, graph, spec.array)
    enc = spec.encode(w, mode)
    cout = w.shape[0]
    cin = cout if mode == "3x3dw" else w.shape[1]
    attrs = {"mode": MODES.index(mode), "cout": cout, "cin": cin, "plane": list(plane),
             "pads": list(pads), "weight_offset": enc.offset}
    offset = input_offset(node, graph, spec)
    if offset and any(pads):
        attrs["pad_value"] = offset      # zero padding of the int8 input, shifted as the input is
    x, before = _unsigned_input(node, graph, offset, {} if shifted is None else shifted)
    inputs = [x, graph.add_constant(f"{node.name}.npu_weights", enc.data, UINT8)]
    if is_fused(node.op):
        mul, bias, shift = normquant_terms(node, graph, cout, offset)
        attrs.update(normquant=1, shift=shift, out_signed=int(node.params.rq.lo < 0))
        scale_type = UINT8 if 0 <= mul.min() and mul.max() <= 255 else INT32     # 8-bit scales when they fit
        inputs += [graph.add_constant(f"{node.name}.npu_scale", np.ascontiguousarray(mul), scale_type),
                   graph.add_constant(f"{node.name}.npu_bias", np.ascontiguousarray(bias), INT32)]
    return [*before, Node(node.name, spec.op, inputs, list(node.outputs), attrs)]


def make_assign_engines(spec: NpuSpec, excluded: Iterable[str] = ()) -> Callable:
    """The assignment pass of the NPU ``spec``: every layer it takes becomes its job
    (``lower_node``), the shifts of their inputs folded where they can be (``_fold_shift``), in the
    order that overlaps the jobs with cluster layers (``overlap.py``); nodes named in ``excluded``
    stay on the cluster. Verbose mode logs each candidate's engine and reason."""
    excluded = frozenset(excluded)

    def assign_engines(graph: Graph, log: Callable[[str], None] | None = None) -> tuple[Graph, bool]:
        unknown = sorted(excluded - {n.name for n in graph.nodes})
        if unknown:
            candidates = [n.name for n, engine, _ in decisions(graph, spec) if engine == spec.engine]
            error = DeeployError(f"--no-npu-for: no layer named {', '.join(repr(u) for u in unknown)}: name layers the "
                                 "NPU runs (-v lists them)")
            error.details = f"layers on the NPU: {', '.join(candidates) or 'none'}"
            raise error
        chosen = []
        for node, engine, why in decisions(graph, spec, excluded):
            if log and node.op in NPU_OPS:
                log(f"engine {engine} for {node.op} '{node.name}': {why}")
            if engine == spec.engine:
                chosen.append(node.name)
        if not chosen:
            return graph, False
        work = graph.copy()
        shifted: dict[str, str] = {}
        work.nodes = [m for n in work.nodes for m in (lower_node(n, work, spec, shifted) if n.name in chosen else [n])]
        for x, y in shifted.items():
            _fold_shift(work, x, y)
        return reordered(work, spec.op), True

    return assign_engines
