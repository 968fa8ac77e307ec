"""CortexM: the peer's Cortex-M CI list bit-exact on the Cortex-M4 board with modelled cycles, the
Cortex-M55 board, the cycle-count plugin's classes on a hand-written loop, the one-line error of a
network that does not fit the board, and deeploy compile/run --platform CortexM (the DSP and
Helium kernels: test_cortexm_kernels.py)."""

from __future__ import annotations

import argparse
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from Deeploy.cli import main as deeploy
from Deeploy.errors import DeeployError
from Deeploy.manifest import read_manifest
from Deeploy.targets.cortexm.cycles import M4_TIMING, read_records, record_cycles
from Deeploy.targets.cortexm.runner import run_elf
from Deeploy.targets.cortexm.platform import CORTEX_M4, linker_script
from DeeployTest.generators.builder import Net
from DeeployTest.generators.golden import write_test
from DeeployTest.testUtils.runner import RunnerPlatform, run_test

CORTEXM = RunnerPlatform("CortexM", "TEST_CORTEXM")
pytestmark = pytest.mark.skipif(shutil.which("qemu-system-arm") is None or shutil.which("arm-none-eabi-gcc") is None,
                                reason="Arm toolchain or QEMU missing: run bash toolchain/install.sh")

# the peer's Cortex-M CI list (its DeeployTest/test_cortexm_config.py; specs/cortexm.md)
PEER_CI = ("Add/Regular", "Add/MultIO", "Pad/Regular_1D", "Pad/Regular_2D", "MatMul/Regular", "MatMul/Add",
           "MaxPool/Regular_2D", "Conv/Regular_2D_RQ", "ReduceSum", "ReduceMean", "Slice")


def run_cortexm(test: Path, gen: Path, capsys, cpu: str = "cortex-m4", **flags) -> str:
    """The test folder on the core ``cpu``'s board: bit-exact, with modelled cycles; its output."""
    args = argparse.Namespace(**{"test": str(test), "verbose": False, "skipgen": False, "skipsim": False,
                                 "gen_dir": str(gen), "cpu": cpu, "profileUntiled": False, "timeout": None,
                                 **flags})
    code = run_test(args, CORTEXM, {"platform_options": {"cpu": cpu}})
    out = capsys.readouterr().out
    assert code == 0 and "Errors: 0 out of" in out and "Runtime: " in out, out
    return out


@pytest.mark.parametrize("case", PEER_CI)
def test_peer_ci_list(case, corpus, tmp_path, capsys):
    run_cortexm(corpus / "Kernels/Integer" / case, tmp_path / "gen", capsys)


def test_cortex_m55(corpus, tmp_path, capsys):
    """The M55 board: the output's link.ld names the core, and the program runs there."""
    run_cortexm(corpus / "Kernels/Integer/Conv/Regular_2D_RQ", tmp_path / "gen", capsys, cpu="cortex-m55")
    assert (tmp_path / "gen" / "network" / "link.ld").read_text().startswith("/* Deeploy CortexM cpu: cortex-m55")


def test_cortex_m55_network(corpus, tmp_path, capsys):
    """A whole int8 network of the corpus on the M55 (its convolutions on the Helium kernel, in a
    function with many other layers around them)."""
    run_cortexm(corpus / "Models/miniMobileNetv2", tmp_path / "gen", capsys, cpu="cortex-m55")


def test_profile_names_every_layer(corpus, tmp_path, capsys):
    out = run_cortexm(corpus / "Kernels/Integer/Conv/Regular_2D_RQ", tmp_path / "gen", capsys, profileUntiled=True)
    lines = [line for line in out.split("Per-layer modelled cycles:\n")[1].splitlines() if line.startswith("  [")]
    titles = [layer.title for layer in read_manifest(tmp_path / "gen" / "network").layers if layer.runs]
    assert [line.split("] ", 1)[1].rsplit(": ", 1)[0] for line in lines] == titles, out
    assert any("Conv1" in title for title in titles)
    total = int(out.split("Runtime: ")[1].split()[0])
    assert abs(total - sum(int(line.rsplit(": ", 1)[1].split()[0]) for line in lines)) <= len(lines), out



# A hand-written loop between two markers, with its classes counted by hand: 4 iterations of
# two neighbouring loads (the second pipelined), SMLAD, a subtract and a conditional branch taken
# 3 times; before the loop a PUSH and after it a POP of two registers each.
_LOOP = r"""
#include <stdint.h>
int32_t data[2] = {0x00020003, 0x00040005};
int main(void) {
    int32_t acc = 0;
    __asm__ volatile(
        ".inst.w 0xf89ff100\n"           /* marker 0x100: pld [pc, #0x100] */
        "push {r4, r5}\n"
        "movs r5, #4\n"
        "1: ldr r3, [%1]\n"
        "ldr r4, [%1, #4]\n"
        "smlad %0, r3, r4, %0\n"
        "subs r5, #1\n"
        "bne 1b\n"
        "pop {r4, r5}\n"
        ".inst.w 0xf89ff0ff\n"           /* marker 0x0ff */
        : "+r"(acc) : "r"(data) : "r3", "r4", "r5", "cc", "memory");
    return acc == 4 * (2 * 4 + 3 * 5) ? 0 : 1;
}
"""


def test_cycle_plugin_counts_classes(tmp_path):
    (tmp_path / "loop.c").write_text(_LOOP)
    (tmp_path / "link.ld").write_text(linker_script(CORTEX_M4)(()))
    flags = ["-mcpu=cortex-m4", "-mfpu=fpv4-sp-d16", "-mfloat-abi=hard", "-mthumb", "-O2", "--specs=picolibc.specs",
             "--oslib=semihost", "--crt0=semihost", "-T", str(tmp_path / "link.ld")]
    subprocess.run(["arm-none-eabi-gcc", *flags, "-o", str(tmp_path / "loop.elf"), str(tmp_path / "loop.c")],
                   check=True)
    code, _ = run_elf(tmp_path / "loop.elf", 60, tmp_path / "records.txt")
    assert code == 0
    records = read_records(tmp_path / "records.txt")
    k = next(i for i, r in enumerate(records) if r.marker == 0x100)
    assert records[k + 1].marker == 0x0ff
    cycles, counts = record_cycles(records[k], records[k + 1], M4_TIMING)
    assert counts == {"insns": 3 + 4 * 5, "taken": 3, "branch": 0, "ldst": 8, "pipelined": 4, "multi": 2,
                      "words": 4, "mac": 4, "div": 0, "fpu": 0, "fdivsqrt": 0, "mve": 0, "lob": 0}
    # TRM: push/pop 1 + 2 each, LDR 2 + pipelined LDR 1, SMLAD/SUBS/MOVS 1, taken branch 1 + P (P = 2)
    assert cycles == 2 * 3 + 1 + 4 * (2 + 1 + 1 + 1) + 3 * 3 + 1


def test_network_too_big_for_the_board(tmp_path, capsys):
    """Activations beyond the board's 4 MiB of SRAM: one line naming the memory and --sram when
    compiling, no traceback and no output."""
    net = Net("too_big", opset=11)
    x = net.input("x", np.arange(-32, 32, dtype=np.int8).reshape(1, 64))
    wide = net.node("Expand", [x, net.const(np.array([65536, 64], np.int64), "shape", dtype=np.int64)])
    net.output(net.node("ReduceSum", [wide], {"axes": [0], "keepdims": 0}))
    write_test(net, tmp_path / "net", ort_check=False)
    args = argparse.Namespace(test=str(tmp_path / "net"), verbose=False, skipgen=False, skipsim=False,
                              gen_dir=str(tmp_path / "gen"), cpu="cortex-m4", profileUntiled=False, timeout=None)
    with pytest.raises(DeeployError, match=r"^network does not fit the board's SRAM: over by \d+ bytes"):
        run_test(args, CORTEXM)
    assert not (tmp_path / "gen" / "network").exists()
    # the same line from deeploy compile, which writes nothing
    net_dir, out = tmp_path / "net", tmp_path / "out"
    capsys.readouterr()
    assert deeploy(["compile", str(net_dir / "network.onnx"), "--platform", "CortexM", "-o", str(out),
                    "--emit-testbench"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: network does not fit the board's SRAM: over by") and err.count("\n") == 1, err
    assert "--sram 4194304 leaves beside the 65536 B stack" in err and "up to mps2-an386's 4194304" in err, err
    assert not out.exists()


def test_sram_budget(corpus, tmp_path, capsys):
    """--sram links the program into that much of the board's SRAM: 21 KiB of data and the 64 KiB
    stack fit 96 KiB, not 80 KiB (refused when compiling, on either board); a budget below the stack
    is refused."""
    case = corpus / "Kernels/Integer/Conv/Regular_2D_RQ"
    args = argparse.Namespace(test=str(case), verbose=False, skipgen=False, skipsim=False, gen_dir=str(tmp_path / "a"),
                              cpu="cortex-m4", profileUntiled=False, timeout=None)
    assert run_test(args, CORTEXM, {"platform_options": {"cpu": "cortex-m4", "sram": 96 * 1024}}) == 0
    assert "__ram_size = 0x18000;" in (tmp_path / "a" / "network" / "link.ld").read_text()
    args.gen_dir = str(tmp_path / "b")
    with pytest.raises(DeeployError, match=r"^network does not fit the board's SRAM: .* or a larger --sram"):
        run_test(args, CORTEXM, {"platform_options": {"cpu": "cortex-m4", "sram": 80 * 1024}})
    assert not (tmp_path / "b" / "network").exists()   # refused when compiling, nothing written
    with pytest.raises(DeeployError, match=r"--sram 81920 leaves .* \(up to mps3-an547's 2097152\)$"):
        run_test(args, CORTEXM, {"platform_options": {"cpu": "cortex-m55", "sram": 80 * 1024}})
    with pytest.raises(DeeployError, match=r"^--sram 1000: give a multiple of 4 bytes above the 65536 B stack"):
        run_test(args, CORTEXM, {"platform_options": {"cpu": "cortex-m4", "sram": 1000}})


def test_deeploy_compile_and_run(corpus, tmp_path, capsys):
    case = corpus / "Kernels/Integer/Add/Regular"
    out = tmp_path / "out"
    assert deeploy(["compile", str(case / "network.onnx"), "--platform", "CortexM", "-o", str(out), "--inputs",
                    str(case / "inputs.npz"), "--emit-testbench", "--outputs", str(case / "outputs.npz")]) == 0
    assert (out / "link.ld").read_text().startswith("/* Deeploy CortexM cpu: cortex-m4")
    assert deeploy(["run", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Errors: 0 out of" in text and "Runtime: " in text, text
