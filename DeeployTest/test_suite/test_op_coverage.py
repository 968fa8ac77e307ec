"""The one-node cases of ops' ONNX forms beyond the common one (1-D MatMul operands, variadic
Max/Min/Sum/Mean, LayerNormalization's Mean and InvStdDev, Pad's reflect/edge/wrap modes,
MaxPool's Indices, 3-D pooling, ArgMax/ArgMin, integer Div, ConstantOfShape folded) run end to end: the op's registry examples, with goldens from
onnxruntime, compiled and run on Generic and on Siracusa (untiled and tiled)."""

from __future__ import annotations

import argparse

import numpy as np
import onnx
import pytest

from Deeploy.compiler import compile_graph
from Deeploy.errors import TilingError
from Deeploy.frontend import assign_input_types, load_onnx
from Deeploy.frontend.onnx_loader import data_values
from Deeploy.tiling.network import TilingOptions
from DeeployTest.generators.batch import batch_folder, batches
from DeeployTest.test_suite.kernel_cases import TILED, _check, needs_qemu, run_generic, run_siracusa
from DeeployTest.test_suite.op_cases import RECORDS, cases_of
from DeeployTest.test_suite.test_op_references import activations, build_model, run_ort_all
from DeeployTest.testUtils.runner import run_test

# (op, example label, tiled too): each runs on Generic and untiled Siracusa; forms the tiling
# families refuse (a norm over several axes) run untiled only
END_TO_END = [("MatMul", "vector_a", True), ("MatMul", "vector_b", True), ("MatMul", "vector_dot", True),
              ("LayerNormalization", "mean_inv_std_dev", True), ("LayerNormalization", "axis0_stats", False),
              ("Max", "one_input", True), ("Max", "three_broadcast", True), ("Min", "four_int8", True),
              ("Min", "three_float32", True), ("Sum", "three_broadcast", True), ("Sum", "one_input", True),
              ("Mean", "three_broadcast", True), ("Mean", "two", True),
              ("Pad", "reflect", False), ("Pad", "edge_axes", False), ("Pad", "wrap_crop", False),
              ("MaxPool", "indices_pad_dilation", False), ("MaxPool", "indices_column_major_ties", False),
              ("MaxPool", "indices_1d", False),
              ("ArgMax", "int8_ties_axis1", True), ("ArgMax", "float32_dropped", True),
              ("ArgMin", "int8_ties_last_index", True), ("ArgMin", "int32_default_axis", True),
              ("ArgMax", "int8_middle_axis_12kb", True),
              ("Div", "int8_truncates", True), ("Div", "uint8_row_broadcast", True),
              ("Div", "int64_minus_one", False), ("ConstantOfShape", "int32_value", False),
              ("ConstantOfShape", "float_value", False)]


def _write(op: str, label: str, folder):
    case = next(c for c in cases_of(RECORDS[op]) if c.label == label)
    folder.mkdir(parents=True)
    onnx.save(build_model(op, case), folder / "network.onnx")
    np.savez(folder / "inputs.npz", **activations(case))
    np.savez(folder / "outputs.npz", *run_ort_all(folder / "network.onnx", case))
    return folder


@pytest.fixture(scope="module")
def merged(tmp_path_factory):
    """(all cases, the tiled ones): each as folders of the cases merged per opset (generators/batch.py)."""
    root = tmp_path_factory.mktemp("ops")
    folders = {(op, label): _write(op, label, root / f"{op}-{label}") for op, label, _ in END_TO_END}

    def group(keys, name):
        cases = [(f"{op}-{label}", folders[op, label]) for op, label in keys]
        return [batch_folder(b, root / f"{name}{k}") for k, b in enumerate(batches(cases, len(cases)))]
    return group(list(folders), "all"), group([(op, label) for op, label, tiled in END_TO_END if tiled], "tiled")


def test_generic(merged, capsys):
    for folder in merged[0]:
        run_generic(folder, capsys)


@needs_qemu
def test_siracusa(merged, capsys):
    for folder in merged[0]:
        run_siracusa(folder, 8, capsys)


def _run_tiled(case_dir, capsys) -> None:
    tiling = TilingOptions(4096, TilingOptions.l2, "L2", True)
    args = argparse.Namespace(test=str(case_dir), verbose=False, skipgen=False, skipsim=False,
                              gen_dir=str(case_dir / "tiled"), cores=8, l1=tiling.l1, l2=tiling.l2,
                              defaultMemLevel="L2", doublebuffer=True, profileTiling=None, plotMemAlloc=False,
                              timeout=None)
    _check(run_test(args, TILED, {"cores": 8, "tiling": tiling}), capsys.readouterr().out)


@needs_qemu
def test_siracusa_tiled(merged, capsys):
    for folder in merged[1]:
        _run_tiled(folder, capsys)


@pytest.mark.parametrize("op,label,message", [
    ("Pad", "reflect", r"layer 'node' \(Pad\): mode 'reflect' is not tiled"),
    ("MaxPool", "indices_1d", r"layer 'node' \(MaxPool\): the Indices output is not tiled")])
def test_untiled_forms_are_refused_when_tiling(op, label, message, tmp_path):
    """Pad's reflect/edge/wrap read input rows beyond an output tile's box, MaxPool's Indices
    index the whole input: one TilingError naming the layer and the form, no output folder."""
    case_dir = _write(op, label, tmp_path / "case")
    graph = load_onnx(case_dir / "network.onnx")
    assign_input_types(graph, {k: data_values(v, k) for k, v in np.load(case_dir / "inputs.npz").items()})
    with pytest.raises(TilingError, match=message):
        compile_graph(graph, "Siracusa", tmp_path / "out", tiling=TilingOptions(4096, TilingOptions.l2, "L2", True))
    assert not (tmp_path / "out").exists()
