"""NeurekaConv (an NPU job, ``Deeploy/targets/siracusa_w_neureka/ops.py``): its tiling rule and its restriction to one tile.

Dims: planes N, output rows OH, output columns OW and (dense modes) output channels CO. The
NPU's tile rules (specs/neureka.md "Tile constraints"): input channels are never tiled (the
engine does not accumulate partial sums across jobs), so the encoded weights of a dense job
are tiled along CO only (their rows are per output channel); a depthwise job keeps all its
channels and its weight blob whole; the normquant scale and bias follow the CO tile. An output
tile of ``t`` rows reads a halo of ``t + 2`` input rows in 3x3 modes, less at padded borders
(the engine generates the padding). A tile's compute cycles are the NPU's own model of its job,
which the target gives the tiler (``TilingParams.kernel_cycles``)."""

from __future__ import annotations

from Deeploy.ir.graph import Graph, Node
from Deeploy.tiling.ops._common import RuleContext, layer_ops, operand, zero_copy_spec
from Deeploy.tiling.restrict import Tile, window_pads
from Deeploy.tiling.spec import INPUT, OUTPUT, AxisMap, Dim, LayerSpec

__all__ = ["npu_rule", "npu_restrict"]


def npu_rule(node: Node, graph: Graph, ctx: RuleContext) -> LayerSpec:
    p = node.params
    x, w = node.inputs[0], node.inputs[1]
    y = node.outputs[0]
    if graph.tensors[y].size == 0:
        return zero_copy_spec(node, "empty output")
    k = 1 if p.mode == "1x1" else 3
    oh, ow = p.out_plane
    dw = p.mode == "3x3dw"
    dims = [Dim("N", p.batch), Dim("OH", oh), Dim("OW", ow)]
    if not dw:
        dims.append(Dim("CO", p.cout))
    n = AxisMap(p.batch, "N")
    rows = AxisMap(p.plane[0], "OH", stride=1, offset=-p.pads[0], span=k)
    cols = AxisMap(p.plane[1], "OW", stride=1, offset=-p.pads[1], span=k)
    co = AxisMap(p.cout) if dw else AxisMap(p.cout, "CO")
    blob = graph.tensors[w]
    w_axes = (AxisMap(blob.size),) if dw else (co, AxisMap(blob.size // p.cout))
    ops = [operand(graph, x, INPUT, (n, rows, cols, AxisMap(p.cin))), operand(graph, w, INPUT, w_axes)]
    ops += [operand(graph, c, INPUT, (co,)) for c in node.inputs[2:]]
    ops.append(operand(graph, y, OUTPUT, (n, AxisMap(oh, "OH"), AxisMap(ow, "OW"), co)))
    whole = (f"the input channels of {node.op} stay whole (the NPU does not accumulate partial sums across jobs)",)
    if dw:
        whole += ("a depthwise NPU job keeps all its channels (its weight blob stays whole)",)
    loops = (("N", "OH", "OW"),) if dw else (("N", "CO", "OH", "OW"), ("N", "OH", "OW", "CO"))
    return LayerSpec(node.name, node.op, tuple(dims), tuple(ops), layer_ops(node, graph),
                     parallel=(("OH", "OW"),), loop_orders=loops, scratch=ctx.scratch, whole=whole).validate()


def npu_restrict(t: Tile) -> None:
    """The tile's job: its input plane, the padding clipped at the tile's borders and its output channels."""
    x = t.node.inputs[0]
    rows, cols = t.axis_of(x, "OH"), t.axis_of(x, "OW")
    axes, box = t.operands[x].axes, t.boxes[x]
    top, bottom = window_pads(axes[rows], t.ranges["OH"], box[rows])
    left, right = window_pads(axes[cols], t.ranges["OW"], box[cols])
    t.attrs.update(pads=[top, left, bottom, right], plane=[box[rows][1] - box[rows][0], box[cols][1] - box[cols][0]])
    if "CO" in t.ranges:
        lo, hi = t.ranges["CO"]
        t.attrs["cout"] = hi - lo
