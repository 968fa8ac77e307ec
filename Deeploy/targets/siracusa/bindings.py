"""Siracusa's binding table: the Generic kernels (each core takes its share of the work, see
common.h) plus the cluster library's channels-last convolutions (integer and float32) and
requantised kernels. Every convolution runs channels-last here (passes.layout), so the Generic
NCHW convolutions are kept only for nodes that are not."""

from __future__ import annotations

from dataclasses import replace

from Deeploy.ops.requant import channel_strides
from Deeploy.targets.generic.bindings import GENERIC_BINDINGS
from Deeploy.ir.dtypes import FLOAT32
from Deeploy.targets.generic.bindings.core import gemm_shape_params, output_table, output_table_bytes, sum_kernel_types
from Deeploy.targets.generic.bindings.floats import _conv_types as _float_conv_types, _floats
from Deeploy.targets.generic.bindings.nonlinear import igelu_bound, ihardswish_bound
from Deeploy.platform import Kernel
from Deeploy.signature import FILL, Signature, param
from Deeploy.ops.bounds import accumulator_type, conv_sum_bound, gemm_sum_bound, max_abs, wide_reason

__all__ = ["SIRACUSA_BINDINGS"]


def _rq_bound(sum_bound, node, graph) -> int:
    """Largest |sum * mul + add + rounding| of a requantised GEMM or convolution."""
    mul, add = node.inputs[-2], node.inputs[-1]
    return sum_bound(node, graph) * max_abs(graph, mul) + max_abs(graph, add) + (1 << node.params.rq.shift)


def _rq_types(sum_bound):
    """TSUM (the sums) and TACC (the requantisation): int32 when provably enough, else int64."""
    def extra(node, graph):
        return (("TSUM", accumulator_type(sum_bound(node, graph))),
                ("TACC", accumulator_type(_rq_bound(sum_bound, node, graph))))
    return extra


def _rq_accepts(sum_bound, layout=None):
    """The layout check, then: the requantisation fits int64."""
    def accepts(node, graph):
        reason = layout(node, graph) if layout else None
        return reason or wide_reason("sum * mul + add", _rq_bound(sum_bound, node, graph), node, graph)
    return accepts


def _channels_last(node, graph):
    base = node.params.base if hasattr(node.params, "base") else node.params
    return None if base.channels_last else "not in channels-last layout"


def _float_channels_last(node, graph):
    return _floats(node, graph) or _channels_last(node, graph)


def _nchw_only(kernel: Kernel) -> Kernel:
    """A Generic NCHW convolution, refusing channels-last nodes."""
    def accepts(node, graph):
        if node.params.channels_last:
            return "channels-last layout (an NCHW kernel)"
        return kernel.accepts(node, graph) if kernel.accepts else None
    return replace(kernel, accepts=accepts)


def _image(base: str) -> str:
    """Mako setting ``b`` (the convolution's params, ``base`` of the node's) and the element
    counts of one input and output image."""
    return (f"<% b = {base}; img_in = b.ch_in * b.in_hw[0] * b.in_hw[1]; "
            "img_out = b.ch_out * b.out_hw[0] * b.out_hw[1] %>")


_BATCH_LOOP = """
% for n in range(b.batch):
{call}
% endfor"""
_HWC_HEAD = (param("const TIN *restrict x", "${x[0].ptr} + ${n * img_in}", "input image n, [H][W][C]"),
             param("const TW *restrict w", "${x[1].ptr}", "weights [K][KH][KW][C/groups]"))
_HWC_DIMS = (param("TOUT *restrict y", "${y[0].ptr} + ${n * img_out}", "output image n, [OH][OW][K]"),
             param("uint32_t H", "${b.in_hw[0]}"), param("uint32_t W", "${b.in_hw[1]}", "input size"),
             param("uint32_t C", "${b.ch_in}"), param("uint32_t K", "${b.ch_out}", "input and output channels"),
             param("uint32_t groups", "${b.group}", "convolution groups"),
             param("uint32_t KH", "${b.kernel[0]}"), param("uint32_t KW", "${b.kernel[1]}", "kernel size"),
             param("uint32_t OH", "${b.out_hw[0]}"), param("uint32_t OW", "${b.out_hw[1]}", "output size"),
             param("uint32_t SH", "${b.stride[0]}"), param("uint32_t SW", "${b.stride[1]}", "strides"),
             param("uint32_t DH", "${b.dilation[0]}"), param("uint32_t DW", "${b.dilation[1]}", "dilations"),
             param("uint32_t PT", "${b.pads[0]}"), param("uint32_t PL", "${b.pads[1]}", "top and left padding"))
_SUM = {"TSUM": "the sums: int32_t, or int64_t when their proven bound needs it"}
_RQ_TYPES = {**_SUM, "TACC": "the requantisation: int32_t, or int64_t when its proven bound needs it"}

_HWC_CONV_CALL = Signature(
    "2-D convolution in channels-last layout, one image per call; kernel taps in the padding are skipped.",
    (_HWC_HEAD, param("const TB *restrict bias", '${x[2].ptr if len(x) > 2 and x[2] else "NULL"}',
                      "bias [K], or NULL"), _HWC_DIMS),
    setup=_image("p"), around=_BATCH_LOOP,
    types={"TB": "the bias's type (int32_t when there is none)", "TOUT": "the output's type", **_SUM})

_FLOAT_HWC_CONV_CALL = replace(_HWC_CONV_CALL, types={**_HWC_CONV_CALL.types, "TSUM": "float (float32 sums)"})

_HWC_CONV_RQ_CALL = Signature(
    "Channels-last 2-D convolution fused with its RequantShift (conv2d_hwc.inc with CONV_REQUANT), one "
    "image per call: y = clip((sum * mul + add + 2^(shift-1)) >> shift, lo, hi) per output channel.",
    (_HWC_HEAD, param("const TB *restrict bias", '${x[2].ptr if x[2] else "NULL"}', "bias [K], or NULL"),
     param("const TM *restrict mul", "${x[3].ptr}", "multiplier"),
     param("const TA *restrict add", "${x[4].ptr}", "offset"), _HWC_DIMS,
     param("uint32_t mul_per_channel", "${int(p.rq.mul_per_channel)}", "1: mul per channel, 0: scalar"),
     param("uint32_t add_per_channel", "${int(p.rq.add_per_channel)}", "1: add per channel, 0: scalar"),
     param("uint32_t shift", "${p.rq.shift}"), param("int32_t lo", "${p.rq.lo}"),
     param("int32_t hi", "${p.rq.hi}", "requantisation shift and output bounds")),
    setup=_image("p.base"), around=_BATCH_LOOP, types=_RQ_TYPES)


def _gemm_rq_strides(p, per_channel: bool):
    """(batch, row, column) strides of mul or add of a requantised GEMM over its output."""
    return channel_strides(p.rq, (p.base.batch, p.base.m, p.base.n), per_channel)


def _gemm_rq_layout(node, graph):
    p = node.params
    if None in (_gemm_rq_strides(p, p.rq.mul_per_channel), _gemm_rq_strides(p, p.rq.add_per_channel)):
        return "requantisation constants vary along an unsupported axis"
    return None


_GEMM_RQ_CALL = Signature(
    "Batched GEMM fused with its RequantShift: Y = clip((acc * mul + add + 2^(shift-1)) >> shift, lo, hi), "
    "acc = alpha * op(A[b]) @ op(B[b]) + beta * C, operands as in gemm.inc; mul and add are indexed "
    "b * s_b + m * s_m + n * s_n.",
    (param("const TA *restrict A", "${x[0].ptr}", "M x K (K x M if transA)"),
     param("const TB *restrict B", "${x[1].ptr}", "K x N (N x K if transB)"),
     param("const TC *restrict C", '${x[2].ptr if x[2] else "NULL"}', "or NULL"),
     param("const TM *restrict mul", "${x[3].ptr}", "multiplier"),
     param("const TAD *restrict add", "${x[4].ptr}", "offset"), param("TY *restrict Y", "${y[0].ptr}", "output"),
     *gemm_shape_params("b", "TSUM"),
     param("uint32_t mul_sb", "${ms[0]}"), param("uint32_t mul_sm", "${ms[1]}"),
     param("uint32_t mul_sn", "${ms[2]}", "mul's (batch, row, column) strides"),
     param("uint32_t add_sb", "${ads[0]}"), param("uint32_t add_sm", "${ads[1]}"),
     param("uint32_t add_sn", "${ads[2]}", "add's (batch, row, column) strides"),
     param("uint32_t shift", "${p.rq.shift}"), param("int32_t lo", "${p.rq.lo}"),
     param("int32_t hi", "${p.rq.hi}", "requantisation shift and output bounds")),
    setup="<%! from Deeploy.targets.siracusa.bindings import _gemm_rq_strides as strides %>"
          "<% b = p.base; ms = strides(p, p.rq.mul_per_channel); ads = strides(p, p.rq.add_per_channel) %>",
    types=_RQ_TYPES)


# What the output of an element-wise requantised op depends on, which its source names ELT_KEY:
# the sum of its operands (Add) or its input (a unary op); a product (Mul) has too many values.
KEY_SUM, KEY_INPUT = "sum", "input"


def eltwise_table(rq, operands, size: int, key: str | None) -> tuple[int, int] | None:
    """The output table of an element-wise requantised call (eltwise_rq.inc) whose output depends
    on ``key`` of its operands (output_table), or None."""
    if key is None:
        return None
    types = [t.dtype for t in (operands if key == KEY_SUM else operands[:1])]
    return output_table(rq.mul_per_channel or rq.add_per_channel, types, size)


def _eltwise_table_bytes(key: str | None):
    """Shared scratch of the call's output table, when it has one."""
    def rule(node, graph):
        """The output table: one output per key (eltwise_table), rounded up to 8 bytes."""
        y = graph.tensors[node.outputs[0]]
        operands = [graph.tensors[i] for i in node.inputs[:-2] if i]
        return output_table_bytes(eltwise_table(node.params.rq, operands, y.size, key), y.dtype)
    return rule


def _eltwise_kernel(name: str, source: str, types: tuple[str, ...], doc: str, constants: tuple[str, str, str],
                    bound, unary: bool = False, key: str | None = None) -> Kernel:
    """An element-wise requantised kernel (``_eltwise_call``) whose calls may tabulate their
    outputs by ``key``; ``bound``: |v| of the op (its requantisation must fit int64)."""
    return Kernel(name, source, _eltwise_call(doc, constants, unary, key), types, accepts=_rq_accepts(bound),
                  shared_scratch=_eltwise_table_bytes(key), scratch_optional=True)


def _eltwise_call(doc: str, constants: tuple[str, str, str], unary: bool = False,
                  key: str | None = None) -> Signature:
    """An elementwise op fused with its RequantShift (eltwise_rq.inc); ``constants``: Mako
    fragments of the op's p0..p2; ``unary``: the source defines TB as TA; ``key``: what its
    output depends on, when its source tabulates (ELT_KEY)."""
    return Signature(
        doc + " Then y = clip((v * mul + add + 2^(shift-1)) >> shift, lo, hi) over the output viewed as "
        "[outer, channels, inner].",
        (param("const TA *restrict a", "${x[0].ptr}", "first operand"),
         param("const TB *restrict b", "${b.ptr}", "second operand (unary ops: the first again)"),
         param("const TM *restrict mul", "${x[-2].ptr}", "multiplier"),
         param("const TAD *restrict add", "${x[-1].ptr}", "offset"), param("TY *restrict y", "${y[0].ptr}", "output"),
         param("uint32_t outer", "${rq.outer}"), param("uint32_t channels", "${rq.channels}"),
         param("uint32_t inner", "${rq.inner}", "the output's view"),
         param("uint32_t a_stride", "${int(x[0].size > 1)}", "1: a per element, 0: scalar"),
         param("uint32_t b_stride", "${int(b.size > 1)}", "1: b per element, 0: scalar"),
         param("uint32_t a_period", "${x[0].size if 1 < x[0].size < size else 0}"),
         param("uint32_t b_period", "${b.size if 1 < b.size < size else 0}",
               "a broadcast operand (the output's trailing dims) repeats every period elements; 0: none"),
         param("uint32_t mul_per_channel", "${int(rq.mul_per_channel)}"),
         param("uint32_t add_per_channel", "${int(rq.add_per_channel)}", "1: per channel, 0: scalar"),
         param("uint32_t shift", "${rq.shift}"), param("int32_t lo", "${rq.lo}"),
         param("int32_t hi", "${rq.hi}", "requantisation shift and output bounds"),
         param("int64_t p0", constants[0]), param("int64_t p1", constants[1]),
         param("int64_t p2", constants[2], "the op's constants"),
         param("void *scratch", '${shared if tab else "NULL"}', "the shared output table, or NULL"), FILL,
         param("int32_t key_lo", "${tab[0] if tab else 0}", "the table's lowest key"),
         param("uint32_t keys", "${tab[1] if tab else 0}", "keys in the table; 0: no table (outputs computed)")),
        setup="<%! from Deeploy.targets.siracusa.bindings import eltwise_table %>"
              f"<% rq = p.rq; size = y[0].size; b = x[{0 if unary else 1}]; "
              f"tab = eltwise_table(rq, x[:-2], size, {key!r}) if shared != 'NULL' else None %>",
        types={"TB": "TA (a unary op: the source defines it)"} if unary else {})


def _lanes(kernel: Kernel, name: str, source: str) -> Kernel:
    """A Generic kernel whose source the cluster library wraps to walk 8-bit data on byte lanes."""
    return replace(kernel, name=name, source=source)


_GEMM_RQ = Kernel("GemmRQ", "gemm_rq.inc", _GEMM_RQ_CALL, ("TA", "TB", "TC", "TM", "TAD", "TY"),
                  accepts=_rq_accepts(gemm_sum_bound, _gemm_rq_layout), extra_types=_rq_types(gemm_sum_bound))

SIRACUSA_BINDINGS: dict[str, tuple[Kernel, ...]] = {
    **GENERIC_BINDINGS,
    "Conv": (Kernel("ConvHWC", "conv2d_hwc.inc", _HWC_CONV_CALL, ("TIN", "TW"),
                    accepts=_channels_last, extra_types=sum_kernel_types("TB", "TOUT", conv_sum_bound)),
             Kernel("FConvHWC", "conv2d_hwc.inc", _FLOAT_HWC_CONV_CALL, ("TIN", "TW"), accepts=_float_channels_last,
                    floats=(FLOAT32,), extra_types=_float_conv_types))
    + tuple(_nchw_only(k) for k in GENERIC_BINDINGS["Conv"]),
    "RequantizedConv": (Kernel("ConvHWC_RQ", "conv2d_hwc_rq.inc", _HWC_CONV_RQ_CALL,
                               ("TIN", "TW", "TB", "TM", "TA", "TOUT"),
                               accepts=_rq_accepts(conv_sum_bound, _channels_last),
                               extra_types=_rq_types(conv_sum_bound)),),
    "iSoftmax": (_lanes(GENERIC_BINDINGS["iSoftmax"][0], "iSoftmax_XP", "isoftmax_xp.inc"),),
    "RequantizediSoftmax": (_lanes(GENERIC_BINDINGS["RequantizediSoftmax"][0], "iSoftmax_RQ_XP",
                                   "isoftmax_rq_xp.inc"),),
    "Add": tuple(_lanes(k, "Add_XP", "add_xp.inc") if k.name == "Add" else k for k in GENERIC_BINDINGS["Add"]),
    "RequantShift": (_lanes(GENERIC_BINDINGS["RequantShift"][0], "RequantShift_XP", "requant_shift_xp.inc"),),
    "iRMSNorm": (_lanes(GENERIC_BINDINGS["iRMSNorm"][0], "iRMSNorm_XP", "irmsnorm_xp.inc"),),
    "RequantizedGemm": (_GEMM_RQ,),
    "RequantizedMatMul": (_GEMM_RQ,),
    "RequantizedAdd": (_eltwise_kernel("AddRQ", "add_rq.inc", ("TA", "TB", "TM", "TAD", "TY"), "Add: v = a + b.",
                                       ("0", "0", "0"), lambda n, g: max_abs(g, n.inputs[0]) + max_abs(g, n.inputs[1]),
                                       key=KEY_SUM),),
    "RequantizedMul": (_eltwise_kernel("MulRQ", "mul_rq.inc", ("TA", "TB", "TM", "TAD", "TY"), "Mul: v = a * b.",
                                       ("0", "0", "0"), lambda n, g: max_abs(g, n.inputs[0]) * max_abs(g, n.inputs[1])),),
    "RequantizediGELU": (_eltwise_kernel("iGELU_RQ", "igelu_rq.inc", ("TA", "TM", "TAD", "TY"),
                                         "iGELU (p0 = b, p1 = one): v = x * ((one + L) >> 1) as in igelu.inc.",
                                         ("${p.base.b}", "${p.base.one}", "0"),
                                         lambda n, g: igelu_bound(n.params.base, max_abs(g, n.inputs[0])),
                                         unary=True, key=KEY_INPUT),),
    "RequantizediHardswish": (_eltwise_kernel("iHardswish_RQ", "ihardswish_rq.inc", ("TA", "TM", "TAD", "TY"),
                                              "iHardswish (p0 = one_over_six, p1 = three, p2 = six): v = x * "
                                              "(clip(x + three, 0, six) * one_over_six).",
                                              ("${p.base.one_over_six}", "${p.base.three}", "${p.base.six}"),
                                              lambda n, g: ihardswish_bound(n.params.base, max_abs(g, n.inputs[0])),
                                              unary=True, key=KEY_INPUT),),
}
