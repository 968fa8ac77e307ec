"""Typed C signatures of the kernels: the ordered parameters of ``static void KERNEL(...)``
(C type in terms of the kernel's type macros, name, and how a node's argument is rendered),
from which a node's call statement and the libraries' prototype headers are generated.

An argument is a Mako fragment over the context the code generator renders calls with:
``x``/``y`` (the node's input/output buffers, each with ``ptr``, ``shape``, ``size``,
``dtype``, ``nbytes``), ``p`` (the node's params), ``node``, ``fn`` (the variant's C name),
``scratch`` (this core's working memory) and ``shared`` (memory all cores share), plus
whatever the signature's ``setup`` and ``around`` define."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["CALL", "FILL", "Param", "Signature", "param", "params", "normalise_decl"]

CALL = "{call}"   # where ``Signature.around`` places the call statement

_DECL = re.compile(r"^(?P<type>.*?)\b(?P<name>[A-Za-z_]\w*)\s*(?P<array>\[[^\]]*\])?$")


def normalise_decl(decl: str) -> str:
    """A C parameter declaration with canonical spacing, e.g. ``const TA *restrict a``."""
    tokens = re.findall(r"[A-Za-z_]\w*|\d+|\S", decl)
    text = ""
    for tok in tokens:
        word = tok[0].isalnum() or tok[0] == "_"
        if text and word and (text[-1].isalnum() or text[-1] == "_"):
            text += " "
        elif text and tok == "*" and text[-1] != "*":
            text += " "
        text += tok
    return text


def _top_level_comma(fragment: str) -> bool:
    """Whether the C text a Mako fragment renders has a comma outside parentheses, i.e. would
    pass several arguments (the text of ``${...}`` expressions is not known here)."""
    depth, k, text = 0, 0, ""
    while k < len(fragment):
        if fragment.startswith("${", k):
            k += 2
            depth += 1
            while depth:
                depth += {"{": 1, "}": -1}.get(fragment[k], 0)
                k += 1
            continue
        text += fragment[k]
        k += 1
    depth = 0
    for ch in text:
        depth += {"(": 1, ")": -1, "[": 1, "]": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            return True
    return False


@dataclass(frozen=True)
class Param:
    """One parameter: its declaration (``const TA *restrict a``), the Mako fragment rendering
    its argument for a node, and a short description for the header (which also describes the
    undescribed parameters right before it)."""

    decl: str
    arg: str
    doc: str = ""

    def __post_init__(self):
        object.__setattr__(self, "decl", normalise_decl(self.decl))
        if _DECL.match(self.decl) is None:
            raise ValueError(f"not a C parameter declaration: '{self.decl}'")
        if _top_level_comma(self.arg):
            raise ValueError(f"argument '{self.arg}' of '{self.decl}' is more than one C argument")

    @property
    def name(self) -> str:
        return _DECL.match(self.decl)["name"]

    @property
    def ctype(self) -> str:
        """The parameter's type, its name left out (``const uint32_t[6]`` for an array)."""
        m = _DECL.match(self.decl)
        return normalise_decl(m["type"]) + (m["array"] or "")


def param(decl: str, arg: str, doc: str = "") -> Param:
    """One parameter: ``param("const TA *restrict a", "${x[0].ptr}", "first operand")``."""
    return Param(decl, arg, doc)


# The argument of a kernel that fills tables in its shared scratch: the render context's ``fill``
# (codegen/calls.py: 1, or a tiled layer's tile->fill, 0 once an earlier call of the tile class filled them).
FILL = param("uint32_t fill", "${fill}", "1: fill the shared tables; 0: an earlier call of the tiled layer did")


def params(decl: str, arg: str, count: int, doc: str = "") -> tuple[Param, ...]:
    """``count`` parameters numbered 0..count-1: ``#`` in ``decl`` and ``arg`` is the number,
    e.g. ``params("uint32_t d#", "${dims[#]}", 4)``; ``doc`` describes the group (it is given
    to the last: a parameter's description covers the undescribed ones right before it)."""
    return tuple(Param(decl.replace("#", str(k)), arg.replace("#", str(k)), doc if k == count - 1 else "")
                 for k in range(count))


def _flatten(items) -> tuple[Param, ...]:
    """Parameters given singly or in (nested) groups, in order."""
    out: list[Param] = []
    for item in items:
        out.extend(_flatten(item) if isinstance(item, tuple) else (item,))
    return tuple(out)


@dataclass(frozen=True)
class Signature:
    """What a kernel computes (``doc``), its parameters in order, and how its call is made.

    ``setup``: Mako run before the call (imports, ``<% %>`` blocks computing arguments);
    ``around``: Mako text holding the call statement once, at ``{call}`` (a loop over the batch,
    a block declaring argument arrays, a branch skipping empty outputs); the statement itself
    is always ``fn(arg0, arg1, ...);`` rendered from ``params``. ``types``: the type macros the
    binding computes (beyond the operands' element types), each with what it is. ``inline``:
    the source defines it ``static inline``."""

    doc: str
    params: tuple[Param, ...]
    setup: str = ""
    around: str = CALL
    types: dict[str, str] = field(default_factory=dict)
    inline: bool = False

    def __post_init__(self):
        object.__setattr__(self, "params", _flatten(self.params))
        names = [p.name for p in self.params]
        if len(set(names)) != len(names):
            raise ValueError(f"repeated parameter names in {names}")
        if self.around.count(CALL) != 1 or "${fn}" in self.around + self.setup:
            raise ValueError("'around' must hold the call exactly once, and only the signature renders it")

    @property
    def statement(self) -> str:
        """The Mako text of the call statement: ``${fn}(arg0, arg1, ...);``."""
        return "${fn}(" + ", ".join(p.arg for p in self.params) + ");"

    @property
    def template(self) -> str:
        """The Mako template of the whole call (setup, then the statement in its surroundings)."""
        return self.setup + self.around.replace(CALL, self.statement)

    def prototype(self, name: str = "KERNEL") -> str:
        """The C prototype, in terms of the type macros."""
        static = "static inline void" if self.inline else "static void"
        return f"{static} {name}(" + ", ".join(p.decl for p in self.params) + ")"
