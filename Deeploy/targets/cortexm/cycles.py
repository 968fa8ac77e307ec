"""The CortexM cycle model. QEMU has no cycle counter on these boards (the DWT's CYCCNT reads 0),
so the plugin ``toolchain/qemu_plugin/deeploy_arm_timing.c`` counts the executed instructions by
class and this module weighs them with the Cortex-M4 Technical Reference Manual's instruction
timings (ARM DDI 0439, table 3-1, zero wait states): every instruction 1 cycle, plus

- a branch's pipeline refill P (1 + P; P is 1..3 by the target's alignment and width: 2 taken
  here) for unconditional branches and calls, writes of pc, and conditional branches taken;
- a single load or store 2 cycles, but neighbouring ones pipeline (N in a row take N + 1);
- LDM/STM/PUSH/POP/LDRD/STRD/VLDM/VSTM 1 + N for N words;
- SDIV/UDIV 2..12 cycles by the operands (7 taken here); VDIV/VSQRT 14;
- multiplies, multiply-accumulates (MLA, SMLAL, the DSP extension's SMLAD...) and VFP
  arithmetic 1 (the M4's single-cycle MAC; VFP's VMLA/VFMA 3 are counted as 1);
- on the Cortex-M55, a 128-bit Helium (MVE) instruction 2 cycles (its two beats, specs/cortexm.md),
  low-overhead loop instructions 1; its scalar code is weighed with the M4's timings.

Left out: flash and SRAM wait states (the boards have none modelled), caches, bus contention,
the M55's overlap of consecutive MVE instructions' beats, interrupts."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from Deeploy.errors import DeeployError
from Deeploy.runtime.abi import LAYER_BASE, LAYER_COUNT, LAYER_END

__all__ = ["CortexMTiming", "M4_TIMING", "Record", "LayerCycles", "read_records", "record_cycles", "last_run"]


@dataclass(frozen=True)
class CortexMTiming:
    """Extra cycles per counted class (beyond the instruction's 1)."""

    refill: float = 2.0            # P of a taken branch (TRM: 1..3)
    load_store: float = 1.0        # a single load/store not pipelined with the previous one
    word: float = 1.0              # per word of a multiple load/store
    div: float = 6.0               # SDIV/UDIV: 2..12 cycles
    fdivsqrt: float = 13.0         # VDIV/VSQRT: 14 cycles
    mve: float = 1.0               # a Helium instruction's second beat (M55)

    def cycles(self, c: dict[str, int]) -> float:
        return (c["insns"] + self.refill * (c["taken"] + c["branch"]) + self.load_store * (c["ldst"] - c["pipelined"])
                + self.word * c["words"] + self.div * c["div"] + self.fdivsqrt * c["fdivsqrt"] + self.mve * c["mve"])


M4_TIMING = CortexMTiming()


@dataclass(frozen=True)
class Record:
    marker: int | None             # None: the record written at exit
    counts: dict[str, int]         # cumulative counts: insns and the plugin's classes


@dataclass(frozen=True)
class LayerCycles:
    layer: int                     # the layer's marker offset (LAYER_BASE + layer)
    cycles: float
    counts: dict[str, int]         # the layer's own counts


def read_records(path: Path) -> list[Record]:
    """The plugin's records (``deeploy_arm_timing.c`` documents the format)."""
    columns, records = None, []
    for line in Path(path).read_text().splitlines():
        if line.startswith("# columns "):
            columns = line.split()[2:]
        elif line and not line.startswith("#"):
            if columns is None:
                raise DeeployError(f"{path}: not a record file of the Cortex-M plugin")
            fields = line.split()
            values = dict(zip(columns, fields))
            marker = None if values["marker"] == "end" else int(values["marker"], 16)
            records.append(Record(marker, {k: int(v) for k, v in values.items() if k not in ("seq", "marker")}))
    return records


def record_cycles(a: Record, b: Record, timing: CortexMTiming) -> tuple[float, dict[str, int]]:
    """Modelled cycles and counts between records ``a`` and ``b``."""
    counts = {k: b.counts[k] - a.counts[k] for k in b.counts}
    return timing.cycles(counts), counts


def last_run(records: list[Record], timing: CortexMTiming) -> list[LayerCycles]:
    """Every layer of the last network run (between the last two layer-end markers) in order."""
    ends = [k for k, r in enumerate(records) if r.marker == LAYER_END]
    if not ends:
        return []
    start = ends[-2] + 1 if len(ends) > 1 else 0
    layers = []
    for k in range(start, ends[-1]):
        marker = records[k].marker
        if marker is not None and LAYER_BASE <= marker < LAYER_BASE + LAYER_COUNT:
            cycles, counts = record_cycles(records[k], records[k + 1], timing)
            layers.append(LayerCycles(marker - LAYER_BASE, cycles, counts))
    return layers
