"""Float normalisations and softmax: LayerNormalization, RMSNorm (the corpus's custom op: ``x /
sqrt(mean(x^2) + eps) * weight`` over the last axis), InstanceNormalization, GroupNormalization,
BatchNormalization (inference), Softmax, SoftmaxGrad (com.microsoft: ``y * (dy - sum(dy *
y))``), SoftmaxCrossEntropyLoss and its gradient (com.microsoft SoftmaxCrossEntropyLossGrad:
inputs dY, log_prob, label[, weights]; ``(exp(log_prob) - onehot) * w * dY``, divided by the
summed weights for 'mean'; without dY, dY = 1/N). A loss node whose one output is declared
[N, C] gives the log-probabilities there (the form of this family's training graphs). Statistics are computed in double and rounded once to float32 in the references.

Every normalisation is one ``FloatNormParams``: the input as ``blocks`` contiguous blocks of
``width`` elements normalised each; element i of block b uses the scale and bias entry
``(q // stride) % channels`` with ``q = (b % per_sample) * width + i``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from Deeploy.errors import OpError
from Deeploy.ir.dtypes import FLOAT32
from Deeploy.ops._attrs import attr_float, attr_int, attr_str, in_tensor, normalize_axis, old_form, require_inputs
from Deeploy.ops.examples import F32, Case, act, const, frand
from Deeploy.ops.float_math import require_float
from Deeploy.ops._registry import Cost, OpDef, Trait, register

__all__ = ["FloatNormParams", "SoftmaxParams", "norm_reference"]


@dataclass(frozen=True)
class FloatNormParams:
    shape: tuple[int, ...]
    blocks: int
    width: int
    per_sample: int       # blocks per sample (scale entries repeat every sample)
    stride: int           # elements sharing one scale entry
    channels: int         # scale and bias entries
    eps: float
    rms: bool             # RMSNorm: no mean subtracted
    has_bias: bool
    stat_shape: tuple[int, ...] = ()             # LayerNormalization's Mean and InvStdDev: one per block
    stats: tuple[bool, bool] = (False, False)    # which of them the node outputs


def _size(shape) -> int:
    return int(np.prod(shape, dtype=np.int64))


def _check_vector(node, graph, index, what, size):
    t = in_tensor(node, graph, index)
    if t is not None and t.size != size:
        raise OpError(node, f"{what} has {t.size} values, expected {size}")
    return t is not None


def _layernorm_parse(node, graph):
    require_inputs(node, 2, 3)
    require_float(node, graph)
    shape = tuple(graph.tensors[node.inputs[0]].shape)
    axis = normalize_axis(node, attr_int(node, "axis", -1), len(shape))
    width = _size(shape[axis:])
    if len(node.outputs) > 3:
        raise OpError(node, f"has {len(node.outputs)} outputs, expected at most 3 (Y, Mean, InvStdDev)")
    stash = attr_int(node, "stash_type", 1)
    if stash != 1:
        raise OpError(node, f"stash_type={stash} is not supported: Mean and InvStdDev are computed in float32 "
                      "(stash_type=1)")
    scale = graph.tensors[node.inputs[1]]
    if _size(scale.shape) != width:
        raise OpError(node, f"scale of shape {list(scale.shape)} does not cover the normalised axes {list(shape[axis:])}")
    bias = _check_vector(node, graph, 2, "bias", width)
    stats = tuple(k < len(node.outputs) and bool(node.outputs[k]) for k in (1, 2))
    return FloatNormParams(shape, _size(shape[:axis]), width, 1, 1, width, attr_float(node, "epsilon", 1e-5),
                           False, bias, shape[:axis] + (1,) * (len(shape) - axis), stats)


def _rmsnorm_parse(node, graph):
    require_inputs(node, 2)
    require_float(node, graph)
    shape = tuple(graph.tensors[node.inputs[0]].shape)
    width = shape[-1]
    _check_vector(node, graph, 1, "weight", width)
    return FloatNormParams(shape, _size(shape[:-1]), width, 1, 1, width, attr_float(node, "eps", 1e-6), True, False)


def _channel_norm_parse(node, graph):
    """InstanceNormalization (groups = channels) and GroupNormalization (opset 21: per-channel scale)."""
    require_inputs(node, 3)
    require_float(node, graph)
    shape = tuple(graph.tensors[node.inputs[0]].shape)
    if len(shape) < 3:
        raise OpError(node, f"expects an input [N, C, spatial...], got {list(shape)}")
    channels, spatial = shape[1], _size(shape[2:])
    groups = attr_int(node, "num_groups") if node.op == "GroupNormalization" else channels
    if groups < 1 or channels % groups:
        raise OpError(node, f"num_groups={groups} does not divide {channels} channels")
    if graph.opset_below(21) and node.op == "GroupNormalization" and groups != channels:
        raise old_form(node, graph, "scale and bias per group", 21)
    for index, what in ((1, "scale"), (2, "bias")):
        _check_vector(node, graph, index, what, channels)
    width = channels // groups * spatial
    return FloatNormParams(shape, shape[0] * groups, width, groups, spatial, channels,
                           attr_float(node, "epsilon", 1e-5), False, True)


def norm_reference(p: FloatNormParams, x, scale, bias, stats: bool = False):
    """y; with ``stats`` also each block's mean and 1 / sqrt(var + eps), float32."""
    x = x.reshape(p.blocks, p.width).astype(np.float64)
    mean = np.zeros((p.blocks, 1)) if p.rms else x.mean(axis=1, keepdims=True)
    d = x - mean
    inv = 1.0 / np.sqrt((d * d).mean(axis=1, keepdims=True) + np.float64(np.float32(p.eps)))
    q = (np.arange(p.blocks)[:, None] % p.per_sample) * p.width + np.arange(p.width)[None, :]
    entry = (q // p.stride) % p.channels
    y = d * inv * scale.reshape(-1).astype(np.float64)[entry]
    if bias is not None:
        y = y + bias.reshape(-1).astype(np.float64)[entry]
    y = y.astype(np.float32).reshape(p.shape)
    if not stats:
        return y
    return y, mean.astype(np.float32).reshape(p.stat_shape), inv.astype(np.float32).reshape(p.stat_shape)


def _norm_reference(p, xs):
    return [norm_reference(p, xs[0], xs[1], xs[2] if len(xs) > 2 and p.has_bias else None)]


def _layernorm_reference(p, xs):
    return list(norm_reference(p, xs[0], xs[1], xs[2] if len(xs) > 2 and p.has_bias else None, stats=True))


def _layernorm_infer(p, ins):
    """Y as X; Mean and InvStdDev float32 (stash_type 1), one value per normalised block."""
    return [(p.shape, ins[0].dtype), (p.stat_shape, FLOAT32), (p.stat_shape, FLOAT32)]


def _norm_cost(p, ins, outs):
    return Cost(ops=8 * outs[0].size, bytes=sum(t.nbytes for t in ins if t is not None) + outs[0].nbytes)


def _layernorm_cases(rng):
    return [Case("last_axis", (act(frand(rng, [2, 3, 8]), F32), const(frand(rng, [8]), F32),
                               const(frand(rng, [8]), F32)), dict(axis=-1, epsilon=1e-5), opset=17),
            Case("two_axes_no_bias", (act(frand(rng, [2, 3, 4]), F32), const(frand(rng, [3, 4]), F32)),
                 dict(axis=1), opset=17),
            Case("mean_inv_std_dev", (act(frand(rng, [2, 3, 8]), F32), const(frand(rng, [8]), F32),
                                      const(frand(rng, [8]), F32)), dict(epsilon=1e-3), opset=17,
                 more_outputs=("float32", "float32")),
            Case("axis0_stats", (act(frand(rng, [3, 2, 4]), F32), const(frand(rng, [3, 2, 4]), F32)),
                 dict(axis=0, stash_type=1), opset=17, more_outputs=("float32", "float32"))]


def _instancenorm_cases(rng):
    return [Case("2d", (act(frand(rng, [2, 3, 4, 5]), F32), const(frand(rng, [3]), F32), const(frand(rng, [3]), F32)),
                 dict(epsilon=1e-5))]


def _groupnorm_cases(rng):
    return [Case("2_groups", (act(frand(rng, [2, 4, 3, 3]), F32), const(frand(rng, [4]), F32),
                              const(frand(rng, [4]), F32)), dict(num_groups=2, epsilon=1e-5), opset=21)]


def _rmsnorm_cases(rng):
    return [Case("rows", (act(frand(rng, [3, 8]), F32), const(frand(rng, [8]), F32)), dict(eps=1e-6))]


_NORM = dict(cost=_norm_cost, traits=frozenset({Trait.STANDARD, Trait.ROWWISE, Trait.FLOAT_ONLY}))
register(OpDef("LayerNormalization", _layernorm_parse, _layernorm_infer, _layernorm_reference,
               examples=_layernorm_cases, tiling="norm", **_NORM))
register(OpDef("InstanceNormalization", _channel_norm_parse, lambda p, ins: [(p.shape, ins[0].dtype)],
               _norm_reference, examples=_instancenorm_cases, tiling="channels", **_NORM))
register(OpDef("GroupNormalization", _channel_norm_parse, lambda p, ins: [(p.shape, ins[0].dtype)],
               _norm_reference, examples=_groupnorm_cases, tiling="channels", **_NORM))
register(OpDef("RMSNorm", _rmsnorm_parse, lambda p, ins: [(p.shape, ins[0].dtype)], _norm_reference,
               _norm_cost, traits=frozenset({Trait.ROWWISE, Trait.FLOAT_ONLY}), tiling="norm", examples=_rmsnorm_cases))


# ---- BatchNormalization (inference): a per-channel affine map --------------------------------
@dataclass(frozen=True)
class BatchNormParams:
    shape: tuple[int, ...]
    eps: float


def _batchnorm_parse(node, graph):
    require_inputs(node, 5)
    require_float(node, graph)
    if graph.opset_below(7) and not attr_int(node, "is_test", 0):
        raise old_form(node, graph, "training mode (is_test=0)", 7)
    if graph.opset_below(9) and not attr_int(node, "spatial", 1):
        raise old_form(node, graph, "statistics per element (spatial=0)", 9)
    if attr_int(node, "training_mode", 0) or len([o for o in node.outputs if o]) > 1:
        raise OpError(node, "only inference BatchNormalization (one output, training_mode=0) is supported")
    shape = tuple(graph.tensors[node.inputs[0]].shape)
    if len(shape) < 2:
        raise OpError(node, f"expects an input [N, C, ...], got {list(shape)}")
    for index, what in enumerate(("scale", "B", "input_mean", "input_var"), start=1):
        _check_vector(node, graph, index, what, shape[1])
    return BatchNormParams(shape, attr_float(node, "epsilon", 1e-5))


def _batchnorm_reference(p, xs):
    view = (1, -1) + (1,) * (len(p.shape) - 2)
    scale, bias, mean, var = (v.astype(np.float64).reshape(view) for v in xs[1:5])
    y = (xs[0].astype(np.float64) - mean) / np.sqrt(var + np.float64(np.float32(p.eps))) * scale + bias
    return [y.astype(np.float32)]


def _batchnorm_cases(rng):
    c = 3
    return [Case("2d", (act(frand(rng, [2, c, 4, 4]), F32), const(frand(rng, [c]), F32), const(frand(rng, [c]), F32),
                        const(frand(rng, [c]), F32), const(frand(rng, [c], 0.5, 2.0), F32)), dict(epsilon=1e-5),
                 opset=15)]


register(OpDef("BatchNormalization", _batchnorm_parse, lambda p, ins: [(p.shape, ins[0].dtype)], _batchnorm_reference,
               _norm_cost, traits=frozenset({Trait.STANDARD, Trait.FLOAT_ONLY}), tiling="channels", examples=_batchnorm_cases))


# ---- Softmax, SoftmaxGrad ---------------------------------------------------------------------
@dataclass(frozen=True)
class SoftmaxParams:
    """The input as [outer, width, inner]; softmax along the middle axis."""

    shape: tuple[int, ...]
    outer: int
    width: int
    inner: int


def _softmax_parse(node, graph):
    require_inputs(node, 2 if node.op == "SoftmaxGrad" else 1)
    require_float(node, graph)
    shape = tuple(graph.tensors[node.inputs[0]].shape)
    if node.op == "SoftmaxGrad" and tuple(graph.tensors[node.inputs[1]].shape) != shape:
        raise OpError(node, "dy and y must have the same shape")
    if node.op == "Softmax" and graph.opset_below(13):   # the input coerced to 2-D at axis: one row per outer index
        axis = normalize_axis(node, attr_int(node, "axis", 1), len(shape))
        return SoftmaxParams(shape, _size(shape[:axis]), _size(shape[axis:]), 1)
    axis = normalize_axis(node, attr_int(node, "axis", -1), len(shape))   # opset >= 13: one axis
    return SoftmaxParams(shape, _size(shape[:axis]), shape[axis], _size(shape[axis + 1:]))


def _rows3(p, x):
    return x.reshape(p.outer, p.width, p.inner).astype(np.float64)


def _softmax_reference(p, xs):
    x = _rows3(p, xs[0])
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return [(e / e.sum(axis=1, keepdims=True)).astype(np.float32).reshape(p.shape)]


def _softmax_grad_reference(p, xs):
    dy, y = _rows3(p, xs[0]), _rows3(p, xs[1])
    return [(y * (dy - (dy * y).sum(axis=1, keepdims=True))).astype(np.float32).reshape(p.shape)]


def _softmax_cases(rng):
    return [Case("last_axis", (act(frand(rng, [2, 3, 7]), F32),)),
            Case("middle_axis", (act(frand(rng, [2, 5, 3]), F32),), dict(axis=1))]


def _softmax_grad_cases(rng):
    y = _softmax_reference(SoftmaxParams((4, 6), 4, 6, 1), [frand(rng, [4, 6])])[0]
    return [Case("rows", (act(frand(rng, [4, 6], -1, 1), F32), act(y, F32)), dict(axis=-1), domain="com.microsoft")]


def _softmax_cost(p, ins, outs):
    return Cost(ops=6 * outs[0].size, bytes=sum(t.nbytes for t in ins) + outs[0].nbytes)


register(OpDef("Softmax", _softmax_parse, lambda p, ins: [(p.shape, ins[0].dtype)], _softmax_reference,
               _softmax_cost, traits=frozenset({Trait.STANDARD, Trait.ROWWISE, Trait.FLOAT_ONLY}), tiling="softmax",
               examples=_softmax_cases))
register(OpDef("SoftmaxGrad", _softmax_parse, lambda p, ins: [(p.shape, ins[0].dtype)], _softmax_grad_reference,
               _softmax_cost, traits=frozenset({Trait.ROWWISE, Trait.FLOAT_ONLY}), tiling="norm", examples=_softmax_grad_cases))


# ---- SoftmaxCrossEntropyLoss and its gradient (com.microsoft) ---------------------------------
@dataclass(frozen=True)
class CrossEntropyParams:
    """Scores [N, C], integer labels [N], optional class weights [C]; ``reduction`` 'none',
    'sum' or 'mean' (divided by the summed weights of the counted samples); samples labelled
    ``ignore_index`` count nothing."""

    batch: int
    classes: int
    reduction: str
    ignore_index: int | None
    has_weights: bool
    log_prob: bool       # the loss op's second output is wanted
    log_prob_only: bool = False   # loss op: its one output is declared [N, C], the log-probabilities
    implicit_dy: bool = False     # gradient op without dY: dY = 1/N (the batch-mean loss averaged again)


def _cross_entropy_parse(node, graph):
    grad = node.op == "SoftmaxCrossEntropyLossGrad"
    require_inputs(node, 2, 4 if grad else 3)
    implicit_dy = grad and len(node.inputs) == 2    # (log_prob, labels): the training graphs' form
    scores_at = 1 if grad and not implicit_dy else 0
    scores = graph.tensors[node.inputs[scores_at]]
    labels = graph.tensors[node.inputs[scores_at + 1]]
    if not scores.dtype.is_float:
        raise OpError(node, f"scores must be float, got {scores.dtype}")
    if len(scores.shape) != 2:
        raise OpError(node, f"only scores of shape [N, C] are supported, got {list(scores.shape)}")
    if labels.dtype.is_float or tuple(labels.shape) != tuple(scores.shape[:1]):
        raise OpError(node, f"labels must be integers of shape [{scores.shape[0]}], got {labels.dtype} "
                      f"{list(labels.shape)}")
    reduction = attr_str(node, "reduction", "mean")
    if reduction not in ("none", "sum", "mean"):
        raise OpError(node, f"reduction '{reduction}' is not one of none, sum, mean")
    has_weights = _check_vector(node, graph, scores_at + 2, "weights", scores.shape[1])
    declared = graph.tensors[node.outputs[0]].shape
    log_prob_only = not grad and len(node.outputs) == 1 and declared == tuple(scores.shape)
    return CrossEntropyParams(scores.shape[0], scores.shape[1], reduction, attr_int(node, "ignore_index", None),
                              has_weights, len(node.outputs) > 1 and bool(node.outputs[1]), log_prob_only,
                              implicit_dy)


def _cross_entropy_infer(p, ins):
    dtype = ins[0].dtype if ins[0].dtype.is_float else ins[1].dtype
    loss = ((p.batch,) if p.reduction == "none" else (), dtype)
    log_prob = ((p.batch, p.classes), dtype)
    return [log_prob] if p.log_prob_only else [loss, log_prob]


def _sample_weights(p, labels, weights):
    """Per-sample weight of the loss (0 for ignored samples) and the labels clipped to valid classes."""
    labels = labels.astype(np.int64).reshape(-1)
    counted = np.ones(p.batch, bool) if p.ignore_index is None else labels != p.ignore_index
    safe = np.where(counted, labels, 0)
    w = weights.astype(np.float64).reshape(-1)[safe] if weights is not None else np.ones(p.batch)
    return np.where(counted, w, 0.0), safe


def _cross_entropy_reference(p, xs):
    x = xs[0].astype(np.float64)
    log_prob = x - x.max(axis=1, keepdims=True)
    log_prob -= np.log(np.exp(log_prob).sum(axis=1, keepdims=True))
    w, safe = _sample_weights(p, xs[1], xs[2] if p.has_weights else None)
    loss = -log_prob[np.arange(p.batch), safe] * w
    if p.reduction == "sum":
        loss = loss.sum()
    elif p.reduction == "mean":
        loss = loss.sum() / w.sum()
    if p.log_prob_only:
        return [log_prob.astype(np.float32)]
    return [np.asarray(loss, np.float32), log_prob.astype(np.float32)]


def _cross_entropy_grad_reference(p, xs):
    if p.implicit_dy:
        xs = [np.asarray(1.0 / p.batch), *xs]
    dy, log_prob = xs[0].astype(np.float64), xs[1].astype(np.float64)
    w, safe = _sample_weights(p, xs[2], xs[3] if p.has_weights else None)
    grad = np.exp(log_prob)
    grad[np.arange(p.batch), safe] -= 1.0
    scale = w * (dy.reshape(-1) if p.reduction == "none" else dy.reshape(()))
    if p.reduction == "mean":
        scale = scale / w.sum()
    return [(grad * scale[:, None]).astype(np.float32)]


def _cross_entropy_cases(rng):
    labels = np.array([3, 0, 4, 1], np.int64)
    return [Case("mean", (act(frand(rng, [4, 5]), F32), act(labels, np.int64)), opset=13),
            Case("sum_weights_ignore", (act(frand(rng, [4, 5]), F32), act(labels, np.int64),
                                        const(frand(rng, [5], 0.5, 2.0), F32)),
                 dict(reduction="sum", ignore_index=0), opset=13),
            Case("none", (act(frand(rng, [4, 5]), F32), act(labels, np.int64)), dict(reduction="none"), opset=13)]


def _cross_entropy_grad_cases(rng):
    labels = np.array([2, 0, 1], np.int64)
    x = frand(rng, [3, 4])
    log_prob = (x - np.log(np.exp(x).sum(axis=1, keepdims=True))).astype(np.float32)
    return [Case("mean", (act(np.array(0.5, F32), F32), act(log_prob, F32), act(labels, np.int64)),
                 domain="com.microsoft"),
            Case("none_weights", (act(frand(rng, [3], 0.5, 1.5), F32), act(log_prob, F32), act(labels, np.int64),
                                  const(frand(rng, [4], 0.5, 2.0), F32)), dict(reduction="none"),
                 domain="com.microsoft")]


register(OpDef("SoftmaxCrossEntropyLoss", _cross_entropy_parse, _cross_entropy_infer, _cross_entropy_reference,
               _softmax_cost, traits=frozenset({Trait.STANDARD}), tiling="whole", examples=_cross_entropy_cases))
register(OpDef("SoftmaxCrossEntropyLossGrad", _cross_entropy_parse,
               lambda p, ins: [((p.batch, p.classes), ins[int(not p.implicit_dy)].dtype)],
               _cross_entropy_grad_reference,
               _softmax_cost, tiling="whole", examples=_cross_entropy_grad_cases))
