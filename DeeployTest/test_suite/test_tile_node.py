"""Tile nodes (Deeploy/tiling/tile_node.py): for every layer of the test networks and several
tilings (whole dims, middle and smallest candidate tile sizes, each dim alone at its smallest),
the tile node computed on the operands' boxes equals the box of the full layer's golden output,
bit-exact, and the kernel Siracusa binds to the full layer accepts the tile node and renders its
call. Graphs: after the Siracusa passes (all networks) and, for the single-op networks, as loaded
and with requantisation fused but convolutions left NCHW."""

from __future__ import annotations

import functools
import math
from pathlib import Path

import numpy as np
import onnx
import pytest
from mako.template import Template
from onnx import TensorProto, helper

from Deeploy.codegen.buffers import Buf
from Deeploy.errors import TilingError
from Deeploy.frontend import assign_input_types, infer_graph, load_npz_arrays, load_onnx, map_arrays
from Deeploy.ir.graph import Node
from Deeploy.ops import get_op
from Deeploy.passes.constant_folding import fold_constants
from Deeploy.passes.manager import run_passes
from Deeploy.passes.requant_fusion import fuse_requant
from Deeploy.reference import run_reference
from Deeploy.targets.siracusa.bindings import SIRACUSA_BINDINGS
from Deeploy.targets.siracusa.platform import SIRACUSA_PASSES
from Deeploy.tiling import layer_spec, operand_ranges, tile_ranges
from Deeploy.tiling.spec import INPUT, OUTPUT, candidates
from Deeploy.tiling.tile_node import tile_node
from DeeployTest.test_suite.conftest import DEEPLOY_TEST, network_dirs

KERNELS = network_dirs(DEEPLOY_TEST, "Tests/Kernels")
MODELS = network_dirs(DEEPLOY_TEST, "Tests/Models")
LOWERINGS = {"siracusa": SIRACUSA_PASSES, "nchw_fused": (fold_constants, fuse_requant), "as_loaded": ()}
CASES = ([(net, "siracusa") for net in KERNELS + MODELS]
         + [(net, low) for net in KERNELS for low in ("nchw_fused", "as_loaded")])
MAX_TILES = 6          # tiles checked per tiling (evenly spaced, first and last included)


@functools.lru_cache(maxsize=None)
def lowered(path: Path, lowering: str):
    """The graph after ``lowering`` and every tensor's golden value."""
    graph = load_onnx(path / "network.onnx")
    inputs = map_arrays(path / "inputs.npz", load_npz_arrays(path / "inputs.npz"), graph.inputs, graph, "input")
    assign_input_types(graph, inputs)
    infer_graph(graph)
    graph = run_passes(graph, LOWERINGS[lowering])
    return graph, run_reference(graph, inputs, keep_all=True)


def tilings(spec):
    """Tile sizes per dim: all whole, all middle candidates, all smallest, each dim alone smallest
    (reduction dims, e.g. a GEMM's K, stay whole: tile nodes assume so)."""
    cands = {d.name: (d.size,) if d.reduction else candidates(d) for d in spec.dims}
    whole = {d: c[0] for d, c in cands.items()}
    found = [whole, {d: c[len(c) // 2] for d, c in cands.items()}, {d: c[-1] for d, c in cands.items()}]
    found += [{**whole, d: c[-1]} for d, c in cands.items()]
    unique = []
    for sizes in found:
        if sizes not in unique:
            unique.append(sizes)
    return unique


def sampled_tiles(spec, sizes):
    """The tiles of a tiling (dim -> (lo, hi)), at most MAX_TILES of them, evenly spaced."""
    per_dim = [tile_ranges(d.size, sizes[d.name]) for d in spec.dims]
    count = math.prod(len(r) for r in per_dim)
    picks = sorted({round(k * (count - 1) / max(1, MAX_TILES - 1)) for k in range(min(count, MAX_TILES))})
    tiles = []
    for index in picks:
        combo = []
        for ranges in reversed(per_dim):
            index, k = divmod(index, len(ranges))
            combo.append(ranges[k])
        tiles.append(dict(zip([d.name for d in spec.dims], reversed(combo))))
    return tiles


def box_of(values, operand, ranges):
    box = tuple(slice(a, b) for a, b in operand_ranges(operand, ranges))
    return np.asarray(values[operand.tensor]).reshape(operand.shape)[box]


def tile_inputs(tile, tile_graph, spec, ranges, values):
    """Full values reshaped to each operand's view and cut to its box; other inputs as given."""
    inputs = {o.tensor: o for o in spec.operands if o.role == INPUT}
    xs = []
    for name in tile.inputs:
        if not name:
            xs.append(None)
            continue
        t = tile_graph.tensors[name]
        if name in inputs:
            xs.append(box_of(values, inputs[name], ranges).reshape(t.shape))
        elif t.is_constant:
            xs.append(t.value)
        else:
            xs.append(np.asarray(values[name]).reshape(t.shape))
    return xs


def bound_kernel(node, graph):
    """The kernel Siracusa's table gives the full node (first accepting one), or None."""
    for kernel in SIRACUSA_BINDINGS.get(node.op, ()):
        if kernel.accepts is None or kernel.accepts(node, graph) is None:
            return kernel
    return None


@functools.lru_cache(maxsize=None)
def call_template(text: str) -> Template:
    return Template(text, strict_undefined=True)


def render(kernel, tile, tile_graph) -> str:
    """The kernel's call for the tile node, with dummy pointers (as codegen/emit.render_call)."""
    def buf(name, k):
        t = tile_graph.tensors[name]
        return Buf(name, f"(({t.dtype.ctype} *)buf{k})", tuple(t.shape), t.dtype)
    x = [buf(n, k) if n else None for k, n in enumerate(tile.inputs)]
    y = [buf(n, len(tile.inputs) + k) for k, n in enumerate(tile.outputs)]
    return call_template(kernel.call).render(fn="KFN", node=tile, p=tile.params, x=x, y=y,
                                             scratch="((void *)scratch)", shared="((void *)shared)", fill="1").strip()


def check_tile(node, graph, spec, ranges, values, kernel):
    """Checks 1 and 2 of one tile; returns the tile node."""
    tile, tile_graph = tile_node(node, graph, spec, ranges)
    assert tile.op == node.op and tile.outputs == node.outputs and tile_graph.nodes == [tile]
    tile_graph.verify()
    for o in spec.operands:                               # operand tensors: box extents, original dtype
        if o.tensor not in tile_graph.tensors:
            continue
        t = tile_graph.tensors[o.tensor]
        ext = tuple(b - a for a, b in operand_ranges(o, ranges))
        assert t.dtype == graph.tensors[o.tensor].dtype
        assert t.size == math.prod(ext) and [e for e in t.shape if e != 1] == [e for e in ext if e != 1]
    # 1. the tile's reference output is the box of the full output
    out = next(o for o in spec.operands if o.role == OUTPUT)
    got = get_op(tile).reference(tile.params, tile_inputs(tile, tile_graph, spec, ranges, values))[0]
    want = box_of(values, out, ranges)
    assert got.size == want.size and np.array_equal(np.asarray(got).reshape(want.shape), want), \
        (node.name, ranges)
    # 2. the full node's kernel accepts the tile node and renders its call
    if kernel is not None:
        if kernel.accepts is not None:
            assert kernel.accepts(tile, tile_graph) is None, (node.name, ranges, kernel.accepts(tile, tile_graph))
        for extra in (kernel.extra_types, kernel.scratch, kernel.shared_scratch):
            if extra is not None:
                extra(tile, tile_graph)
        text = render(kernel, tile, tile_graph)
        assert "KFN(" in text or text.startswith("/*"), text
    return tile


def uneven_groups(node, err: TilingError) -> bool:
    return node.op in ("Conv", "RequantizedConv") and "unevenly" in str(err)


@pytest.mark.parametrize("net,lowering", CASES,
                         ids=[f"{p.relative_to(DEEPLOY_TEST / 'Tests')}-{low}" for p, low in CASES])
def test_tile_nodes_compute_their_output_box(net, lowering):
    graph, values = lowered(net, lowering)
    seen = set()
    checked = 0
    for node in graph.nodes:
        spec = layer_spec(node, graph)
        key = (node.op, spec.signature(), repr(node.params), tuple(sorted(map(repr, node.attrs.items()))))
        if spec.zero_copy or key in seen:
            continue
        seen.add(key)
        kernel = bound_kernel(node, graph)
        for sizes in tilings(spec):
            for ranges in sampled_tiles(spec, sizes):
                try:
                    check_tile(node, graph, spec, ranges, values, kernel)
                except TilingError as err:
                    if not uneven_groups(node, err):
                        raise
                checked += 1
    assert checked or all(layer_spec(n, graph).zero_copy for n in graph.nodes)


# ---- particular cases -----------------------------------------------------------------------------
def _layer(path: str, op: str, lowering: str = "siracusa"):
    graph, values = lowered(DEEPLOY_TEST / "Tests" / path, lowering)
    node = next(n for n in graph.nodes if n.op == op)
    return node, graph, values, layer_spec(node, graph)


def test_conv_tile_pads_are_the_clipping_at_its_borders():
    """StridedPadded_2D_RQ: pads [1, 0, 0, 2] (top, left, bottom, right), stride 2, 3x3 on 9x9."""
    node, graph, values, spec = _layer("Kernels/Conv/StridedPadded_2D_RQ", "RequantizedConv")
    whole = {d.name: (0, d.size) for d in spec.dims}
    first, _ = tile_node(node, graph, spec, {**whole, "OH": (0, 1), "OW": (0, 1)})
    last, _ = tile_node(node, graph, spec, {**whole, "OH": (3, 4), "OW": (4, 5)})
    middle, _ = tile_node(node, graph, spec, {**whole, "OH": (1, 3)})
    assert first.attrs["pads"] == [1, 0, 0, 0] and first.params.base.out_hw == (1, 1)
    assert last.attrs["pads"] == [0, 0, 0, 2] and last.params.base.out_hw == (1, 1)
    assert middle.attrs["pads"] == [0, 0, 0, 2] and middle.params.base.in_hw == (5, 9)


def test_grouped_conv_tiles_follow_whole_groups():
    """Grouped_2D (2 groups of 6 output channels): a tile inside one group is a dense conv, a
    tile covering both groups evenly keeps 2 groups, an uneven one is refused naming why."""
    node, graph, values, spec = _layer("Kernels/Conv/Grouped_2D", "Conv")
    whole = {d.name: (0, d.size) for d in spec.dims}
    kernel = bound_kernel(node, graph)
    assert check_tile(node, graph, spec, {**whole, "CO": (7, 11)}, values, kernel).params.group == 1
    assert check_tile(node, graph, spec, {**whole, "CO": (4, 8)}, values, kernel).params.group == 2
    with pytest.raises(TilingError, match=r"layer 'Conv' \(Conv\).*\[2, 8\) cover the groups of 6 channels unevenly"):
        tile_node(node, graph, spec, {**whole, "CO": (2, 8)})


def test_pad_tile_in_the_padding_only_has_an_empty_input():
    node, graph, values, spec = _layer("Kernels/Pad/Regular_2D", "Pad")
    ranges = {d.name: (0, d.size) for d in spec.dims}
    ranges["p2"] = (0, 1)                       # the first row: padding only
    tile = check_tile(node, graph, spec, ranges, values, bound_kernel(node, graph))
    _, tile_graph = tile_node(node, graph, spec, ranges)
    assert tile_graph.tensors[node.inputs[0]].size == 0 and tile.params.out_shape[2] == 1


def test_negative_step_slice_is_tile_local():
    node, graph, values, spec = _layer("Kernels/Slice/NegativeStep", "Slice")
    kernel = bound_kernel(node, graph)
    for ranges in sampled_tiles(spec, {d.name: 1 for d in spec.dims}):
        tile = check_tile(node, graph, spec, ranges, values, kernel)
        assert all(s >= 0 for s in tile.params.starts)


def test_requantised_gemm_per_row_constants_broadcast_along_rows():
    """AlphaBeta_RQPerRow: mul/add vary per row; a square tile must not apply them per column."""
    node, graph, values, spec = _layer("Kernels/Gemm/AlphaBeta_RQPerRow", "RequantizedGemm")
    ranges = {"B": (0, 1), "M": (4, 8), "N": (4, 8)}
    tile = check_tile(node, graph, spec, ranges, values, bound_kernel(node, graph))
    _, tile_graph = tile_node(node, graph, spec, ranges)
    assert tile_graph.tensors[node.inputs[-2]].shape == (4, 1) and tile.params.rq.inner == 4


def test_tensor_names_stay_and_new_constants_are_unique():
    node, graph, values, spec = _layer("Kernels/Slice/Regular", "Slice")
    tile, tile_graph = tile_node(node, graph, spec, {d.name: (0, d.size) for d in spec.dims})
    assert tile.inputs[0] == node.inputs[0] and tile.outputs == node.outputs
    assert not set(tile.inputs[1:]) & set(graph.tensors)
    assert tile_graph.inputs == [node.inputs[0]] and tile_graph.outputs == node.outputs


def test_errors_name_the_layer_and_op():
    node, graph, values, spec = _layer("Kernels/Add/Regular", "Add")
    fake = Node("mystery_layer", "FancyOp", node.inputs, node.outputs, params=node.params)
    with pytest.raises(TilingError, match="layer 'mystery_layer': operator FancyOp has no tiling rule"):
        tile_node(fake, graph, spec, {d.name: (0, d.size) for d in spec.dims})
    with pytest.raises(TilingError, match="gives no range for dim"):
        tile_node(node, graph, spec, {})
    view, view_graph, _, view_spec = _layer("Kernels/Reshape/Between_Ops", "Reshape")
    with pytest.raises(TilingError, match="zero copy"):
        tile_node(view, view_graph, view_spec, {})


SINGLE_OPS = {   # cases no test network has: op, x shape, y shape, attributes, constant inputs
    "softmax_rows_of_width_1": ("iSoftmax", (2, 4, 1), (2, 4, 1),
                                dict(coeffA=1, coeffB=85, coeffC=3778, log2=63, n_levels=256), ()),
    "rmsnorm_rows_of_width_1": ("iRMSNorm", (2, 3, 1), (2, 3, 1), dict(D=4, n_levels=256), (("w", [7]),)),
    "reduce_over_size_1_axes_keepdims": ("ReduceSum", (3, 1, 5), (3, 1, 5), dict(keepdims=1), (("axes", [1]),)),
    "reduce_over_size_1_axes": ("ReduceSum", (3, 1, 5), (3, 5), dict(keepdims=0), (("axes", [1]),)),
    "pad_of_an_empty_input": ("Pad", (0, 3), (2, 5), {}, (("pads", [2, 1, 0, 1]),)),
    # float: a softmax along an axis followed by size-1 axes normalises that axis, not the last
    "float_softmax_over_tokens_of_a_column": ("Softmax", (1, 9, 1), (1, 9, 1), dict(axis=1), (), True),
    "float_softmax_over_rows_before_size_1_axes": ("Softmax", (3, 5, 1, 1), (3, 5, 1, 1), dict(axis=1), (), True),
    "float_softmax_over_a_size_1_axis": ("Softmax", (4, 1, 1), (4, 1, 1), dict(axis=1), (), True),
}


def _single_op(tmp_path, op, x_shape, y_shape, attrs, constants, floats=False):
    """A one-node network after the Siracusa passes, and its golden values (integer samples, or
    float ones with ``floats``)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, list(y_shape))
    inits = [helper.make_tensor(n, TensorProto.INT64, [len(v)], v) for n, v in constants]
    node = helper.make_node(op, ["x"] + [n for n, _ in constants], ["y"], name="layer", **attrs)
    model = helper.make_model(helper.make_graph([node], "g", [x], [y], initializer=inits),
                              opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, tmp_path / "m.onnx")
    graph = load_onnx(tmp_path / "m.onnx")
    inputs = {"x": np.random.default_rng(0).integers(-128, 127, size=x_shape, endpoint=True)}
    if floats:
        inputs["x"] = (inputs["x"] / 32).astype(np.float32)
    assign_input_types(graph, inputs)
    infer_graph(graph)
    graph = run_passes(graph, SIRACUSA_PASSES)
    return graph, run_reference(graph, inputs, keep_all=True)


@pytest.mark.parametrize("case", SINGLE_OPS)
def test_single_op_edge_cases(tmp_path, case):
    graph, values = _single_op(tmp_path, *SINGLE_OPS[case])
    node = graph.nodes[0]
    spec = layer_spec(node, graph)
    kernel = bound_kernel(node, graph)
    for sizes in tilings(spec):
        for ranges in sampled_tiles(spec, sizes):
            check_tile(node, graph, spec, ranges, values, kernel)

