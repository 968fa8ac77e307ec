"""Prototype headers of the kernel libraries, generated from the kernels' Python signatures,
and the parameter lists the C sources actually define (to check the two agree).

    python -m Deeploy.targets.kernel_headers          # (re)write every library's header
    python -m Deeploy.targets.kernel_headers --check  # fail if a header is stale or a source disagrees
"""

from __future__ import annotations

import argparse
import re
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

from Deeploy.platform import TARGET_LIBRARIES, Kernel
from Deeploy.signature import Signature, normalise_decl

__all__ = ["LibraryKernel", "header_path", "headers", "library_kernels", "render_header", "source_signature",
           "compare_source", "check_sources", "main"]

_WIDTH = 100


@dataclass(frozen=True)
class LibraryKernel:
    """A kernel of a library: its binding's Kernel and the folder holding its source."""

    kernel: Kernel
    library: str

    @property
    def path(self) -> Path:
        return TARGET_LIBRARIES / self.library / "kernels" / self.kernel.source


def header_path(library: str) -> Path:
    """Where a library's generated prototype header lives (beside its sources)."""
    return TARGET_LIBRARIES / library / "kernels" / f"deeploy_kernels_{library.lower()}.h"


def library_kernels() -> dict[str, list[LibraryKernel]]:
    """Every kernel any platform binds, by the library holding its source, sorted by name. A
    kernel name bound twice must mean the same source, type macros and signature."""
    from Deeploy.targets import platforms
    seen: dict[str, LibraryKernel] = {}
    for platform in platforms().values():
        for kernels in platform.bindings.values():
            for kernel in kernels:
                libs = [lib for lib in platform.libraries
                        if (TARGET_LIBRARIES / lib / "kernels" / kernel.source).is_file()]
                if not libs:
                    raise FileNotFoundError(f"kernel {kernel.name}: no library of {platform.name} holds "
                                            f"{kernel.source}")
                entry = LibraryKernel(kernel, libs[0])
                old = seen.setdefault(kernel.name, entry)
                if (old.kernel.source, old.kernel.types, old.kernel.signature, old.library) != \
                        (kernel.source, kernel.types, kernel.signature, entry.library):
                    raise ValueError(f"kernel name {kernel.name} is bound to two different definitions")
    out: dict[str, list[LibraryKernel]] = {}
    for name in sorted(seen, key=str.lower):
        out.setdefault(seen[name].library, []).append(seen[name])
    return out


# ---- the C sources' parameter lists ----

def _included(path: Path, name: str) -> Path:
    """The source ``path`` includes as ``name``: beside it, else in another library's kernels
    (the generated code puts every library's kernels in one folder)."""
    if (path.parent / name).is_file():
        return path.parent / name
    found = sorted(TARGET_LIBRARIES.glob(f"*/kernels/{name}"))
    if not found:
        raise FileNotFoundError(f"{path.name} includes {name}, which no kernel library holds")
    return found[0]


def _condition(expr: str, defines: set[str]) -> bool:
    """An ``#if`` expression of the kernel sources: ``defined(X)``, names (1 if defined, as a
    host compile without the platforms' flags sees them), ``__has_include`` (0), ``!``, ``&&``,
    ``||`` and parentheses."""
    expr = re.sub(r"__has_include\s*\([^)]*\)", "0", expr)
    expr = re.sub(r"defined\s*\(?\s*(\w+)\s*\)?", lambda m: "1" if m[1] in defines else "0", expr)
    expr = re.sub(r"[A-Za-z_]\w*", lambda m: "1" if m[0] in defines else "0", expr)
    expr = re.sub(r"!(?!=)", " not ", expr.replace("&&", " and ").replace("||", " or "))
    return bool(eval(expr, {"__builtins__": {}}))


def _preprocess(path: Path, defines: set[str]) -> str:
    """``path``'s text without comments, with the ``#ifdef``/``#ifndef`` branches ``defines``
    selects and the ``.inc`` sources it includes expanded (enough for the kernel sources)."""
    text = re.sub(r"/\*.*?\*/", " ", path.read_text(), flags=re.S)
    text = re.sub(r"//[^\n]*", "", text).replace("\\\n", " ")
    out, active = [], [True]
    for line in text.splitlines():
        m = re.match(r"\s*#\s*(\w+)\s*(.*)", line)
        if not m:
            if all(active):
                out.append(line)
            continue
        directive, rest = m[1], m[2].strip()
        word = rest.split()[0] if rest.split() else ""
        if directive in ("ifdef", "ifndef"):
            active.append((word in defines) == (directive == "ifdef"))
        elif directive == "if":
            active.append(_condition(rest, defines))
        elif directive == "elif":
            active[-1] = not active[-1] and _condition(rest, defines)
        elif directive == "else":
            active[-1] = not active[-1]
        elif directive == "endif":
            active.pop()
        elif not all(active):
            continue
        elif directive == "define":
            defines.add(word.split("(")[0])
        elif directive == "undef":
            defines.discard(word)
        elif directive == "include" and rest.endswith('.inc"'):
            out.append(_preprocess(_included(path, rest.strip('"')), defines))
    return "\n".join(out)


def source_signature(path: Path) -> tuple[bool, list[str]]:
    """(whether it is ``static inline``, the normalised parameter declarations) of the
    ``static void KERNEL(...)`` that kernel source ``path`` defines."""
    text = _preprocess(path, set())
    m = re.search(r"\bstatic\s+(inline\s+)?void\s+KERNEL\s*\(", text)
    if m is None:
        raise ValueError(f"{path.name}: defines no 'static void KERNEL(...)'")
    depth, k = 1, m.end()
    while depth:
        depth += {"(": 1, ")": -1}.get(text[k], 0)
        k += 1
    body = text[m.end():k - 1]
    decls = [normalise_decl(d) for d in body.split(",") if d.strip() and d.strip() != "void"]
    return bool(m[1]), decls


def compare_source(name: str, sig: Signature, path: Path, where: str = "") -> list[str]:
    """How the ``KERNEL`` that source ``path`` defines disagrees with kernel ``name``'s
    signature ``sig``: parameter count, declarations (type and name), ``static inline``."""
    where = where or path.name
    inline, decls = source_signature(path)
    ours = [p.decl for p in sig.params]
    problems = []
    if len(decls) != len(ours):
        problems.append(f"{where}: KERNEL has {len(decls)} parameters, the signature of {name} {len(ours)}")
    for k, (c, py) in enumerate(zip(decls, ours)):
        if c != py:
            problems.append(f"{where}: parameter {k} is '{c}', the signature of {name} says '{py}'")
    if inline != sig.inline:
        problems.append(f"{where}: KERNEL is {'' if inline else 'not '}static inline, unlike the signature of {name}")
    return problems


def check_sources() -> list[str]:
    """Every disagreement between a kernel's signature and the parameters its source defines."""
    return [problem for entries in library_kernels().values() for e in entries
            for problem in compare_source(e.kernel.name, e.kernel.signature, e.path,
                                          f"{e.library}/kernels/{e.kernel.source}")]


# ---- the headers ----

def _comment(lines: list[str]) -> list[str]:
    return ["/* " + lines[0]] + [(" * " + line).rstrip() for line in lines[1:]] + [" */"]


def _wrap(text: str, indent: str = "") -> list[str]:
    return textwrap.wrap(text, _WIDTH - 3, initial_indent="", subsequent_indent=indent) or [""]


def _scratch_lines(kernel: Kernel) -> list[str]:
    lines = []
    for rule, what in ((kernel.scratch, "per core"), (kernel.shared_scratch, "shared")):
        if rule is None:
            continue
        doc = " ".join((rule.__doc__ or "").split())
        if not doc:
            raise ValueError(f"kernel {kernel.name}: its scratch rule {rule.__name__} has no docstring")
        where = "one slice per core, core c's at c * bytes" if kernel.scratch is rule else "the shared argument"
        lines += _wrap(f"  {what} ({where}; {rule.__module__}.{rule.__name__}): {doc}", "    ")
    if kernel.scratch_optional:
        lines += _wrap("  optional: given NULL, the kernel runs without it, more slowly.", "    ")
    return ["Scratch:"] + lines if lines else ["Scratch: none."]


def _argument_lines(params) -> list[str]:
    """One line per documented parameter, naming with it the undocumented ones right before it."""
    lines, names = [], []
    for p in params:
        names.append(p.name)
        if p.doc:
            lines += _wrap(f"  {', '.join(names)}: {p.doc}", "    ")
            names = []
    if names:
        lines += _wrap(f"  {', '.join(names)}", "    ")
    return lines


def _prototype_macro(name: str, sig) -> list[str]:
    """``#define DEEPLOY_PROTOTYPE_<name>`` expanding to the prototype, wrapped."""
    head = sig.prototype()[:sig.prototype().index("(") + 1]
    decls = [p.decl for p in sig.params]
    rows, row = [], "    " + head
    for k, decl in enumerate(decls):
        piece = decl + (", " if k + 1 < len(decls) else ")")
        if len(row) + len(piece.rstrip()) > _WIDTH - 2 and row.strip() != head:
            rows.append(row.rstrip())
            row = " " * (4 + len(head))
        row += piece
    rows.append(row)
    return [f"#define DEEPLOY_PROTOTYPE_{name} \\"] + [r + " \\" for r in rows[:-1]] + [rows[-1]]


def _kernel_block(entry: LibraryKernel) -> list[str]:
    k, sig = entry.kernel, entry.kernel.signature
    macros = []
    bound = ", ".join(t for t in k.types if t)
    if bound:
        macros += _wrap(f"  {bound}: the element types of the node's operands, in order (inputs, then outputs)",
                        "    ")
    for macro, doc in sig.types.items():
        macros += _wrap(f"  {macro}: {doc}", "    ")
    lines = _wrap(f"{k.name} ({k.source}): {sig.doc}") + [""]
    lines += ["Type macros:"] + macros if macros else ["Type macros: none."]
    lines += _scratch_lines(k) + ["Arguments:"] + _argument_lines(sig.params)
    return _comment(lines) + _prototype_macro(k.name, sig)


def render_header(library: str, entries: list[LibraryKernel]) -> str:
    guard = f"DEEPLOY_KERNELS_{library.upper()}_H"
    example = entries[0].kernel
    intro = [
        f"Prototypes of the {library} kernel library ({library}/kernels/*.inc).",
        "Generated by `python -m Deeploy.targets.kernel_headers` from the kernels' signatures in",
        "Deeploy/targets; do not edit (`--check` fails when it is stale or a source disagrees).",
        "",
        "Every kernel is a type-generic static function: its source defines `static void KERNEL(...)`",
        "in terms of type macros. The generated code instantiates one variant per binding of them:",
        "it defines KERNEL (the variant's name, e.g. <kernel>_s8_s32) and the macros, then includes",
        "the source. DEEPLOY_PROTOTYPE_<kernel> expands to the same prototype, in terms of the same",
        "macros, to declare a variant before its definition:",
        f"    #define KERNEL {example.name}_variant",
        *[f"    #define {t} int8_t" for t in (example.types or ("T",))[:2]],
        "    ...",
        f"    DEEPLOY_PROTOTYPE_{example.name};",
        f"    #include \"{example.source}\"",
        "The first type macros are the element types of the node's operands in order (inputs, then",
        "outputs); the compiler computes the others (accumulators), as each kernel lists. A kernel",
        "called on several cores splits the work itself (common.h); scratch, where a kernel needs",
        "it, is reserved by the compiler with the byte counts given.",
    ]
    out = _comment(intro) + ["#ifndef " + guard, "#define " + guard, "", "#include <stdint.h>", ""]
    for entry in entries:
        out += _kernel_block(entry) + [""]
    out.append(f"#endif /* {guard} */")
    return "\n".join(out) + "\n"


def headers() -> dict[Path, str]:
    """Each library's header path and its fresh text."""
    return {header_path(lib): render_header(lib, entries) for lib, entries in library_kernels().items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only check the committed headers and the sources")
    args = parser.parse_args(argv)
    try:
        problems, fresh = check_sources(), headers()
    except (OSError, ValueError) as exc:     # a missing source, an unparsable one, an undocumented rule
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for path, text in fresh.items():
        if args.check:
            if not path.is_file() or path.read_text() != text:
                problems.append(f"{path.relative_to(TARGET_LIBRARIES.parent)} is out of date: run "
                                "python -m Deeploy.targets.kernel_headers")
        elif not path.is_file() or path.read_text() != text:
            path.write_text(text)
            print(f"wrote {path.relative_to(TARGET_LIBRARIES.parent)}")
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
