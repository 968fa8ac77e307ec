"""Shared-resource contention of the cluster cores within one barrier-separated phase of a fork.

The plugin counts, per core, its accesses to L2 and its L1 accesses per TCDM bank (record
columns ``L2_ld L2_st`` and ``bank0`` .. ``bank15``). Within a phase the cores run concurrently,
so the phase cannot end before every shared resource has served all of the phase's accesses:

* an L1 bank serves one access per cycle: at least ``max over banks of (sum over cores of the
  bank's accesses)`` cycles. Eight cores hammering one bank thus take 8 cycles per round of
  accesses, eight cores on eight banks 1; this is a throughput bound (accesses to a bank are
  served in any order, round-robin as the TCDM interconnect does), not a replay of the cores'
  streams in lock-step;
* the cluster's path to L2 serves one core access per ``l2_path_cycles``: at least ``sum over
  cores of L2 accesses * l2_path_cycles`` cycles. The latency of each access is in the cores'
  own cost (``l2_latency``); the DMA's share of the path is modelled by its own engine queue
  (``timing.py``), not charged here: a transfer issued in a phase may run on after the barrier
  (the barrier does not wait for it), so its bytes do not bound the phase that issued it;
* each shared FPU performs one operation per cycle for the cores mapped to it
  (``TimingModel.fpu_of_core``): at least ``max over FPUs of (sum over its cores of fpu +
  fdivsqrt operations)`` cycles; the cluster's one div/sqrt unit is busy ``1 +
  fdivsqrt_cycles`` per operation: at least that times all cores' fdiv/fsqrt. Two cores issuing
  floating-point operations back to back on one FPU thus take twice as long (``fpus`` 0: private
  FPUs, no bound).

With the plugin's ``l1map`` (MemPool, Snitch: more banks than the 16 per-core columns) the
plugin itself sums the phase's accesses per bank over the cores (``Records.phases``, keyed by core
0's record closing the phase), which gives the first bound directly.

The phase lasts ``max(slowest core, these bounds)`` (``timing.model_cycles``). Parameters and
sources: ``TimingModel`` (``l1_banks``, ``l2_path_cycles``, ``fpus``, ``fdivsqrt_cycles``).
"""

from __future__ import annotations

from Deeploy.targets.siracusa.records import Records

__all__ = ["phase_floor"]


def phase_floor(model, recs: Records, bounds: dict[int, tuple[int, int]]) -> float:
    """Fewest cycles the shared resources need for a phase under ``model`` (a ``TimingModel``):
    ``bounds`` maps each core to its (first record, closing record) of the phase
    (``timing._phase_bounds``)."""
    if len(bounds) < 2:
        return 0.0
    floor = 0.0
    # per core: its counters closing the phase and before it (the phase's counts are their differences)
    cores = [(h, recs.by_hart[h][c].counters, recs.by_hart[h][f - 1].counters) for h, (f, c) in bounds.items()]
    banks = [recs.column(f"bank{b}") for b in range(model.l1_banks)]
    if recs.phases and 0 in bounds:
        floor = recs.phases.get(bounds[0][1], (0, 0))[0]
    elif all(i is not None for i in banks):
        floor = max(sum(end[i] - start[i] for _, end, start in cores) for i in banks)
    if "L2" in recs.regions:
        ld = 1 + 2 * recs.regions.index("L2")
        l2 = sum(end[ld] - start[ld] + end[ld + 1] - start[ld + 1] for _, end, start in cores)
        floor = max(floor, l2 * model.l2_path_cycles)
    fpu, div = recs.column("fpu"), recs.column("fdivsqrt")
    if model.fpus and fpu is not None and div is not None:
        ops = [0] * model.fpus
        divs = 0
        for h, end, start in cores:
            d = end[div] - start[div]
            ops[model.fpu_of_core(h)] += end[fpu] - start[fpu] + d
            divs += d
        floor = max(floor, max(ops), divs * (model.base_cpi + model.fdivsqrt_cycles))
    return float(floor)
