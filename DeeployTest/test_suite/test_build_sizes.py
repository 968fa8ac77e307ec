"""The code and memory size lines of every build (``Deeploy/analysis/sizes.py``): section sizes
read from the ELF files agree with binutils' ``size -A`` of the same files, and ``deeploy run``
prints them; the peak per level is the memory plan's."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from Deeploy.analysis.sizes import level_peaks, section_sizes
from Deeploy.cli import main
from Deeploy.manifest import read_manifest
from DeeployTest.test_suite.conftest import DEEPLOY_TEST

MODEL = DEEPLOY_TEST / "Tests" / "Models" / "miniMobileNetv2"
CODE = re.compile(r"^Code: \.text (\d+) B, \.rodata (\d+) B, \.data (\d+) B \(network library; program deeploy_test: "
                  r"\.text (\d+) B, \.rodata (\d+) B, \.data (\d+) B\)$", re.M)


def _size_tool(platform: str) -> str:
    tool = "size" if platform == "Generic" else "riscv64-unknown-elf-size"
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} not installed")
    return tool


def _binutils(tool: str, path: Path) -> Counter:
    """Section sizes by binutils, classified by name: .text* (and the host's .init/.fini/.plt*),
    *rodata*, and .data*/.sdata* that are not rodata."""
    sums = Counter()
    for line in subprocess.run([tool, "-A", str(path)], capture_output=True, text=True, check=True).stdout.splitlines():
        parts = line.split()
        if len(parts) != 3 or not parts[1].isdigit():
            continue
        name, size = parts[0], int(parts[1])
        if "rodata" in name:
            sums["rodata"] += size
        elif name.startswith((".text", ".plt")) or name in (".init", ".fini"):
            sums["text"] += size
        elif name.startswith((".data", ".sdata", ".tdata")):
            sums["data"] += size
    return sums


@pytest.mark.parametrize("platform", ["Generic", "Siracusa"])
def test_code_line_matches_binutils(tmp_path, capsys, platform):
    tool = _size_tool(platform)
    if platform != "Generic" and shutil.which("qemu-system-riscv32") is None:
        pytest.skip("QEMU missing")
    out = tmp_path / "out"
    assert main(["compile", str(MODEL / "network.onnx"), "--platform", platform, "-o", str(out),
                 "--emit-testbench"]) == 0
    capsys.readouterr()
    assert main(["run", str(out)]) == 0
    printed = capsys.readouterr().out
    found = CODE.search(printed)
    assert found, printed
    numbers = [int(n) for n in found.groups()]
    for path, (text, rodata, data) in ((out / "build" / "libdeeploy_network.a", numbers[:3]),
                                       (out / "build" / "deeploy_test", numbers[3:])):
        ref = _binutils(tool, path)
        assert (text, rodata, data) == (ref["text"], ref["rodata"], ref["data"]), (path, ref)
    assert numbers[1] >= 14824          # the network's constants are read-only data of the library
    peaks = level_peaks(read_manifest(out))
    assert re.search(r"^Memory: peak " + ", ".join(f"{n} {b} B" for n, b in peaks.items()) + r" \(memory plan\)$",
                     printed, re.M), printed


def test_level_peak_is_the_largest_live_sum(tmp_path):
    """The peak of a level counts buffers live at the same step only (hand-computed)."""
    from Deeploy.manifest import BufferInfo, LayerInfo, LevelInfo, Manifest
    layers = tuple(LayerInfo(k, f"n{k}", "Add", "k", "serial", True) for k in range(3))
    buffers = (BufferInfo("a", "L2", 0, 100, "activation", 0, 1), BufferInfo("b", "L2", 100, 40, "activation", 1, 2),
               BufferInfo("c", "L2", 0, 70, "activation", 2, 2), BufferInfo("w", "L3", 0, 9, "constant", 0, 2))
    m = Manifest("Generic", "x.onnx", 1, (LevelInfo("L2", None), LevelInfo("L3", None)), layers, buffers, (), ())
    assert level_peaks(m) == {"L2": 140, "L3": 9}


def test_section_sizes_of_a_non_elf_file_are_zero(tmp_path):
    path = tmp_path / "x.bin"
    path.write_bytes(b"not an elf file")
    assert section_sizes(path).text == 0
