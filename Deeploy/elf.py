"""Reading ELF files without external tools: the section headers (ELF32/64, either byte order)
and the symbol table of 32-bit little-endian programs."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import NamedTuple

from Deeploy.errors import DeeployError

__all__ = ["Section", "sections", "symbols"]

_SHT_SYMTAB = 2


class Section(NamedTuple):
    name: str
    kind: int        # sh_type
    flags: int
    offset: int
    size: int
    link: int
    entsize: int
    addr: int = 0    # sh_addr


def sections(data: bytes) -> list[Section]:
    """The section headers of an ELF image, named; [] for data that is no ELF image."""
    if data[:4] != b"\x7fELF":
        return []
    wide, end = data[4] == 2, "<" if data[5] == 1 else ">"
    if wide:
        (shoff,) = struct.unpack_from(end + "Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from(end + "HHH", data, 0x3A)
        header = end + "IIQQQQIIQQ"
    else:
        (shoff,) = struct.unpack_from(end + "I", data, 0x20)
        shentsize, shnum, shstrndx = struct.unpack_from(end + "HHH", data, 0x2E)
        header = end + "IIIIIIIIII"
    raw = [struct.unpack_from(header, data, shoff + k * shentsize) for k in range(shnum)]
    if not raw:
        return []
    strtab = raw[shstrndx][4]
    return [Section(data[strtab + name_at:data.index(b"\0", strtab + name_at)].decode(errors="replace"),
                    kind, flags, offset, size, link, entsize, addr)
            for name_at, kind, flags, addr, offset, size, link, _info, _align, entsize in raw]


def symbols(elf: str | Path) -> dict[str, int]:
    """Name -> value of the symbols of a 32-bit little-endian ELF file."""
    data = Path(elf).read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 1 or data[5] != 1:
        raise DeeployError(f"{elf}: not a 32-bit little-endian ELF file")
    table = sections(data)
    out: dict[str, int] = {}
    for s in table:
        if s.kind != _SHT_SYMTAB:
            continue
        names = table[s.link].offset
        for k in range(s.size // (s.entsize or 16)):
            st_name, st_value = struct.unpack_from("<II", data, s.offset + k * (s.entsize or 16))
            out[data[names + st_name:data.index(b"\0", names + st_name)].decode()] = st_value
    return out
