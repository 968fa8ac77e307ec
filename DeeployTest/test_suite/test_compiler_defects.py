"""Small ONNX graphs built inline that once compiled into silently wrong C: graph outputs no
layer wrote (a tensor listed twice, an input or a constant listed as output) and accumulators
too narrow for the values (int16 GEMM operands, huge weights). Each graph runs through the real
runners (Generic host C, Siracusa under QEMU, tiled Siracusa) against goldens from onnxruntime
or an independent numpy formula."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from Deeploy.tiling.network import TilingOptions
from DeeployTest.testRunner_generic import GENERIC
from DeeployTest.testUtils.runner import RunnerPlatform, run_test
from DeeployTest.test_suite.conftest import DEEPLOY_TEST

SIRACUSA = RunnerPlatform("Siracusa", "TEST_SIRACUSA")
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
# scratch); 8-bit calls of 128 elements and more tabulate e(d), unless tiled into an L1 too
# small for the table (rows of 160: one row and the table need 1352 B, more than 400)
SOFTMAX_CASES = {
    "int8_small": ((2, 3, 20), -128, 127),
    "int8_table": ((4, 40), -128, 127),
    "int8_wide_rows": ((6, 160), -128, 127),
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


# ---- accumulators and outputs wide enough for the proven value range --------------------------

RNG = np.random.default_rng(11)


def _ints(shape, lo: int, hi: int) -> np.ndarray:
    """Random integers in [lo, hi] including both ends (so the inferred type spans the range)."""
    x = RNG.integers(lo, hi + 1, size=shape, dtype=np.int64)
    x.reshape(-1)[:2] = (lo, hi)
    return x


def requant(acc: np.ndarray, mul, add, shift: int) -> np.ndarray:
    """specs/integer-ops.md RequantShift, signed 8-bit."""
    return np.clip((acc * mul + add + (1 << (shift - 1))) >> shift, -128, 127)


def _requant_node(x: str, y: str, shift: int, name: str = "rq"):
    return helper.make_node("RequantShift", [x, "mul", "add"], [y], name=name, div=1 << shift, n_levels=256, signed=1)


def _matmul_int16(folder: Path) -> Path:
    """int16 x int16, K = 8: sums up to 8 * 2^30, beyond int32."""
    a, b = _ints((4, 8), -32768, 32767), _ints((8, 5), -32768, 32767)
    a[0], b[:, 0] = 30000, 30000               # 8 * 30000 * 30000 = 7.2e9
    return save_case(folder, [helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")], {"a": a, "b": b}, ["y"],
                     expected=[a @ b], shapes={"y": [4, 5]})


def _gemm_huge_weight(folder: Path) -> Path:
    """A weight of 7 * 2^32 (exact in float32): int64 constant, int64 sums."""
    x = _ints((2, 8), -128, 127)
    w = _ints((8, 3), -100, 100)
    w[:, 0] = 7 * 2**32
    c = _ints((3,), -1000, 1000)
    node = helper.make_node("Gemm", ["x", "w", "c"], ["y"], name="gemm")
    return save_case(folder, [node], {"x": x}, ["y"], {"w": w, "c": c}, expected=[x @ w + c], shapes={"y": [2, 3]})


def _conv_reference(x: np.ndarray, w: np.ndarray, pad: int) -> np.ndarray:
    """Plain NCHW convolution, stride 1, in Python integers."""
    n, c, h, wd = x.shape
    k, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1
    y = np.zeros((n, k, oh, ow), dtype=np.int64)
    for i in range(oh):
        for j in range(ow):
            y[:, :, i, j] = np.einsum("nchw,kchw->nk", xp[:, :, i:i + kh, j:j + kw], w)
    return y


def _conv_case(folder: Path, requantise: bool) -> Path:
    x = _ints((1, 4, 5, 5), -32768, 32767)
    w = _ints((3, 4, 3, 3), -30000, 30000)
    w[0], x[0, :, :3, :3] = 30000, 32767     # channel 0 near (0, 0): 36 * 30000 * 32767 = 3.5e10
    nodes = [helper.make_node("Conv", ["x", "w"], ["acc"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
    acc = _conv_reference(x, w, 1)
    if not requantise:
        nodes[0].output[0] = "y"
        return save_case(folder, nodes, {"x": x}, ["y"], {"w": w}, expected=[acc], shapes={"y": [1, 3, 5, 5]})
    mul, add, shift = np.array([3]), np.array([-5]), 36
    nodes.append(_requant_node("acc", "y", shift))
    return save_case(folder, nodes, {"x": x}, ["y"], {"w": w, "mul": mul, "add": add},
                     expected=[requant(acc, 3, -5, shift)], shapes={"y": [1, 3, 5, 5]})


def _gemm_requant(folder: Path) -> Path:
    """int16 GEMM followed by RequantShift: on Siracusa the fused requantised GEMM."""
    a, b = _ints((4, 8), -32768, 32767), _ints((8, 6), -32768, 32767)
    a[0], b[:, 0] = -32768, -32768
    mul, add, shift = np.array([5]), np.array([7]), 35
    nodes = [helper.make_node("MatMul", ["a", "b"], ["acc"], name="mm"), _requant_node("acc", "y", shift)]
    return save_case(folder, nodes, {"a": a}, ["y"], {"b": b, "mul": mul, "add": add},
                     expected=[requant(a @ b, 5, 7, shift)], shapes={"y": [4, 6]})


def _reduce_sum_int32(folder: Path) -> Path:
    """ReduceSum of 16 int32 values near 2^31 (multiples of 128: exact in float32): beyond int32."""
    x = _ints((2, 16), -2**24, 2**24 - 1) * 128
    x[0], x[1, 0] = 2**31 - 128, -2**31
    node = helper.make_node("ReduceSum", ["x", "axes"], ["y"], name="sum", keepdims=0)
    return save_case(folder, [node], {"x": x}, ["y"], {"axes": np.array([1])}, expected=[x.sum(axis=1)],
                     shapes={"y": [2]})


def _add_after_wide_matmul(folder: Path) -> Path:
    """The int64 sums of an int16 MatMul plus a bias: the Add computes and stores int64."""
    a, b = _ints((3, 8), -32768, 32767), _ints((8, 4), -32768, 32767)
    a[0], b[:, 0] = 32767, 32767
    bias = _ints((4,), -100, 100)
    nodes = [helper.make_node("MatMul", ["a", "b"], ["acc"], name="mm"),
             helper.make_node("Add", ["acc", "bias"], ["y"], name="bias_add")]
    return save_case(folder, nodes, {"a": a}, ["y"], {"b": b, "bias": bias}, expected=[a @ b + bias],
                     shapes={"y": [3, 4]})


def _max_uint32(folder: Path) -> Path:
    """Max of uint32 values beyond 2^31 (multiples of 256: exact in float32) and int8 ones."""
    x = _ints((2, 6), 0, 2**24 - 1) * 256
    x[0, :3] = (2**32 - 256, 2**31, 2**31 + 256)
    c = _ints((2, 6), -128, 127)
    node = helper.make_node("Max", ["x", "c"], ["y"], name="max")
    return save_case(folder, [node], {"x": x}, ["y"], {"c": c}, expected=[np.maximum(x, c)])


def _true_div_requant(folder: Path) -> Path:
    """TrueIntegerDiv by a coefficient of 2^30 (x * 2^30, beyond int32), then a RequantShift by
    2^30 that gives x back."""
    x = _ints((2, 8), -128, 127)
    nodes = [helper.make_node("TrueIntegerDiv", ["x"], ["q"], name="div", Delta=2**30, eps=0, eta=1, y=1),
             _requant_node("q", "y", 30)]
    return save_case(folder, nodes, {"x": x}, ["y"], {"mul": np.array([1]), "add": np.array([0])},
                     expected=[requant(x * 2**30, 1, 0, 30)])


def _integer_div_wide(folder: Path) -> Path:
    """IntegerDiv with Delta = 2^20 of int16 numerators by int8 denominators: quotients beyond
    int32, rounded half away from zero (restated in Python integers)."""
    x, d = _ints((2, 8), -32768, 32767), _ints((2, 8), 1, 100)
    x[0, :3], d[0, :3] = (32767, -32768, 12345), (1, 1, 2)
    num, den = [int(v) * 2**20 for v in x.reshape(-1)], [int(v) for v in d.reshape(-1)]
    q = [(2 * abs(n) + b) // (2 * b) * (-1 if n < 0 else 1) for n, b in zip(num, den)]
    node = helper.make_node("IntegerDiv", ["x", "d"], ["y"], name="idiv", domain="PACTOps", Delta=2**20, eps=0, eta=1)
    return save_case(folder, [node], {"x": x, "d": d}, ["y"], expected=[np.array(q, np.int64).reshape(2, 8)])


WIDE_CASES = {
    "add_after_wide_matmul": _add_after_wide_matmul,
    "max_uint32": _max_uint32,
    "matmul_int16": _matmul_int16,
    "gemm_huge_weight": _gemm_huge_weight,
    "conv_int16": lambda f: _conv_case(f, False),
    "conv_int16_requant": lambda f: _conv_case(f, True),
    "matmul_int16_requant": _gemm_requant,
    "reduce_sum_int32": _reduce_sum_int32,
    "true_integer_div_requant": _true_div_requant,
    "integer_div_wide": _integer_div_wide,
}


# ---- GEMMs over an empty reduction (K = 0): the result is C, or zeros, then any requantisation --

def _empty_k(folder: Path, op: str, requantise: bool) -> Path:
    """x[:, 0:0] (int8, [2, 0]) times a [0, 3] weight: zeros, plus Gemm's bias."""
    x = _ints((2, 4), -128, 127)
    consts = {"w": np.zeros((0, 3)), "starts": np.array([0]), "ends": np.array([0]), "axes": np.array([1])}
    nodes = [helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["xs"], name="slice")]
    acc = np.zeros((2, 3), np.int64)
    if op == "Gemm":
        consts["c"] = _ints((3,), -1000, 1000)
        nodes.append(helper.make_node("Gemm", ["xs", "w", "c"], ["acc"], name="gemm", beta=3.0))
        acc = acc + 3 * consts["c"]
    else:
        nodes.append(helper.make_node("MatMul", ["xs", "w"], ["acc"], name="mm"))
    expected = acc
    if requantise:
        consts.update(mul=np.array([5]), add=np.array([-40]))
        nodes.append(_requant_node("acc", "y", 4))
        expected = requant(acc, 5, -40, 4)
    else:
        nodes[-1].output[0] = "y"
    return save_case(folder, nodes, {"x": x}, ["y"], consts, expected=[expected], shapes={"y": [2, 3]})


EMPTY_K_CASES = {f"{op.lower()}{'_requant' if rq else ''}": (lambda f, op=op, rq=rq: _empty_k(f, op, rq))
                 for op in ("MatMul", "Gemm") for rq in (False, True)}


@pytest.mark.parametrize("case", sorted(EMPTY_K_CASES))
def test_empty_reduction_generic(case, tmp_path, capsys):
    run_generic(EMPTY_K_CASES[case](tmp_path / case), capsys)


@pytest.mark.parametrize("case", sorted(WIDE_CASES))
def test_wide_sums_generic(case, tmp_path, capsys):
    run_generic(WIDE_CASES[case](tmp_path / case), capsys)


@needs_qemu
@pytest.mark.parametrize("l1", [None, 16000])
@pytest.mark.parametrize("case", sorted(WIDE_CASES))
def test_wide_sums_siracusa(case, l1, tmp_path, capsys):
    run_siracusa(WIDE_CASES[case](tmp_path / case), capsys, l1=l1)


def _run_cli_error(folder: Path) -> str:
    """The Generic runner on ``folder`` must fail with one ``error:`` line and no traceback."""
    proc = subprocess.run([sys.executable, str(DEEPLOY_TEST / "testRunner_generic.py"), "-t", str(folder),
                           "--gen-dir", str(folder / "gen")], capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0, proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in proc.stderr, proc.stderr
    assert not (folder / "gen" / "network" / "Network.c").exists()
    return lines[0]


def test_sums_beyond_int64_are_a_compile_error(tmp_path):
    x = _ints((2, 8), -2**24, 2**24 - 1) * 128          # int32 (exact in float32)
    w = np.full((8, 3), 2**40)
    node = helper.make_node("Gemm", ["x", "w"], ["y"], name="huge_gemm")
    folder = save_case(tmp_path / "huge", [node], {"x": x}, ["y"], {"w": w}, expected=[np.zeros((2, 3))],
                       shapes={"y": [2, 3]})
    line = _run_cli_error(folder)
    assert "'huge_gemm' (Gemm)" in line and f"'w' in [{2**40}, {2**40}]" in line and "beyond int64" in line, line


def test_requantisation_beyond_int64_is_a_compile_error(tmp_path):
    x = _ints((2, 8), -2**24, 2**24 - 1) * 128
    node = _requant_node("x", "y", 4, name="huge_rq")
    folder = save_case(tmp_path / "huge_rq", [node], {"x": x}, ["y"], {"mul": np.array([2**40]), "add": np.array([0])},
                       expected=[np.zeros((2, 8))])
    line = _run_cli_error(folder)
    assert "'huge_rq'" in line and f"'mul' in [{2**40}, {2**40}]" in line and "beyond int64" in line, line


def test_alpha_beyond_int32_is_a_compile_error(tmp_path):
    x, w = _ints((2, 4), -128, 127), _ints((4, 3), -128, 127)
    node = helper.make_node("Gemm", ["x", "w"], ["y"], name="big_alpha", alpha=float(2**33))
    folder = save_case(tmp_path / "alpha", [node], {"x": x}, ["y"], {"w": w}, expected=[np.zeros((2, 3))],
                       shapes={"y": [2, 3]})
    line = _run_cli_error(folder)
    assert "'big_alpha' (Gemm)" in line and f"alpha={2**33}" in line, line
