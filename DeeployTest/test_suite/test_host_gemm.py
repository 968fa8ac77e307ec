"""The host's GEMM path for operands wider than 8 bits (gemm.inc, KFN(_host_dot)): ONNX MatMul and
Gemm of declared int32 / uint32 tensors (sums wrapping modulo 2^32) whose values are int16 ones
modulo 2^32 run as int16 dot products; a value beyond that sends the layer to the register-blocked
blocks. Shapes off the 4-column blocking, one row, one column, B in two panels, int16 extremes
whose pair sums overflow int32, and values just past int16; outputs checked bit-exactly against
numpy's exact products reduced modulo 2^32. The corpus's int32 MatMul stays within its share of
the peer's host instructions."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper

from benchmarks.generic_instructions import CASES as PROBES, run_network_instructions
from DeeployTest.testRunner_generic import GENERIC
from DeeployTest.testUtils.runner import run_test
from DeeployTest.test_suite.conftest import CORPUS
from DeeployTest.test_suite.kernel_cases import run_generic

I16 = (-32768, 32767)


def _values(rng, shape, kind: str, dtype: str) -> np.ndarray:
    """Sample values: "i16" int16's range with both extremes, "extremes" only -32768 and 32767,
    "past" int16's range with one value just beyond it, "full" the whole range of dtype; a uint32
    tensor holds a negative int16 value as its residue modulo 2^32."""
    if kind == "full":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    if kind == "extremes":
        v = rng.choice(np.array(I16, np.int64), shape)
    else:
        v = rng.integers(I16[0], I16[1], shape, endpoint=True)
        v.flat[0], v.flat[-1] = I16
        if kind == "past":
            v.flat[v.size // 2] = I16[1] + 1
    return (v % 2**32).astype(dtype) if dtype == "uint32" else v.astype(dtype)


def _wrap(exact: np.ndarray, dtype: str) -> np.ndarray:
    """Python-integer results reduced into dtype's 32 bits, as the declared type wraps."""
    r = np.vectorize(lambda v: v % 2**32, otypes=[object])(exact)
    if dtype == "int32":
        r = np.vectorize(lambda v: v - 2**32 if v >= 2**31 else v, otypes=[object])(r)
    return r.astype(dtype)


def _write(folder: Path, op: str, dtype: str, a, b, c=None, attrs=None) -> Path:
    """network.onnx with op(a, b[, c]) on inputs declared dtype, inputs.npz and outputs.npz."""
    attrs = attrs or {}
    ta, tb = attrs.get("transA", 0), attrs.get("transB", 0)
    ax = a.astype(object).swapaxes(-1, -2) if ta else a.astype(object)
    bx = b.astype(object).swapaxes(-1, -2) if tb else b.astype(object)
    exact = np.matmul(ax, bx)
    if c is not None:
        exact = exact + c.astype(object)
    y = _wrap(exact, dtype)
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    feeds = {"a": a, "b": b} if c is None else {"a": a, "b": b, "c": c}
    node = helper.make_node(op, list(feeds), ["y"], name="gemm", **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, elem, list(v.shape))
                                            for n, v in feeds.items()],
                              [helper.make_tensor_value_info("y", elem, list(y.shape))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 9
    folder.mkdir(parents=True)
    onnx.save(model, folder / "network.onnx")
    np.savez(folder / "inputs.npz", **feeds)
    np.savez(folder / "outputs.npz", y=y)
    return folder


# (id, op, dtype, A shape, B shape, A values, B values, C shape or None, attributes)
CASES = [
    ("batched_edges", "MatMul", "int32", (2, 5, 7), (2, 7, 6), "i16", "i16", None, {}),   # N % 4 = 2, K odd
    ("one_row", "MatMul", "int32", (1, 9), (9, 13), "i16", "i16", None, {}),
    ("one_column", "MatMul", "int32", (6, 10), (10, 1), "i16", "i16", None, {}),
    ("extremes", "MatMul", "int32", (7, 21), (21, 9), "extremes", "extremes", None, {}),   # pair sums of 2^31
    ("two_panels", "MatMul", "int32", (3, 300), (300, 60), "i16", "i16", None, {}),   # 54 + 6 columns
    ("a_past_int16", "MatMul", "int32", (5, 12), (12, 11), "past", "i16", None, {}),
    ("b_full_int32", "MatMul", "int32", (6, 9), (9, 10), "i16", "full", None, {}),
    ("uint32_residues", "MatMul", "uint32", (2, 6, 11), (2, 11, 5), "i16", "extremes", None, {}),
    ("uint32_full", "MatMul", "uint32", (4, 8), (8, 7), "full", "full", None, {}),
    ("gemm_transposed_bias", "Gemm", "int32", (9, 6), (7, 9), "i16", "i16", (7,), {"transA": 1, "transB": 1}),
    ("gemm_full_bias", "Gemm", "int32", (5, 8), (8, 6), "extremes", "i16", (5, 6), {}),
]


def _case_dir(case, tmp_path: Path) -> Path:
    name, op, dtype, a_shape, b_shape, a_kind, b_kind, c_shape, attrs = case
    rng = np.random.default_rng(11)
    a, b = _values(rng, a_shape, a_kind, dtype), _values(rng, b_shape, b_kind, dtype)
    c = None if c_shape is None else _values(rng, c_shape, "full", dtype)
    return _write(tmp_path / name, op, dtype, a, b, c, attrs)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_wide_operands_match_numpy(case, tmp_path, capsys):
    run_generic(_case_dir(case, tmp_path), capsys)


@pytest.mark.sanitize
@pytest.mark.parametrize("case", [c for c in CASES if c[0] in ("extremes", "two_panels")], ids=("extremes", "two_panels"))
def test_wide_operands_sanitized(case, tmp_path, capsys):
    """The int16 dot products with pair sums of 2^31 and the two-panel packing under the sanitizers."""
    folder = _case_dir(case, tmp_path)
    args = argparse.Namespace(test=str(folder), verbose=False, skipgen=False, skipsim=False,
                              gen_dir=str(folder / "sanitized"), sanitize=True)
    code = run_test(args, GENERIC)
    out = capsys.readouterr()
    assert code == 0 and "Errors: 0 out of" in out.out, out.out + out.err


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind missing")
def test_matmul_regular_instructions(corpus, tmp_path):
    """The corpus's MatMul/Regular (int32-declared operands holding int8 values) runs RunNetwork in
    at most 0.2x the peer's instructions (benchmarks/generic_instructions.py; 0.38x on the
    register-blocked int32 blocks)."""
    case, peer = next(p for p in PROBES if p[0] == "Kernels/Integer/MatMul/Regular")
    instructions = run_network_instructions(CORPUS / case, tmp_path)
    assert instructions <= 0.2 * peer, instructions / peer
