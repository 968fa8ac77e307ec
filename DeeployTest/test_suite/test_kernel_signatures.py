"""Kernel signatures: each kernel source's ``static void KERNEL(...)`` has the parameters (count,
types, names) of its Python signature; the committed prototype headers equal a fresh
generation and their prototypes compile against the sources; calls are rendered from the
signature."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from mako.template import Template

from Deeploy.targets.kernel_headers import (compare_source, header_path, headers, library_kernels, main,
                                            source_signature)
from Deeploy.platform import TARGET_LIBRARIES
from Deeploy.signature import Signature, param, params

ENTRIES = [e for entries in library_kernels().values() for e in entries]


def test_every_library_with_kernels_has_a_header():
    assert {e.library for e in ENTRIES} == {"Generic", "Siracusa", "Neureka", "NE16"}
    assert len(ENTRIES) >= 30


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.kernel.name for e in ENTRIES])
def test_source_parameters_match_signature(entry):
    inline, decls = source_signature(entry.path)
    assert decls == [p.decl for p in entry.kernel.signature.params]
    assert inline == entry.kernel.signature.inline


def test_source_parser_reads_the_c_text(tmp_path):
    """Spacing, comments, ``restrict``, arrays, included sources and #ifdef branches."""
    (tmp_path / "body.inc").write_text(
        "/* a kernel */\nstatic void KERNEL(const TA *restrict a,   /* first */\n"
        "#ifdef EXTRA\n                   int64_t extra,\n#else\n                   int32_t plain,\n#endif\n"
        "                   const uint32_t dims[6], TY* y) {\n    (void)a;\n}\n")
    (tmp_path / "with_extra.inc").write_text('#define EXTRA 1\n#include "body.inc"\n#undef EXTRA\n')
    assert source_signature(tmp_path / "body.inc") == (
        False, ["const TA *restrict a", "int32_t plain", "const uint32_t dims[6]", "TY *y"])
    assert source_signature(tmp_path / "with_extra.inc")[1][1] == "int64_t extra"


def _sig(*decls: str) -> Signature:
    return Signature("test", tuple(param(d, "${0}") for d in decls))


def test_disagreements_are_reported(tmp_path):
    src = tmp_path / "k.inc"
    src.write_text("static void KERNEL(const TA *restrict a, uint32_t n, int32_t lo) {}\n")
    assert compare_source("K", _sig("const TA *restrict a", "uint32_t n", "int32_t lo"), src) == []
    swapped = compare_source("K", _sig("const TA *restrict a", "int32_t lo", "uint32_t n"), src)
    assert len(swapped) == 2 and "parameter 1 is 'uint32_t n'" in swapped[0]
    missing = compare_source("K", _sig("const TA *restrict a", "uint32_t n"), src)
    assert missing == ["k.inc: KERNEL has 3 parameters, the signature of K 2"]
    retyped = compare_source("K", _sig("const TB *restrict a", "uint32_t n", "int32_t lo"), src)
    assert retyped == ["k.inc: parameter 0 is 'const TA *restrict a', the signature of K says 'const TB *restrict a'"]


def test_committed_headers_are_fresh():
    fresh = headers()
    assert set(fresh) == {header_path("Generic"), header_path("Siracusa"), header_path("Neureka"), header_path("NE16")}
    for path, text in fresh.items():
        assert path.read_text() == text, f"{path.name} is stale: run python -m Deeploy.targets.kernel_headers"
    assert main(["--check"]) == 0


def test_check_fails_on_a_stale_header(monkeypatch, capsys):
    path = header_path("Generic")
    real = Path.read_text
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: real(self, *a, **k) + ("x" if self == path else ""))
    assert main(["--check"]) == 1
    assert "deeploy_kernels_generic.h is out of date" in capsys.readouterr().err


def test_header_documents_every_kernel_and_its_scratch():
    text = header_path("Generic").read_text()
    for e in ENTRIES:
        if e.library == "Generic":
            assert f"#define DEEPLOY_PROTOTYPE_{e.kernel.name} \\" in text
    conv = text[text.index("/* Conv2d (conv2d.inc)"):text.index("#define DEEPLOY_PROTOTYPE_Conv2d")]
    assert "Scratch:" in conv and "_conv_patch_bytes" in conv and "receptive field" in conv
    softmax = text[text.index("/* iSoftmax (isoftmax.inc)"):text.index("#define DEEPLOY_PROTOTYPE_iSoftmax")]
    assert "_isoftmax_table_bytes" in softmax and "optional" in softmax
    assert "Scratch: none." in text[text.index("/* Gemm (gemm.inc)"):text.index("#define DEEPLOY_PROTOTYPE_Gemm")]


_TYPES = ["int8_t", "uint8_t", "int16_t", "int32_t", "uint16_t", "int64_t", "uint32_t", "uint64_t"]


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
@pytest.mark.parametrize("library", ["Generic", "Siracusa"])
def test_header_prototypes_compile_against_the_sources(library, tmp_path):
    """Each kernel declared with its DEEPLOY_PROTOTYPE_ macro, then defined by its source, each
    type macro a different C type: a C compiler rejects any prototype that disagrees."""
    lines = ['#include "common.h"', f'#include "{header_path(library).name}"']
    for e in ENTRIES:
        if e.library != library:
            continue
        macros = [t for t in e.kernel.types if t] + [t for t in e.kernel.signature.types if t not in e.kernel.types]
        ctypes = dict(zip(macros, _TYPES * 2))
        for m in macros:      # a macro the source defines itself (e.g. TB as TA): the same definition
            own = re.search(rf"^#define {m} (\w+)", e.path.read_text(), re.M)
            if own:
                ctypes[m] = own[1]
        lines.append(f"#define KERNEL {e.kernel.name}_check")
        lines += [f"#define {m} {t}" for m, t in ctypes.items()]
        lines += [f"DEEPLOY_PROTOTYPE_{e.kernel.name};", f'#include "{e.kernel.source}"', "#undef KERNEL"]
        lines += [f"#undef {m}" for m in ctypes]
    (tmp_path / "check.c").write_text("\n".join(lines) + "\n")
    dirs = ["-I", str(TARGET_LIBRARIES / "Generic" / "kernels"), "-I", str(TARGET_LIBRARIES / library / "kernels")]
    run = subprocess.run(["gcc", "-std=c11", "-fsyntax-only", "-Wno-unused-function", *dirs, str(tmp_path / "check.c")],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]


def test_call_is_rendered_from_the_signature():
    sig = Signature("test", (param("const TA *restrict a", "${x}"), params("uint32_t d#", "${dims[#]}", 3)),
                    setup="<% dims = [7, 8, 9] %>", around="\n% for x in ('p', 'q'):\n{call}\n% endfor")
    text = Template(sig.template, strict_undefined=True).render(fn="K_s8").strip()
    assert text.splitlines() == ["K_s8(p, 7, 8, 9);", "K_s8(q, 7, 8, 9);"]
    assert sig.prototype() == "static void KERNEL(const TA *restrict a, uint32_t d0, uint32_t d1, uint32_t d2)"


@pytest.mark.parametrize("around", ["${fn}(a);", "no call here", "{call} {call}"])
def test_around_cannot_make_its_own_call(around):
    with pytest.raises(ValueError):
        Signature("test", (param("int32_t a", "1"),), around=around)


def test_repeated_parameter_names_are_rejected():
    with pytest.raises(ValueError):
        _sig("int32_t a", "uint32_t a")


@pytest.mark.parametrize("arg", ["${a}, ${b}", "1, 2", "${x} + 1, 0"])
def test_an_argument_is_one_c_argument(arg):
    with pytest.raises(ValueError):
        param("int32_t a", arg)
    assert param("int32_t a", "f(${a}, ${b})").arg == "f(${a}, ${b})"
