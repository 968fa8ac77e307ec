"""Modelled cycles of one GemmRQ call on the cluster (``gemm.inc`` with ``GEMM_REQUANT``) on
its assembly path, as a formula of the shape and the core count, for cost models.

The path (RV32, int8/uint8 operands, int32 sums, B not transposed, K even, N >= 4, the packed
panel within 1 KiB: K <= 256) cuts the outputs into 4 x 4 blocks; the cores take contiguous
shares of the (batch, row block, column block) units; a core packs the 4 rows of A of a row
block once, when its share enters that row block, and runs that row block's blocks in one
call. So the slowest core (the one with the most units) costs

    FIXED + units * (unit + UNIT_PER_K * K) + row_blocks * (PANEL + PANEL_PER_K * K)

with row_blocks the row blocks its share touches and ``unit`` the block's store of 16 outputs:
UNIT in the assembly (int32 requantisation, 8-bit outputs, no C), UNIT_BIAS in the assembly
with C added (C the same in every row, alpha = beta = 1, mul and add the same in every row),
UNIT_C in C (any other C, or wider outputs), UNIT_WIDE with an int64 requantisation
(``TACC``); mul and add the same in every row are loaded once per block (each also converts
the block's 16 sums back from float). UNIT_PER_K is about the assembly loop (135 instructions
and a taken branch per four steps of k: 8 conversions and 16 fused multiply-adds a step, 137
cycles for 64 multiply-accumulates); the constants were fitted (least squares on the relative
error) to the calibrated cycle model (``timing.py``) on 17 runs of 4..64 x 2..256 x 4..64
int8 MatMuls in L1 on 1 and 8 cores (UNIT, UNIT_WIDE) and 4 Gemms with an int8 C per column
(UNIT_BIAS), all within 3%; UNIT_C is UNIT plus the C store's measured extra
cost; PANEL_PER_K (packing 4 values of A), PANEL (a row block's call: its set-up and the
callee-saved float registers the loop uses) and FIXED (fork, set-up, join). Shapes off the path (edges, K odd, N < 4, fewer units than cores) return
None.

The loop's sums are FPU operations, and the cycle model's cores share FPUs (``TimingModel.fpus``:
core i on FPU i % 4): a unit issues FPU_PER_K operations per step of k (4 + 4 conversions, 16
fused multiply-adds) and FPU_UNIT for its store (16 conversions back), counted in the assembly,
so the kernel also lasts FIXED + the operations of the busiest FPU's units when that is longer
(8 cores: about 48 cycles per step of k and block against the core's 34).

``gemm_rq_estimate`` extends it to every shape for the tiler (``GemmTileCycles``, the
``kernel_cycles`` of Siracusa's tiling parameters): M and N rounded up to whole blocks and K to
even, and at most one unit per core when there are fewer than cores. Measured on 1 core
(calibrated model, K = 64, N = 64): 22 rows 294050 cycles against 292465 for 24 (edge rows cost
about a block row)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Mapping

from Deeploy.targets.siracusa.timing import SIRACUSA_TIMING

__all__ = ["FIXED", "UNIT", "UNIT_BIAS", "UNIT_C", "UNIT_WIDE", "UNIT_PER_K", "PANEL", "PANEL_PER_K", "FPU_PER_K",
           "FPU_UNIT", "gemm_rq_cycles", "gemm_rq_estimate", "GemmTileCycles", "gemm_tile_model"]

FIXED = 62.0
UNIT = 149.0
UNIT_BIAS = 170.0
UNIT_C = 245.0
UNIT_WIDE = 676.0
UNIT_PER_K = 34.2
PANEL_PER_K = 9.6
PANEL = 272.0
FPU_PER_K = 24
FPU_UNIT = 16


def _blocks_cycles(batch: int, m: int, n: int, k: int, cores: int, unit: float) -> float:
    """The formula on whole 4 x 4 blocks (m, n multiples of 4), any number of units."""
    row_blocks, col_blocks = batch * m // 4, n // 4
    units = row_blocks * col_blocks
    share = -(-units // cores)
    worst = 0.0
    fpu_ops = [0.0] * SIRACUSA_TIMING.fpus
    for core in range(cores):
        lo, hi = min(core * share, units), min(core * share + share, units)
        if lo < hi:
            touched = (hi - 1) // col_blocks - lo // col_blocks + 1
            worst = max(worst, (hi - lo) * (unit + UNIT_PER_K * k) + touched * (PANEL + PANEL_PER_K * k))
            if fpu_ops:
                fpu_ops[SIRACUSA_TIMING.fpu_of_core(core)] += (hi - lo) * (FPU_UNIT + FPU_PER_K * k)
    return FIXED + max([worst, *fpu_ops])


def gemm_rq_cycles(batch: int, m: int, n: int, k: int, cores: int, unit: float = UNIT) -> float | None:
    """Modelled kernel cycles of GemmRQ on ``batch`` x (m x k @ k x n) int8 operands in L1 on
    ``cores`` cores with the block store ``unit``, or None when the call leaves the 4 x 4
    assembly path somewhere."""
    if m % 4 or n % 4 or n < 4 or k % 2 or not 2 <= k <= 256:
        return None
    if batch * m // 4 * (n // 4) < cores:
        return None
    return _blocks_cycles(batch, m, n, k, cores, unit)


@lru_cache(maxsize=65536)
def gemm_rq_estimate(batch: int, m: int, n: int, k: int, cores: int, unit: float = UNIT) -> float:
    """``gemm_rq_cycles`` where the call is on the assembly path, else the formula on the shape
    rounded up to whole blocks and even K (see the module docstring)."""
    exact = gemm_rq_cycles(batch, m, n, k, cores, unit)
    if exact is not None:
        return exact
    return _blocks_cycles(batch, -(-m // 4) * 4, -(-n // 4) * 4, k + k % 2, cores, unit)


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
    B 8-bit, B not transposed); None for the others (the tiler's ops model)."""
    from Deeploy.ops.bounds import accumulator_type, gemm_sum_bound
    from Deeploy.targets.siracusa.bindings import _gemm_rq_strides, _rq_bound
    from Deeploy.tiling.ops._common import base_operands
    p, (a, b, c), rq = base_operands(node)
    if not rq or p.trans_b:
        return None
    if any(graph.tensors[t].dtype is None or graph.tensors[t].dtype.nbytes != 1 for t in (a, b)):
        return None
    if accumulator_type(_rq_bound(gemm_sum_bound, node, graph)).nbytes > 4:
        return GemmTileCycles(p.k, cores, UNIT_WIDE)
    if graph.tensors[node.outputs[0]].dtype.nbytes != 1:
        return GemmTileCycles(p.k, cores, UNIT_C)
    if c is None:
        return GemmTileCycles(p.k, cores, UNIT)
    fp = node.params
    rows_alike = all(_gemm_rq_strides(fp, per)[1:] == (0, 0)
                     for per in (fp.rq.mul_per_channel, fp.rq.add_per_channel))
    bias_in_assembly = (rows_alike and p.c_rows == 1 and p.alpha == 1 and p.beta == 1
                        and graph.tensors[c].dtype.nbytes in (1, 2, 4))
    return GemmTileCycles(p.k, cores, UNIT_BIAS if bias_in_assembly else UNIT_C)
