"""Kernel calls as typed values: a call template renders to ``CallParts``, its own text and the
value of every ``${...}`` expression, in order. Joined, they are the call's C; rolled code compares
the parts of every iteration and turns the values that differ into reads of per-iteration tables
(``codegen/rolled.py``), so nothing reads rendered C back."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from mako.runtime import Context
from mako.template import Template

__all__ = ["Value", "CallParts", "CArray", "Unsigned", "c_int", "render_parts"]


def c_int(v: int) -> str:
    """A C literal of integer ``v`` valid for any int64 (and uint64) value."""
    v = int(v)
    if -2**31 < v < 2**31:
        return str(v)
    if v == -2**31:
        return "(-2147483647 - 1)"
    if v == -2**63:
        return "(-9223372036854775807LL - 1)"
    return f"{v}LL" if v < 2**63 else f"{v}ULL"


class Unsigned(int):
    """An integer argument written as an unsigned literal (``12u``)."""

    def __str__(self) -> str:
        return f"{int(self)}u"


@dataclass(frozen=True)
class CArray:
    """A constant array argument, declared in the call's block: ``static const T name[n] = {...};``."""

    ctype: str
    name: str
    values: tuple[int, ...]

    def __str__(self) -> str:
        values = self.values or (0,)
        return f"static const {self.ctype} {self.name}[{len(values)}] = {{{', '.join(map(c_int, values))}}};"


@dataclass(frozen=True)
class Value:
    """The value of one ``${...}`` expression of a call template."""

    v: object

    def __str__(self) -> str:
        return str(self.v)


CallParts = tuple   # of str (the template's own text) and Value, in order


class _Parts:
    """A Mako output buffer keeping what is written as it comes."""

    def __init__(self):
        self.parts: list = []

    def write(self, part) -> None:
        if isinstance(part, Value) or part:
            self.parts.append(part)

    def getvalue(self) -> str:
        return "".join(map(str, self.parts))


@functools.lru_cache(maxsize=None)
def _template(text: str) -> Template:
    return Template(text, strict_undefined=True, default_filters=["_value"],
                    imports=["from Deeploy.codegen.c_values import Value as _value"])


def render_parts(text: str, **ctx) -> CallParts:
    """The parts of call template ``text`` rendered with ``ctx``, leading and trailing blank
    text dropped (``"".join(map(str, parts))`` is the call's C)."""
    buf = _Parts()
    _template(text).render_context(Context(buf, **ctx))
    parts = list(buf.parts)
    while parts and isinstance(parts[0], str) and not parts[0].strip():
        parts.pop(0)
    while parts and isinstance(parts[-1], str) and not parts[-1].strip():
        parts.pop()
    if parts and isinstance(parts[0], str):
        parts[0] = parts[0].lstrip()
    if parts and isinstance(parts[-1], str):
        parts[-1] = parts[-1].rstrip()
    return tuple(parts)
