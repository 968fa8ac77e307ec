"""Modelled cycles of one GemmRQ call on the cluster (``gemm.inc`` with ``GEMM_REQUANT``) on
its dot-product path, as a formula of the shape and the core count, for cost models.

The path (int8/uint8 operands, int32 sums, A not transposed, K >= 4; B transposed, as the
layout pass stores constant weights, or a B input of K <= 512 packed two columns at a time)
cuts the outputs into 4 x 2 blocks; the cores take contiguous shares of the (batch, row block,
column block) units and run each row block's run of blocks in one call (a strip). So the
slowest core (the one with the most units) costs

    FIXED + units * (unit + UNIT_PER_K * K) + strips * STRIP

with strips the row blocks its share touches and ``unit`` the block's store of 8 outputs:
UNIT inline (int32 requantisation, one mul and add, no C), UNIT_BIAS inline with C added (alpha
= beta = 1), UNIT_C through the general store (mul or add per column, other alpha or beta),
UNIT_WIDE with an int64 requantisation (``TACC``). UNIT_PER_K is the hardware loop (6 cv.lw
and 8 cv.sdot*.b per four steps of k: 3.5 cycles a step). The constants were fitted (least
squares on the relative error) to the calibrated cycle model (``timing.py``, every cv
instruction 1 cycle) on 5 runs of 12..64 x 32..128 x 16..64 int8 MatMuls in L1 on 1 and 8
cores (FIXED, UNIT, UNIT_PER_K, STRIP: all within 0.1%), 2 Gemms with an int8 C per column
(UNIT_BIAS; it also prices mul and add per row, the same inline store), a Gemm with mul and
add per column (UNIT_C; its requantisation was int64, so an upper bound for int32) and a MatMul
with an int64 requantisation (UNIT_WIDE). A B input (not transposed) adds its packing, which
the formula leaves out. Shapes off the path (edges, K < 4, A transposed,
fewer units than cores) return None.

``gemm_rq_estimate`` extends it to every shape for the tiler (``GemmTileCycles``, the
``kernel_cycles`` of Siracusa's tiling parameters): M and N rounded up to whole blocks and K
to at least 4, and at most one unit per core when there are fewer than cores."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Mapping


__all__ = ["FIXED", "UNIT", "UNIT_BIAS", "UNIT_C", "UNIT_WIDE", "UNIT_PER_K", "STRIP", "gemm_rq_cycles",
           "gemm_rq_estimate", "GemmTileCycles", "gemm_tile_model"]

FIXED = 141.0
UNIT = 98.0
UNIT_BIAS = 179.0
UNIT_C = 772.0
UNIT_WIDE = 541.0
UNIT_PER_K = 3.48
STRIP = 159.0


def _blocks_cycles(batch: int, m: int, n: int, k: int, cores: int, unit: float) -> float:
    """The formula on whole 4 x 2 blocks (m a multiple of 4, n of 2), any number of units."""
    row_blocks, col_blocks = batch * m // 4, n // 2
    units = row_blocks * col_blocks
    share = -(-units // cores)
    worst = 0.0
    for core in range(cores):
        lo, hi = min(core * share, units), min(core * share + share, units)
        if lo < hi:
            strips = (hi - 1) // col_blocks - lo // col_blocks + 1
            worst = max(worst, (hi - lo) * (unit + UNIT_PER_K * k) + strips * STRIP)
    return FIXED + worst


def gemm_rq_cycles(batch: int, m: int, n: int, k: int, cores: int, unit: float = UNIT) -> float | None:
    """Modelled kernel cycles of GemmRQ on ``batch`` x (m x k @ k x n) int8 operands in L1 on
    ``cores`` cores with the block store ``unit`` (B transposed), or None when the call leaves
    the 4 x 2 dot-product path somewhere."""
    if m % 4 or n % 2 or k < 4:
        return None
    if batch * m // 4 * (n // 2) < cores:
        return None
    return _blocks_cycles(batch, m, n, k, cores, unit)


@lru_cache(maxsize=65536)
def gemm_rq_estimate(batch: int, m: int, n: int, k: int, cores: int, unit: float = UNIT) -> float:
    """``gemm_rq_cycles`` where the call is on the assembly path, else the formula on the shape
    rounded up to whole blocks and even K (see the module docstring)."""
    exact = gemm_rq_cycles(batch, m, n, k, cores, unit)
    if exact is not None:
        return exact
    return _blocks_cycles(batch, -(-m // 4) * 4, -(-n // 2) * 2, max(k, 4), cores, unit)


@dataclass(frozen=True)
class GemmTileCycles:
    """Compute cycles of one tile (extents of the dims B, M, N) of a GemmRQ layer with reduction
    ``k`` on ``cores`` cores and the block store ``unit``: a LayerSpec's ``tile_cycles``."""

    k: int
    cores: int
    unit: float = UNIT

    def __call__(self, ext: Mapping[str, int]) -> int:
        return math.ceil(gemm_rq_estimate(ext.get("B", 1), ext["M"], ext["N"], self.k, self.cores, self.unit))


def gemm_tile_model(node, graph, cores: int) -> GemmTileCycles | None:
    """The tile cycles of a requantised GEMM/MatMul layer whose kernel is the int8 GemmRQ (A and
    B 8-bit, A not transposed); None for the others (the tiler's ops model)."""
    from Deeploy.ops.bounds import accumulator_type, gemm_sum_bound
    from Deeploy.targets.siracusa.bindings import _gemm_rq_strides, _rq_bound
    from Deeploy.tiling.ops._common import base_operands
    p, (a, b, c), rq = base_operands(node)
    if not rq or p.trans_a:
        return None
    if any(graph.tensors[t].dtype is None or graph.tensors[t].dtype.nbytes != 1 for t in (a, b)):
        return None
    if accumulator_type(_rq_bound(gemm_sum_bound, node, graph)).nbytes > 4:
        return GemmTileCycles(p.k, cores, UNIT_WIDE)
    if graph.tensors[node.outputs[0]].dtype.nbytes != 1:
        return GemmTileCycles(p.k, cores, UNIT_C)
    fp = node.params
    strides = [_gemm_rq_strides(fp, per) for per in (fp.rq.mul_per_channel, fp.rq.add_per_channel)]
    if any(st[2] for st in strides) or p.alpha != 1 or (c is not None and p.beta != 1):
        return GemmTileCycles(p.k, cores, UNIT_C)
    uniform = c is None and all(st[1] == 0 for st in strides)
    return GemmTileCycles(p.k, cores, UNIT if uniform else UNIT_BIAS)
