"""ONNX's own node tests through the Generic path (benchmarks/onnx_conformance.py): a slice of
representative cases in the default suite (every one passes), and every case behind
``-m onnx_conformance`` (none wrong, none crashed)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys

import pytest

from DeeployTest.test_suite.conftest import REPO

pytestmark = pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake missing")

# (module of onnx.backend.test.case.node, case): elementwise, broadcasting, integer and float types,
# parameter inputs (axes, shape, starts, min/max, pads), whole-number samples of float-only ops
SLICE = [
    ("relu", "test_relu"), ("add", "test_add_bcast"), ("add", "test_add_uint8"),
    ("clip", "test_clip_splitbounds"), ("clip", "test_clip_default_int8_min"),
    ("reshape", "test_reshape_negative_dim"), ("unsqueeze", "test_unsqueeze_unsorted_axes"),
    ("slice", "test_slice_neg_steps"), ("transpose", "test_transpose_default"),
    ("concat", "test_concat_3d_axis_negative_2"), ("gather", "test_gather_negative_indices"),
    ("softmax", "test_softmax_example"), ("matmul", "test_matmul_3d"),
    ("reducesum", "test_reduce_sum_keepdims_example"), ("cast", "test_cast_FLOAT_to_BFLOAT16"),
    ("averagepool", "test_averagepool_2d_pads"), ("sqrt", "test_sqrt_example"),
    ("quantizelinear", "test_quantizelinear"), ("pad", "test_constant_pad"),
    ("castlike", "test_castlike_FLOAT_to_BFLOAT16_expanded"), ("shape", "test_shape_start_1"),
    ("reducemax", "test_reduce_max_do_not_keepdims_example"), ("reducemin", "test_reduce_min_keepdims_random"),
    ("reducel2", "test_reduce_l2_do_not_keepdims_example"),
]


def _conformance():
    spec = importlib.util.spec_from_file_location("onnx_conformance", REPO / "benchmarks" / "onnx_conformance.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module   # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_representative_node_tests_pass(tmp_path):
    conf = _conformance()
    wanted = {name for _, name in SLICE}
    cases = [c for c in conf.node_cases(sorted({m for m, _ in SLICE})) if c.name in wanted]
    assert {c.name for c in cases} == wanted
    outcomes = conf.run_cases(cases, jobs=min(2, os.cpu_count() or 1), work=tmp_path)
    assert [f"{o.name}: {o.kind} {o.reason}" for o in outcomes if o.kind != "passed"] == []


@pytest.mark.onnx_conformance
def test_no_node_test_is_wrong_or_crashes(tmp_path):
    conf = _conformance()
    outcomes = conf.run_cases(conf.node_cases(), jobs=os.cpu_count() or 1, work=tmp_path)
    print("\n".join(conf.summary(outcomes)))
    assert [f"{o.name}: {o.kind} {o.reason}" for o in outcomes if o.kind in ("wrong", "crashed")] == []
