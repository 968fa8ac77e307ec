"""Gemm (transA/transB, alpha/beta, rank-3 batched A) and MatMul (batched, broadcast):
int32 output, int64 when the proven bound of the sums exceeds int32 (ops/_bounds.py); under ONNX
integer semantics (``Graph.onnx_integers``) with 32/64-bit operands (ONNX's integer types of these ops)
the operands' type, the sums wrapping around in it; narrower operands (a lowered QDQ group) sum exactly."""

from __future__ import annotations

from dataclasses import dataclass, replace

import math

import numpy as np

from Deeploy.errors import OpError
from Deeploy.ir.dtypes import INT32, DType, float_result, wrapped
from Deeploy.ops._attrs import attr_float, attr_int, broadcast_shape, require_inputs
from Deeploy.ops.bounds import all_integer, check_int64, magnitude_by_reference, matmul_bound, max_abs, sum_type
from Deeploy.ops.examples import I32, F32, Case, act, const, frand, rand
from Deeploy.ops._registry import Cost, OpDef, Trait, register

__all__ = ["MatMulParams"]


@dataclass(frozen=True)
class MatMulParams:
    """``Y[b] = alpha * op(A[b]) @ op(B[b]) + beta * C`` over ``batch`` flattened batch entries.

    a_batched/b_batched say whether A/B advance with the batch (else they are shared).
    ``c_shape`` is the bias broadcast to the output's last two dims ((0, 0) without bias).
    ``onnx_type``: the integer type of the operands and the output under ONNX integer semantics.
    ``sum_bound``: the largest |Y| (and partial sum) from the operands' proven ranges (integers).
    """

    batch: int
    m: int
    n: int
    k: int
    trans_a: bool
    trans_b: bool
    alpha: int
    beta: int
    a_batched: bool
    b_batched: bool
    out_shape: tuple[int, ...]
    c_rows: int = 0
    c_cols: int = 0
    c_batched: bool = False
    onnx_type: DType | None = None
    sum_bound: int | None = None


def _batch_layout(node, a_shape, b_shape, m, n):
    a_batch, b_batch = tuple(a_shape[:-2]), tuple(b_shape[:-2])
    batch_shape = broadcast_shape(node, [a_batch, b_batch])
    size = int(math.prod(batch_shape))
    a_full = int(math.prod(a_batch)) == size
    b_full = int(math.prod(b_batch)) == size
    a_one = int(math.prod(a_batch)) == 1
    b_one = int(math.prod(b_batch)) == 1
    if not ((a_full or a_one) and (b_full or b_one)):
        raise OpError(node, f"partial batch broadcasting of {list(a_shape)} and {list(b_shape)} "
                      "is not supported")
    return size, a_full and not a_one, b_full and not b_one, batch_shape + (m, n)


def _matmul_parse(node, graph):
    """numpy semantics: a 1-D A is a row [1, K], a 1-D B a column [K, 1], and that 1 is dropped
    from the output."""
    require_inputs(node, 2)
    a0, b0 = graph.tensors[node.inputs[0]].shape, graph.tensors[node.inputs[1]].shape
    if not a0 or not b0:
        raise OpError(node, f"inputs must have rank >= 1, got {list(a0)} and {list(b0)}")
    a = (1,) + tuple(a0) if len(a0) == 1 else tuple(a0)
    b = tuple(b0) + (1,) if len(b0) == 1 else tuple(b0)
    if a[-1] != b[-2]:
        raise OpError(node, f"inner dimensions differ: {list(a0)} @ {list(b0)}")
    batch, ab, bb, out = _batch_layout(node, a, b, a[-2], b[-1])
    out = out[:-2] + out[-2:-1] * (len(a0) > 1) + out[-1:] * (len(b0) > 1)
    return _mm_checked(node, graph, MatMulParams(batch, a[-2], b[-1], a[-1], False, False, 1, 1, ab, bb, out))


def _gemm_parse(node, graph):
    require_inputs(node, 2, 3)
    a, b = graph.tensors[node.inputs[0]].shape, graph.tensors[node.inputs[1]].shape
    trans_a, trans_b = bool(attr_int(node, "transA", 0)), bool(attr_int(node, "transB", 0))
    alpha, beta = attr_float(node, "alpha", 1.0), attr_float(node, "beta", 1.0)
    ins = [graph.tensors[i] if i else None for i in node.inputs]
    floating = not all_integer(ins)
    if not floating and (alpha != int(alpha) or beta != int(beta)):
        raise OpError(node, f"alpha={alpha} and beta={beta} must be integers in an integer network")
    if len(a) not in (2, 3) or len(b) not in (2, 3):
        raise OpError(node, f"A and B must have rank 2 or 3, got {list(a)} and {list(b)}")
    m, k = (a[-1], a[-2]) if trans_a else (a[-2], a[-1])
    kb, n = (b[-1], b[-2]) if trans_b else (b[-2], b[-1])
    if k != kb:
        raise OpError(node, f"inner dimensions differ: A {list(a)} (transA={int(trans_a)}) and "
                      f"B {list(b)} (transB={int(trans_b)})")
    batch, ab, bb, out = _batch_layout(node, a, b, m, n)
    c_rows = c_cols = 0
    c_batched = False
    if len(node.inputs) > 2 and node.inputs[2]:
        c = graph.tensors[node.inputs[2]].shape
        if tuple(broadcast_shape(node, [c, out])) != tuple(out):
            raise OpError(node, f"C of shape {list(c)} does not broadcast to the output {list(out)}")
        c2 = (1,) * max(0, 2 - len(c)) + tuple(c[-2:])
        c_rows, c_cols = c2
        c_batched = int(math.prod(c[:-2])) > 1
    if floating:
        alpha, beta = float(np.float32(alpha)), float(np.float32(beta))
    else:
        alpha, beta = int(alpha), int(beta)
    return _mm_checked(node, graph, MatMulParams(batch, m, n, k, trans_a, trans_b, alpha, beta, ab, bb,
                                                 out, c_rows, c_cols, c_batched))


def _mm_bound(p: MatMulParams, ins) -> int:
    if p.sum_bound is not None:
        return p.sum_bound
    return matmul_bound(p, ins[0], ins[1], ins[2] if len(ins) > 2 else None)


def _mm_checked(node, graph, p: MatMulParams) -> MatMulParams:
    """``p``, once alpha and beta fit the kernels' int32 parameters and the sums fit int64."""
    for name, value in (("alpha", p.alpha), ("beta", p.beta)):
        if not -2**31 <= value < 2**31:
            raise OpError(node, f"{name}={value} does not fit the kernels' int32 parameter")
    ins = [graph.tensors[i] if i else None for i in node.inputs]
    if all_integer(ins) and graph.onnx_integers and ins[0].dtype.bits >= 32:
        return replace(p, onnx_type=ins[0].dtype)   # ONNX's integer MatMul/Gemm types: 32 and 64 bits
    if all_integer(ins):
        check_int64(node, _mm_bound(p, ins), "the product sums", ins)
        mags = [max_abs(graph, i) if i else 0 for i in (node.inputs + [""] * 3)[:3]]
        p = replace(p, sum_bound=matmul_bound(p, *(ins + [None] * 3)[:3], mags=mags))
    return p


def _mm_infer(p: MatMulParams, ins):
    """int32, or int64 when the proven bound of the sums needs it."""
    floating = float_result(*(t.dtype for t in ins if t is not None))
    if floating is not None:
        return [(p.out_shape, floating)]
    if p.onnx_type is not None:
        return [(p.out_shape, p.onnx_type)]
    return [(p.out_shape, sum_type(_mm_bound(p, ins)) if all_integer(ins) else INT32)]


def _gemm_reference(p: MatMulParams, xs):
    a, b = xs[0], xs[1]
    if p.trans_a:
        a = np.swapaxes(a, -1, -2)
    if p.trans_b:
        b = np.swapaxes(b, -1, -2)
    if a.dtype.kind == "f" or b.dtype.kind == "f":   # float: products summed in double, rounded once
        y = p.alpha * np.matmul(a.astype(np.float64), b.astype(np.float64))
        if len(xs) > 2 and xs[2] is not None:
            y = y + p.beta * xs[2].astype(np.float64)
        return [y.astype(np.float32).reshape(p.out_shape)]
    with np.errstate(over="ignore"):   # int64 arithmetic is modulo 2^64, so wrapping is exact
        y = p.alpha * np.matmul(a, b)
        if len(xs) > 2 and xs[2] is not None:
            y = y + p.beta * xs[2]
    return [(y if p.onnx_type is None else wrapped(y, p.onnx_type)).reshape(p.out_shape)]


def _mm_cost(p: MatMulParams, ins, outs):
    return Cost(ops=2 * p.batch * p.m * p.n * p.k,
                bytes=sum(t.nbytes for t in ins if t is not None) + outs[0].nbytes)


# ---- test records: a few one-node cases per op (DeeployTest/test_suite/test_op_references.py) ----
def _gemm_cases(rng):
    return [
        Case("bias_vector", (act(rand(rng, [4, 8]), F32), const(rand(rng, [8, 5]), F32),
                             const(rand(rng, [5], -4096, 4096), F32))),
        Case("trans_alpha_beta", (act(rand(rng, [8, 4]), F32), const(rand(rng, [5, 8]), F32),
                                  const(rand(rng, [4, 1], -4096, 4096), F32)),
             dict(transA=1, transB=1, alpha=2.0, beta=3.0)),
        Case("no_bias", (act(rand(rng, [3, 16]), F32), const(rand(rng, [16, 7]), F32))),
        Case("two_activations_bias_matrix", (act(rand(rng, [4, 6]), F32),
                                             act(rand(rng, [6, 3]), F32),
                                             const(rand(rng, [4, 3], -4096, 4096), F32))),
        Case("float32_trans_b", (act(frand(rng, [5, 8]), F32), const(frand(rng, [6, 8]), F32),
                                 const(frand(rng, [6]), F32)), dict(transB=1, alpha=0.5, beta=1.5)),
    ]


def _matmul_cases(rng):
    return [
        Case("2d", (act(rand(rng, [3, 4]), I32), act(rand(rng, [4, 5]), I32))),
        Case("batched", (act(rand(rng, [2, 3, 4]), I32), act(rand(rng, [2, 4, 5]), I32))),
        Case("shared_weights", (act(rand(rng, [2, 3, 3, 64]), I32),
                                const(rand(rng, [64, 6]), I32))),
        Case("shared_a", (const(rand(rng, [3, 4]), I32), act(rand(rng, [2, 4, 5]), I32))),
        Case("float32_batched", (act(frand(rng, [2, 3, 4]), F32), act(frand(rng, [2, 4, 5]), F32))),
        Case("vector_a", (act(rand(rng, [4]), I32), act(rand(rng, [2, 4, 5]), I32))),
        Case("vector_b", (act(rand(rng, [2, 3, 4]), I32), const(rand(rng, [4]), I32))),
        Case("vector_dot", (act(frand(rng, [6]), F32), act(frand(rng, [6]), F32))),
    ]


register(OpDef("MatMul", _matmul_parse, _mm_infer, _gemm_reference, _mm_cost,
               traits=frozenset({Trait.STANDARD, Trait.GEMM}), tiling="gemm", fuse_slots=3,
               magnitude=magnitude_by_reference(_gemm_reference, lambda p: replace(p, onnx_type=None)),
               examples=_matmul_cases))
register(OpDef("Gemm", _gemm_parse, _mm_infer, _gemm_reference, _mm_cost,
               traits=frozenset({Trait.STANDARD, Trait.GEMM}), tiling="gemm", fuse_slots=3,
               magnitude=magnitude_by_reference(_gemm_reference, lambda p: replace(p, alpha=abs(p.alpha), beta=abs(p.beta),
                                                                                   onnx_type=None)),
               examples=_gemm_cases))
