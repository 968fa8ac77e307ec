"""Generic kernels of the core ops: elementwise arithmetic, RequantShift, convolutions,
GEMM/MatMul, Transpose and the zero-copy views."""

from __future__ import annotations

from Deeploy.ir.dtypes import BFLOAT16, FLOAT32, INT32, INT64, UINT32, UINT64
from Deeploy.platform import Kernel
from Deeploy.signature import FILL, Signature, param, params
from Deeploy.targets.generic.bindings.strides import broadcast_operands, transpose_operands
from Deeploy.ops.bounds import accumulator_type, conv_sum_bound, gemm_sum_bound, max_abs, wide_reason

__all__ = ["CORE_KERNELS", "output_table", "output_table_bytes", "sum_kernel_types"]

_IMPORTS = "<%! from Deeploy.targets.generic.bindings.strides import broadcast_operands, transpose_operands %>"

def _requant_bound(node, graph) -> int:
    x, mul, add = node.inputs
    return max_abs(graph, x) * max_abs(graph, mul) + max_abs(graph, add) + (1 << node.params.shift)


def output_table(per_channel: bool, key_types, size: int) -> tuple[int, int] | None:
    """(lowest key, number of keys) when a requantising call tabulates its outputs by a key (its
    input, or the sum of its inputs) of ``key_types``: 8-bit integers, scalar mul and add, and at
    least two outputs per key; else None. The kernel fills the shared table, then looks up."""
    if per_channel or any(not d.is_integer or d.bits != 8 for d in key_types):
        return None
    lo, keys = sum(d.min for d in key_types), sum(d.max - d.min for d in key_types) + 1
    return (lo, keys) if size >= 2 * keys else None


def output_table_bytes(table, out_type) -> int:
    """Shared scratch of an output table (one output per key), rounded up to 8 bytes."""
    return -(-table[1] * out_type.nbytes // 8) * 8 if table else 0


def _requant_table(node, graph):
    """(lowest input, inputs) of the call's output table, or None (output_table)."""
    x, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    p = node.params
    return output_table(p.mul_per_channel or p.add_per_channel, [x.dtype], y.size)


def _requant_table_bytes(node, graph) -> int:
    """The output table of an 8-bit input (output_table), when the call has one."""
    return output_table_bytes(_requant_table(node, graph), graph.tensors[node.outputs[0]].dtype)


def _requant_accumulator(node, graph):
    """int32 accumulation when x * mul + add + rounding provably fits, else int64."""
    return (("TACC", accumulator_type(_requant_bound(node, graph))),)


def _requant_fits(node, graph):
    return wide_reason("x * mul + add", _requant_bound(node, graph), node, graph)


def sum_kernel_types(optional: str, output: str, sum_bound):
    """Extra type macros of a GEMM or convolution kernel after its two operands: ``optional``
    (the optional third input's type, int32 when absent), ``output`` (the output's type) and
    TSUM, the accumulator: int32 when ``sum_bound(node, graph)`` fits, else int64 (the ops
    reject nodes whose sums could exceed int64); uint32 or uint64 when the sums wrap around
    (ONNX integer semantics), the output keeping their low bits."""
    def extra(node, graph):
        third = node.inputs[2] if len(node.inputs) > 2 else ""
        onnx_type = getattr(node.params, "onnx_type", None)
        wrap = None if onnx_type is None else UINT64 if onnx_type.bits > 32 else UINT32
        return ((optional, graph.tensors[third].dtype if third else INT32),
                (output, graph.tensors[node.outputs[0]].dtype),
                ("TSUM", wrap or accumulator_type(sum_bound(node, graph))))
    return extra


_gemm_types = sum_kernel_types("TC", "TY", gemm_sum_bound)
_conv_types = sum_kernel_types("TB", "TOUT", conv_sum_bound)


def _binary_value_type(node, graph):
    """TV, the type a binary kernel computes in: int32, or int64 when an operand or the output
    holds values beyond int32; an Add, Sub or Mul that wraps (ONNX integer semantics) computes
    modulo 2^32 or 2^64 in uint32 or uint64, and the store keeps the output type's low bits."""
    out_wide = graph.tensors[node.outputs[0]].dtype.bits > 32
    if node.op in ("Add", "Sub", "Mul") and node.params.onnx_type is not None:
        return (("TV", UINT64 if out_wide else UINT32),)
    wide = out_wide or any(max_abs(graph, i) >= 2**31 for i in node.inputs)
    return (("TV", INT64 if wide else INT32),)


def _broadcastable(node, graph):
    shapes = [graph.tensors[i].shape for i in node.inputs]
    if broadcast_operands(node.params.shape, shapes) is None:
        return "broadcast pattern needs more than 4 dimensions after merging"
    return None


def _transposable(node, graph):
    if transpose_operands(node.params.in_shape, node.params.perm) is None:
        return "permutation needs more than 6 dimensions after merging"
    return None


_X, _Y = "${x[0].ptr}", "${y[0].ptr}"
_OPTIONAL_C = '${x[2].ptr if len(x) > 2 and x[2] else "NULL"}'

_BINARY_CALL = Signature(
    "y = OP(a, b) elementwise (Add, Sub, Mul, Div, Max, Min: binary.inc), a and b broadcast onto y over "
    "up to 4 merged dims.",
    (param("const TA *restrict a", _X, "first operand"),
     param("const TB *restrict b", "${x[1].ptr}", "second operand"),
     param("TY *restrict y", _Y, "output, contiguous"),
     params("uint32_t d#", "${dims[#]}", 4, "output dims after merging, outermost first (1-padded)"),
     params("uint32_t sa#", "${sa[#]}", 4, "element strides of a over d0..d3 (0 on broadcast dims)"),
     params("uint32_t sb#", "${sb[#]}", 4, "element strides of b over d0..d3 (0 on broadcast dims)")),
    setup=_IMPORTS + "<% dims, (sa, sb) = broadcast_operands(y[0].shape, [x[0].shape, x[1].shape]) %>",
    types={"TV": "the type the operation is computed in: int32_t, or int64_t when an operand or the output "
                 "holds values beyond int32; uint32_t or uint64_t for an Add, Sub or Mul that wraps"})

_REQUANTIZE_LINEAR_CALL = Signature(
    "y = clip(round_half_even((float)x * scale[c]) + zp, lo, hi), the product in float32, over x viewed as "
    "[outer][channels][inner] (a QDQ group's requantisation, as onnxruntime's integer kernels do it).",
    (param("const T *restrict x", _X, "input"), param("const TS *restrict scale", "${x[1].ptr}", "scale per channel"),
     param("const TZ *restrict zp", "${x[2].ptr}", "zero point (scalar)"), param("TY *restrict y", _Y, "output"),
     param("uint32_t n", "${y[0].size}", "elements"), param("uint32_t channels", "${p.channels}"),
     param("uint32_t inner", "${p.inner}", "x's view"), param("int32_t lo", "${p.lo}"),
     param("int32_t hi", "${p.hi}", "the output type's range")))

_REQUANTIZE_LINEAR_ADD_CALL = Signature(
    "q = RequantizeLinear(x), then y = clip(round_half_even(fma((float)q, ra, addend[c])), lo, hi) (onnxruntime's "
    "QLinearAdd of a constant), over x viewed as [outer][channels][inner].",
    (param("const T *restrict x", _X, "input"), param("const TS *restrict scale", "${x[1].ptr}", "scale per channel"),
     param("const TZ *restrict zp", "${x[2].ptr}", "zero point (scalar)"),
     param("const TA *restrict addend", "${x[3].ptr}", "addend per channel"), param("TY *restrict y", _Y, "output"),
     param("uint32_t n", "${y[0].size}", "elements"), param("uint32_t channels", "${p.channels}"),
     param("uint32_t inner", "${p.inner}", "x's view"), param("float ra", "${c_float(p.ra)}", "q's multiplier"),
     param("int32_t lo", "${p.lo}"), param("int32_t hi", "${p.hi}", "the output type's range")),
    setup="<%! from Deeploy.codegen.c_text import c_float %>")

_QLINEAR_CALL = Signature(
    "y = QLinearAdd or QLinearMul of a and b (onnxruntime's float32 formulas, Deeploy/ops/qlinear.py), a and b "
    "broadcast onto y over up to 4 merged dims.",
    (param("const T *restrict a", _X, "first operand"), param("const T *restrict b", "${x[1].ptr}", "second operand"),
     param("T *restrict y", _Y, "output, contiguous"),
     params("uint32_t d#", "${dims[#]}", 4, "output dims after merging, outermost first (1-padded)"),
     params("uint32_t sa#", "${sa[#]}", 4, "element strides of a over d0..d3 (0 on broadcast dims)"),
     params("uint32_t sb#", "${sb[#]}", 4, "element strides of b over d0..d3 (0 on broadcast dims)"),
     param("float ra", "${c_float(p.ra)}"), param("float rb", "${c_float(p.rb)}"),
     param("float k", "${c_float(p.k)}", "the op's float32 constants"),
     param("int32_t za", "${p.za}"), param("int32_t zb", "${p.zb}", "Mul's zero points of a and b"),
     param("uint32_t mode", "${3 if p.product else p.scalar}",
           "0: Add; 1, 2: Add with a or b one value per broadcast run; 3: Mul"),
     param("int32_t lo", "${p.lo}"), param("int32_t hi", "${p.hi}", "the output type's range")),
    setup=_IMPORTS + "\n<%! from Deeploy.codegen.c_text import c_float %>"
    "<% dims, (sa, sb) = broadcast_operands(y[0].shape, [x[0].shape, x[1].shape]) %>")

_COPY_CALL = Signature(
    "Copy of a buffer (a view op whose output needs its own storage); nothing is called when the output "
    "aliases the input.",
    (param("void *restrict dst", _Y, "output"), param("const void *restrict src", _X, "input"),
     param("uint32_t bytes", "${y[0].nbytes}", "bytes to copy")),
    around="""% if y[0].ptr != x[0].ptr:
{call}
% else:
/* zero copy: output aliases the input buffer */
% endif""", inline=True)

_TRANSPOSE_CALL = Signature(
    "y = x permuted: output element (i0..i5) reads x at sum(ik * strides[k]), dims padded to 6 with 1.",
    (param("const T *restrict x", _X, "input"), param("T *restrict y", _Y, "output, contiguous"),
     param("const uint32_t dims[6]", "dims", "output dims after merging (1-padded)"),
     param("const uint32_t strides[6]", "strides", "element strides of x along the output dims")),
    setup=_IMPORTS + "<% dims, strides = transpose_operands(p.in_shape, p.perm) %>",
    around="""{
    static const uint32_t dims[6] = {${", ".join(map(str, dims))}};
    static const uint32_t strides[6] = {${", ".join(map(str, strides))}};
    {call}
}""")

_REQUANT_CALL = Signature(
    "y = clip((x * mul + add + 2^(shift-1)) >> shift, lo, hi) over x viewed as [outer, channels, inner].",
    (param("const TIN *restrict x", _X, "input"), param("const TM *restrict mul", "${x[1].ptr}", "multiplier"),
     param("const TA *restrict add", "${x[2].ptr}", "offset"), param("TOUT *restrict y", _Y, "output"),
     param("uint32_t outer", "${p.outer}"), param("uint32_t channels", "${p.channels}"),
     param("uint32_t inner", "${p.inner}", "x viewed as [outer, channels, inner]"),
     param("uint32_t mul_stride", "${int(p.mul_per_channel)}", "1: mul per channel, 0: scalar"),
     param("uint32_t add_stride", "${int(p.add_per_channel)}", "1: add per channel, 0: scalar"),
     param("uint32_t shift", "${p.shift}"), param("int32_t lo", "${p.lo}"),
     param("int32_t hi", "${p.hi}", "shift and output bounds"),
     param("void *scratch", '${shared if tab else "NULL"}', "the shared output table, or NULL"), FILL,
     param("int32_t key_lo", "${tab[0] if tab else 0}", "the table's lowest input"),
     param("uint32_t keys", "${tab[1] if tab else 0}", "inputs in the table; 0: no table (outputs computed)")),
    setup="<%! from Deeploy.targets.generic.bindings.core import output_table %>"
          "<% tab = output_table(p.mul_per_channel or p.add_per_channel, [x[0].dtype], y[0].size) "
          "if shared != 'NULL' else None %>",
    types={"TACC": "accumulator: int32_t when x * mul + add + rounding provably fits, else int64_t"})

_IMAGE = "<% img_in = p.ch_in * p.in_hw[0] * p.in_hw[1]; img_out = p.ch_out * p.out_hw[0] * p.out_hw[1] %>"
_BATCH_LOOP = """
% for n in range(p.batch):
{call}
% endfor"""
_CONV_HEAD = (param("const TIN *restrict x", "${x[0].ptr} + ${n * img_in}", "input image n, [C][H][W]"),
              param("const TW *restrict w", "${x[1].ptr}", "weights"),
              param("const TB *restrict bias", _OPTIONAL_C, "bias [K], or NULL"),
              param("TOUT *restrict y", "${y[0].ptr} + ${n * img_out}", "output image n, [K][OH][OW]"))
_WINDOW = (param("uint32_t KH", "${p.kernel[0]}"), param("uint32_t KW", "${p.kernel[1]}", "kernel size"),
           param("uint32_t OH", "${p.out_hw[0]}"), param("uint32_t OW", "${p.out_hw[1]}", "output size"),
           param("uint32_t SH", "${p.stride[0]}"), param("uint32_t SW", "${p.stride[1]}", "strides"),
           param("uint32_t DH", "${p.dilation[0]}"), param("uint32_t DW", "${p.dilation[1]}", "dilations"),
           param("uint32_t PT", "${p.pads[0]}"), param("uint32_t PL", "${p.pads[1]}", "top and left padding"))
_SUM_TYPE = {"TSUM": "accumulator: int32_t, or int64_t when the proven bound of the sums needs it"}

_CONV_CALL = Signature(
    "Dense or grouped 2-D convolution, NCHW, one image per call: y[k] = bias[k] + sum of x * w over the "
    "group's input channels and the kernel window (padding reads zero).",
    (_CONV_HEAD, param("TIN *restrict patch", "${scratch}", "this core's scratch slice (one receptive field)"),
     param("uint32_t C", "${p.ch_in}"), param("uint32_t H", "${p.in_hw[0]}"),
     param("uint32_t W", "${p.in_hw[1]}", "input channels and size"), param("uint32_t K", "${p.ch_out}",
                                                                              "output channels"),
     param("uint32_t groups", "${p.group}", "convolution groups"), _WINDOW),
    setup=_IMAGE, around=_BATCH_LOOP, types={"TB": "the bias's type (int32_t when there is none)", "TOUT":
                                             "the output's type", **_SUM_TYPE})

_DWCONV_CALL = Signature(
    "Depthwise 2-D convolution (one filter per channel), NCHW, one image per call; window taps in the "
    "padding are skipped.",
    (_CONV_HEAD, param("uint32_t C", "${p.ch_in}"), param("uint32_t H", "${p.in_hw[0]}"),
     param("uint32_t W", "${p.in_hw[1]}", "channels and input size"), _WINDOW),
    setup=_IMAGE, around=_BATCH_LOOP, types={"TB": "the bias's type (int32_t when there is none)", "TOUT":
                                             "the output's type", **_SUM_TYPE})

def gemm_shape_params(p: str, scale_type: str = "int32_t") -> tuple:
    """The GEMM kernels' shape parameters (batch .. c_cols), read from the GEMM params named ``p``;
    alpha and beta of type ``scale_type``."""
    return (param("uint32_t batch", f"${{{p}.batch}}"), param("uint32_t M", f"${{{p}.m}}"),
            param("uint32_t N", f"${{{p}.n}}"), param("uint32_t K", f"${{{p}.k}}", "batch entries and sizes"),
            param("uint32_t a_bstride", f"${{{p}.m * {p}.k if {p}.a_batched else 0}}",
                  "element stride between batch entries (0: shared)"),
            param("uint32_t b_bstride", f"${{{p}.k * {p}.n if {p}.b_batched else 0}}"),
            param("uint32_t c_bstride", f"${{{p}.c_rows * {p}.c_cols if {p}.c_batched else 0}}", "the same for B and C"),
            param("uint32_t transA", f"${{int({p}.trans_a)}}"),
            param("uint32_t transB", f"${{int({p}.trans_b)}}", "1: transposed"),
            param(f"{scale_type} alpha", f"${{{p}.alpha}}"),
            param(f"{scale_type} beta", f"${{{p}.beta}}", "scales of the product and of C"),
            param("uint32_t c_rows", f"${{{p}.c_rows}}"), param("uint32_t c_cols", f"${{{p}.c_cols}}", "C's shape"))


_GEMM_CALL = Signature(
    "Batched GEMM: Y[b] = alpha * op(A[b]) @ op(B[b]) + beta * C, op an optional transpose; C (may be "
    "NULL) is c_rows x c_cols broadcast onto M x N.",
    (param("const TA *restrict A", _X, "M x K (K x M if transA)"),
     param("const TB *restrict B", "${x[1].ptr}", "K x N (N x K if transB)"),
     param("const TC *restrict C", _OPTIONAL_C, "or NULL"), param("TY *restrict Y", _Y, "batch x M x N"),
     *gemm_shape_params("p", "TSUM")),
    types={"TC": "C's type (int32_t when there is none)", "TY": "the output's type",
           "TSUM": "accumulator: int32_t, or int64_t when the proven bound of alpha * sum + beta * C needs it; "
                   "uint32_t or uint64_t when the sums wrap (ONNX integer semantics)"})


def _conv_patch_bytes(node, graph):
    """One receptive field: ch_in / group * kernel_h * kernel_w elements of TIN, rounded up to
    8 bytes."""
    p = node.params
    size = (p.ch_in // p.group) * p.kernel[0] * p.kernel[1] * graph.tensors[node.inputs[0]].dtype.nbytes
    return -(-size // 8) * 8


_QLINEAR_SOFTMAX_CALL = Signature(
    "y = QLinearSoftmax of x over rows of `width` (onnxruntime's table softmax, Deeploy/ops/qlinear.py): the "
    "e(d) table declared beside the call.",
    (param("const T *restrict x", _X, "input"), param("T *restrict y", _Y, "output"),
     param("const float *restrict table", "table", "e(d), d = 0..255"),
     param("uint32_t rows", "${x[0].size // p.width}"), param("uint32_t width", "${p.width}", "the row length"),
     param("float y_inv", "${c_float(p.y_inv)}", "floor(1 / y_scale)"), param("int32_t zp", "${p.zy}"),
     param("int32_t hi", "${p.hi}", "the output's zero point and maximum")),
    setup="<%! from Deeploy.codegen.c_text import c_float %>",
    around="{\n    static const float table[256] = {${', '.join(c_float(v) for v in p.table)}};\n    {call}\n}\n")
def _table_lookup_bytes(node, graph) -> int:
    """The 256 outputs of the table."""
    return 256 * graph.tensors[node.outputs[0]].dtype.nbytes


_TABLE_LOOKUP_CALL = Signature(
    "y = table[x mod 256] of an 8-bit x (Deeploy/ops/qlinear.py): the table declared beside the call, word aligned, "
    "copied into the shared scratch first.",
    (param("const TX *restrict x", _X, "input"), param("TY *restrict y", _Y, "output"),
     param("const TY *restrict table", "table", "the 256 outputs"), param("uint32_t n", "${y[0].size}", "elements"),
     param("void *scratch", "${shared}", "the shared copy of the table"), FILL),
    around="{\n    static const ${p.out.ctype} table[256] __attribute__((aligned(4))) = {${', '.join(map(str, p.table))}};\n"
           "    {call}\n}\n")
_COPY = Kernel("Copy", "copy.inc", _COPY_CALL, floats=(FLOAT32, BFLOAT16))

CORE_KERNELS: dict[str, tuple[Kernel, ...]] = {
    "Add": (Kernel("Add", "add.inc", _BINARY_CALL, ("TA", "TB", "TY"), _broadcastable,
                   extra_types=_binary_value_type),),
    "Sub": (Kernel("Sub", "sub.inc", _BINARY_CALL, ("TA", "TB", "TY"), _broadcastable,
                   extra_types=_binary_value_type),),
    "Mul": (Kernel("Mul", "mul.inc", _BINARY_CALL, ("TA", "TB", "TY"), _broadcastable,
                   extra_types=_binary_value_type),),
    "Div": (Kernel("Div", "div.inc", _BINARY_CALL, ("TA", "TB", "TY"), _broadcastable,
                   extra_types=_binary_value_type),),
    "Max": (Kernel("Max", "max.inc", _BINARY_CALL, ("TA", "TB", "TY"), _broadcastable,
                   extra_types=_binary_value_type),),
    "Min": (Kernel("Min", "min.inc", _BINARY_CALL, ("TA", "TB", "TY"), _broadcastable,
                   extra_types=_binary_value_type),),
    "RequantShift": (Kernel("RequantShift", "requant_shift.inc", _REQUANT_CALL, ("TIN", "TM", "TA", "TOUT"),
                            accepts=_requant_fits, extra_types=_requant_accumulator,
                            shared_scratch=_requant_table_bytes, scratch_optional=True),),
    "RequantizeLinear": (Kernel("RequantizeLinear", "requantize_linear.inc", _REQUANTIZE_LINEAR_CALL,
                                ("T", "TS", "TZ", "TY"), floats=(FLOAT32,)),),
    "RequantizeLinearAdd": (Kernel("RequantizeLinearAdd", "requantize_linear_add.inc", _REQUANTIZE_LINEAR_ADD_CALL,
                                   ("T", "TS", "TZ", "TA", "TY"), floats=(FLOAT32,)),),
    **{op: (Kernel("QLinearBinary", "qlinear_binary.inc", _QLINEAR_CALL, ("T",), _broadcastable),)
       for op in ("QLinearAdd", "QLinearMul")},
    "QLinearSoftmax": (Kernel("QLinearSoftmax", "qlinear_softmax.inc", _QLINEAR_SOFTMAX_CALL, ("T",)),),
    "TableLookup": (Kernel("TableLookup", "table_lookup.inc", _TABLE_LOOKUP_CALL, ("TX", "TY"),
                           shared_scratch=_table_lookup_bytes),),
    "Conv": (
        Kernel("DWConv2d", "conv2d_depthwise.inc", _DWCONV_CALL, ("TIN", "TW"),
               accepts=lambda n, g: None if n.params.depthwise else "not depthwise", extra_types=_conv_types),
        Kernel("Conv2d", "conv2d.inc", _CONV_CALL, ("TIN", "TW"), scratch=_conv_patch_bytes,
               extra_types=_conv_types),
    ),
    "Gemm": (Kernel("Gemm", "gemm.inc", _GEMM_CALL, ("TA", "TB"), extra_types=_gemm_types),),
    "MatMul": (Kernel("Gemm", "gemm.inc", _GEMM_CALL, ("TA", "TB"), extra_types=_gemm_types),),
    "Transpose": (Kernel("Transpose", "transpose.inc", _TRANSPOSE_CALL, ("T",), _transposable,
                         floats=(FLOAT32, BFLOAT16)),),
    "Reshape": (_COPY,),
    "Flatten": (_COPY,),
    "Squeeze": (_COPY,),
    "Unsqueeze": (_COPY,),
    "Identity": (_COPY,),
}
