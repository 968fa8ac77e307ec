"""``deeploy validate``: networks that deploy correctly pass on Generic (host) and Siracusa (QEMU,
untiled and tiled), float ones are also checked against onnxruntime, random inputs are seeded,
and goldens that disagree with the model fail with the worst error."""

from __future__ import annotations

import re
import shutil

import numpy as np

from Deeploy.cli import main
from Deeploy.frontend import assign_input_types, load_onnx
from Deeploy.ir.dtypes import INT8
from Deeploy.validate import random_inputs
from DeeployTest.test_suite.conftest import CORPUS, DEEPLOY_TEST
from DeeployTest.test_suite.test_siracusa_networks import pytestmark as needs_qemu

MINI = DEEPLOY_TEST / "Tests" / "Models" / "miniMobileNetv2"
INT_ADD = CORPUS / "Kernels" / "Integer" / "Add" / "Regular_RQ"
FP32_CONV = CORPUS / "Kernels" / "FP32" / "Conv" / "Regular_2D_Bias"


def _validate(capsys, *argv) -> tuple[int, str]:
    code = main(["validate", *map(str, argv)])
    out = capsys.readouterr()
    return code, out.out + out.err


def _passes(code: int, out: str) -> None:
    assert code == 0, out
    assert re.search(r"^Errors: 0 out of [1-9]", out, re.M) and out.rstrip().endswith("validate: ok"), out


def test_generic_with_goldens(capsys):
    code, out = _validate(capsys, MINI / "network.onnx")
    _passes(code, out)
    assert "reference vs outputs.npz: worst error 0, 0 of 10 elements" in out


def test_float_network_against_onnxruntime(corpus, capsys):
    code, out = _validate(capsys, FP32_CONV / "network.onnx")
    _passes(code, out)
    assert re.search(r"reference vs onnxruntime: worst error [0-9.e-]+, 0 of \d+ elements", out), out


def test_onnxruntime_informs_on_integer_networks(corpus, capsys):
    """ReduceMean declared float in ONNX runs as integers (the mean rounded to an integer):
    onnxruntime's fractional means are shown, but only the reference and goldens decide."""
    code, out = _validate(capsys, CORPUS / "Kernels" / "Integer" / "ReduceMean" / "network.onnx")
    _passes(code, out)
    assert re.search(r"reference vs onnxruntime: worst error 0\.5, \d+ of \d+ elements beyond the tolerance "
                     r"\(for information: ", out), out
    assert "reference vs outputs.npz: worst error 0, 0 of" in out


@needs_qemu
def test_siracusa_untiled_and_tiled(corpus, capsys):
    _passes(*_validate(capsys, INT_ADD / "network.onnx", "--platform", "Siracusa", "--cores", "4"))
    code, out = _validate(capsys, MINI / "network.onnx", "--platform", "Siracusa", "--l1", "16000")
    _passes(code, out)
    assert "8 cores, tiled" in out


def test_random_inputs_are_seeded(corpus, tmp_path, capsys):
    """Without inputs.npz the inputs are random values of the input types, the same per seed."""
    shutil.copy(INT_ADD / "network.onnx", tmp_path / "network.onnx")
    graph = load_onnx(tmp_path / "network.onnx")
    types = {name: INT8 for name in graph.inputs}   # FLOAT-declared integers: the types are ours to give
    code, out = _validate(capsys, tmp_path / "network.onnx", "--seed", "3",
                          *(f"--input-type={name}=int8" for name in types))
    _passes(code, out)
    assert "random values of the input types (seed 3)" in out and "reference vs outputs.npz" not in out
    assign_input_types(graph, overrides=types)
    a, b, c = random_inputs(graph, 3), random_inputs(graph, 3), random_inputs(graph, 4)
    for name in graph.inputs:
        t = graph.tensors[name]
        assert a[name].shape == tuple(t.shape) and a[name].min() >= t.dtype.min and a[name].max() <= t.dtype.max
        assert np.array_equal(a[name], b[name])
    assert any(not np.array_equal(a[n], c[n]) for n in graph.inputs)


def test_goldens_that_disagree_fail(tmp_path, capsys):
    """An outputs.npz exported from a different model (one element off by 3): exit 1, the worst
    error and the count of elements named, while the deployed network itself still agrees with
    the reference."""
    for name in ("network.onnx", "inputs.npz"):
        shutil.copy(MINI / name, tmp_path / name)
    golden = dict(np.load(MINI / "outputs.npz"))
    key = next(iter(golden))
    golden[key] = golden[key].copy()
    golden[key].flat[4] += 3
    np.savez(tmp_path / "outputs.npz", **golden)
    code, out = _validate(capsys, tmp_path / "network.onnx")
    assert code == 1, out
    assert "reference vs outputs.npz: worst error 3, 1 of 10 elements beyond the tolerance" in out, out
    assert "Errors: 0 out of 10" in out and out.rstrip().endswith("validate: MISMATCH (see above)")


def test_bad_inputs_file_is_one_line(tmp_path, capsys):
    bad = tmp_path / "x.npz"
    np.savez(bad, np.zeros(3))
    code, out = _validate(capsys, MINI / "network.onnx", "--inputs", bad)
    assert code == 1 and "Traceback" not in out
    assert re.search(r"^error: .*x\.npz", out, re.M) and len(out.strip().splitlines()) == 1, out


def test_onnxruntime_reason_is_whole():
    """Why onnxruntime does not run a graph with custom ops: its closing clause, not a line cut in
    the middle of a tensor name."""
    from Deeploy.validate import onnxruntime_outputs
    model = DEEPLOY_TEST / "Tests" / "Kernels" / "iSoftmax" / "Regular" / "network.onnx"
    graph = load_onnx(model)
    outputs, why = onnxruntime_outputs(model, {n: np.zeros(graph.tensors[n].shape) for n in graph.inputs})
    assert outputs is None and re.fullmatch(r"No Op registered for iSoftmax with domain_version of \d+", why), why
