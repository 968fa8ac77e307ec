"""ONNX integer semantics (docs/GUIDE.md, "Using it"): a file that declares its integer tensors integer
keeps their types (never narrowed from values) and its arithmetic wraps around in them, checked
against onnxruntime; QuantLib-style files (float-declared integers) keep their widening rules; a
float-declared input of an integer network needs samples or --input-type."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from Deeploy.cli import main
from Deeploy.frontend import assign_input_types, infer_graph, load_onnx
from Deeploy.ir.dtypes import INT16, INT32, UINT16, dtype_by_name
from Deeploy.reference import run_reference

CROSS = shutil.which("qemu-system-riscv32") is not None and shutil.which("riscv64-unknown-elf-gcc") is not None
TYPES = ("uint8", "int8", "int16", "uint16", "int32", "uint32", "int64")


def _save(folder: Path, nodes, inputs, outputs, inits=(), opset=14) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    model = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs, list(inits)),
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    onnx.save(model, folder / "network.onnx")
    return folder / "network.onnx"


def _binary(folder: Path, op: str, dtype: str, a: np.ndarray, b: np.ndarray) -> Path:
    """y = op(a, b), both inputs and y declared ``dtype``; inputs.npz and outputs.npz beside it,
    the outputs from onnxruntime (numpy for Max/Min of the types onnxruntime has no kernel for)."""
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    path = _save(folder, [helper.make_node(op, ["a", "b"], ["y"], name="op")],
                 [helper.make_tensor_value_info(n, elem, list(a.shape)) for n in "ab"],
                 [helper.make_tensor_value_info("y", elem, list(a.shape))])
    if op in ("Max", "Min") and dtype in ("int8", "int16", "uint16"):
        y = (np.maximum if op == "Max" else np.minimum)(a, b)
    else:
        y = _ort(path, {"a": a, "b": b})
    np.savez(folder / "inputs.npz", a=a, b=b)
    np.savez(folder / "outputs.npz", y=y)
    return path


def _ort(path: Path, feeds: dict) -> np.ndarray:
    import onnxruntime as ort
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)[0]


def _full_range(dtype: str, seed: int, n: int = 24) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.random.default_rng(seed).integers(info.min, info.max, n, dtype=dtype, endpoint=True)


def _reference(path: Path, feeds: dict):
    g = load_onnx(path)
    assign_input_types(g, {k: np.asarray(v).astype(np.int64) for k, v in feeds.items()})
    infer_graph(g)
    return run_reference(g, {k: np.asarray(v).astype(np.int64) for k, v in feeds.items()})["y"], g


# ---- (b) wrap-around in the declared type, type-exact ------------------------------------
@pytest.mark.parametrize("dtype", TYPES)
@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Max", "Min"])
def test_integer_declared_binary_ops_match_onnxruntime(tmp_path, op, dtype):
    a, b = _full_range(dtype, 1), _full_range(dtype, 2)
    path = _binary(tmp_path, op, dtype, a, b)
    y, g = _reference(path, {"a": a, "b": b})
    assert g.tensors["y"].dtype == dtype_by_name(dtype)
    assert np.array_equal(y, np.load(tmp_path / "outputs.npz")["y"].astype(np.int64))


def test_uint8_add_and_sub_wrap_like_onnx(tmp_path):
    a, b = np.array([200, 10], np.uint8), np.array([100, 20], np.uint8)
    assert _reference(_binary(tmp_path / "add", "Add", "uint8", a, b), {"a": a, "b": b})[0].tolist() == [44, 30]
    assert _reference(_binary(tmp_path / "sub", "Sub", "uint8", a, b), {"a": a, "b": b})[0].tolist() == [100, 246]


def test_int32_matmul_wraps_like_onnx(tmp_path):
    a, b = _full_range("int32", 3, 12).reshape(3, 4), _full_range("int32", 4, 8).reshape(4, 2)
    elem = TensorProto.INT32
    path = _save(tmp_path, [helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")],
                 [helper.make_tensor_value_info("a", elem, [3, 4]), helper.make_tensor_value_info("b", elem, [4, 2])],
                 [helper.make_tensor_value_info("y", elem, [3, 2])])
    y, g = _reference(path, {"a": a, "b": b})
    assert g.tensors["y"].dtype == INT32
    assert np.array_equal(y, _ort(path, {"a": a, "b": b}))


def test_declared_input_types_are_not_narrowed_by_samples(tmp_path):
    a = b = np.array([1, -2, 3], np.int16)
    g = _reference(_binary(tmp_path, "Add", "int16", a, b), {"a": a, "b": b})[1]
    assert g.tensors["a"].dtype == INT16 and g.tensors["y"].dtype == INT16


def test_quantlib_files_keep_widening(tmp_path):
    """Float-declared integers (specs/integer-ops.md): 100 + 100 is 200 in an int32 output."""
    f = TensorProto.FLOAT
    path = _save(tmp_path, [helper.make_node("Add", ["a", "b"], ["y"], name="add")],
                 [helper.make_tensor_value_info(n, f, [2]) for n in "ab"], [helper.make_tensor_value_info("y", f, [2])])
    y, g = _reference(path, {"a": np.array([100, -128]), "b": np.array([100, -128])})
    assert y.tolist() == [200, -256] and g.tensors["y"].dtype == INT32 and not g.onnx_integers


def _compile_and_run(path: Path, platform: str, capsys) -> str:
    out = path.parent / f"out_{platform}"
    assert main(["compile", str(path), "--platform", platform, "-o", str(out), "--emit-testbench"]) == 0
    assert "integers:   ONNX" in capsys.readouterr().out
    rc = main(["run", str(out)])
    printed = capsys.readouterr().out
    assert rc == 0, printed
    return printed


@pytest.mark.parametrize("op, dtype", [("Add", "uint8"), ("Sub", "uint8"), ("Mul", "int8"), ("Add", "int16"),
                                       ("Sub", "uint16"), ("Mul", "int32"), ("Add", "uint32"), ("Mul", "int64"),
                                       ("Max", "uint32"), ("Min", "int16")])
def test_generic_runs_match_onnxruntime(tmp_path, capsys, op, dtype):
    path = _binary(tmp_path, op, dtype, _full_range(dtype, 5), _full_range(dtype, 6))
    assert "Errors: 0 out of 24" in _compile_and_run(path, "Generic", capsys)


@pytest.mark.parametrize("op", ["Add", "Mul"])
def test_uint64_inputs_run_on_generic(tmp_path, capsys, op):
    """uint64-declared inputs are accepted (values below 2^62, as every integer sample)."""
    rng = np.random.default_rng(9)
    a, b = (rng.integers(0, 2**31, 24, dtype=np.uint64) for _ in "ab")
    assert "Errors: 0 out of 24" in _compile_and_run(_binary(tmp_path, op, "uint64", a, b), "Generic", capsys)


def _div_operands(dtype: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Full-range dividends and divisors with no zero divisor and no minimum / -1 (onnxruntime
    traps on both)."""
    a, b = _full_range(dtype, seed), _full_range(dtype, seed + 1)
    b[b == 0] = 7
    a[(a == np.iinfo(dtype).min) & (b == -1)] += 1
    b[:4] = np.array([-1, 2, -2, 1]).astype(dtype) if np.iinfo(dtype).min < 0 else b[:4]
    a[:4] = np.array([-7, -7, 7, -8]).astype(dtype) if np.iinfo(dtype).min < 0 else a[:4]
    return a, b


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64"])
def test_integer_div_truncates_like_onnx(tmp_path, capsys, dtype):
    """Div of integer-declared tensors runs at run time, truncating toward zero in their type
    (-7 / 2 is -3), bit-exact with onnxruntime."""
    a, b = _div_operands(dtype, 11)
    path = _binary(tmp_path, "Div", dtype, a, b)
    y, g = _reference(path, {"a": a, "b": b})
    assert g.tensors["y"].dtype == dtype_by_name(dtype)
    assert np.array_equal(y, np.load(tmp_path / "outputs.npz")["y"].astype(np.int64))
    assert "Errors: 0 out of 24" in _compile_and_run(path, "Generic", capsys)


@pytest.mark.skipif(not CROSS, reason="RISC-V toolchain or QEMU missing: run bash toolchain/install.sh")
@pytest.mark.parametrize("op, dtype", [("Add", "uint8"), ("Mul", "uint32"), ("Sub", "int16"), ("Div", "int32")])
def test_siracusa_runs_match_onnxruntime(tmp_path, capsys, op, dtype):
    a, b = _div_operands(dtype, 7) if op == "Div" else (_full_range(dtype, 7), _full_range(dtype, 8))
    path = _binary(tmp_path, op, dtype, a, b)
    assert "Errors: 0 out of 24" in _compile_and_run(path, "Siracusa", capsys)


# ---- (a) a declared zero point's type decides the quantized type --------------------------
def test_quantize_to_uint16_saturates_at_the_uint16_range(tmp_path):
    x = np.array([20000.0, 3.0, -100.0, 0.25, 16383.0], np.float32)
    inits = [numpy_helper.from_array(np.array(0.5, np.float32), "scale"),
             numpy_helper.from_array(np.array(32767, np.uint16), "zp")]
    path = _save(tmp_path, [helper.make_node("QuantizeLinear", ["x", "scale", "zp"], ["y"], name="q")],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5])],
                 [helper.make_tensor_value_info("y", TensorProto.UINT16, [5])], inits, opset=21)
    g = load_onnx(path)
    assign_input_types(g, {"x": x})
    infer_graph(g)
    assert g.tensors["zp"].dtype == UINT16 and g.tensors["y"].dtype == UINT16
    y = run_reference(g, {"x": x})["y"]
    assert np.array_equal(y, _ort(path, {"x": x}).astype(np.int64))
    assert y.max() == 65535


# ---- (c) a float-declared input of an integer network needs its type ---------------------
def _float_add(folder: Path, inits=()) -> Path:
    f = TensorProto.FLOAT
    return _save(folder, [helper.make_node("Add", ["x", "x"], ["y"], name="add")],
                 [helper.make_tensor_value_info("x", f, [4])], [helper.make_tensor_value_info("y", f, [4])], inits)


def test_float_declared_input_without_samples_is_an_error(tmp_path, capsys):
    path = _float_add(tmp_path)
    out = tmp_path / "out"
    assert main(["compile", str(path), "-o", str(out)]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "input 'x'" in err[0] and "--input-type x=" in err[0] and "Traceback" not in err[0]
    assert not out.exists()
    assert main(["compile", str(path), "-o", str(out), "--input-type", "x=uint8"]) == 0
    assert "integers:   QuantLib" in capsys.readouterr().out


def test_input_the_model_quantizes_needs_no_samples(tmp_path):
    """QDQ: the model carries the input's quantization (here with an integer-valued scale)."""
    f = TensorProto.FLOAT
    inits = [numpy_helper.from_array(np.array(2.0, np.float32), "scale"),
             numpy_helper.from_array(np.array(3, np.uint8), "zp")]
    path = _save(tmp_path, [helper.make_node("QuantizeLinear", ["x", "scale", "zp"], ["y"], name="q")],
                 [helper.make_tensor_value_info("x", f, [4])], [helper.make_tensor_value_info("y", TensorProto.UINT8, [4])],
                 inits, opset=13)
    g = load_onnx(path)
    assign_input_types(g)
    infer_graph(g)
    assert g.tensors["x"].dtype.is_float and g.onnx_integers
