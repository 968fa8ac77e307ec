"""Op records for test_op_references.py, in the style of JAX's op tests.

``RECORDS`` maps every operator name to an ``OpRecord``: the op's own test records (its
``OpDef.examples``: a few one-node cases, operands with shapes and types, attributes, constant
inputs) and the oracle the reference is checked against:

- standard ONNX ops are run by onnxruntime (``expect_from_ort`` post-processes its output where
  the integer semantics differ, as for ReduceMean, which rounds half up);
- custom integer ops are checked against ``naive``, a deliberately plain re-statement of the
  formula in specs/integer-ops.md: Python ints, exact fractions, loops over rows and elements.

Case data are seeded by the op name, so a case does not change when records are added.
"""

from __future__ import annotations

import numpy as np

from Deeploy.ops import Trait, op_named, registered_ops
from Deeploy.ops.examples import F32, Case, Operand, act, const, i64
from Deeploy.targets import platforms
from DeeployTest.test_suite.op_cases._case import OpRecord, cases_of
from DeeployTest.test_suite.op_cases.custom import ORACLES, naive_requant_shift
from DeeployTest.test_suite.op_cases.standard import EXPECT_FROM_ORT

__all__ = ["Operand", "Case", "OpRecord", "RECORDS", "ONNX_OPS", "CUSTOM_OPS", "ERROR_CASES",
           "cases_of", "act", "const", "naive_requant_shift"]


# ---- the records: every op's own cases, with its oracle ---------------------------------------
platforms()   # the targets register their own ops (the NPU job)
RECORDS: dict[str, OpRecord] = {name: OpRecord(name, op.examples, ORACLES.get(name), EXPECT_FROM_ORT.get(name))
                                for name, op in sorted(registered_ops().items()) if op.examples is not None}
ONNX_OPS = sorted(name for name in RECORDS if op_named(name).has(Trait.STANDARD))
CUSTOM_OPS = sorted(name for name in RECORDS if not op_named(name).has(Trait.STANDARD))


# ---- nodes the op definitions must reject ------------------------------------------------
def _shape_only(*shapes):
    return tuple(act(np.zeros(s), F32) for s in shapes)


# (label, op, operands, attrs, fragment of the expected message)
ERROR_CASES = [
    ("conv_group_not_dividing_channels", "Conv",
     _shape_only([1, 6, 5, 5]) + (const(np.ones([4, 2, 3, 3]), F32),), dict(group=4), "group=4"),
    ("conv_kernel_larger_than_input", "Conv",
     _shape_only([1, 2, 3, 3]) + (const(np.ones([2, 2, 5, 5]), F32),), {}, "larger than"),
    ("matmul_inner_dims", "MatMul", _shape_only([2, 3], [4, 5]), {}, "inner dimensions"),
    ("gemm_inner_dims_transB", "Gemm", _shape_only([2, 3], [3, 4]), dict(transB=1),
     "inner dimensions"),
    ("requant_div_not_pow2", "RequantShift",
     _shape_only([1, 4]) + (const(np.array(3), F32), const(np.array(0), F32)),
     dict(div=3, n_levels=256, signed=1), "'div' must be a power of two"),
    ("add_no_broadcast", "Add", _shape_only([2, 3], [4]), {}, "do not broadcast"),
    ("reshape_element_count", "Reshape", _shape_only([2, 3]) + (const(i64(4, 2)),), {},
     "cannot reshape"),
    ("gather_index_out_of_range", "Gather", _shape_only([3, 4]) + (const(i64(0, 4)),),
     dict(axis=1), "out of range"),
    ("concat_mismatch_outside_axis", "Concat", _shape_only([3, 4], [3, 5]), dict(axis=0),
     "does not match"),
    ("transpose_bad_perm", "Transpose", _shape_only([2, 3, 4]), dict(perm=[0, 2, 2]),
     "not a permutation"),
    ("layernorm_stash_type_double", "LayerNormalization",
     (act(np.full([2, 4], 0.5), F32), const(np.full(4, 0.5), F32)),
     dict(stash_type=11), "stash_type=11"),
    ("flatten_axis_a_string", "Flatten", _shape_only([2, 3]), dict(axis="last"), "'axis' must be a number"),
    ("maxpool_window_on_padding_only", "MaxPool", _shape_only([1, 1, 4, 4]),
     dict(kernel_shape=[2, 2], pads=[2, 0, 0, 0]), "padding only"),
    ("ilayernorm_D_not_pow2", "iLayerNorm",
     _shape_only([3, 4]) + (const(np.ones(4), F32), const(np.ones(4), F32)),
     dict(D=100, n_levels=256), "'D' must be a power of two"),
    ("isoftmax_log2_zero", "iSoftmax", _shape_only([3, 4]),
     dict(coeffA=1, coeffB=248, coeffC=32200, log2=0, n_levels=256), "log2 must be positive"),
    ("irmsnorm_weight_shape", "iRMSNorm", _shape_only([3, 4]) + (const(np.ones(3), F32),),
     dict(D=8, n_levels=256), "does not broadcast"),
    ("resize_linear_integer_data", "Resize", (act(np.zeros([1, 1, 2, 2]), np.int8), None,
                                              const(np.array([1, 1, 2, 2], np.float32))),
     dict(mode="linear"), "linear Resize of integer data"),
    ("resize_cubic", "Resize", (act(np.full([1, 1, 2, 2], 0.25), F32), None, const(np.array([1, 1, 2, 2], np.float32))),
     dict(mode="cubic"), "mode 'cubic' is not supported"),
    ("resize_scales_and_sizes", "Resize", (act(np.full([1, 2], 0.25), F32), None, const(np.array([1, 2], np.float32)),
                                           const(i64(1, 4))), {}, "exactly one of 'scales' and 'sizes'"),
    ("split_sizes_not_summing", "Split", _shape_only([5, 2]) + (const(i64(2, 2)),), {}, "summing to 5"),
]
