"""Operator definitions: one module per operator family, each registering its ops once."""

from Deeploy.ops._registry import Cost, OpDef, Trait, get_op, op_named, ops_with, registered_ops  # noqa: F401
from Deeploy.ops import (  # noqa: F401  (imported for their registrations)
    activation, concat, conv, conv_transpose, division, elementwise, float_math, float_norm, gemm, norm, optimizer,
    pad, pool, reduce, qlinear, quant, requant, resize, select, shape_ops, slicing, softmax,
)
from Deeploy.ops import fused  # noqa: F401,E402  (composes the ops above)
