"""Hypothesis strategies of random small integer graphs, several independent graphs per ONNX model.

A batch is one ``Net`` (``DeeployTest/generators/builder.py``) holding disjoint random graphs
``g0_*``, ``g1_*``, ...: each with one or two inputs (int8, uint8, sometimes int16; ranks 1-4,
odd and size-1 dims), a few random nodes drawn from ``ops.MAKERS`` applied to tensors of its
pool (so tensors feed several nodes, an op may take the same tensor twice, views chain), and
as outputs its last tensor plus, sometimes, intermediates that also feed later nodes, the last
tensor a second time or a graph input. In a ``clash`` batch the nodes and tensors are often named
as the compiler names what it makes for their neighbours (``GraphContext.name``). The
builder evaluates every node with the compiler's references while the graph is drawn, so the
goldens are known; one build of the batch checks all its graphs. Shrinking removes graphs and
simplifies the rest, down to the smallest failing graph.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from DeeployTest.fuzzing.ops import MAKERS, ZERO_SIZED_MAKERS, GraphContext, custom
from DeeployTest.generators.builder import Net

__all__ = ["FuzzBatch", "batches", "zero_sized_graphs"]


@dataclass
class FuzzBatch:
    """Random graphs sharing one model; ``graphs`` describes each (ops, input shapes)."""

    net: Net
    graphs: list[str]

    def __repr__(self) -> str:
        return "FuzzBatch(\n  " + "\n  ".join(self.graphs) + "\n)"


def _values(draw, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    lo, hi = draw(st.sampled_from([(-128, 127)] * 6 + [(0, 255)] * 3 + [(-2000, 2000)]))
    v = rng.integers(lo, hi + 1, size=shape, dtype=np.int64)
    if v.size >= 2:                       # the extremes make the inferred type the full type
        flat = v.reshape(-1)
        flat[0], flat[-1] = lo, hi
    return v


def _shape(draw, max_dim: int) -> tuple[int, ...]:
    rank = draw(st.integers(1, 4))
    dims = [draw(st.integers(1, max_dim)) for _ in range(rank)]
    if rank == 4:
        dims[0] = draw(st.sampled_from([1, 1, 2]))
    return tuple(dims)


def _graph(draw, net: Net, k: int, ops: list[str], zero_sized: bool = False, max_dim: int = 6,
           clash: bool = False) -> str:
    g = GraphContext(net, f"g{k}_", np.random.default_rng(draw(st.integers(0, 2**32 - 1))), clash=clash)
    shape = _shape(draw, max_dim)
    if zero_sized:
        empty = draw(st.integers(0, len(shape) - 1))
        shape = tuple(0 if j == empty else d for j, d in enumerate(shape))
    g.pool.append(net.input(g.name(f"g{k}_in0"), _values(draw, g.rng, shape)))
    if draw(st.booleans()):               # a second input, broadcastable onto the first
        second = tuple(d if draw(st.integers(0, 2)) else 1 for d in shape)[draw(st.integers(0, len(shape) - 1)):]
        g.pool.append(net.input(g.name(f"g{k}_in1"), _values(draw, g.rng, second)))
    shapes = [net.shape(t) for t in g.pool]
    last = None
    for _ in range(draw(st.integers(1, 4))):
        x = draw(st.sampled_from(g.pool))
        kind = draw(st.sampled_from(ops))
        y = (custom if kind == "custom" else MAKERS[kind])(g, draw, x)
        if y is not None:
            g.pool.append(y)
            last = y
    if last is None:
        last = g.node("Relu", [g.pool[0]])
    outputs = [last]
    inner = [t for t in g.pool[len(shapes):] if t != last and not net.graph.tensors[t].is_constant]
    if inner and draw(st.integers(0, 2)) == 0:
        outputs.append(draw(st.sampled_from(inner)))
    extra = draw(st.integers(0, 9))
    if extra == 0:
        outputs.append(last)                 # the same tensor listed twice
    elif extra == 1:
        outputs.append(g.pool[0])            # a graph input listed as an output
    net.output(*outputs)
    return f"g{k}: inputs {shapes} -> {' -> '.join(g.ops)}; outputs {[net.shape(o) for o in outputs]}"


def batches(size: int, custom_ops: bool = False, max_dim: int = 6, clash: bool = False) -> st.SearchStrategy[FuzzBatch]:
    """Batches of up to ``size`` random graphs (each kept with probability 0.9, the first always);
    ``custom_ops`` adds the integer custom ops (then onnxruntime checks the standard nodes one by
    one instead of the whole model); input dims up to ``max_dim`` (larger ones make tiling split);
    ``clash``: nodes and tensors named after what the compiler makes for their neighbours
    (``GraphContext.name``), with more convolutions and transposes (what the layout pass rewrites)."""
    ops = sorted(MAKERS) + (["custom"] * 4 if custom_ops else []) + (["conv"] * 3 + ["transpose"] if clash else [])

    @st.composite
    def _batch(draw) -> FuzzBatch:
        net = Net("fuzz", opset=13)
        graphs = []
        for k in range(size):
            if k == 0 or draw(st.integers(0, 9)):
                graphs.append(_graph(draw, net, len(graphs), ops, max_dim=max_dim, clash=clash))
        return FuzzBatch(net, graphs)

    return _batch()


def zero_sized_graphs() -> st.SearchStrategy[FuzzBatch]:
    """One random graph whose first input has a zero-sized dim, through the ops that take it."""

    @st.composite
    def _one(draw) -> FuzzBatch:
        net = Net("fuzz_zero_sized", opset=13)
        return FuzzBatch(net, [_graph(draw, net, 0, list(ZERO_SIZED_MAKERS), zero_sized=True)])

    return _one()
