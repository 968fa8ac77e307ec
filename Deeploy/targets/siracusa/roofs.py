"""Siracusa's roofs for the roofline report (``Deeploy/analysis/roofs.py``), derived from the
virtual platform's cycle model (``TIMING``, ``timing.TimingModel``: parameters and sources):

- cluster peak, integer layers: the most ops an instruction of the cores does is a 4-way int8 dot
  product with accumulate of the PULP DSP extension (4 multiply-accumulates, 8 counted ops:
  ``cv.sdotsp.b``, the int8 GEMM's inner loop), and a core retires at most one instruction per
  ``base_cpi`` cycles: ``8 * cores / base_cpi`` ops per cycle (64 on 8 cores). Measured layers
  reach less (loads, address arithmetic and loop control are instructions too);
- cluster peak, float layers (a float output): one ``fmadd.s`` (2 ops) per FPU and cycle, the
  cores sharing ``fpus`` FPUs (``fpu_of_core``): ``2 * min(cores, fpus)`` ops per cycle (8 on 8
  cores), ``2 * cores / base_cpi`` with a private FPU per core (``fpus`` 0);
- tiled layers: their tiles come through a DMA engine, one queue for both directions: the
  cluster DMA at ``dma_bandwidth`` bytes per cycle (L2 <-> L1), the L3 DMA at
  ``l3_dma_bandwidth`` (L3 <-> L2);
- untiled layers: the cores access the level directly: L1 serves ``l1_banks`` words per cycle,
  the cluster's path to L2 one word access per ``l2_path_cycles`` (the contention bound of every
  fork phase), L3 one word per ``base_cpi + l3_latency`` cycles per core."""

from __future__ import annotations

from Deeploy.analysis.roofs import Roof, Roofs
from Deeploy.targets.siracusa.platform import SIRACUSA, TIMING

__all__ = ["ROOFS", "cluster_peak", "cluster_bandwidth", "measured_cycles"]

WORD = 4   # bytes of the widest integer load/store of RV32


def _is_float(layer, graph) -> bool:
    dtype = graph.tensors[layer.node.outputs[0]].dtype
    return dtype is not None and dtype.is_float


def cluster_peak(layer, graph, cores: int) -> Roof:
    n = cores if layer.engine.forked else 1
    what = f"{n} PULP core{'s' if n != 1 else ''}"
    if _is_float(layer, graph):
        fpus = min(n, TIMING.fpus) if TIMING.fpus else n
        return Roof(f"{layer.engine.name} float ({fpus} FPU{'s' if fpus != 1 else ''})", 2 * fpus / TIMING.base_cpi,
                    f"{what} sharing {fpus} FPU{'s' if fpus != 1 else ''}, one fmadd.s (2 ops) per FPU and "
                    f"instruction, CPI {TIMING.base_cpi:g}")
    return Roof(f"{layer.engine.name} ({n} core{'s' if n != 1 else ''})", 8 * n / TIMING.base_cpi,
                f"{what}, one 4-way int8 dot product (cv.sdotsp.b: 8 ops) per instruction, CPI {TIMING.base_cpi:g}")


def cluster_bandwidth(level: str, tiled: bool, layer=None) -> Roof:
    if tiled:
        if level == "L3":
            return Roof("L3 DMA", TIMING.l3_dma_bandwidth, f"L3 DMA (HyperBus) {TIMING.l3_dma_bandwidth:g} B/cycle, "
                        "one queue for both directions")
        return Roof(f"{level} DMA", TIMING.dma_bandwidth, f"cluster DMA {TIMING.dma_bandwidth:g} B/cycle, "
                    "one queue for both directions")
    if level == "L1":
        return Roof("L1 banks", TIMING.l1_banks * WORD, f"{TIMING.l1_banks} TCDM banks, one word access per cycle each")
    if level == "L3":
        n = SIRACUSA.max_cores
        return Roof("L3 direct", n * WORD / (TIMING.base_cpi + TIMING.l3_latency),
                    f"{n} cores, one word per {TIMING.base_cpi + TIMING.l3_latency:g} cycles each")
    return Roof(f"{level} path", WORD / TIMING.l2_path_cycles,
                f"the cluster's path to {level}: one word access per {TIMING.l2_path_cycles:g} cycles")


ROOFS = Roofs(engine_peak=cluster_peak, bandwidth=cluster_bandwidth)


def measured_cycles(timing, manifest) -> dict[int, list[tuple[float, float]]]:
    """(start, cycles) of every occurrence of each marked layer in a run (``TimingResult`` of the
    last network run), by layer index: a rolled region's body layers carry the first iteration's
    markers and occur once per iteration (``roofline.spread_iterations`` gives them back)."""
    from Deeploy.runtime.abi import LAYER_BASE
    out: dict[int, list[tuple[float, float]]] = {}
    for lt in timing.layers:
        info = manifest.layer_of_marker(LAYER_BASE + lt.layer)
        if info is not None:
            out.setdefault(info.index, []).append((lt.start, lt.cycles))
    return out
