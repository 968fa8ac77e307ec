"""The Siracusa cluster's synchronisation and shared units: the cluster code has no atomics (the
cores have no A extension; the runtime follows the event unit with plain loads and stores), and
the cycle model's 4 FPUs shared by 8 cores and one div/sqrt unit bound what 8 cores gain
(TargetLibraries/Siracusa/examples/fpu_demo.c on 1 and 8 cores under QEMU)."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from Deeploy.targets.siracusa.qemu import run_elf
from Deeploy.targets.siracusa.timing import SIRACUSA_TIMING, model_cycles
from DeeployTest.test_suite.conftest import DEEPLOY_TEST
from DeeployTest.test_suite.test_compiler_defects import needs_qemu, run_siracusa
from DeeployTest.test_suite.test_virtual_platform import _demo_module, _missing, needs_toolchain

OBJDUMP = "riscv64-unknown-elf-objdump"
FPU, INT, DIV = 0, 1, 2   # layers of fpu_demo.c


def atomic_words(elf: Path) -> list[str]:
    """The AMO, LR and SC instructions of an ELF's code: 32-bit words of major opcode 0x2f (read
    from the raw words: a disassembler for the ELF's own ISA would not name them)."""
    out = subprocess.run([OBJDUMP, "-d", str(elf)], capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        fields = line.split("\t")
        if len(fields) >= 2 and fields[0].rstrip().endswith(":") and len(fields[1].strip()) == 8:
            if int(fields[1].strip(), 16) & 0x7F == 0x2F:
                found.append(line.strip())
    return found


@pytest.fixture(scope="module")
def fpu_demo(tmp_path_factory):
    """fpu_demo built and run on 1 and 8 cores: {cores: (elf, run)}."""
    if _missing:
        pytest.skip(f"virtual-platform toolchain missing ({', '.join(_missing)}): run `bash toolchain/install.sh`")
    mod = _demo_module()
    base = tmp_path_factory.mktemp("fpu_demo")
    out = {}
    for n in (1, 8):
        elf = mod.build_demo(base / f"cores{n}", n, target="fpu_demo")
        out[n] = (elf, run_elf(elf, n, timeout=60, records=base / f"records{n}.txt"))
    return out


def test_atomic_words_are_found(tmp_path):
    if shutil.which("riscv64-unknown-elf-gcc") is None:
        pytest.skip("RISC-V toolchain missing: run bash toolchain/install.sh")
    src = tmp_path / "amo.c"
    src.write_text("unsigned c; void f(void) { __atomic_fetch_add(&c, 1, __ATOMIC_SEQ_CST); }\n")
    obj = tmp_path / "amo.o"
    subprocess.run(["riscv64-unknown-elf-gcc", "-march=rv32imac", "-mabi=ilp32", "-O2", "-c", str(src), "-o",
                    str(obj)], check=True)
    assert atomic_words(obj)


@needs_toolchain
def test_demo_elfs_have_no_atomics(fpu_demo):
    for n, (elf, run) in fpu_demo.items():
        assert run.exit_code == 0, run.stdout
        assert atomic_words(elf) == [], f"{n} cores"


@needs_qemu
def test_multi_core_network_passes_without_atomics(tmp_path, capsys):
    # a requantised Add on 8 cores: its cores fill a table, meet at a barrier, then look it up
    folder = tmp_path / "Add_RQ"
    shutil.copytree(DEEPLOY_TEST / "Tests" / "Kernels" / "Add" / "Regular_RQ", folder)
    run_siracusa(folder, capsys, cores=8)
    (build,) = folder.glob("gen_siracusa_*/build")
    assert atomic_words(build / "deeploy_test") == []
    assert any(f.cores == 8 and f.phases > 1 for f in model_cycles(build / "records.txt").forks)


@needs_toolchain
def test_shared_fpus_bound_what_eight_cores_gain(fpu_demo):
    for n, (_elf, run) in fpu_demo.items():
        assert run.exit_code == 0 and f"fpu 16384 int 16384 div 512 cores {n}" in run.stdout, run.stdout

    def gain(layer, model=SIRACUSA_TIMING):
        one, eight = (model_cycles(fpu_demo[n][1].records, model).per_layer()[layer] for n in (1, 8))
        return one / eight

    # 4 FPUs for 8 cores: floating-point code gains at most 4x, integer code about 8x
    assert 3.5 < gain(FPU) <= 4.0
    assert 7.5 < gain(INT) <= 8.0
    # one divider for the cluster: nothing gained
    assert 0.95 < gain(DIV) < 1.1
    # private FPUs and dividers (fpus=0): floating-point code scales as integer code
    private = replace(SIRACUSA_TIMING, fpus=0)
    assert 7.5 < gain(FPU, private) <= 8.0 and gain(DIV, private) > 6.5
