"""Channels-last layout for convolutions, and Transpose clean-up.

- ``Conv(x, W)  =>  Transpose(Conv_hwc(Transpose(x, NHWC), Transpose(W)), NCHW)`` for the ops
  with a channels-last form (``Trait.CHANNELS_LAST``: Conv, RequantizedConv); the weight Transpose is a constant and folds away;
- ``Transpose(Transpose(x, p), q)  =>  x`` when q undoes p, else one Transpose;
- ``Op(Transpose(x, p), ...)  =>  Transpose(Op(x, ...), p)`` for elementwise ops whose other
  inputs are scalars, constants of the output's rank (a per-channel scale; transposed along) or
  transposed by the same p, and for Pad (its pads permuted), so that pairs meet and cancel;
- dead nodes (outputs nobody reads) are removed;
- ``RequantizedMatMul(A, W)`` / ``RequantizedGemm(A, W)`` with an 8-bit constant 2-D W not
  transposed  =>  ``RequantizedGemm(A, W^T, transB=1)``: the weights stored N x K, contiguous in
  K as the cluster's dot-product GEMM reads them (``gemm_weights_transposed``).
"""

from __future__ import annotations

import numpy as np

from Deeploy.ir.graph import Graph, Node
from Deeploy.ops import Trait, get_op, ops_with
from Deeploy.passes._engine import on_copy

__all__ = ["convs_to_channels_last", "simplify_transposes", "gemm_weights_transposed"]



def _perm_to_last(rank: int) -> list[int]:
    return [0] + list(range(2, rank)) + [1]


def _perm_to_first(rank: int) -> list[int]:
    return [0, rank - 1] + list(range(1, rank - 1))


@on_copy
def convs_to_channels_last(graph: Graph, log=None) -> bool:
    nodes, modified, convs = [], False, ops_with(Trait.CHANNELS_LAST)
    for node in graph.nodes:
        if node.op not in convs or node.attrs.get("channels_last"):
            nodes.append(node)
            continue
        rank = len(graph.tensors[node.inputs[0]].shape)
        x_t = graph.add_tensor(f"{node.inputs[0]}_hwc")
        w_t = graph.add_tensor(f"{node.inputs[1]}_hwc")
        y_t = graph.add_tensor(f"{node.outputs[0]}_hwc")
        to_last, to_first = _perm_to_last(rank), _perm_to_first(rank)
        nodes += [
            Node(graph.fresh(f"{node.name}_in_hwc"), "Transpose", [node.inputs[0]], [x_t], {"perm": to_last}),
            Node(graph.fresh(f"{node.name}_w_hwc"), "Transpose", [node.inputs[1]], [w_t], {"perm": to_last}),
            Node(node.name, node.op, [x_t, w_t] + node.inputs[2:], [y_t], {**node.attrs, "channels_last": 1},
                 node.domain),
            Node(graph.fresh(f"{node.name}_out_chw"), "Transpose", [y_t], node.outputs, {"perm": to_first}),
        ]
        modified = True
        if log:
            log(f"  layout: {node!r} runs channels-last")
    graph.nodes = nodes
    return modified


def _perm(node: Node) -> list[int]:
    return [int(v) for v in node.params.perm]


def _compose(p: list[int], q: list[int]) -> list[int]:
    """Transpose(Transpose(x, p), q) == Transpose(x, compose(p, q))."""
    return [p[a] for a in q]


def _is_scalar(graph: Graph, name: str) -> bool:
    return graph.is_constant(name) and graph.tensors[name].size == 1


def _permutable(graph: Graph, name: str, out_shape: tuple[int, ...]) -> bool:
    """A constant that broadcasts onto the output with the output's rank: it follows a Transpose."""
    t = graph.tensors[name]
    return graph.is_constant(name) and len(t.shape) == len(out_shape) \
        and all(d in (1, o) for d, o in zip(t.shape, out_shape))


def _below(graph: Graph, node: Node, inputs: list[str], perm: list[int], log, src: Node) -> list[Node]:
    """Replaces ``node`` by itself on ``inputs`` followed by Transpose(perm); the new nodes."""
    inner = graph.add_tensor(f"{node.outputs[0]}_pre_transpose")
    at = graph.nodes.index(node)
    graph.nodes[at:at + 1] = new = [
        Node(node.name, node.op, inputs, [inner], dict(node.attrs), node.domain),
        Node(graph.fresh(f"{node.name}_transpose"), "Transpose", [inner], node.outputs, {"perm": perm}),
    ]
    if log:
        log(f"  transposes: moved {src!r} below {node!r}")
    return new


def _simplify_once(graph: Graph, log) -> list[Node] | None:
    """One rewrite: the nodes it added (to infer), None if there is none to make."""
    producers, consumers, outputs = graph.producers(), graph.consumers(), set(graph.outputs)
    for node in graph.nodes:
        if node.op == "Transpose":
            src = producers.get(node.inputs[0])
            if src is not None and src.op == "Transpose":
                perm = _compose(_perm(src), _perm(node))
                at = graph.nodes.index(node)
                new = []
                if perm == sorted(perm) and node.outputs[0] not in outputs:
                    graph.replace_uses(node.outputs[0], src.inputs[0])
                    del graph.nodes[at]
                else:
                    graph.nodes[at] = Node(node.name, "Transpose", [src.inputs[0]], node.outputs, {"perm": perm})
                    new.append(graph.nodes[at])
                if log:
                    log(f"  transposes: merged {src!r} and {node!r}")
                return new
        if node.op == "Pad" and len(node.inputs) > 1 and graph.is_constant(node.inputs[1]) \
                and (len(node.inputs) < 4 or not node.inputs[3]):
            src = producers.get(node.inputs[0])
            if src is None or src.op != "Transpose" or len(consumers.get(src.outputs[0], [])) != 1:
                continue
            perm, pads = _perm(src), graph.tensors[node.inputs[1]].value.reshape(2, -1)
            inverse = [perm.index(a) for a in range(len(perm))]
            moved = graph.add_constant(f"{node.name}.pads", pads[:, inverse].reshape(-1).astype(np.int64))
            return _below(graph, node, [src.inputs[0], moved] + node.inputs[2:], perm, log, src)
        if get_op(node).has(Trait.ELEMENTWISE):
            out_shape = tuple(graph.tensors[node.outputs[0]].shape)
            acts = [i for i in node.inputs if i and not _is_scalar(graph, i) and not _permutable(graph, i, out_shape)]
            srcs = [producers.get(i) for i in acts]
            if not acts or any(s is None or s.op != "Transpose" for s in srcs):
                continue
            perm = _perm(srcs[0])
            if any(_perm(s) != perm for s in srcs) or any(graph.is_constant(i) for i in acts):
                continue
            rank = len(perm)
            if any(len(graph.tensors[s.inputs[0]].shape) != rank for s in srcs):
                continue
            inverse = [perm.index(a) for a in range(rank)]
            mapping = {s.outputs[0]: s.inputs[0] for s in srcs}
            mapping.update({i: graph.add_constant(f"{i}_transposed", graph.tensors[i].value.transpose(inverse))
                            for i in node.inputs if i and i not in mapping and not _is_scalar(graph, i)
                            and _permutable(graph, i, out_shape)})
            return _below(graph, node, [mapping.get(i, i) for i in node.inputs], perm, log, srcs[0])
    return None


@on_copy
def simplify_transposes(graph: Graph, log=None) -> bool:
    """Rewrites until none applies; each rewrite infers only the nodes it adds (the tensors it
    leaves keep their shapes and types), the pass manager then the whole graph."""
    from Deeploy.frontend.type_inference import infer_node
    modified = False
    while True:
        new = _simplify_once(graph, log)
        for node in new or ():
            infer_node(graph, node)
        if not graph.remove_dead_nodes() and new is None:
            return modified
        modified = True


@on_copy
def gemm_weights_transposed(graph: Graph, log=None) -> bool:
    """Stores the 8-bit constant weights of requantised GEMMs (A of rank 2 or 3, 8-bit) as B^T
    (N x K) with ``transB=1``; a RequantizedMatMul becomes the equal RequantizedGemm (no C)."""
    modified = False
    for at, node in enumerate(graph.nodes):
        if node.op not in ("RequantizedMatMul", "RequantizedGemm") or node.attrs.get("transB", 0) \
                or node.attrs.get("transA", 0) or not graph.is_constant(node.inputs[1]):
            continue
        a, b = graph.tensors[node.inputs[0]], graph.tensors[node.inputs[1]]
        if len(b.shape) != 2 or a.shape is None or len(a.shape) not in (2, 3) \
                or any(t.dtype is None or t.dtype.nbytes != 1 for t in (a, b)):
            continue
        bt = graph.add_constant(f"{node.inputs[1]}_nk", b.value.T, b.dtype)
        ins = [node.inputs[0], bt] + node.inputs[2:]   # a MatMul's third slot is an absent C
        graph.nodes[at] = Node(node.name, "RequantizedGemm", ins, node.outputs, {**node.attrs, "transB": 1},
                               node.domain)
        modified = True
        if log:
            log(f"  layout: {node!r} reads its weights transposed")
    return modified
