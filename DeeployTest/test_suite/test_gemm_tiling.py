"""The tiler prices Siracusa's requantised GEMM/MatMul tiles with the GemmRQ kernel's cycle
formula (``TilingParams.kernel_cycles``, Deeploy/targets/siracusa/gemm_cycles.py), so tile
shapes favour whole 4 x 2 blocks. No simulation: the tiling model only."""

from __future__ import annotations

import math
from dataclasses import replace

from Deeploy.targets.siracusa.gemm_cycles import UNIT, UNIT_BIAS, GemmTileCycles, gemm_rq_estimate
from Deeploy.targets.siracusa.platform import VIRTUAL_PLATFORM_L1
from Deeploy.tiling import evaluate, layer_spec, solve_spec
from Deeploy.tiling.costs import compute_cycles
from Deeploy.tiling.network import with_kernel_cycles
from DeeployTest.test_suite.conftest import CORPUS
from DeeployTest.test_suite.test_tiling_model import lowered

NET = CORPUS / "Models/microLlama/INT8/microLlama64_parallel"


def _gemm_layers(graph):
    return [n for n in graph.nodes if n.op in ("RequantizedMatMul", "RequantizedGemm")]


def test_gemm_layers_cost_the_kernel_formula():
    """Every int8 GEMM layer of the network gets the formula; the untiled layer costs the
    formula of its whole shape, a tile of 22 rows more than one of 24 (its 2 edge rows run in C)."""
    graph = lowered(NET)
    layers = _gemm_layers(graph)
    assert layers
    for node in layers:
        spec = with_kernel_cycles(layer_spec(node, graph), node, graph, VIRTUAL_PLATFORM_L1)
        assert isinstance(spec.tile_cycles, GemmTileCycles), node.name
        full = {d.name: d.size for d in spec.dims}
        k, unit = spec.tile_cycles.k, spec.tile_cycles.unit
        assert compute_cycles(spec, full, VIRTUAL_PLATFORM_L1) == math.ceil(
            gemm_rq_estimate(full["B"], full["M"], full["N"], k, VIRTUAL_PLATFORM_L1.cores, unit,
                             spec.tile_cycles.rows, spec.tile_cycles.packed))
        # the linear layers with a bias add it in the inline store; the others have none
        assert unit == (UNIT_BIAS if node.inputs[2] else UNIT), node.name
        # the attention MatMuls of two activations pack B (not transposed); the linear layers'
        # weights are stored transposed
        assert spec.tile_cycles.packed == (node.op == "RequantizedMatMul"), node.name
        rows = {m: spec.tile_cycles({"B": 1, "M": m, "N": 64}) for m in (20, 22, 24)}
        assert rows[22] > rows[24] > rows[20], (node.name, rows)   # edge rows run in C


def test_other_layers_keep_the_ops_model():
    graph = lowered(NET)
    node = next(n for n in graph.nodes if n.op == "RequantShift")
    spec = layer_spec(node, graph)
    assert with_kernel_cycles(spec, node, graph, VIRTUAL_PLATFORM_L1) is spec


def test_formula_rounds_tiles_to_blocks_and_beats_the_ops_models_choice():
    """At every L1 size the formula's tiles have whole column blocks (N even; an edge row costs
    about a block row, which fewer tiles can repay) and are no dearer under the formula than the
    ops model's choice, which it differs from somewhere. (With tiles priced at their loop's few
    dozen or hundred cycles even a roomy L1 pipelines a layer over a few tiles, so both models tile
    at 64000 too; at the table loop's 2000 per tile both kept the whole layer there.)"""
    graph = lowered(NET)
    changed = 0
    for node in _gemm_layers(graph):
        plain = layer_spec(node, graph)
        model = with_kernel_cycles(plain, node, graph, VIRTUAL_PLATFORM_L1)
        for capacity in (64000, 16000, 8000):
            params = replace(VIRTUAL_PLATFORM_L1, capacity=capacity, buffering="auto")
            ops_choice, formula_choice = solve_spec(plain, params), solve_spec(model, params)
            tiles = formula_choice.tile_sizes
            assert tiles["N"] % 2 == 0 or tiles["N"] == plain.dim("N").size, (node.name, tiles)
            same = evaluate(model, ops_choice.tile_sizes, params, ops_choice.loop_order, ops_choice.double_buffered)
            assert formula_choice.total_cycles <= same.total_cycles
            changed += formula_choice.tile_sizes != ops_choice.tile_sizes
    assert changed > 0


def test_block_store_cost_follows_where_c_is_added(tmp_path):
    """A Gemm with C (alpha and beta 1) is priced with the inline store with C (UNIT_BIAS), per-column
    mul and add with the general store (UNIT_C), no C with UNIT."""
    import numpy as np

    from Deeploy.targets.siracusa.gemm_cycles import UNIT_C, gemm_tile_model
    from DeeployTest.generators.golden import write_test
    from DeeployTest.generators.linear import _gemm, _matmul, gemm_int8_bias_rq

    rng = np.random.default_rng(3)
    nets = [(UNIT_BIAS, gemm_int8_bias_rq(rng, 16, 24, 16, (16,), 3, -7, 8)),
            (UNIT_BIAS, gemm_int8_bias_rq(rng, 16, 24, 16, (16, 16), 3, -7, 8)),
            (UNIT_C, _gemm(rng, (16, 24), (24, 16), (16,), "col")),
            (UNIT, _matmul(rng, (16, 24), (24, 16), const_b=True, rq=True))]
    for at, (unit, net) in enumerate(nets):
        write_test(net, tmp_path / str(at))
        graph = lowered(tmp_path / str(at))
        node, = _gemm_layers(graph)
        assert gemm_tile_model(node, graph, VIRTUAL_PLATFORM_L1.cores).unit == unit, node.op
