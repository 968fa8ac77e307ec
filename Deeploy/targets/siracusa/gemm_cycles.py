"""Modelled cycles of one GemmRQ call on the cluster (``gemm.inc`` with ``GEMM_REQUANT``) on
its dot-product path, as a formula of the shape and the core count, for cost models.

The path (int8/uint8 operands, int32 sums, A not transposed, K >= 4; B transposed, as the
layout pass stores constant weights, or a B input packed a column block at a time) cuts the
outputs into 4 x 4 blocks with the inline store (UNIT, UNIT_BIAS below), or 4 x 2 with the
general store, when N is not a multiple of 4 or when 4 x 4 blocks would leave a core without
work; the cores take contiguous shares of the (batch, row block, column block) units and run
each row block's run of blocks in one call (a strip). So the slowest core (the one
with the most units) costs

    FIXED + units * (BLOCK + outputs * unit + per_k * K) + strips * STRIP

with strips the row blocks its share touches, BLOCK a block's set-up (operand pointers, the
loop's), outputs 16 (4 x 4) or 8 (4 x 2), per_k the block's hardware loop per step of k
(UNIT_PER_K4: 8 cv.lw and 16 cv.sdot*.b per four steps, 6 cycles a step; UNIT_PER_K: 6 and 8 for
4 x 2, 3.5 a step) and ``unit`` the store of one output: UNIT inline (int32 requantisation, one
mul and add, no C), UNIT_BIAS inline with C added (alpha = beta = 1), UNIT_C through the general
store (mul or add per column, other alpha or beta), UNIT_WIDE with an int64 requantisation
(``TACC``). The constants were fitted (least squares on the relative error) to the calibrated
cycle model (``timing.py``, every cv instruction 1 cycle) on 17 runs of 8..128 x 8..96 x 4..64
int8 MatMuls in L1 on 1 and 8 cores, both block shapes (FIXED, STRIP, BLOCK, UNIT, UNIT_PER_K,
UNIT_PER_K4: all within 3.6%), 2 Gemms with an int8 C per column (UNIT_BIAS, within 0.5%; it also
prices mul and add per row, the same inline store), a Gemm with mul and add per column (UNIT_C;
its requantisation was int64, so an upper bound for int32) and 2 MatMuls with an int64
requantisation (UNIT_WIDE, within 0.4%). Tested outside the fit on K = 256 (64 x 256 x 64, 8
cores: within 1.1%). Shapes off the path (edges, K < 4, A transposed, fewer units than cores)
return None.

A B input (not transposed, ``packed``) runs its units column-major (batch, column block, row
block) and packs a column block's K x 4 (K x 2) bytes into a panel before each strip down it, so
its strips cost PACK_STRIP + PACK_PER_K4 * K (PACK_PER_K * K for 4 x 2) instead of STRIP, with
strips the column blocks the slowest core's share touches. Fitted the same way on 10 runs of
batched [b, M, K] x [b, K, N] MatMuls of two activations with 4 x 4 blocks (b 1..16, M 8..64,
K 16..128, N 4..64, 1 and 8 cores: within 1.1%) and 3 with 4 x 2 (N 6, 10; within 9.5%), tested
on 6 others (``test_gemm_cycles.py``: within 5.3%; without the packing they were priced 9-48% low).
With K a multiple of 4, 4 columns are packed four steps of k at a time in a hardware loop (4 row
words of B, a byte transpose in delta swaps, 4 column words: 32 instructions): PACK_WORDS_PER_K4,
fitted the same way (PACK_STRIP kept) on 6 runs (b 1..8, M 8..32, K 32..128, N 4..32, 1 and 8
cores: within 2.1%) and tested on 3 others (``test_gemm_cycles.py``, b 3..8, M 16..64: within
0.9%); the C loop before it (44 instructions) cost 12.16 a step.

With K = 4, a B input, M a multiple of 4 and the inline store into an 8-bit range one instruction
clips to (``rows``: int8 [-hi - 1, hi] by cv.clipr, uint8 [0, hi] by cv.clipur), 4 x 4 blocks
run their column block's strip as two rows of outputs per hardware-loop trip: the units go
column-major (batch, column block, row block), so the slowest core costs

    FIXED_K4 + rows * ROW_K4 + strips * STRIP_K4

with rows its share's output rows (4 per unit) and strips the column blocks it touches (each
block's 4 column words gathered from B, then its rows). The constants were fitted the same way on
5 runs of batched [b, M, 4] x [b, 4, N] MatMuls of two activations (M 8..64, N 4..64, batch 4..64,
1 and 8 cores: within 0.2%) and tested on 4 others (within 0.3%).

``gemm_rq_estimate`` extends it to every shape for the tiler (``GemmTileCycles``, the
``kernel_cycles`` of Siracusa's tiling parameters): N rounded up to whole blocks of the width
the kernel takes for it (4 only when N is a multiple of 4) and K to at least 4. The last M % 4
rows (a tile of 22 rows, a one-row classifier) run as the kernel runs them, a row of the
block's outputs at a time in C: EDGE_ROW + EDGE_PER_K4 * K for 4 outputs,
EDGE_ROW + EDGE_PER_MAC * K * w for w of 1 or 2, per row of each of their units; when 4-row
blocks would leave a core without work the kernel's units are rows of 1 x 4 (single outputs
when even those would), all priced so. Fitted the same way on 13 runs with edge rows (M 1..22,
batched MatMuls of two activations and Gemms with constant weights, 1 and 8 cores: within 7.4%),
tested on 6 others (within 26%); priced as whole blocks they cost 1.5-7x their price."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Mapping


__all__ = ["FIXED", "BLOCK", "UNIT", "UNIT_BIAS", "UNIT_C", "UNIT_WIDE", "UNIT_PER_K", "UNIT_PER_K4", "STRIP",
           "FIXED_K4", "ROW_K4", "STRIP_K4",
           "PACK_STRIP", "PACK_PER_K", "PACK_PER_K4", "PACK_WORDS_PER_K4", "EDGE_ROW", "EDGE_PER_K4", "EDGE_PER_MAC",
           "gemm_rq_cycles",
           "gemm_rq_estimate", "GemmTileCycles", "gemm_tile_model"]

FIXED = 200.6
BLOCK = 79.6
UNIT = 2.20          # cycles per output
UNIT_BIAS = 7.89
UNIT_C = 89.1
UNIT_WIDE = 64.5
UNIT_PER_K = 3.27    # 4 x 2 block, per step of k
UNIT_PER_K4 = 5.91   # 4 x 4 block
STRIP = 95.2
FIXED_K4 = 315.0
ROW_K4 = 21.01       # cycles per row of 4 outputs
STRIP_K4 = 103.9
PACK_STRIP = 67.6    # a strip of a packed B: its set-up with the panel's
PACK_PER_K = 8.92    # packing 2 columns of B, per step of k
PACK_PER_K4 = 14.84  # 4 columns
PACK_WORDS_PER_K4 = 9.19    # 4 columns of word-aligned rows (K a multiple of 4), four steps of k a word
EDGE_ROW = 144.4     # a row of outputs summed in C: call, set-up and store
EDGE_PER_K4 = 22.42  # a row of 4 outputs, per step of k
EDGE_PER_MAC = 9.98  # a row of 1 or 2 outputs, per multiply-accumulate


def _block_width(batch: int, m: int, n: int, cores: int, unit: float) -> int:
    """Columns of the kernel's blocks: 4 with an inline store when N is a multiple of 4 and every
    core gets a 4 x 4 unit, else 2."""
    return 4 if unit in (UNIT, UNIT_BIAS) and n % 4 == 0 and batch * -(-m // 4) * (n // 4) >= cores else 2


def _busiest_core(units: int, cores: int, per_unit: float, strip_units: int, per_strip: float,
                  edges: tuple[int, int, int, float] | None = None) -> float:
    """The busiest core's cycles when ``units`` split in order into equal shares over ``cores``:
    ``per_unit`` each, plus ``per_strip`` for every strip of ``strip_units`` units its share touches;
    ``edges`` (period, first, count, cycles): the units u with first <= u % period < first + count
    cost ``cycles`` instead."""
    period, first, count, per_edge = edges or (1, 0, 0, 0.0)

    def edges_below(u: int) -> int:
        return u // period * count + min(max(u % period - first, 0), count)

    share = -(-units // cores)
    worst = 0.0
    for core in range(cores):
        lo, hi = min(core * share, units), min(core * share + share, units)
        if lo < hi:
            strips = (hi - 1) // strip_units - lo // strip_units + 1
            edge = edges_below(hi) - edges_below(lo)
            worst = max(worst, (hi - lo - edge) * per_unit + edge * per_edge + strips * per_strip)
    return worst


def _row_cycles(k: int, w: int) -> float:
    """One row of ``w`` outputs summed in C (the edge rows, or the rows of 1 x 4 and single
    outputs when 4-row blocks would leave a core without work) and its store."""
    return EDGE_ROW + k * (EDGE_PER_K4 if w == 4 else w * EDGE_PER_MAC)


def _rows_k4_cycles(batch: int, m: int, n: int, cores: int) -> float:
    """The K = 4 rows path's formula on whole 4 x 4 blocks."""
    row_blocks = m // 4
    return FIXED_K4 + _busiest_core(batch * row_blocks * (n // 4), cores, 4 * ROW_K4, row_blocks, STRIP_K4)


def _blocks_cycles(batch: int, m: int, n: int, k: int, cores: int, unit: float, rows: bool = False,
                   packed: bool = False) -> float:
    """The formula on 4-row blocks (k >= 4), the last of m % 4 rows in C; an odd n's last column
    block priced whole."""
    w = _block_width(batch, m, n, cores, unit)
    if rows and m % 4 == 0 and k == 4 and w == 4 and unit == UNIT:
        return _rows_k4_cycles(batch, m, n, cores)
    row_blocks, col_blocks = -(-m // 4), -(-n // w)
    units = batch * row_blocks * col_blocks
    if units < cores:   # rows of 1 x 4, or single outputs, in C
        cw = 1 if batch * m * -(-n // 4) < cores else 4
        return FIXED + -(-batch * m * -(-n // cw) // cores) * _row_cycles(k, cw)
    block = BLOCK + 4 * w * unit + (UNIT_PER_K4 if w == 4 else UNIT_PER_K) * k
    edge = m % 4 * _row_cycles(k, w)
    if packed:   # column-major strips down a column block, each packing its panel first
        edges = (row_blocks, row_blocks - 1, 1, edge) if m % 4 else None
        per_k = PACK_PER_K if w == 2 else PACK_WORDS_PER_K4 if k % 4 == 0 else PACK_PER_K4
        return FIXED + _busiest_core(units, cores, block, row_blocks, PACK_STRIP + per_k * k, edges)
    edges = (units // batch, (row_blocks - 1) * col_blocks, col_blocks, edge) if m % 4 else None
    return FIXED + _busiest_core(units, cores, block, col_blocks, STRIP, edges)


def gemm_rq_cycles(batch: int, m: int, n: int, k: int, cores: int, unit: float = UNIT,
                   rows: bool = False, packed: bool = False) -> float | None:
    """Modelled kernel cycles of GemmRQ on ``batch`` x (m x k @ k x n) int8 operands in L1 on
    ``cores`` cores with the store ``unit`` per output (B transposed; ``packed``: a B input not
    transposed; ``rows``: that and an 8-bit output range one instruction clips to), or None when
    the call leaves the dot-product blocks somewhere."""
    if m % 4 or n % 2 or k < 4:
        return None
    if batch * m // 4 * (n // 2) < cores:
        return None
    return _blocks_cycles(batch, m, n, k, cores, unit, rows, packed or rows)


@lru_cache(maxsize=65536)
def gemm_rq_estimate(batch: int, m: int, n: int, k: int, cores: int, unit: float = UNIT, rows: bool = False,
                     packed: bool = False) -> float:
    """``gemm_rq_cycles`` where the call is on the assembly path, else the formula on the shape
    rounded up to whole blocks and even K (see the module docstring)."""
    exact = gemm_rq_cycles(batch, m, n, k, cores, unit, rows, packed)
    if exact is not None:
        return exact
    return _blocks_cycles(batch, m, n, max(k, 4), cores, unit, rows, packed or rows)


@dataclass(frozen=True)
class GemmTileCycles:
    """Compute cycles of one tile (extents of the dims B, M, N) of a GemmRQ layer with reduction
    ``k`` on ``cores`` cores and the store ``unit`` per output (``rows``: B an input, not transposed, an
    8-bit output range one instruction clips to): a LayerSpec's ``tile_cycles``."""

    k: int
    cores: int
    unit: float = UNIT
    rows: bool = False
    packed: bool = False

    def __call__(self, ext: Mapping[str, int]) -> int:
        return math.ceil(gemm_rq_estimate(ext.get("B", 1), ext["M"], ext["N"], self.k, self.cores, self.unit,
                                          self.rows, self.packed))


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
    packed = not p.trans_b
    if accumulator_type(_rq_bound(gemm_sum_bound, node, graph)).nbytes > 4:
        return GemmTileCycles(p.k, cores, UNIT_WIDE, packed=packed)
    if graph.tensors[node.outputs[0]].dtype.nbytes != 1:
        return GemmTileCycles(p.k, cores, UNIT_C, packed=packed)
    fp = node.params
    strides = [_gemm_rq_strides(fp, per) for per in (fp.rq.mul_per_channel, fp.rq.add_per_channel)]
    if any(st[2] for st in strides) or p.alpha != 1 or (c is not None and p.beta != 1):
        return GemmTileCycles(p.k, cores, UNIT_C, packed=packed)
    uniform = c is None and all(st[1] == 0 for st in strides)
    signed = graph.tensors[node.outputs[0]].dtype.signed          # the clip: cv.clipr, unsigned cv.clipur
    rows = packed and fp.rq.lo == (-fp.rq.hi - 1 if signed else 0)
    return GemmTileCycles(p.k, cores, UNIT if uniform else UNIT_BIAS, rows, packed)
