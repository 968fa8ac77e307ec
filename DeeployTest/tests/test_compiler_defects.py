"""Small ONNX graphs built inline that once compiled into silently wrong C: graph outputs no
layer wrote (a tensor listed twice, an input or a constant listed as output) and accumulators
too narrow for the values (int16 GEMM operands, huge weights). Each graph runs through the real
runners (Generic host C, Siracusa under QEMU, tiled Siracusa) against goldens from onnxruntime
or an independent numpy formula."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from Deeploy.tiling.network import TilingOptions
from DeeployTest.testRunner_generic import GENERIC
from DeeployTest.testUtils.siracusa_runner import cluster_runner
from DeeployTest.testUtils.runner import run_test

SIRACUSA = cluster_runner("Siracusa", "TEST_SIRACUSA")
needs_qemu = pytest.mark.skipif(shutil.which("qemu-system-riscv32") is None or
                                shutil.which("riscv64-unknown-elf-gcc") is None,
                                reason="RISC-V toolchain or QEMU missing: run bash toolchain/install.sh")


def float_info(name: str, shape: list[int]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def save_case(folder: Path, nodes: list, inputs: dict[str, np.ndarray], outputs: list[str],
              constants: dict[str, np.ndarray] | None = None, expected: list[np.ndarray] | None = None,
              shapes: dict[str, list[int]] | None = None) -> Path:
    """A test folder (network.onnx, inputs.npz, outputs.npz) of a FLOAT-declared integer graph;
    ``shapes`` gives the shapes of outputs produced by nodes (default: the first input's shape).
    Without ``expected``, the goldens come from onnxruntime."""
    constants = constants or {}
    first = list(next(iter(inputs.values())).shape)
    shapes = {**{o: first for o in outputs}, **(shapes or {}), **{k: list(v.shape) for k, v in inputs.items()},
              **{k: list(v.shape) for k, v in constants.items()}}
    graph = helper.make_graph(
        nodes, folder.name, [float_info(k, list(v.shape)) for k, v in inputs.items()],
        [float_info(o, shapes.get(o)) for o in outputs],
        [numpy_helper.from_array(v.astype(np.float32), k) for k, v in constants.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    if expected is None:                     # standard ops only (onnxruntime runs them)
        onnx.checker.check_model(model)
    folder.mkdir(parents=True, exist_ok=True)
    onnx.save(model, folder / "network.onnx")
    if expected is None:
        import onnxruntime as ort
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        expected = session.run(None, {k: v.astype(np.float32) for k, v in inputs.items()})
    np.savez(folder / "inputs.npz", *[v.astype(np.float32) for v in inputs.values()])
    np.savez(folder / "outputs.npz", *[np.asarray(v) for v in expected])
    return folder


def run_generic(folder: Path, capsys) -> str:
    args = argparse.Namespace(test=str(folder), verbose=False, skipgen=False, skipsim=False,
                              gen_dir=str(folder / "gen_generic"))
    code = run_test(args, GENERIC)
    out = capsys.readouterr().out
    assert code == 0 and "Errors: 0 out of" in out, out
    return out


def run_siracusa(folder: Path, capsys, cores: int = 8, l1: int | None = None, double_buffer: bool = False) -> str:
    """Siracusa under QEMU; tiled (every layer out of an L1 of ``l1`` bytes) when ``l1`` is given."""
    args = argparse.Namespace(test=str(folder), verbose=False, skipgen=False, skipsim=False,
                              gen_dir=str(folder / f"gen_siracusa_{l1}_{int(double_buffer)}"), cores=cores,
                              profileUntiled=False, profileTiling=False, plotMemAlloc=False, timeout=None,
                              l1=l1, l2=TilingOptions.l2, defaultMemLevel="L2", doublebuffer=double_buffer)
    options: dict = {"cores": cores}
    if l1 is not None:
        options["tiling"] = TilingOptions(l1, TilingOptions.l2, "L2", double_buffer)
    code = run_test(args, SIRACUSA, options)
    out = capsys.readouterr().out
    assert code == 0 and "Errors: 0 out of" in out and "Runtime: " in out, out
    return out


# ---- every listed graph output is written ----------------------------------------------------

X = np.arange(-8, 8, dtype=np.int64).reshape(1, 16)
C = (np.arange(16, dtype=np.int64) * 3 - 20).reshape(1, 16)


def _output_cases() -> dict[str, tuple]:
    add = helper.make_node("Add", ["x", "x"], ["y"], name="double")
    return {
        "output_twice": ([add], ["y", "y"], {}),
        "output_three_times": ([add], ["y", "x", "y", "y"], {}),
        "input_as_output": ([add], ["y", "x"], {}),
        "input_as_output_twice": ([add], ["x", "y", "x"], {}),
        "constant_as_output": ([add], ["y", "c"], {"c": C}),
        "constant_output_twice": ([add], ["c", "y", "c"], {"c": C}),
    }


OUTPUT_CASES = _output_cases()


@pytest.mark.parametrize("case", sorted(OUTPUT_CASES))
def test_every_listed_output_is_written_generic(case, tmp_path, capsys):
    nodes, outputs, constants = OUTPUT_CASES[case]
    run_generic(save_case(tmp_path / case, nodes, {"x": X}, outputs, constants), capsys)


@needs_qemu
@pytest.mark.parametrize("l1", [None, 2000])
@pytest.mark.parametrize("case", ["output_twice", "input_as_output", "constant_as_output"])
def test_every_listed_output_is_written_siracusa(case, l1, tmp_path, capsys):
    nodes, outputs, constants = OUTPUT_CASES[case]
    run_siracusa(save_case(tmp_path / case, nodes, {"x": X}, outputs, constants), capsys, l1=l1)


# ---- kernel scratch follows the tile: iSoftmax at small L1 ------------------------------------

SOFTMAX_REGULAR = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "Kernels" / "Integer" / "Softmax" / "Regular"
SOFTMAX_ATTRS = dict(coeffA=1, coeffB=85, coeffC=3778, log2=63, n_levels=256)


def isoftmax_formula(x: np.ndarray, coeffA: int, coeffB: int, coeffC: int, log2: int, n_levels: int) -> np.ndarray:
    """specs/integer-ops.md, iSoftmax over the last axis, in Python integers."""
    xt = x - x.max(axis=-1, keepdims=True)
    z = np.minimum(-xt // log2, 31)          # -xt >= 0: floor is trunc
    p = xt + z * log2
    e = (coeffA * (p + coeffB) ** 2 + coeffC) >> z
    return e * (n_levels - 1) // e.sum(axis=-1, keepdims=True)


def _softmax_case(folder: Path, x: np.ndarray) -> Path:
    node = helper.make_node("iSoftmax", ["x"], ["y"], name="softmax", **SOFTMAX_ATTRS)
    return save_case(folder, [node], {"x": x}, ["y"], expected=[isoftmax_formula(x, **SOFTMAX_ATTRS)])


def _softmax_inputs(shape: tuple[int, ...], lo: int, hi: int) -> np.ndarray:
    rng = np.random.default_rng(7)
    x = rng.integers(lo, hi + 1, size=shape, dtype=np.int64)
    x.reshape(-1)[:2] = (lo, hi)             # the full range, so the inferred type is as intended
    return x


# (shape, value range): 8-bit calls below 128 elements and 16-bit calls compute e directly (no
# scratch); 8-bit calls of 128 elements and more tabulate e(d)
SOFTMAX_CASES = {
    "int8_small": ((2, 3, 20), -128, 127),
    "int8_table": ((4, 40), -128, 127),
    "int16_rows": ((3, 50), -3000, 3000),
}


@pytest.mark.parametrize("case", sorted(SOFTMAX_CASES))
def test_isoftmax_with_and_without_table_generic(case, tmp_path, capsys):
    shape, lo, hi = SOFTMAX_CASES[case]
    run_generic(_softmax_case(tmp_path / case, _softmax_inputs(shape, lo, hi)), capsys)


@needs_qemu
@pytest.mark.parametrize("l1", [None, 400])
@pytest.mark.parametrize("case", sorted(SOFTMAX_CASES))
def test_isoftmax_with_and_without_table_siracusa(case, l1, tmp_path, capsys):
    shape, lo, hi = SOFTMAX_CASES[case]
    run_siracusa(_softmax_case(tmp_path / case, _softmax_inputs(shape, lo, hi)), capsys, l1=l1)


@needs_qemu
@pytest.mark.skipif(not SOFTMAX_REGULAR.is_dir(), reason="external corpus not found")
@pytest.mark.parametrize("l1, double_buffer", [(300, False), (600, True)])
def test_corpus_softmax_fits_small_l1(l1, double_buffer, tmp_path, capsys):
    """The e(d) table (1032 B) alone exceeded these L1 sizes: tiles below 128 elements need none."""
    args = argparse.Namespace(test=str(SOFTMAX_REGULAR), verbose=False, skipgen=False, skipsim=False,
                              gen_dir=str(tmp_path / "gen"), cores=8, profileTiling=False, plotMemAlloc=False,
                              timeout=None, l1=l1, l2=TilingOptions.l2, defaultMemLevel="L2", doublebuffer=double_buffer)
    code = run_test(args, SIRACUSA, {"cores": 8, "tiling": TilingOptions(l1, TilingOptions.l2, "L2", double_buffer)})
    out = capsys.readouterr().out
    assert code == 0 and "Errors: 0 out of" in out and "Runtime: " in out, out
