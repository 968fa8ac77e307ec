"""Generic kernels of the core ops: elementwise arithmetic, RequantShift, convolutions,
GEMM/MatMul, Transpose and the zero-copy views."""

from __future__ import annotations

from Deeploy.ir.dtypes import INT32, INT64
from Deeploy.targets.platform import Kernel
from Deeploy.targets.generic.layout import broadcast_operands, transpose_operands
from Deeploy.targets.value_range import accumulator_type, conv_sum_bound, gemm_sum_bound, max_abs, wide_reason

__all__ = ["CORE_KERNELS", "sum_kernel_types"]

_IMPORTS = "<%! from Deeploy.targets.generic.layout import broadcast_operands, transpose_operands %>"

def _requant_bound(node, graph) -> int:
    x, mul, add = node.inputs
    return max_abs(graph, x) * max_abs(graph, mul) + max_abs(graph, add) + (1 << node.params.shift)


def _requant_accumulator(node, graph):
    """int32 accumulation when x * mul + add + rounding provably fits, else int64."""
    return (("TACC", accumulator_type(_requant_bound(node, graph))),)


def _requant_fits(node, graph):
    return wide_reason("x * mul + add", _requant_bound(node, graph), node, graph)


def sum_kernel_types(optional: str, output: str, sum_bound):
    """Extra type macros of a GEMM or convolution kernel after its two operands: ``optional``
    (the optional third input's type, int32 when absent), ``output`` (the output's type) and
    TSUM, the accumulator: int32 when ``sum_bound(node, graph)`` fits, else int64 (the ops
    reject nodes whose sums could exceed int64)."""
    def extra(node, graph):
        third = node.inputs[2] if len(node.inputs) > 2 else ""
        return ((optional, graph.tensors[third].dtype if third else INT32),
                (output, graph.tensors[node.outputs[0]].dtype),
                ("TSUM", accumulator_type(sum_bound(node, graph))))
    return extra


_gemm_types = sum_kernel_types("TC", "TY", gemm_sum_bound)
_conv_types = sum_kernel_types("TB", "TOUT", conv_sum_bound)


def _binary_value_type(node, graph):
    """TV, the type a binary kernel computes in: int32, or int64 when an operand or the output
    holds values beyond int32."""
    wide = any(max_abs(graph, i) >= 2**31 for i in node.inputs)
    wide = wide or graph.tensors[node.outputs[0]].dtype.bits > 32
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


_BINARY_CALL = _IMPORTS + """<% dims, (sa, sb) = broadcast_operands(y[0].shape, [x[0].shape, x[1].shape]) %>\
${fn}(${x[0].ptr}, ${x[1].ptr}, ${y[0].ptr}, ${", ".join(map(str, dims))}, \
${", ".join(map(str, sa))}, ${", ".join(map(str, sb))});"""

_COPY_CALL = """% if y[0].ptr != x[0].ptr:
${fn}(${y[0].ptr}, ${x[0].ptr}, ${y[0].nbytes});
% else:
/* zero copy: output aliases the input buffer */
% endif"""

_TRANSPOSE_CALL = _IMPORTS + """<% dims, strides = transpose_operands(p.in_shape, p.perm) %>\
{
    static const uint32_t dims[6] = {${", ".join(map(str, dims))}};
    static const uint32_t strides[6] = {${", ".join(map(str, strides))}};
    ${fn}(${x[0].ptr}, ${y[0].ptr}, dims, strides);
}"""

_REQUANT_CALL = """${fn}(${x[0].ptr}, ${x[1].ptr}, ${x[2].ptr}, ${y[0].ptr}, ${p.outer}, ${p.channels}, \
${p.inner}, ${int(p.mul_per_channel)}, ${int(p.add_per_channel)}, ${p.shift}, ${p.lo}, ${p.hi});"""

_CONV_CALL = """<% img_in = p.ch_in * p.in_hw[0] * p.in_hw[1]; img_out = p.ch_out * p.out_hw[0] * p.out_hw[1] %>
% for n in range(p.batch):
${fn}(${x[0].ptr} + ${n * img_in}, ${x[1].ptr}, ${x[2].ptr if len(x) > 2 and x[2] else "NULL"}, \
${y[0].ptr} + ${n * img_out}, ${scratch}, ${p.ch_in}, ${p.in_hw[0]}, ${p.in_hw[1]}, ${p.ch_out}, ${p.group}, \
${p.kernel[0]}, ${p.kernel[1]}, ${p.out_hw[0]}, ${p.out_hw[1]}, ${p.stride[0]}, ${p.stride[1]}, \
${p.dilation[0]}, ${p.dilation[1]}, ${p.pads[0]}, ${p.pads[1]});
% endfor"""

_DWCONV_CALL = """<% img_in = p.ch_in * p.in_hw[0] * p.in_hw[1]; img_out = p.ch_out * p.out_hw[0] * p.out_hw[1] %>
% for n in range(p.batch):
${fn}(${x[0].ptr} + ${n * img_in}, ${x[1].ptr}, ${x[2].ptr if len(x) > 2 and x[2] else "NULL"}, \
${y[0].ptr} + ${n * img_out}, ${p.ch_in}, ${p.in_hw[0]}, ${p.in_hw[1]}, \
${p.kernel[0]}, ${p.kernel[1]}, ${p.out_hw[0]}, ${p.out_hw[1]}, ${p.stride[0]}, ${p.stride[1]}, \
${p.dilation[0]}, ${p.dilation[1]}, ${p.pads[0]}, ${p.pads[1]});
% endfor"""

_GEMM_CALL = """${fn}(${x[0].ptr}, ${x[1].ptr}, ${x[2].ptr if len(x) > 2 and x[2] else "NULL"}, ${y[0].ptr}, \
${p.batch}, ${p.m}, ${p.n}, ${p.k}, ${p.m * p.k if p.a_batched else 0}, ${p.k * p.n if p.b_batched else 0}, \
${p.c_rows * p.c_cols if p.c_batched else 0}, ${int(p.trans_a)}, ${int(p.trans_b)}, ${p.alpha}, ${p.beta}, \
${p.c_rows}, ${p.c_cols});"""


def _conv_patch_bytes(node, graph):
    p = node.params
    size = (p.ch_in // p.group) * p.kernel[0] * p.kernel[1] * graph.tensors[node.inputs[0]].dtype.nbytes
    return -(-size // 8) * 8


_COPY = Kernel("Copy", "copy.inc", _COPY_CALL)

CORE_KERNELS: dict[str, tuple[Kernel, ...]] = {
    "Add": (Kernel("Add", "add.inc", _BINARY_CALL, ("TA", "TB", "TY"), _broadcastable,
                   extra_types=_binary_value_type),),
    "Sub": (Kernel("Sub", "sub.inc", _BINARY_CALL, ("TA", "TB", "TY"), _broadcastable,
                   extra_types=_binary_value_type),),
    "Mul": (Kernel("Mul", "mul.inc", _BINARY_CALL, ("TA", "TB", "TY"), _broadcastable,
                   extra_types=_binary_value_type),),
    "Max": (Kernel("Max", "max.inc", _BINARY_CALL, ("TA", "TB", "TY"), _broadcastable,
                   extra_types=_binary_value_type),),
    "Min": (Kernel("Min", "min.inc", _BINARY_CALL, ("TA", "TB", "TY"), _broadcastable,
                   extra_types=_binary_value_type),),
    "RequantShift": (Kernel("RequantShift", "requant_shift.inc", _REQUANT_CALL, ("TIN", "TM", "TA", "TOUT"),
                            accepts=_requant_fits, extra_types=_requant_accumulator),),
    "Conv": (
        Kernel("DWConv2d", "conv2d_depthwise.inc", _DWCONV_CALL, ("TIN", "TW"),
               accepts=lambda n, g: None if n.params.depthwise else "not depthwise", extra_types=_conv_types),
        Kernel("Conv2d", "conv2d.inc", _CONV_CALL, ("TIN", "TW"), scratch=_conv_patch_bytes,
               extra_types=_conv_types),
    ),
    "Gemm": (Kernel("Gemm", "gemm.inc", _GEMM_CALL, ("TA", "TB"), extra_types=_gemm_types),),
    "MatMul": (Kernel("Gemm", "gemm.inc", _GEMM_CALL, ("TA", "TB"), extra_types=_gemm_types),),
    "Transpose": (Kernel("Transpose", "transpose.inc", _TRANSPOSE_CALL, ("T",), _transposable),),
    "Reshape": (_COPY,),
    "Flatten": (_COPY,),
    "Squeeze": (_COPY,),
    "Unsqueeze": (_COPY,),
    "Identity": (_COPY,),
}
