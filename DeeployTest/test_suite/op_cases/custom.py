"""The custom integer ops' oracles: plain restatements of specs/integer-ops.md (Python ints,
exact fractions, loops over rows and elements), independent of the op modules' references."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from DeeployTest.test_suite.op_cases._case import clip, floor_div, num, rows, trunc_div


def _flat_or_broadcast(c: np.ndarray, x_shape):
    """RequantShift's rule for mul/add: numpy broadcasting when it keeps x's shape, else a flat
    per-channel vector along axis 1. Returns index -> value."""
    if c.size == 1:
        value = int(c.reshape(-1)[0])
        return lambda idx: value
    try:
        keeps = tuple(np.broadcast_shapes(c.shape, x_shape)) == tuple(x_shape)
    except ValueError:
        keeps = False
    if keeps:
        full = np.broadcast_to(c, x_shape)
        return lambda idx: int(full[idx])
    flat = c.reshape(-1).tolist()
    return lambda idx: flat[idx[1]]


def naive_requantize_linear(xs, attrs):
    """onnxruntime's requantisation: the float32 product x * scale, rounded half to even, plus the
    zero point, saturated to int8 (uint8 with signed=0)."""
    x, scale, zp = xs
    info = np.iinfo(np.int8 if num(attrs.get("signed", 1)) else np.uint8)
    s = np.broadcast_to(scale.astype(np.float32), x.shape)
    y = np.zeros(x.shape, dtype=np.int64)
    for idx in np.ndindex(*x.shape):
        product = np.float32(x[idx]) * s[idx]          # one IEEE float32 multiplication
        y[idx] = clip(round(float(product)) + int(zp.reshape(-1)[0]), info.min, info.max)
    return y


def _nearest_float32(exact):
    """The float32 nearest to a Fraction, ties to the even significand."""
    from fractions import Fraction
    c = np.float32(float(exact))
    near = [np.nextafter(c, np.float32(-np.inf)), c, np.nextafter(c, np.float32(np.inf))]
    return min(near, key=lambda v: (abs(Fraction(float(v)) - exact), int(np.array(v).view(np.int32)) & 1))


def naive_requantize_linear_add(xs, attrs):
    """naive_requantize_linear, then q * ra + addend rounded once to float32 (exact fractions), rounded
    half to even and saturated."""
    from fractions import Fraction
    q = naive_requantize_linear(xs[:3], attrs)
    info = np.iinfo(np.int8 if num(attrs.get("signed", 1)) else np.uint8)
    ra = Fraction(float(np.float32(num(attrs["ra"]))))
    addend = np.broadcast_to(xs[3].astype(np.float32), q.shape)
    y = np.zeros(q.shape, dtype=np.int64)
    for idx in np.ndindex(*q.shape):
        g = _nearest_float32(Fraction(int(q[idx])) * ra + Fraction(float(addend[idx])))
        y[idx] = clip(round(float(g)), info.min, info.max)
    return y


def onnxruntime_qlinear(op: str):
    """onnxruntime's own com.microsoft QLinearAdd / QLinearMul on the operands, the scales and zero
    points as its inputs: the op is defined as what onnxruntime computes."""
    def oracle(xs, attrs):
        import onnxruntime as ort
        from onnx import TensorProto, helper, numpy_helper
        dtype, elem = (np.int8, TensorProto.INT8) if num(attrs.get("signed", 1)) else (np.uint8, TensorProto.UINT8)
        consts = [numpy_helper.from_array(np.array(num(attrs[f"{t}_scale"]), np.float32), f"{t}s") for t in "aby"]
        consts += [numpy_helper.from_array(np.array(num(attrs[f"{t}_zero_point"]), dtype), f"{t}z") for t in "aby"]
        node = helper.make_node(op, ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"], domain="com.microsoft")
        graph = helper.make_graph([node], "q", [helper.make_tensor_value_info(n, elem, x.shape) for n, x in zip("ab", xs)],
                                  [helper.make_tensor_value_info("y", elem, None)], consts)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
        model.ir_version = 8
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        return session.run(None, {n: x.astype(dtype) for n, x in zip("ab", xs)})[0].astype(np.int64)
    return oracle


def onnxruntime_qlinear_softmax(xs, attrs):
    """onnxruntime's own com.microsoft QLinearSoftmax (opset 13 form over the last axis, or the
    opset 12 form over the axes from ``axis`` on)."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
    dtype, elem = (np.int8, TensorProto.INT8) if num(attrs.get("signed", 1)) else (np.uint8, TensorProto.UINT8)
    x, axis = xs[0], num(attrs.get("axis", -1))
    consts = [numpy_helper.from_array(np.array(num(attrs["x_scale"]), np.float32), "xs"),
              numpy_helper.from_array(np.array(0, dtype), "xz"),
              numpy_helper.from_array(np.array(num(attrs["y_scale"]), np.float32), "ys"),
              numpy_helper.from_array(np.array(num(attrs.get("y_zero_point", 0)), dtype), "yz")]
    node = helper.make_node("QLinearSoftmax", ["x", "xs", "xz", "ys", "yz"], ["y"], domain="com.microsoft",
                            axis=axis, opset=13 if axis in (-1, x.ndim - 1) else 12)
    graph = helper.make_graph([node], "q", [helper.make_tensor_value_info("x", elem, x.shape)],
                              [helper.make_tensor_value_info("y", elem, x.shape)], consts)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x.astype(dtype)})[0].astype(np.int64)


def naive_requant_shift(xs, attrs):
    x, mul, add = xs
    div = num(attrs["div"])
    signed = num(attrs.get("signed", 1))
    m, a = _flat_or_broadcast(mul, x.shape), _flat_or_broadcast(add, x.shape)
    y = np.zeros(x.shape, dtype=np.int64)
    for idx in np.ndindex(*x.shape):
        acc = int(x[idx]) * m(idx) + a(idx)
        v = math.floor(Fraction(acc, div) + Fraction(1, 2))
        y[idx] = clip(v, -128, 127) if signed else clip(v, 0, 255)
    return y


def naive_isoftmax(xs, attrs):
    x = xs[0]
    a, b, c, log2, levels = (num(attrs[k]) for k in ("coeffA", "coeffB", "coeffC", "log2",
                                                        "n_levels"))
    out = []
    for row in rows(x):
        m = max(row)
        es = []
        for v in row:
            xt = v - m
            z = min(math.trunc(Fraction(-xt, log2)), 31)
            p = xt + z * log2
            es.append(math.floor(Fraction(a * (p + b) ** 2 + c, 2 ** z)))
        total = sum(es)
        out += [math.floor(Fraction(e * (levels - 1), total)) for e in es]
    return np.array(out, dtype=np.int64).reshape(x.shape)


def _ita_shift(m, v):
    return math.floor(Fraction(m - v + 16, 32))


def naive_itamax(xs, attrs):
    x = xs[0]
    levels = num(attrs["n_levels"])
    out = []
    for row in rows(x):
        m = max(row)
        sh = [_ita_shift(m, v) for v in row]
        total = sum(256 // 2 ** s for s in sh)
        inv = math.floor(Fraction((levels - 1) * 256, total))
        out += [inv // 2 ** s for s in sh]
    return np.array(out, dtype=np.int64).reshape(x.shape)


def naive_itapartialmax(xs, attrs):
    x = xs[0]
    width = num(attrs.get("group_width", 16))
    levels = num(attrs["n_levels"])
    out = []
    for row in rows(x):
        m, total = -128, 0
        for start in range(0, len(row), width):
            group = row[start:start + width]
            cm = max(group)
            if cm > m:
                total = total // 2 ** _ita_shift(cm, m)
                m = cm
            total += sum(256 // 2 ** _ita_shift(m, v) for v in group)
        inv = math.floor(Fraction((levels // 2 - 1) * 256, total))
        out += [inv // 2 ** _ita_shift(m, v) for v in row]
    return np.array(out, dtype=np.int64).reshape(x.shape)


def naive_igelu(xs, attrs):
    x = xs[0]
    b, one = num(attrs["b"]), num(attrs["one"])
    out = []
    for v in x.reshape(-1).tolist():
        sign = (v > 0) - (v < 0)
        q = min(abs(v), -b)
        erf = sign * (one - (q + b) ** 2)
        out.append(v * math.floor(Fraction(one + erf, 2)))
    return np.array(out, dtype=np.int64).reshape(x.shape)


def naive_ihardswish(xs, attrs):
    x = xs[0]
    one_over_six, three, six = (num(attrs[k]) for k in ("one_over_six", "three", "six"))
    out = [v * (clip(v + three, 0, six) * one_over_six) for v in x.reshape(-1).tolist()]
    return np.array(out, dtype=np.int64).reshape(x.shape)


def naive_true_integer_div(xs, attrs):
    x = xs[0]
    delta, eps, eta, y = (Fraction(num(attrs[k])) for k in ("Delta", "eps", "eta", "y"))
    coeff = math.floor(delta * eta / (y * eta + eps))
    return np.array([v * coeff for v in x.reshape(-1).tolist()], dtype=np.int64).reshape(x.shape)


def naive_integer_div(xs, attrs):
    """``round(x*Delta*eta / (y*eta + eps))``: the spec's round() does not fix ties; ties are
    taken away from zero, as the module documents for the upstream kernel."""
    x, y = xs
    delta, eps, eta = num(attrs["Delta"]), num(attrs["eps"]), num(attrs.get("eta", 1))
    xb, yb = np.broadcast_arrays(x, y)
    out = []
    for xv, yv in zip(xb.reshape(-1).tolist(), yb.reshape(-1).tolist()):
        q = Fraction(xv * delta * eta, yv * eta + eps)
        r = math.floor(abs(q) + Fraction(1, 2))
        out.append(r if q >= 0 else -r)
    return np.array(out, dtype=np.int64).reshape(xb.shape)


def naive_ilayernorm(xs, attrs):
    x, weight, bias = xs
    div = num(attrs["D"])
    w, b = weight.reshape(-1).tolist(), bias.reshape(-1).tolist()
    out = []
    for row in rows(x):
        length = len(row)
        mean = trunc_div(sum(row), length)
        d = [v - mean for v in row]
        std = math.isqrt(floor_div(sum(v * v for v in d), length) + 1)
        out += [clip(floor_div(trunc_div(dv * w[k % len(w)], std) + b[k % len(b)], div), -128, 127)
                for k, dv in enumerate(d)]
    return np.array(out, dtype=np.int64).reshape(x.shape)


def naive_irmsnorm(xs, attrs):
    x, weight = xs
    div, offset = num(attrs["D"]), num(attrs.get("offset", 0))
    lo, hi = (-128, 127) if num(attrs.get("signed", 1)) else (0, 255)
    w = weight.reshape(-1).tolist()
    out = []
    for row in rows(x):
        std = math.isqrt(trunc_div(sum(v * v for v in row), len(row)) + 1)
        out += [clip(floor_div(trunc_div(v * w[k % len(w)], std), div) + offset, lo, hi)
                for k, v in enumerate(row)]
    return np.array(out, dtype=np.int64).reshape(x.shape)


def naive_inonorm(xs, attrs):
    """``((x*weight + bias) * mul) >> s``, clipped to int8: the spec lists iNoNorm among the ops
    that bring values back to 8 bits, though its formula omits the clip."""
    x, weight, bias = xs
    div, mul = num(attrs["D"]), num(attrs["mul"])
    w, b = np.broadcast_to(weight, x.shape), np.broadcast_to(bias, x.shape)
    y = np.zeros(x.shape, dtype=np.int64)
    for idx in np.ndindex(*x.shape):
        y[idx] = clip(floor_div((int(x[idx]) * int(w[idx]) + int(b[idx])) * mul, div), -128, 127)
    return y


def naive_integer_mean(xs, attrs):
    x = xs[0]
    axes = sorted(a % x.ndim for a in attrs["axes"])
    keepdims = num(attrs.get("keepdims", 1))
    moved = np.moveaxis(x, axes, list(range(x.ndim - len(axes), x.ndim)))
    kept_shape = moved.shape[:x.ndim - len(axes)]
    out = []
    for group in moved.reshape(int(np.prod(kept_shape, dtype=np.int64)), -1).tolist():
        out.append(math.floor(Fraction(sum(group), len(group)) + Fraction(1, 2)))
    shape = [1 if k in axes else d for k, d in enumerate(x.shape)] if keepdims else kept_shape
    return np.array(out, dtype=np.int64).reshape(shape)


def naive_rmsnorm(xs, attrs):
    """Float RMSNorm over the last axis, row by row in Python floats (double)."""
    x, w = xs[0], xs[1].reshape(-1)
    eps = float(np.float32(attrs.get("eps", 1e-6)))
    rows = []
    for row in x.reshape(-1, x.shape[-1]).tolist():
        inv = 1.0 / math.sqrt(sum(v * v for v in row) / len(row) + eps)
        rows.append([v * inv * float(w[k]) for k, v in enumerate(row)])
    return np.array(rows, dtype=np.float32).reshape(x.shape)


def naive_softmax_grad(xs, attrs):
    """dx = y * (dy - sum(dy * y)) along the last axis, row by row in Python floats."""
    dy, y = xs[0], xs[1]
    rows = []
    for drow, yrow in zip(dy.reshape(-1, dy.shape[-1]).tolist(), y.reshape(-1, y.shape[-1]).tolist()):
        dot = sum(d * v for d, v in zip(drow, yrow))
        rows.append([v * (d - dot) for d, v in zip(drow, yrow)])
    return np.array(rows, dtype=np.float32).reshape(dy.shape)


def naive_softmax_cross_entropy_grad(xs, attrs):
    """d_logits[n][c] = (exp(log_prob[n][c]) - [c == label[n]]) * w[label[n]] * dY (dY[n] for
    reduction 'none'), divided by the summed weights for 'mean'; row by row in Python floats."""
    dy, log_prob, labels = xs[0], xs[1], xs[2]
    weights = xs[3].reshape(-1).tolist() if len(xs) > 3 else None
    reduction = attrs.get("reduction", "mean")
    reduction = reduction.decode() if isinstance(reduction, bytes) else reduction
    w = [weights[int(lab)] if weights else 1.0 for lab in labels.reshape(-1).tolist()]
    total = sum(w)
    rows = []
    for n, (row, lab) in enumerate(zip(log_prob.tolist(), labels.reshape(-1).tolist())):
        up = float(dy.reshape(-1)[n]) if reduction == "none" else float(dy.reshape(-1)[0])
        scale = w[n] * up / (total if reduction == "mean" else 1.0)
        rows.append([(math.exp(v) - (1.0 if c == lab else 0.0)) * scale for c, v in enumerate(row)])
    return np.array(rows, dtype=np.float32)


def naive_sgd(xs, attrs):
    """w - lr * g element by element in Python floats; lr the attribute or the third input."""
    lr = float(xs[2].reshape(-1)[0]) if len(xs) > 2 else float(attrs["lr"])
    lr = float(np.float32(lr))
    return np.array([w - lr * g for w, g in zip(xs[0].reshape(-1).tolist(), xs[1].reshape(-1).tolist())],
                    dtype=np.float32).reshape(xs[0].shape)


def naive_table_lookup(xs, attrs):
    """Each element's entry of the table, by the element's byte (two's complement for int8)."""
    return np.array([attrs["table"][int(v) & 0xFF] for v in xs[0].reshape(-1).tolist()],
                    dtype=np.int64).reshape(xs[0].shape)


from DeeployTest.test_suite.op_cases.npu import naive_ne16_conv, naive_neureka_conv  # noqa: E402

ORACLES = {
    "NeurekaConv": naive_neureka_conv,
    "Ne16Conv": naive_ne16_conv,
    "SoftmaxCrossEntropyLossGrad": naive_softmax_cross_entropy_grad,
    "RMSNorm": naive_rmsnorm,
    "SoftmaxGrad": naive_softmax_grad,
    "SGD": naive_sgd,
    "RequantShift": naive_requant_shift,
    "RequantizeLinear": naive_requantize_linear,
    "RequantizeLinearAdd": naive_requantize_linear_add,
    "QLinearAdd": onnxruntime_qlinear("QLinearAdd"),
    "QLinearMul": onnxruntime_qlinear("QLinearMul"),
    "QLinearSoftmax": onnxruntime_qlinear_softmax,
    "TableLookup": naive_table_lookup,
    "iSoftmax": naive_isoftmax,
    "ITAMax": naive_itamax,
    "ITAPartialMax": naive_itapartialmax,
    "iGELU": naive_igelu,
    "iLayerNorm": naive_ilayernorm,
    "iRMSNorm": naive_irmsnorm,
    "iHardswish": naive_ihardswish,
    "TrueIntegerDiv": naive_true_integer_div,
    "IntegerDiv": naive_integer_div,
    "iNoNorm": naive_inonorm,
    "IntegerMean": naive_integer_mean,
}
