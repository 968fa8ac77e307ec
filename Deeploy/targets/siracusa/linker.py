"""Memory map of the Siracusa virtual platform as a generated GNU ld script.

The memory levels of the platform description (name, size) become ld MEMORY regions carved out
of QEMU ``virt`` DRAM (which starts at 0x80000000), so a level that is too full fails at link
time with ld's ``region `L2' overflowed by N bytes``; :func:`link_error_message` turns that into
one clear line.

Placement (the section names are those of ``TargetLibraries/Siracusa/inc/deeploy_runtime.h``):

====  ===========================================================================================
L2    the entry stub (first, at the region origin where every hart starts), code,
      ``.deeploy_xpulp_stubs`` (XPULP_STUB_BYTES reserved for the PULP stubs QEMU runs), .rodata,
      ``.l2_rodata``, .data, TLS, .bss, ``.l2_bss``, ``.noinit`` (boot flag), the heap (the rest)
L1    ``.l1_bss``, then the stacks: hart 0 (fabric controller and cluster core 0) first, then one
      per worker hart 1..max_harts-1
L3    ``.l3_rodata``, ``.l3_bss``
X     any other level (e.g. an NPU weight memory ``WMEM``): ``.<x>_rodata`` (``x`` the name in
      lower case), constants loaded with the program like the rest (its own PT_LOAD segment),
      then ``.<x>_bss`` (NOLOAD: buffers written before they are read, never cleared)
====  ===========================================================================================

Every region starts on its own 256 MiB slot (L2 at 0x80000000, then the other levels in the
order given: Siracusa gives L1 at 0x90000000 and L3 at 0xA0000000), so addresses tell the level
at a glance and a runaway access lands outside every region. QEMU needs ``-m`` up to the end of
the last region plus 4 MiB for its device tree (:func:`qemu_ram_bytes`; ``Deeploy.targets.siracusa.qemu`` computes it from the
ELF). The script defines ``__deeploy_region_<NAME>_start`` / ``_end`` for every region, read
back from the ELF to tell the timing plugin the address ranges.

``.l1_bss``, ``.l2_bss`` and ``.l3_bss`` are NOLOAD; the runtime clears them on hart 0 before ``main``
(QEMU RAM is zero at reset anyway). The stacks are never cleared: worker harts use them
before hart 0 has initialised memory.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

__all__ = ["DRAM_BASE", "MAIN_STACK_BYTES", "MAX_HARTS", "WORKER_STACK_BYTES", "Region", "l1_reserved_bytes",
           "link_error_message", "linker_script", "memory_map", "qemu_ram_bytes", "write_default"]

DRAM_BASE = 0x8000_0000          # QEMU virt DRAM
DRAM_LIMIT = 0xC000_0000         # QEMU puts the device tree below min(end of RAM, 3 GiB)
QEMU_HEADROOM = 4 << 20          # RAM beyond the last region: QEMU's device tree (1 MiB, 2 MiB
                                 # aligned, just below the end of RAM) must not land in a region
SLOT = 0x1000_0000               # each level starts on its own 256 MiB boundary
MAX_HARTS = 8                    # stacks reserved for this many cluster cores
MAIN_STACK_BYTES = 8 * 1024      # hart 0: start-up, main(), printf, fork bodies on core 0
WORKER_STACK_BYTES = 2 * 1024    # harts 1..: forked functions (kernels), minus the TLS block
STACK_ALIGN = 16
XPULP_STUB_BYTES = 160 * 1024   # code reserved for the PULP extension's stubs (Deeploy/targets/pulp/stubs.py)

# What each level holds, for the error message.
_CONTENTS = {
    "L1": ".l1_bss (L1 buffers) and the core stacks",
    "L2": "code, rodata, data, bss, .l2_rodata (L2 constants) and .l2_bss (L2 buffers)",
    "L3": ".l3_rodata (L3 constants) and .l3_bss (L3 buffers)",
}


@dataclass(frozen=True)
class Region:
    name: str
    origin: int
    length: int

    @property
    def end(self) -> int:
        return self.origin + self.length


def _levels(levels: Iterable) -> list[tuple[str, int]]:
    """(name, size) pairs from MemoryLevel-like objects or tuples; sizes must be bounded."""
    out = []
    for level in levels:
        name, size = (level.name, level.size) if hasattr(level, "name") else (level[0], level[1])
        if size is None or int(size) <= 0:
            raise ValueError(f"memory level {name} needs a positive size for the linker script (got {size})")
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ValueError(f"memory level name '{name}' is not a valid ld region name")
        out.append((name, int(size)))
    names = [n for n, _ in out]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate memory level names: {names}")
    for required in ("L1", "L2"):
        if required not in names:
            raise ValueError(f"the Siracusa linker script needs a level named {required} (got {names})")
    return out


def memory_map(levels: Iterable) -> list[Region]:
    """Where each level lives in QEMU virt DRAM: L2 first (code starts there), then the others
    in the order given, each on its own 256 MiB slot."""
    lv = _levels(levels)
    ordered = [x for x in lv if x[0] == "L2"] + [x for x in lv if x[0] != "L2"]
    regions, base = [], DRAM_BASE
    for name, size in ordered:
        regions.append(Region(name, base, size))
        base += -(-size // SLOT) * SLOT
    if regions[-1].end + QEMU_HEADROOM > DRAM_LIMIT:
        raise ValueError(f"memory levels do not fit the 1 GiB of QEMU virt DRAM usable here: {lv}")
    return regions


def qemu_ram_bytes(levels_or_end: Iterable | int) -> int:
    """``-m`` QEMU needs (whole MiB): up to the end of the last region (given, or of these
    levels) plus room for the device tree QEMU places just below the end of RAM."""
    end = levels_or_end if isinstance(levels_or_end, int) else memory_map(levels_or_end)[-1].end
    return -(-(end + QEMU_HEADROOM - DRAM_BASE) // (1 << 20)) << 20


def l1_reserved_bytes(max_harts: int = MAX_HARTS, main_stack: int = MAIN_STACK_BYTES,
                      worker_stack: int = WORKER_STACK_BYTES) -> int:
    """L1 bytes the stacks take (the rest is for ``.l1_bss``): plan L1 buffers within
    ``L1 size - l1_reserved_bytes()`` (plus up to 15 bytes of alignment)."""
    return main_stack + (max_harts - 1) * worker_stack


def linker_script(levels: Sequence, *, max_harts: int = MAX_HARTS, main_stack: int = MAIN_STACK_BYTES,
                  worker_stack: int = WORKER_STACK_BYTES) -> str:
    """The ld script for these memory levels (objects with ``name``/``size`` or (name, size)
    pairs; L1 and L2 required, L3 optional: without it ``.l3_rodata`` goes to L2).

    ``max_harts`` stacks are reserved (hart 0 gets ``main_stack`` bytes, the others
    ``worker_stack``); harts with a higher id, or beyond ``DEEPLOY_NUM_CORES``, are parked.
    """
    if not 1 <= max_harts <= 512:
        raise ValueError(f"max_harts must be 1..512 (got {max_harts})")
    for what, v in (("main_stack", main_stack), ("worker_stack", worker_stack)):
        if v < 256 or v % STACK_ALIGN:
            raise ValueError(f"{what} must be a multiple of {STACK_ALIGN} and at least 256 bytes (got {v})")
    regions = memory_map(levels)
    names = {r.name for r in regions}
    has_l3 = "L3" in names
    l3_rodata = """
  .l3_rodata : ALIGN(16) {
    *(.l3_rodata .l3_rodata.*)
  } > %s :%s
"""
    l3_bss = """
  .l3_bss (NOLOAD) : ALIGN(16) {
    __deeploy_l3_bss_start = .;
    *(.l3_bss .l3_bss.*)
    . = ALIGN(16);
    __deeploy_l3_bss_end = .;
  } > L3 :l3
"""
    in_l2 = "" if has_l3 else "  /* no L3 level: L3 constants and buffers in L2 */" + l3_rodata % ("L2", "rodata")
    l2_bss_l3 = "" if has_l3 else "\n    *(.l3_bss .l3_bss.*)"
    l2_bss_l3_syms = "" if has_l3 else "\n  __deeploy_l3_bss_start = __deeploy_l2_bss_end;\n  __deeploy_l3_bss_end = __deeploy_l2_bss_end;"
    in_l3 = (l3_rodata % ("L3", "l3") + l3_bss) if has_l3 else ""
    l3_phdr = "\n  l3 PT_LOAD FLAGS(6);" if has_l3 else ""
    extra = [r.name for r in regions if r.name not in ("L1", "L2", "L3")]
    extra_phdrs = "".join(f"\n  {n.lower()} PT_LOAD FLAGS(4);" for n in extra)
    in_extra = "".join(f"""
  .{n.lower()}_rodata : ALIGN(32) {{
    *(.{n.lower()}_rodata .{n.lower()}_rodata.*)
  }} > {n} :{n.lower()}
  .{n.lower()}_bss (NOLOAD) : ALIGN(32) {{
    *(.{n.lower()}_bss .{n.lower()}_bss.*)
  }} > {n} :{n.lower()}
""" for n in extra)

    memory = "\n".join(f"  {r.name:<4} (rwx) : ORIGIN = 0x{r.origin:08X}, LENGTH = 0x{r.length:X}"
                       f"  /* {r.length} bytes */" for r in regions)
    region_syms = "\n".join(f"__deeploy_region_{r.name}_start = ORIGIN({r.name});\n"
                            f"__deeploy_region_{r.name}_end = ORIGIN({r.name}) + LENGTH({r.name});"
                            for r in regions)
    # the runtime's entry checks that QEMU's RAM reaches this far (its device tree lies above)
    region_syms += f"\n__deeploy_ram_needed = 0x{max(r.origin + r.length for r in regions):08X};"
    sizes = "; ".join(f"{r.name} {r.length} B" for r in regions)
    return f"""\
/* Generated by Deeploy.targets.siracusa.linker: memory map of the Siracusa virtual platform
 * (QEMU virt, {sizes}). Do not edit: regenerate from the platform description. */
OUTPUT_ARCH("riscv")
ENTRY(_deeploy_entry)
EXTERN(_deeploy_entry)

MEMORY
{{
{memory}
}}

{region_syms}
__deeploy_max_harts = {max_harts};
__deeploy_main_stack_size = {main_stack};
__deeploy_worker_stack_size = {worker_stack};

PHDRS
{{
  text PT_LOAD FLAGS(5);
  rodata PT_LOAD FLAGS(4);
  data PT_LOAD FLAGS(6);
  tls PT_TLS;
  l1 PT_LOAD FLAGS(6);{l3_phdr}{extra_phdrs}
}}

SECTIONS
{{
  /* ---- L2: code first; every hart starts at the origin of L2 (the ELF entry) ---- */
  .text : {{
    KEEP(*(.text.deeploy_entry))
    KEEP(*(.text.init.enter))
    KEEP(*(.data.init.enter))
    KEEP(*(SORT_BY_NAME(.init) SORT_BY_NAME(.init.*)))
    *(.text.unlikely .text.unlikely.*)
    *(.text.startup .text.startup.*)
    *(.text .text.*)
    *(.gnu.linkonce.t.*)
    KEEP(*(.fini .fini.*))
    __text_end = .;
    PROVIDE(__etext = __text_end);
    PROVIDE(_etext = __text_end);
    PROVIDE(etext = __text_end);
  }} > L2 :text

  /* reserved for the PULP extension's stubs, which Deeploy/targets/pulp/stubs.py writes into the
     image QEMU runs (within jal range of the code) */
  .deeploy_xpulp_stubs : ALIGN(4) {{
    BYTE(0)
    . += {XPULP_STUB_BYTES - 1:#x};
  }} > L2 :text

  .rodata : {{
    *(.rdata)
    *(.rodata .rodata.*)
    *(.gnu.linkonce.r.*)
    *(.srodata.cst16) *(.srodata.cst8) *(.srodata.cst4) *(.srodata.cst2)
    *(.srodata .srodata.*)
    *(.data.rel.ro .data.rel.ro.*)
    *(.got .got.*)
    . = ALIGN(8);
    PROVIDE_HIDDEN(__preinit_array_start = .);
    KEEP(*(.preinit_array))
    PROVIDE_HIDDEN(__preinit_array_end = .);
    PROVIDE_HIDDEN(__init_array_start = .);
    KEEP(*(SORT_BY_INIT_PRIORITY(.init_array.*) SORT_BY_INIT_PRIORITY(.ctors.*)))
    KEEP(*(.init_array .ctors))
    PROVIDE_HIDDEN(__init_array_end = .);
    PROVIDE_HIDDEN(__fini_array_start = .);
    KEEP(*(SORT_BY_INIT_PRIORITY(.fini_array.*) SORT_BY_INIT_PRIORITY(.dtors.*)))
    KEEP(*(.fini_array .dtors))
    PROVIDE_HIDDEN(__fini_array_end = .);
  }} > L2 :rodata

  .l2_rodata : ALIGN(16) {{
    *(.l2_rodata .l2_rodata.*)
  }} > L2 :rodata
{in_l2}
  /* .data is loaded in place by QEMU (VMA = LMA), so picolibc's copy is a no-op */
  .data : ALIGN(8) {{
    *(.data .data.*)
    *(.gnu.linkonce.d.*)
    . = ALIGN(8);
    PROVIDE(__global_pointer$ = . + 0x800);
    *(.sdata .sdata.* .sdata2.*)
    *(.gnu.linkonce.s.*)
  }} > L2 :data
  PROVIDE(__data_start = ADDR(.data));
  PROVIDE(__data_source = LOADADDR(.data));

  .tdata : ALIGN(8) {{
    *(.tdata .tdata.* .gnu.linkonce.td.*)
    PROVIDE(__data_end = .);
    PROVIDE(__tdata_end = .);
  }} > L2 :data :tls
  PROVIDE(__tls_base = ADDR(.tdata));
  PROVIDE(__tdata_start = ADDR(.tdata));
  PROVIDE(__tdata_source = LOADADDR(.tdata));
  PROVIDE(__tdata_source_end = LOADADDR(.tdata) + SIZEOF(.tdata));
  PROVIDE(__data_source_end = __tdata_source_end);
  PROVIDE(__tdata_size = SIZEOF(.tdata));
  PROVIDE(__edata = __data_end);
  PROVIDE(_edata = __data_end);
  PROVIDE(edata = __data_end);
  PROVIDE(__data_size = __data_end - __data_start);
  PROVIDE(__data_source_size = __data_source_end - __data_source);

  .tbss (NOLOAD) : {{
    *(.tbss .tbss.* .gnu.linkonce.tb.*)
    *(.tcommon)
    PROVIDE(__tls_end = .);
    PROVIDE(__tbss_end = .);
  }} > L2 :data :tls
  PROVIDE(__bss_start = ADDR(.tbss));
  PROVIDE(__tbss_start = ADDR(.tbss));
  PROVIDE(__tbss_offset = ADDR(.tbss) - ADDR(.tdata));
  PROVIDE(__tbss_size = SIZEOF(.tbss));
  PROVIDE(__tls_size = __tls_end - __tls_base);
  PROVIDE(__tls_align = MAX(ALIGNOF(.tdata), ALIGNOF(.tbss)));
  /* ld does not advance the location counter over .tbss: make room for it */
  .tbss_space (NOLOAD) : {{
    . = ADDR(.tbss);
    . = . + SIZEOF(.tbss);
  }} > L2 :data

  .bss (NOLOAD) : {{
    *(.sbss*)
    *(.gnu.linkonce.sb.*)
    *(.bss .bss.*)
    *(.gnu.linkonce.b.*)
    *(COMMON)
    . = ALIGN(8);
    __bss_end = .;
  }} > L2 :data
  PROVIDE(__non_tls_bss_start = ADDR(.bss));
  PROVIDE(__bss_size = __bss_end - __bss_start);

  .l2_bss (NOLOAD) : ALIGN(16) {{
    __deeploy_l2_bss_start = .;
    *(.l2_bss .l2_bss.*){l2_bss_l3}
    . = ALIGN(16);
    __deeploy_l2_bss_end = .;
  }} > L2 :data{l2_bss_l3_syms}

  /* never cleared: the boot flag the worker harts wait for (RAM is zero at reset) */
  .noinit (NOLOAD) : ALIGN(8) {{
    *(.noinit .noinit.*)
    . = ALIGN(16);
  }} > L2 :data
  PROVIDE(__end = .);
  PROVIDE(_end = .);
  PROVIDE(end = .);
  PROVIDE(__heap_start = .);
  PROVIDE(__heap_end = ORIGIN(L2) + LENGTH(L2));
  PROVIDE(__heap_size = __heap_end - __heap_start);

  /* ---- L1: buffers, then the stacks of hart 0 and of the worker harts ---- */
  .l1_bss (NOLOAD) : ALIGN(16) {{
    __deeploy_l1_bss_start = .;
    *(.l1_bss .l1_bss.*)
    . = ALIGN(16);
    __deeploy_l1_bss_end = .;
  }} > L1 :l1

  .l1_stacks (NOLOAD) : ALIGN(16) {{
    __deeploy_stacks_start = .;
    . += {main_stack};
    __stack = .;                         /* hart 0: picolibc's start-up sets sp here */
    __deeploy_worker_stack_base = .;     /* hart h >= 1: sp = base + h * worker stack size */
    . += {(max_harts - 1) * worker_stack};
    __deeploy_stacks_end = .;
  }} > L1 :l1

{in_l3}{in_extra}
  /DISCARD/ : {{
    *(.note .note.*)
    *(.eh_frame .eh_frame.*)
  }}

  .comment 0 : {{ *(.comment) }}
  .riscv.attributes 0 : {{ KEEP(*(.riscv.attributes)) }}
  .debug          0 : {{ *(.debug) }}
  .debug_aranges  0 : {{ *(.debug_aranges) }}
  .debug_info     0 : {{ *(.debug_info .gnu.linkonce.wi.*) }}
  .debug_abbrev   0 : {{ *(.debug_abbrev) }}
  .debug_line     0 : {{ *(.debug_line .debug_line.* .debug_line_end) }}
  .debug_frame    0 : {{ *(.debug_frame) }}
  .debug_str      0 : {{ *(.debug_str) }}
  .debug_loc      0 : {{ *(.debug_loc) }}
  .debug_ranges   0 : {{ *(.debug_ranges) }}
  .debug_line_str 0 : {{ *(.debug_line_str) }}
  .debug_loclists 0 : {{ *(.debug_loclists) }}
  .debug_rnglists 0 : {{ *(.debug_rnglists) }}
}}

ASSERT(__data_size == __data_source_size, "ERROR: .data/.tdata sizes do not match")
"""


_OVERFLOW = re.compile(r"region [`'](\w+)' overflowed by (\d+) bytes")
_SECTION = re.compile(r"section [`']([^']+)' will not fit in region [`'](\w+)'")


def link_error_message(ld_output: str, levels: Iterable | None = None) -> str | None:
    """One clear line for ld's region overflow messages in ``ld_output`` (the linker's or the
    build's output), or None if there is none. ``levels`` gives the sizes to quote."""
    over: dict[str, int] = {}
    for name, n in _OVERFLOW.findall(ld_output):
        over[name] = max(over.get(name, 0), int(n))
    if not over:
        return None
    sizes = dict(_levels(levels)) if levels is not None else {}
    sections: dict[str, list[str]] = {}
    for sec, region in _SECTION.findall(ld_output):
        sections.setdefault(region, [])
        if sec not in sections[region]:
            sections[region].append(sec)
    parts = []
    for name, n in over.items():
        size = f" ({sizes[name]} bytes)" if name in sizes else ""
        what = _CONTENTS.get(name, f"the sections placed in {name}")
        detail = f"; sections that did not fit: {', '.join(sections[name])}" if name in sections else ""
        hint = {"L1": "; use smaller L1 tiles or fewer/smaller stacks",
                "L2": "; the code lives beside the data (tiled: --l2 budgets the data): give a smaller --l2 "
                      "so that constants move to L3, or --defaultMemLevel L3, or use a smaller network",
                "L3": "; use a smaller network"}.get(name, "")
        parts.append(f"network does not fit {name}{size}: over by {n} bytes; {name} holds {what}{detail}{hint}")
    return " | ".join(parts)


def write_default(argv: list[str] | None, platform: str, script: Callable[[Sequence], str] | None = None) -> int:
    """``-o FILE``: write the linker script (``script``, default this module's) of ``platform``'s
    memory levels, or of ``--level NAME=BYTES`` levels; the file keeps its timestamp if unchanged."""
    import argparse
    p = argparse.ArgumentParser(description=f"Write the {platform} virtual-platform linker script")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--level", action="append", default=[], metavar="NAME=BYTES",
                   help=f"a memory level (default: {platform}'s)")
    a = p.parse_args(argv)
    levels = [(s.split("=")[0], int(s.split("=")[1], 0)) for s in a.level]
    if not levels:  # the platform description is the one home of the sizes
        from Deeploy.targets import get_platform
        levels = list(get_platform(platform).memory)
    text = (script or linker_script)(levels)
    from pathlib import Path
    out = Path(a.output)
    if not out.is_file() or out.read_text() != text:   # keep the timestamp if unchanged
        out.write_text(text)
    return 0


def main(argv: list[str] | None = None) -> int:
    return write_default(argv, "Siracusa")


if __name__ == "__main__":
    sys.exit(main())
