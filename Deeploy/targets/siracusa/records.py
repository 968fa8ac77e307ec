"""The timing plugin's record files (``toolchain/qemu_plugin``), read into typed records.

The plugin writes one record per marker instruction (format in
``toolchain/qemu_plugin/deeploy_timing.c``)::

    # columns hart seq marker insns L2_ld L2_st L1_ld L1_st L3_ld L3_st other_ld other_st
    0 4 0x010 54682 36 9507 10 20 0 0 2 0

with counters cumulative per hart and excluding the runtime's wait regions, plus one line per DMA
transfer and per DMA wait (``TargetLibraries/Siracusa/inc/deeploy_dma.h``)::

    # dma-columns dma hart seq engine index commands rows L2_rd L2_wr L1_rd L1_wr ... other_rd other_wr
    dma 0 17 0 3 1 64 2048 0 0 2048 0 0 0 0
    # wait-columns wait hart seq engine transfer retired
    wait 0 21 0 3 1

each attached to the hart's record ``seq`` (the marker closing the issue or wait window).
Files of version 3 append to every record the instruction classes (``taken jump mulh div loaduse
misaligned fpu fdivsqrt``, in newer files also the PULP extension's ``simd postinc hwloop mac``
and the RTL-measured ``target32 jrdep fsqrt``)
and the L1 accesses per TCDM bank (``bank0`` .. ``bank15``) after ``other_st``; they are part of
``counters`` (named by ``Records.extra``), older files have none.
A run with a banked L1 of its own geometry (the plugin's ``l1map``) adds the columns ``l1_group_ld l1_remote_ld``
and one line per phase of a fork, attached to hart 0's record closing it::

    phase 17 40 2048      # seq, most accesses of one L1 bank, all L1 bank accesses
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from Deeploy.runtime.abi import DMA_ISSUE_END, DMA_WAIT_END

__all__ = ["Record", "DmaRecord", "WaitRecord", "Records", "read_records"]


class Record(NamedTuple):
    """One plugin record: a hart's cumulative counters when it reached a marker
    (``marker`` None: the final record written at exit). A named tuple: a run has hundreds of
    thousands."""

    hart: int
    seq: int
    marker: int | None
    counters: tuple[int, ...]   # insns, (loads, stores) per region and other, then Records.extra

    @property
    def insns(self) -> int:
        return self.counters[0]


@dataclass(frozen=True)
class DmaRecord:
    """One DMA transfer as the plugin saw it, issued by ``hart`` at its record ``seq``."""

    hart: int
    seq: int
    engine: int
    index: int                   # among the hart's transfers on this engine: 0, 1, ...
    commands: int                # hardware commands (1-D or 2-D; one per plane of a 3-D copy)
    rows: int                    # contiguous rows
    read: tuple[int, ...]        # bytes read per region (regions of the file, "other" last)
    written: tuple[int, ...]     # bytes written per region

    @property
    def bytes(self) -> int:
        return sum(self.written)


@dataclass(frozen=True)
class WaitRecord:
    """One DMA wait: ``transfer`` is the index of the newest transfer it waited for (None: all
    already waited for), ``retired`` how many transfers it retired."""

    hart: int
    seq: int
    engine: int
    transfer: int | None
    retired: int


@dataclass(frozen=True)
class Records:
    regions: tuple[str, ...]               # region names in column order, "other" last
    by_hart: dict[int, list[Record]]
    dma: dict[tuple[int, int], DmaRecord] = field(default_factory=dict)     # by (hart, seq)
    waits: dict[tuple[int, int], WaitRecord] = field(default_factory=dict)  # by (hart, seq)
    extra: tuple[str, ...] = ()            # counter columns after the regions' (classes, banks)
    # hierarchical L1: hart 0's record closing a phase -> (most accesses of one bank, all accesses)
    phases: dict[int, tuple[int, int]] = field(default_factory=dict)

    def column(self, name: str) -> int | None:
        """Index in ``Record.counters`` of an extra counter column, None if the file has none."""
        return 1 + 2 * len(self.regions) + self.extra.index(name) if name in self.extra else None

    def final(self, hart: int) -> Record:
        return self.by_hart[hart][-1]


def _counters(lines: list[tuple[int, list[str]]], width: int) -> list[tuple[int, ...]]:
    """The ``width`` counters of every record line: parsed by numpy all at once when every line
    has them as ``width`` integers parted by single spaces (a run has hundreds of thousands of
    lines), else line by line, naming a line with other fields."""
    texts = [f[3] if len(f) > 3 else "" for _, f in lines]
    joined = " ".join(texts)
    if "\t" not in joined and all(t.count(" ") == width - 1 for t in texts):
        try:
            values = np.fromstring(joined, dtype=np.int64, sep=" ")
        except ValueError:   # a field that is no integer
            values = None
        if values is not None and values.size == len(texts) * width and \
                (not values.size or -2**63 < values.min() and values.max() < 2**63 - 1):   # none saturated
            return list(map(tuple, values.reshape(len(texts), width).tolist()))
    for (lineno, f), text in zip(lines, texts):
        if len(text.split()) != width:
            raise ValueError(f"line {lineno}: expected {3 + width} fields, got {len(f[:3]) + len(text.split())}")
    return [tuple(map(int, text.split())) for text in texts]


def read_records(source: str | Path) -> Records:
    """Parse a plugin record file (a path, or the text itself if it contains a newline)."""
    text = source if isinstance(source, str) and "\n" in source else Path(source).read_text()
    regions: tuple[str, ...] | None = None
    extra: tuple[str, ...] = ()
    by_hart: dict[int, list[Record]] = {}
    dma_lines: list[tuple[int, list[str]]] = []
    wait_lines: list[tuple[int, list[str]]] = []
    phases: dict[int, tuple[int, int]] = {}
    record_lines: list[tuple[int, list[str]]] = []   # (line number, [hart, seq, marker, counters])
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        if line.startswith("#"):
            words = line[1:].split()
            if words and words[0] == "columns":
                cols = words[1:]
                end = cols.index("other_st") + 1 if "other_st" in cols else len(cols)
                if cols[:4] != ["hart", "seq", "marker", "insns"] or end % 2 or \
                        any(not c.endswith("_ld") for c in cols[4:end:2]) or \
                        any(not c.endswith("_st") for c in cols[5:end:2]):
                    raise ValueError(f"line {lineno}: unexpected columns {cols}")
                regions = tuple(c[:-3] for c in cols[4:end:2])
                extra = tuple(cols[end:])
            elif words[:2] == ["plugin", "error:"]:
                raise ValueError(f"line {lineno}: the timing plugin reports a DMA protocol error: {line[1:].strip()}")
            continue
        if regions is None:
            raise ValueError(f"line {lineno}: record before the '# columns' header")
        f = line.split(None, 3)   # a record's counters are parsed all at once below
        if f[0] in ("dma", "wait", "phase"):
            f = line.split()
        if f[0] == "dma":
            if len(f) != 7 + 2 * len(regions):
                raise ValueError(f"line {lineno}: expected {7 + 2 * len(regions)} fields in a dma line, got {len(f)}")
            dma_lines.append((lineno, f))
            continue
        if f[0] == "wait":
            if len(f) != 6:
                raise ValueError(f"line {lineno}: expected 6 fields in a wait line, got {len(f)}")
            wait_lines.append((lineno, f))
            continue
        if f[0] == "phase":
            if len(f) != 4:
                raise ValueError(f"line {lineno}: expected 4 fields in a phase line, got {len(f)}")
            phases[int(f[1])] = (int(f[2]), int(f[3]))
            continue
        record_lines.append((lineno, f))
    if regions is None:
        raise ValueError("no '# columns' header: not a deeploy timing record file")
    for (_, f), counters in zip(record_lines, _counters(record_lines, 1 + 2 * len(regions) + len(extra))):
        hart = int(f[0])
        by_hart.setdefault(hart, []).append(Record(hart, int(f[1]), None if f[2] == "end" else int(f[2], 0), counters))
    for hart, recs in by_hart.items():
        recs.sort(key=lambda r: r.seq)
        if [r.seq for r in recs] != list(range(len(recs))):
            raise ValueError(f"hart {hart}: record sequence numbers are not 0..{len(recs) - 1}")

    def anchor(lineno: int, hart: int, seq: int, marker: int, what: str) -> None:
        recs = by_hart.get(hart, [])
        if not 0 <= seq < len(recs) or recs[seq].marker != marker:
            raise ValueError(f"line {lineno}: {what} line for hart {hart} record {seq}, which is not a 0x{marker:03x} "
                             f"marker record")

    dma: dict[tuple[int, int], DmaRecord] = {}
    next_index: dict[tuple[int, int], int] = {}
    for lineno, f in dma_lines:
        v = [int(x) for x in f[1:]]
        d = DmaRecord(v[0], v[1], v[2], v[3], v[4], v[5], tuple(v[6::2]), tuple(v[7::2]))
        anchor(lineno, d.hart, d.seq, DMA_ISSUE_END, "dma")
        if d.index != next_index.get((d.hart, d.engine), 0):
            raise ValueError(f"line {lineno}: hart {d.hart} engine {d.engine}: transfer {d.index} out of order")
        next_index[(d.hart, d.engine)] = d.index + 1
        if sum(d.read) != sum(d.written) or d.commands < 1 or d.rows < d.commands:
            raise ValueError(f"line {lineno}: inconsistent transfer (read {sum(d.read)} bytes, wrote "
                             f"{sum(d.written)}, {d.commands} commands, {d.rows} rows)")
        dma[(d.hart, d.seq)] = d
    waits: dict[tuple[int, int], WaitRecord] = {}
    for lineno, f in wait_lines:
        hart, seq, engine, transfer, retired = (int(x) for x in f[1:])
        anchor(lineno, hart, seq, DMA_WAIT_END, "wait")
        if (transfer < 0) != (retired == 0) or retired < 0:
            raise ValueError(f"line {lineno}: inconsistent wait (transfer {transfer}, retired {retired})")
        waits[(hart, seq)] = WaitRecord(hart, seq, engine, transfer if transfer >= 0 else None, retired)
    return Records(regions, dict(sorted(by_hart.items())), dma, waits, extra, phases)
