"""Bit-exactness of every registered operator reference, generated from the op table in
op_cases/ (JAX op-test style: op name -> a few generated cases).

- every registered op must have a record (adding an op without tests fails here);
- standard ONNX ops: the one-node model is run by onnxruntime and by the reference interpreter
  (``run_reference`` on the graph loaded by ``load_onnx``) on the same seeded inputs: integer
  cases bit-exactly, float cases (non-integer data) within FLOAT_RTOL / FLOAT_ATOL;
- custom integer ops: the reference is compared with a naive re-statement of the formula in
  specs/integer-ops.md;
- malformed nodes raise an ``OpError`` naming the node.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from Deeploy.errors import OpError
from Deeploy.frontend import assign_input_types, infer_graph, load_onnx
from Deeploy.frontend.onnx_loader import data_values
from Deeploy.ops import registered_ops
from Deeploy.ops.fused import is_fused
from Deeploy.reference import run_reference

from DeeployTest.test_suite.op_cases import (CUSTOM_OPS, ERROR_CASES, ONNX_OPS, RECORDS, Case, cases_of,
                                        naive_requant_shift)


# ---- one-node models -----------------------------------------------------------------------
def build_model(op: str, case: Case, node_name: str = "node") -> onnx.ModelProto:
    """Graph inputs ``a<k>`` / initializers ``c<k>`` for operand k; output ``y``, declared with
    the first operand's element type (what onnxruntime's type inference gives these ops), and
    ``y1``, ``y2``... of ``case.more_outputs``."""
    inputs, inits, names = [], [], []
    for k, operand in enumerate(case.operands):
        if operand is None:
            names.append("")
            continue
        if operand.constant:
            names.append(f"c{k}")
            inits.append(numpy_helper.from_array(operand.value, f"c{k}"))
        else:
            names.append(f"a{k}")
            elem = helper.np_dtype_to_tensor_dtype(operand.value.dtype)
            inputs.append(helper.make_tensor_value_info(f"a{k}", elem, list(operand.value.shape)))
    out_elem = helper.np_dtype_to_tensor_dtype(np.dtype(case.out_type) if case.out_type and not case.domain
                                               else case.operands[0].value.dtype)
    outputs = [helper.make_tensor_value_info("y", out_elem, None)]
    outputs += [helper.make_tensor_value_info(f"y{k}", helper.np_dtype_to_tensor_dtype(np.dtype(t)), None)
                for k, t in enumerate(case.more_outputs, start=1)]
    node = helper.make_node(op, names, [o.name for o in outputs], name=node_name, domain=case.domain, **case.attrs)
    graph = helper.make_graph([node], f"{op}_test", inputs, outputs, inits)
    opsets = [helper.make_opsetid("", case.opset)]
    if case.domain:
        opsets.append(helper.make_opsetid(case.domain, 1))
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8
    return model


def activations(case: Case) -> dict[str, np.ndarray]:
    return {f"a{k}": o.value for k, o in enumerate(case.operands) if o is not None and not o.constant}


def run_deeploy_all(path: Path, case: Case) -> list:
    """Every output's reference value and inferred type, through the compiler's own frontend."""
    graph = load_onnx(path)
    values = {name: data_values(v, name) for name, v in activations(case).items()}
    assign_input_types(graph, values)
    infer_graph(graph)
    results = run_reference(graph, values)
    return [(results[out], graph.tensors[out].dtype) for out in graph.outputs]


def run_deeploy(path: Path, case: Case):
    """The first output's reference value and inferred type."""
    return run_deeploy_all(path, case)[0]


def run_ort_all(path: Path, case: Case) -> list[np.ndarray]:
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    options.log_severity_level = 3
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return session.run(None, activations(case))


def run_ort(path: Path, case: Case) -> np.ndarray:
    return run_ort_all(path, case)[0]


# float references compute in double and round once; onnxruntime's float32 kernels sum in
# another order and use their own exp/erf approximations: a few ulp of float32
FLOAT_RTOL, FLOAT_ATOL = 1e-5, 1e-6


def assert_same(got: np.ndarray, want: np.ndarray, case: Case) -> None:
    want = np.asarray(want)
    assert got.shape == want.shape, f"shape {got.shape}, expected {want.shape}"
    if got.dtype.kind == "f":
        close = np.isclose(got, want, rtol=FLOAT_RTOL, atol=FLOAT_ATOL, equal_nan=True)
        if not close.all():
            first = tuple(int(i) for i in np.argwhere(~close)[0])
            pytest.fail(f"{int((~close).sum())} of {got.size} float values differ beyond rtol {FLOAT_RTOL}, "
                        f"atol {FLOAT_ATOL}; first at {first}: got {got[first]}, expected {want[first]}")
        return
    if not np.array_equal(got, want):
        bad = np.argwhere(got != want)
        first = tuple(int(i) for i in bad[0])
        pytest.fail(f"{len(bad)} of {got.size} values differ; first at {first}: got {got[first]}, "
                    f"expected {want[first]} (attrs {case.attrs})")


def _params(ops):
    return [pytest.param(op, case, id=f"{op}-{case.label}")
            for op in ops for case in cases_of(RECORDS[op])]


# ---- 1. coverage of the registry -----------------------------------------------------------
FUSED = {name for name in registered_ops() if is_fused(name)}


def test_every_registered_op_has_a_record():
    registered = set(registered_ops()) - FUSED  # fused ops: test_fused_op_is_requant_of_base
    assert sorted(registered - set(RECORDS)) == [], "registered ops without test records"
    assert sorted(set(RECORDS) - registered) == [], "records for ops that are not registered"


def test_every_custom_op_has_an_independent_oracle():
    """Standard ops are checked against onnxruntime; the others need the spec formula restated."""
    assert [op for op in CUSTOM_OPS if RECORDS[op].naive is None] == []
    assert ONNX_OPS and CUSTOM_OPS


@pytest.mark.parametrize("op", sorted(RECORDS))
def test_record_has_cases_with_unique_labels(op):
    labels = [c.label for c in cases_of(RECORDS[op])]
    assert labels and len(labels) == len(set(labels))


# ---- 2. standard ONNX ops against onnxruntime -------------------------------------------
@pytest.mark.parametrize("op,case", _params(ONNX_OPS))
def test_matches_onnxruntime(op, case, tmp_path):
    path = tmp_path / "model.onnx"
    onnx.save(build_model(op, case), path)
    record = RECORDS[op]
    results = run_deeploy_all(path, case)
    assert len(results) == 1 + len(case.more_outputs)
    for (got, _), expected in zip(results, run_ort_all(path, case)):
        if got.dtype.kind == "f":
            assert_same(got, expected, case)
            continue
        if record.expect_from_ort is not None:
            expected = record.expect_from_ort(expected, case)
        else:
            assert np.array_equal(expected, np.round(expected)), "onnxruntime output is not integral"
            expected = expected.astype(np.int64)
        assert_same(got, expected, case)


# ---- 3. custom integer ops against the spec formula ------------------------------------
@pytest.mark.parametrize("op,case", _params(CUSTOM_OPS))
def test_matches_spec_formula(op, case, tmp_path):
    path = tmp_path / "model.onnx"
    onnx.save(build_model(op, case), path)
    got, dtype = run_deeploy(path, case)
    want = RECORDS[op].naive([v for v in case.values if v is not None], case.attrs)
    assert_same(got, want, case)
    if case.out_type is not None:
        assert str(dtype) == case.out_type


# ---- 4. malformed nodes ------------------------------------------------------------------
@pytest.mark.parametrize("label,op,operands,attrs,fragment",
                         [pytest.param(*e, id=e[0]) for e in ERROR_CASES])
def test_bad_node_raises_op_error(label, op, operands, attrs, fragment, tmp_path):
    name = f"bad_{label}"
    path = tmp_path / "model.onnx"
    case = Case(label, operands, attrs)
    onnx.save(build_model(op, case, node_name=name), path)
    graph = load_onnx(path)
    assign_input_types(graph, {name: data_values(v, name) for name, v in activations(case).items()})
    with pytest.raises(OpError, match=fragment) as excinfo:
        infer_graph(graph)
    assert excinfo.value.node.name == name
    assert f"node '{name}' ({op})" in str(excinfo.value)


def _fused_params():
    params = []
    for fused in sorted(FUSED):
        base = fused[len("Requantized"):]
        for case in cases_of(RECORDS[base])[:2]:
            params.append(pytest.param(fused, base, case, id=f"{fused}-{case.label}"))
    return params


@pytest.mark.parametrize("fused, base, case", _fused_params())
def test_fused_op_is_requant_of_base(fused, base, case, tmp_path):
    """Requantized<Op> == naive RequantShift(reference Op), on the base op's cases with a scalar
    or a per-last-axis requantisation."""
    onnx.save(build_model(base, case), tmp_path / "base.onnx")
    wide, _ = run_deeploy(tmp_path / "base.onnx", case)
    rng = np.random.default_rng(len(case.label))
    channels = wide.shape[-1] if wide.ndim and zlib.crc32(case.label.encode()) % 2 else 1
    mul = rng.integers(1, 64, size=(channels,)) if channels > 1 else np.array([37])
    add = rng.integers(-2**12, 2**12, size=mul.shape)
    attrs = {"div": 2**10, "n_levels_out": 256, "signed": 1}
    operands = list(case.operands)
    arity = {"Conv": 3, "Gemm": 3, "MatMul": 3}.get(base, len(operands))
    operands += [None] * (arity - len(operands))
    from DeeployTest.test_suite.op_cases import const
    fused_case = Case(case.label, tuple(operands) + (const(mul, np.float32), const(add, np.float32)),
                      {**case.attrs, **attrs}, opset=case.opset)
    onnx.save(build_model(fused, fused_case), tmp_path / "fused.onnx")
    got, dtype = run_deeploy(tmp_path / "fused.onnx", fused_case)
    mul_b = mul if channels > 1 else mul.reshape(())
    add_b = add if channels > 1 else add.reshape(())
    want = naive_requant_shift([wide, np.broadcast_to(mul_b, wide.shape), np.broadcast_to(add_b, wide.shape)], attrs)
    assert str(dtype) == "int8"
    assert_same(got, want, fused_case)
