"""Generic kernels of float networks (float32; bfloat16 widened to float32 and rounded back):
elementwise math, convolutions and GEMM with float accumulators, reductions, pooling,
normalisations and softmax. Each accepts a node only when its operands are float; integer nodes
fall through to the integer kernels of the same op. Data movement (Transpose, Pad, MaxPool, the
views, Concat, Slice, Gather) uses the type-generic kernels."""

from __future__ import annotations

from Deeploy.ir.dtypes import BFLOAT16, FLOAT32, INT32
from Deeploy.targets.generic.bindings.core import _BINARY_CALL, _CONV_CALL, _DWCONV_CALL, _GEMM_CALL, _broadcastable, \
    _conv_patch_bytes
from Deeploy.targets.generic.bindings.data import _REDUCE_CALL, _dm_reduce_view
from Deeploy.platform import Kernel
from Deeploy.signature import Signature, param

__all__ = ["FLOAT_KERNELS"]

_X, _Y = "${x[0].ptr}", "${y[0].ptr}"


def _floats(node, graph):
    """None when every input and output of the node is float, else why not."""
    names = [i for i in node.inputs if i] + [o for o in node.outputs if o]
    ints = [n for n in names if not graph.tensors[n].dtype.is_float]
    return f"integer operands ({', '.join(ints)})" if ints else None


def _float_first(node, graph):
    """The first input and the output float (further inputs may be integer: Pow's exponent)."""
    first = graph.tensors[node.inputs[0]].dtype
    out = graph.tensors[node.outputs[0]].dtype
    return None if first.is_float and out.is_float else "integer operands"


def _all(*checks):
    def accepts(node, graph):
        for check in checks:
            reason = check(node, graph)
            if reason is not None:
                return reason
        return None
    return accepts


def _out_type(name):
    return lambda node, graph: ((name, graph.tensors[node.outputs[0]].dtype),)


def _conv_types(node, graph):
    third = node.inputs[2] if len(node.inputs) > 2 else ""
    return (("TB", graph.tensors[third].dtype if third else INT32), ("TOUT", graph.tensors[node.outputs[0]].dtype),
            ("TSUM", FLOAT32))


def _gemm_types(node, graph):
    third = node.inputs[2] if len(node.inputs) > 2 else ""
    return (("TC", graph.tensors[third].dtype if third else INT32), ("TY", graph.tensors[node.outputs[0]].dtype),
            ("TSUM", FLOAT32))


F32_ONLY = (FLOAT32,)   # kernels that read float operands directly (no bfloat16 widening)


def _kernel(name, source, signature, types=(), accepts=None, floats=(FLOAT32, BFLOAT16), **kw) -> Kernel:
    """A float kernel: it takes float32 and (unless ``floats`` says otherwise) bfloat16 operands."""
    return Kernel(name, source, signature, types, accepts, floats=floats, **kw)


def _binary(name, source):
    return _kernel(name, source, _BINARY_CALL, ("TA", "TB", "TY"), _all(_float_first, _broadcastable))


_UNARY_CALL = Signature(
    "Float y = op(x) elementwise (funary.inc: Sqrt, Exp, Log, Erf, Tanh, Neg, Abs, Reciprocal, Ceil, Floor, Round, "
    "Sigmoid, HardSigmoid, HardSwish, "
    "Swish, Gelu, Clip, Relu).",
    (param("const T *restrict x", _X, "input"), param("TY *restrict y", _Y, "output"),
     param("uint32_t n", "${y[0].size}", "elements"),
     param("float alpha", "${alpha}"), param("float beta", "${beta}", "the op's parameters (Clip: bounds)")),
    setup="<%! from Deeploy.targets.generic.bindings.floats import unary_args %><% alpha, beta = unary_args(node) %>",
    types={"TY": "the output's type"})


def unary_args(node) -> tuple[str, str]:
    """The alpha and beta arguments of a unary float kernel, as C float expressions."""
    from Deeploy.codegen.c_text import c_float
    p = node.params
    if node.op == "Cast":   # an integer target's minimum and maximum + 1 (both exact in float), else none
        return (c_float(p.to.min), c_float(p.to.max + 1)) if p.to.is_integer else (c_float(-float("inf")),
                                                                                    c_float(float("inf")))
    if node.op == "Relu":
        return c_float(0.0), c_float(float("inf"))
    if node.op == "Clip":
        lo = float("-inf") if p.lo is None else p.lo
        hi = float("inf") if p.hi is None else p.hi
        return c_float(lo), c_float(hi)
    return c_float(getattr(p, "alpha", 0.0)), c_float(getattr(p, "beta", 0.0))


def _cast_to_float(node, graph):
    return None if node.params.to.is_float else f"to {node.params.to}, an integer type"


def _cast_float_to_int(node, graph):
    return None if graph.tensors[node.inputs[0]].dtype.is_float else "from an integer type"


def _unary(name, source):
    return _kernel(name, source, _UNARY_CALL, ("T",), _floats, extra_types=_out_type("TY"))


def _reduce_accepts(node, graph):
    return _float_first(node, graph) or (None if _dm_reduce_view(node.params) is not None
                                    else "more than 3 kept or reduced axis groups")


_AVGPOOL_CALL = Signature(
    "Float average pooling, NCHW, as 2-D: window taps inside the input summed, divided by their count "
    "(or by the taps inside the padded extent when include_pad).",
    (param("const T *restrict x", _X, "input"), param("T *restrict y", _Y, "output"),
     param("uint32_t C", "${p.batch * p.channels}", "batch * channels"),
     param("uint32_t H", "${p.in_hw[0]}"), param("uint32_t W", "${p.in_hw[1]}", "input size"),
     param("uint32_t KH", "${p.kernel[0]}"), param("uint32_t KW", "${p.kernel[1]}", "window size"),
     param("uint32_t OH", "${p.out_hw[0]}"), param("uint32_t OW", "${p.out_hw[1]}", "output size"),
     param("uint32_t SH", "${p.stride[0]}"), param("uint32_t SW", "${p.stride[1]}", "strides"),
     param("uint32_t DH", "${p.dilation[0]}"), param("uint32_t DW", "${p.dilation[1]}", "dilations"),
     param("uint32_t PT", "${p.pads[0]}"), param("uint32_t PL", "${p.pads[1]}"),
     param("uint32_t PB", "${p.pads[2]}"), param("uint32_t PR", "${p.pads[3]}", "pads"),
     param("uint32_t include_pad", "${int(p.count_include_pad)}", "1: padded taps count in the divisor")))

_NORM_CALL = Signature(
    "Float normalisation of blocks x width elements (LayerNormalization, RMSNorm, InstanceNormalization, "
    "GroupNormalization): see fnorm.inc.",
    (param("const T *restrict x", _X, "input"), param("const T *restrict scale", "${x[1].ptr}", "scale"),
     param("const T *restrict bias", '${x[2].ptr if p.has_bias else "NULL"}', "bias, or NULL"),
     param("T *restrict y", _Y, "output"),
     param("float *restrict mean_out", '${y[1].ptr if p.stats[0] else "NULL"}', "per-block mean, or NULL"),
     param("float *restrict inv_out", '${y[2].ptr if p.stats[1] else "NULL"}',
           "per-block 1 / sqrt(var + eps), or NULL"),
     param("uint32_t blocks", "${p.blocks}"), param("uint32_t width", "${p.width}", "normalised blocks"),
     param("uint32_t per_sample", "${p.per_sample}"), param("uint32_t stride", "${p.stride}"),
     param("uint32_t channels", "${p.channels}", "scale entry of element i of block b: "
           "((b % per_sample) * width + i) / stride % channels"),
     param("float eps", "${c_float(p.eps)}"), param("uint32_t rms", "${int(p.rms)}", "1: no mean subtracted")),
    setup="<%! from Deeploy.codegen.c_text import c_float %>")

_BATCHNORM_CALL = Signature(
    "Float inference batch normalisation of x viewed as [outer][C][inner].",
    (param("const T *restrict x", _X, "input"), param("const T *restrict scale", "${x[1].ptr}"),
     param("const T *restrict bias", "${x[2].ptr}"), param("const T *restrict mean", "${x[3].ptr}"),
     param("const T *restrict var", "${x[4].ptr}", "per-channel parameters"), param("T *restrict y", _Y, "output"),
     param("uint32_t outer", "${p.shape[0]}"), param("uint32_t C", "${p.shape[1]}"),
     param("uint32_t inner", "${y[0].size // (p.shape[0] * p.shape[1]) if y[0].size else 0}", "x as [outer][C][inner]"),
     param("float eps", "${c_float(p.eps)}")),
    setup="<%! from Deeploy.codegen.c_text import c_float %>")

_ROWS = (param("uint32_t outer", "${p.outer}"), param("uint32_t width", "${p.width}"),
         param("uint32_t inner", "${p.inner}", "x as [outer][width][inner], softmax along width"))
_SOFTMAX_CALL = Signature("Float softmax along the middle axis: see fsoftmax.inc.",
                          (param("const T *restrict x", _X, "input"), param("T *restrict y", _Y, "output"), *_ROWS))
_SOFTMAX_GRAD_CALL = Signature(
    "Float softmax gradient dx = y * (dy - sum(dy * y)) along the middle axis.",
    (param("const T *restrict dy", _X, "upstream gradient"), param("const T *restrict y", "${x[1].ptr}",
                                                                    "softmax output"),
     param("T *restrict dx", _Y, "output"), *_ROWS))

_QUANT_CALL = Signature(
    "QuantizeLinear / DequantizeLinear over x viewed as [outer][channels][inner], scale and zero point per "
    "channel (channels = 1: scalar).",
    (param("const T *restrict x", _X, "input"), param("const TS *restrict scale", "${x[1].ptr}", "scale"),
     param("const TZ *restrict zp", '${x[2].ptr if p.has_zero_point else "NULL"}', "zero point, or NULL"),
     param("TY *restrict y", _Y, "output"), param("uint32_t n", "${y[0].size}", "elements"),
     param("uint32_t channels", "${p.channels}"), param("uint32_t inner", "${p.inner}", "x's view"),
     param("int32_t lo", "${p.lo}"), param("int32_t hi", "${p.hi}", "the quantized type's range")),
    types={"TZ": "the zero point's type (int32_t when there is none)", "TY": "the output's type"})


def _quant_types(node, graph):
    zp = node.inputs[2] if len(node.inputs) > 2 else ""
    return (("TZ", graph.tensors[zp].dtype if zp else INT32), ("TY", graph.tensors[node.outputs[0]].dtype))


_CE_TAIL = (param("uint32_t N", "${p.batch}"), param("uint32_t C", "${p.classes}", "scores are [N][C]"),
            param("uint32_t reduction", '${("none", "sum", "mean").index(p.reduction)}', "0 none, 1 sum, 2 mean"),
            param("int32_t ignore_index", "${p.ignore_index or 0}"),
            param("uint32_t has_ignore", "${int(p.ignore_index is not None)}", "samples with this label count nothing"))
_CROSS_ENTROPY_CALL = Signature(
    "SoftmaxCrossEntropyLoss of scores [N][C]: the loss (per sample, summed or mean) and optionally the "
    "log-probabilities.",
    (param("const T *restrict x", _X, "scores"), param("const TL *restrict labels", "${x[1].ptr}", "labels"),
     param("const T *restrict weights", '${x[2].ptr if p.has_weights else "NULL"}', "class weights, or NULL"),
     param("T *restrict loss", '${"NULL" if p.log_prob_only else y[0].ptr}', "loss, or NULL"),
     param("T *restrict log_prob", '${y[0].ptr if p.log_prob_only else y[1].ptr if p.log_prob else "NULL"}',
           "log-probabilities, or NULL"),
     *_CE_TAIL))
_CROSS_ENTROPY_GRAD_CALL = Signature(
    "SoftmaxCrossEntropyLossGrad: the gradient of the loss with respect to the scores.",
    (param("const T *restrict dy", '${"NULL" if p.implicit_dy else x[0].ptr}',
           "upstream gradient (scalar, or [N] for reduction none), or NULL for 1/N"),
     param("const T *restrict log_prob", "${x[int(not p.implicit_dy)].ptr}", "log-probabilities [N][C]"),
     param("const TL *restrict labels", "${x[2 - int(p.implicit_dy)].ptr}", "labels"),
     param("const T *restrict weights", '${x[3].ptr if p.has_weights else "NULL"}', "class weights, or NULL"),
     param("T *restrict dx", _Y, "gradient [N][C]"), *_CE_TAIL),
    types={"TL": "the labels' integer type"})


def _grad_label_type(node, graph):
    """TL: the labels' type (the gradient's second input without dY, else its third)."""
    return (("TL", graph.tensors[node.inputs[2 - int(node.params.implicit_dy)]].dtype),)


_CONV_TRANSPOSE_CALL = Signature(
    "Float transposed convolution, NCHW, one image per call: see fconvtranspose.inc.",
    (param("const T *restrict x", "${x[0].ptr} + ${n * p.ch_in * p.in_hw[0] * p.in_hw[1]}", "input image n"),
     param("const T *restrict w", "${x[1].ptr}", "weights [C][M/groups][KH][KW]"),
     param("const T *restrict bias", '${x[2].ptr if p.has_bias else "NULL"}', "bias [M], or NULL"),
     param("T *restrict y", "${y[0].ptr} + ${n * p.ch_out * p.out_hw[0] * p.out_hw[1]}", "output image n"),
     param("uint32_t C", "${p.ch_in}"), param("uint32_t H", "${p.in_hw[0]}"),
     param("uint32_t W", "${p.in_hw[1]}", "input channels and size"), param("uint32_t M", "${p.ch_out}", "output channels"),
     param("uint32_t groups", "${p.group}"), param("uint32_t KH", "${p.kernel[0]}"),
     param("uint32_t KW", "${p.kernel[1]}", "kernel size"), param("uint32_t OH", "${p.out_hw[0]}"),
     param("uint32_t OW", "${p.out_hw[1]}", "output size"), param("uint32_t SH", "${p.stride[0]}"),
     param("uint32_t SW", "${p.stride[1]}", "strides"), param("uint32_t DH", "${p.dilation[0]}"),
     param("uint32_t DW", "${p.dilation[1]}", "dilations"), param("uint32_t PT", "${p.pads[0]}"),
     param("uint32_t PL", "${p.pads[1]}", "top and left padding (cropped from the full output)")),
    around="""% for n in range(p.batch):
{call}
% endfor""")


_SGD_CALL = Signature(
    "SGD step: y = w - lr * g elementwise (the weight's next value).",
    (param("const T *restrict w", _X, "weight"), param("const T *restrict g", "${x[1].ptr}", "gradient"),
     param("T *restrict y", _Y, "updated weight"), param("uint32_t n", "${y[0].size}", "elements"),
     param("float lr", "${c_float(p.lr)}", "learning rate")),
    setup="<%! from Deeploy.codegen.c_text import c_float %>")


FLOAT_KERNELS: dict[str, tuple[Kernel, ...]] = {
    "Add": (_binary("FAdd", "fadd.inc"),),
    "Sub": (_binary("FSub", "fsub.inc"),),
    "Mul": (_binary("FMul", "fmul.inc"),),
    "Div": (_binary("FDiv", "fdiv.inc"),),
    "Pow": (_binary("FPow", "fpow.inc"),),
    "Max": (_binary("FMax", "fmax.inc"),),
    "Min": (_binary("FMin", "fmin.inc"),),
    "Sqrt": (_unary("FSqrt", "fsqrt.inc"),),
    "Exp": (_unary("FExp", "fexp.inc"),),
    "Cast": (_kernel("FCast", "fcast.inc", _UNARY_CALL, ("T",), _cast_to_float, extra_types=_out_type("TY")),
             _kernel("FCastInt", "fcast_int.inc", _UNARY_CALL, ("T",), _cast_float_to_int,
                     extra_types=_out_type("TY"))),
    "Log": (_unary("FLog", "flog.inc"),),
    "Erf": (_unary("FErf", "ferf.inc"),),
    "Tanh": (_unary("FTanh", "ftanh.inc"),),
    "Neg": (_unary("FNeg", "fneg.inc"),),
    "Abs": (_unary("FAbs", "fabs.inc"),),
    "Reciprocal": (_unary("FReciprocal", "freciprocal.inc"),),
    "Ceil": (_unary("FCeil", "fceil.inc"),),
    "Floor": (_unary("FFloor", "ffloor.inc"),),
    "Round": (_unary("FRound", "fround.inc"),),
    "Sigmoid": (_unary("FSigmoid", "fsigmoid.inc"),),
    "HardSigmoid": (_unary("FHardSigmoid", "fhardsigmoid.inc"),),
    "HardSwish": (_unary("FHardSwish", "fhardswish.inc"),),
    "Swish": (_unary("FSwish", "fswish.inc"),),
    "Gelu": (_kernel("FGeluTanh", "fgelu_tanh.inc", _UNARY_CALL, ("T",),
                    _all(_floats, lambda n, g: None if n.params.tanh else "not the tanh form"),
                    extra_types=_out_type("TY")),
             _unary("FGelu", "fgelu.inc")),
    "Relu": (_unary("FClip", "fclip.inc"),),
    "Clip": (_unary("FClip", "fclip.inc"),),
    "Conv": (_kernel("FDWConv2d", "conv2d_depthwise.inc", _DWCONV_CALL, ("TIN", "TW"),
                    accepts=_all(_floats, lambda n, g: None if n.params.depthwise else "not depthwise"), floats=F32_ONLY,
                    extra_types=_conv_types),
             _kernel("FConv2d", "conv2d.inc", _CONV_CALL, ("TIN", "TW"), _floats, F32_ONLY, scratch=_conv_patch_bytes,
                    extra_types=_conv_types)),
    "ConvTranspose": (_kernel("FConvTranspose", "fconvtranspose.inc", _CONV_TRANSPOSE_CALL, ("T",), _floats, F32_ONLY),),
    "Gemm": (_kernel("FGemm", "gemm.inc", _GEMM_CALL, ("TA", "TB"), _floats, F32_ONLY,
                    extra_types=_gemm_types),),
    "MatMul": (_kernel("FGemm", "gemm.inc", _GEMM_CALL, ("TA", "TB"), _floats, F32_ONLY, extra_types=_gemm_types),),
    "ReduceSum": (_kernel("FSum", "fsum.inc", _REDUCE_CALL, ("TIN",), _reduce_accepts, extra_types=_out_type("TOUT")),),
    "ReduceMean": (_kernel("FSum", "fsum.inc", _REDUCE_CALL, ("TIN",), _reduce_accepts, extra_types=_out_type("TOUT")),),
    "GlobalAveragePool": (_kernel("FSum", "fsum.inc", _REDUCE_CALL, ("TIN",), _reduce_accepts,
                                 extra_types=_out_type("TOUT")),),
    "GlobalMaxPool": (_kernel("FMaxReduce", "fmaxreduce.inc", _REDUCE_CALL, ("TIN",), _reduce_accepts,
                             extra_types=_out_type("TOUT")),),
    "ReduceMax": (_kernel("FMaxReduce", "fmaxreduce.inc", _REDUCE_CALL, ("TIN",), _reduce_accepts,
                         extra_types=_out_type("TOUT")),),
    "ReduceMin": (_kernel("FMinReduce", "fminreduce.inc", _REDUCE_CALL, ("TIN",), _reduce_accepts,
                         extra_types=_out_type("TOUT")),),
    **{op: (_kernel(name, source, _REDUCE_CALL, ("TIN",), _reduce_accepts, extra_types=_out_type("TOUT")),)
       for op, name, source in (("ReduceL1", "FReduceL1", "freducel1.inc"), ("ReduceL2", "FReduceL2", "freducel2.inc"),
                                ("ReduceSumSquare", "FSumSquare", "fsumsquare.inc"),
                                ("ReduceLogSum", "FLogSum", "flogsum.inc"),
                                ("ReduceLogSumExp", "FLogSumExp", "flogsumexp.inc"),
                                ("ReduceProd", "FProd", "fprod.inc"))},
    "AveragePool": (_kernel("FAvgPool", "favgpool.inc", _AVGPOOL_CALL, ("T",), _floats),),
    "LayerNormalization": (_kernel("FNorm", "fnorm.inc", _NORM_CALL, ("T",), _floats),),
    "RMSNorm": (_kernel("FNorm", "fnorm.inc", _NORM_CALL, ("T",), _floats),),
    "InstanceNormalization": (_kernel("FNorm", "fnorm.inc", _NORM_CALL, ("T",), _floats),),
    "GroupNormalization": (_kernel("FNorm", "fnorm.inc", _NORM_CALL, ("T",), _floats),),
    "BatchNormalization": (_kernel("FBatchNorm", "fbatchnorm.inc", _BATCHNORM_CALL, ("T",), _floats),),
    "Softmax": (_kernel("FSoftmax", "fsoftmax.inc", _SOFTMAX_CALL, ("T",), _floats),),
    "QuantizeLinear": (_kernel("FQuantize", "fquantize.inc", _QUANT_CALL, ("T", "TS"), extra_types=_quant_types),),
    "DequantizeLinear": (_kernel("FDequantize", "fdequantize.inc", _QUANT_CALL, ("T", "TS"), extra_types=_quant_types),),
    "SoftmaxCrossEntropyLoss": (_kernel("FCrossEntropy", "fcrossentropy.inc", _CROSS_ENTROPY_CALL, ("T", "TL"),
                                       floats=F32_ONLY),),
    "SoftmaxCrossEntropyLossGrad": (_kernel("FCrossEntropyGrad", "fcrossentropygrad.inc", _CROSS_ENTROPY_GRAD_CALL,
                                           ("T",), floats=F32_ONLY, extra_types=_grad_label_type),),
    "SoftmaxGrad": (_kernel("FSoftmaxGrad", "fsoftmaxgrad.inc", _SOFTMAX_GRAD_CALL, ("T",), _floats),),
    "SGD": (_kernel("FSGD", "fsgd.inc", _SGD_CALL, ("T",), _floats, F32_ONLY),),
}
