"""Marker ids and tile tables defined once (Deeploy/runtime/abi.py): the committed C headers
are exactly what the generator writes, no hand-written source defines the ids or the structs
again, the structs keep the runtime's binary layout, and the timing plugin builds with its header."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import replace

import pytest

from Deeploy.runtime import abi, abi_headers
from DeeployTest.test_suite.conftest import REPO

RV_GCC = shutil.which("riscv64-unknown-elf-gcc")


def test_committed_headers_are_what_the_generator_writes():
    assert abi_headers.stale_headers() == [], "run `python -m Deeploy.runtime.abi_headers`"
    for path, text in abi_headers.render_headers().items():
        first = text.splitlines()[0]
        assert "Generated from Deeploy/runtime/abi.py" in first and "do not edit" in first, path


def test_a_changed_definition_makes_the_headers_stale(tmp_path, monkeypatch):
    for path, text in abi_headers.render_headers().items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    assert abi_headers.stale_headers(tmp_path) == []
    marker = abi.MARKERS[2]
    monkeypatch.setattr(abi, "MARKERS", (replace(marker, value=marker.value + 0x200),) + abi.MARKERS[1:])
    assert set(abi_headers.stale_headers(tmp_path)) == {abi_headers.RUNTIME_HEADER, abi_headers.PLUGIN_HEADER}
    assert abi_headers.write_headers(tmp_path) and abi_headers.stale_headers(tmp_path) == []
    assert f"0x{marker.value + 0x200:03x}" in (tmp_path / abi_headers.PLUGIN_HEADER).read_text()


def test_check_mode_reports_a_stale_header(tmp_path, capsys):
    assert abi_headers.main(["--check"], repo=tmp_path) == 1
    assert "error:" in capsys.readouterr().err
    assert abi_headers.main([], repo=tmp_path) == 0 and abi_headers.main(["--check"], repo=tmp_path) == 0


def _hand_written_sources():
    generated = {REPO / p for p in abi_headers.render_headers()}
    for pattern in ("TargetLibraries/**/*.[ch]", "toolchain/qemu_plugin/*.[ch]", "Deeploy/**/*.mako"):
        for path in sorted(REPO.glob(pattern)):
            if path not in generated:
                yield path


def test_marker_ids_and_tile_structs_are_defined_once():
    names = {m.c_name for m in abi.MARKERS} | {name for name, _, _ in abi.TILE_LIMITS}
    structs = {s.c_name for s in abi.TILE_STRUCTS}
    found = []
    for path in _hand_written_sources():
        text = path.read_text(errors="replace")
        for m in re.finditer(r"#define\s+(\w+)\s+(\(?\s*0x[0-9a-fA-F]+|\(?\s*\d+)", text):
            if m.group(1) in names:
                found.append(f"{path.relative_to(REPO)}: {m.group(0)}")
        for m in re.finditer(r"}\s*(\w+)\s*;", text):
            if m.group(1) in structs and "typedef" in text:
                found.append(f"{path.relative_to(REPO)}: struct {m.group(1)}")
    assert found == []


def test_marker_ids_are_distinct_and_fit_the_immediate():
    ids = [m.value for m in abi.MARKERS if not m.count and not m.c_name.endswith(("_FIRST", "_LAST", "_BASE"))]
    assert len(ids) == len(set(ids))
    assert all(0 <= v < 0x800 for v in ids)
    assert abi.layer_marker(0) == 0x100 and abi.layer_marker(abi.LAYER_COUNT - 1) == 0x7FF
    with pytest.raises(ValueError, match="no marker id"):
        abi.layer_marker(abi.LAYER_COUNT)


def test_initializers_follow_the_member_order():
    text = abi.TILE_AXIS.initializer(dict(group_r=8, group_q=7, reverse=1, dim=-1, span=4, offset=3, stride=2,
                                          size=1))
    assert text == "{1, 2, 3, 4, -1, 1, 7, 8}"
    with pytest.raises(ValueError, match="missing"):
        abi.TILE_AXIS.initializer(dict(size=1))
    values = dict(home="h", axes="a", rank=1, elem=1, output=0, in_l3=0, copies=1, l1=["x"], staging="NULL")
    with pytest.raises(ValueError, match="1 values for 2 elements"):
        abi.TILE_OPERAND.initializer(values)
    assert abi.TILE_OPERAND.initializer({**values, "l1": ["x", "NULL"]}) == "{h, a, 1, 1, 0, 0, 1, {x, NULL}, NULL}"


# The tables' binary layout on RV32 (ilp32), as deeploy_tiling.c was written for.
LAYOUT = {
    "deeploy_tile_axis_t": (24, {"size": 0, "stride": 4, "offset": 8, "span": 12, "dim": 16, "reverse": 18,
                                 "group_q": 20, "group_r": 22}),
    "deeploy_tile_operand_t": (28, {"home": 0, "axes": 4, "rank": 8, "elem": 9, "output": 10, "in_l3": 11,
                                    "copies": 12, "l1": 16, "staging": 24}),
    "deeploy_tile_t": (56, {"cls": 0, "fill": 4, "buf": 8}),
    "deeploy_tiled_layer_t": (40, {"ndims": 0, "noperands": 1, "double_buffer": 2, "order": 4, "size": 8,
                                   "l2_tile": 12, "l1_tile": 16, "dim_class": 20, "class_radix": 24, "operands": 28,
                                   "kernel": 32, "engine_sync": 36}),
    "deeploy_tile_geometry_t": (28, {"row": 0, "rows": 4, "dst_stride": 8, "src_stride": 12, "planes": 16,
                                     "dst_plane_stride": 20, "src_plane_stride": 24}),
    "deeploy_tile_copy_t": (12, {"dst": 0, "src": 4, "geometry": 8, "handle": 9}),
    "deeploy_tile_step_t": (16, {"cls": 0, "loads": 2, "prefetch": 3, "stores": 4, "wait": 5, "reuse": 8,
                                 "slots": 12}),
    "deeploy_tile_plan_t": (32, {"ntiles": 0, "before": 2, "ncopies": 4, "noperands": 8, "ngeometries": 9,
                                 "wait_all": 10, "geometries": 12, "slots": 16, "steps": 20, "copies": 24,
                                 "kernel": 28}),
}


def test_struct_sizes_are_the_rv32_layout():
    from Deeploy.runtime.abi import TILE_STRUCTS
    assert {t.c_name: t.size() for t in TILE_STRUCTS} == {name: size for name, (size, _) in LAYOUT.items()}


@pytest.mark.skipif(RV_GCC is None, reason="RISC-V gcc missing: run bash toolchain/install.sh")
def test_tile_structs_keep_their_rv32_layout(tmp_path):
    checks = ["#include <stddef.h>", '#include "deeploy_abi.h"']
    for struct, (size, offsets) in LAYOUT.items():
        checks.append(f"_Static_assert(sizeof({struct}) == {size}, \"size of {struct}\");")
        for member, at in offsets.items():
            checks.append(f"_Static_assert(offsetof({struct}, {member}) == {at}, \"{struct}.{member}\");")
    src = tmp_path / "layout.c"
    src.write_text("\n".join(checks) + "\n")
    proc = subprocess.run([RV_GCC, "-march=rv32imfc", "-mabi=ilp32f", "-misa-spec=2.2", "--specs=picolibc.specs",
                           "-c", str(src), "-o", str(tmp_path / "l.o"), "-I", str(REPO / "TargetLibraries/Siracusa/inc")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.skipif(shutil.which("gcc") is None, reason="host gcc missing")
def test_timing_plugin_builds_with_its_generated_header(tmp_path):
    """The command of toolchain/install.sh."""
    src = REPO / "toolchain" / "qemu_plugin" / "deeploy_timing.c"
    assert '#include "deeploy_markers.h"' in src.read_text()
    proc = subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-fvisibility=hidden", "-Wall", "-Wextra", "-Werror",
                           "-o", str(tmp_path / "plugin.so"), str(src), "-lpthread"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_tile_limits_name_what_exceeds_the_runtime_tables():
    assert abi.check_tile_limits(abi.TILE_MAX_DIMS, [abi.TILE_MAX_RANK] * abi.TILE_MAX_OPERANDS) is None
    assert "9 iteration dims" in abi.check_tile_limits(9, [1])
    assert "13 operands" in abi.check_tile_limits(2, [1] * 13)
    assert "rank 9" in abi.check_tile_limits(2, [1, 9])
