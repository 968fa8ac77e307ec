"""Memory budgets as users give them: ``--l2`` is the L2 budget for data (code lives in the rest
of the platform's L2, checked by the linker); when the data do not fit it and no
``--defaultMemLevel`` was given, the largest constants move to L3 with a note naming them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from DeeployTest.test_suite.test_siracusa_networks import pytestmark  # noqa: F401 (needs the cross toolchain)

DEEPLOY_TEST = Path(__file__).resolve().parents[1]
MICROLLAMA = DEEPLOY_TEST.parent.parent / "shared" / "corpus" / "Models" / "microLlama" / "INT8" / "microLlama64_parallel"


def _tiled(gen: Path, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(DEEPLOY_TEST / "testRunner_tiled_siracusa.py"), "-t", str(MICROLLAMA),
                           "--cores=8", "--gen-dir", str(gen), *flags], capture_output=True, text=True, timeout=900)


def _passes(proc: subprocess.CompletedProcess) -> None:
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "Errors: 0 out of" in proc.stdout, proc.stdout[-2000:]


def test_tutorial_command_l1_64000(tmp_path):
    """The tutorial's command at default --l2: the data (about 0.97 MB) fit the 1024000 B budget."""
    _passes(_tiled(tmp_path, "--l1", "64000", "--defaultMemLevel=L2"))


@pytest.mark.slow
def test_tutorial_command_l1_8000(tmp_path):
    _passes(_tiled(tmp_path, "--l1", "8000", "--defaultMemLevel=L2"))


def _network_l2_data(manifest: dict) -> int:
    """L2 bytes the manifest's buffers reach (arena, inputs, outputs, constants, staging)."""
    return max(b["offset"] + b["size"] for b in manifest["buffers"] if b["level"] == "L2")


def test_constants_that_do_not_fit_move_to_l3(tmp_path):
    """--l2 600000 without --defaultMemLevel: a note names the constants moved to L3, they are
    defined in the L3 constant section, the L2 data stay within 600000 B and the network runs
    correctly; with --defaultMemLevel=L2 the same budget is refused with the clear error."""
    proc = _tiled(tmp_path / "auto", "--l1", "64000", "--l2", "600000")
    _passes(proc)
    note = re.search(r"^note: constants moved to L3 to fit --l2 600000: (.*) \(give --defaultMemLevel", proc.stdout,
                     re.M)
    assert note, proc.stdout[-2000:]
    moved = note.group(1).split(", ")
    network = (tmp_path / "auto" / "network" / "Network.c").read_text()
    for name in moved:
        assert re.search(rf"{re.escape(name)}\w*\[\d+\] DEEPLOY_L3_CONST", network), name
    assert "DEEPLOY_L2_CONST" in network      # only what did not fit moved
    manifest = json.loads((tmp_path / "auto" / "network" / "manifest.json").read_text())
    assert _network_l2_data(manifest) <= 600000
    assert {b["name"] for b in manifest["buffers"] if b["kind"] == "constant" and b["level"] == "L3"} == set(moved)

    refused = _tiled(tmp_path / "explicit", "--l1", "64000", "--l2", "600000", "--defaultMemLevel=L2", "--skipsim")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "more than --l2 600000" in refused.stderr and "--defaultMemLevel L3" in refused.stderr, refused.stderr


def test_code_and_data_must_fit_physical_l2(tmp_path):
    """--l2 at the whole physical L2 (2 MiB) with data that leave 4 KiB: the data fit the budget,
    but code and data do not fit L2, and the link fails with one clear line."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper
    n = (2 * 1024 * 1024 - 4096) // 2          # int8 input and output, nothing else in L2
    (tmp_path / "net").mkdir()
    vi = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, [n])  # noqa: E731
    model = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "g",
                                                [vi("x")], [vi("y")]), opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, tmp_path / "net" / "network.onnx")
    x = np.arange(n) % 200 - 100
    np.savez(tmp_path / "net" / "inputs.npz", x)
    np.savez(tmp_path / "net" / "outputs.npz", np.maximum(x, 0))
    proc = subprocess.run([sys.executable, str(DEEPLOY_TEST / "testRunner_tiled_siracusa.py"), "-t",
                           str(tmp_path / "net"), "--l2", str(2 * 1024 * 1024), "--defaultMemLevel=L2", "--skipsim",
                           "--gen-dir", str(tmp_path / "gen")], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert re.match(r"error: network does not fit L2 \(2097152 bytes\): over by \d+ bytes; ", line), proc.stderr
    assert "--l2" in line and "--defaultMemLevel L3" in line
