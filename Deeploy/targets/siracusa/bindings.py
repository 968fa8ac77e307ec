"""Siracusa's binding table: the Generic kernels (each core takes its share of the work, see
common.h) plus the cluster library's channels-last convolutions and requantised kernels."""

from __future__ import annotations

import numpy as np

from Deeploy.ops.requant import channel_strides
from Deeploy.targets.generic.bindings import GENERIC_BINDINGS
from Deeploy.targets.generic.kernels_core import sum_kernel_types
from Deeploy.targets.generic.kernels_nonlinear import igelu_bound, ihardswish_bound
from Deeploy.targets.platform import Kernel
from Deeploy.targets.value_range import accumulator_type, conv_sum_bound, gemm_sum_bound, max_abs, wide_reason

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


def _conv_dims(p) -> str:
    return ", ".join(map(str, (p.in_hw[0], p.in_hw[1], p.ch_in, p.ch_out, p.group, p.kernel[0], p.kernel[1],
                               p.out_hw[0], p.out_hw[1], p.stride[0], p.stride[1], p.dilation[0],
                               p.dilation[1], p.pads[0], p.pads[1])))


_HWC_CONV_CALL = """<% img_in = p.ch_in * p.in_hw[0] * p.in_hw[1]; img_out = p.ch_out * p.out_hw[0] * p.out_hw[1] %>
% for n in range(p.batch):
${fn}(${x[0].ptr} + ${n * img_in}, ${x[1].ptr}, ${x[2].ptr if len(x) > 2 and x[2] else "NULL"}, \\
${y[0].ptr} + ${n * img_out}, ${dims(p)});
% endfor"""

_HWC_CONV_RQ_CALL = """<% b = p.base; img_in = b.ch_in * b.in_hw[0] * b.in_hw[1]; img_out = b.ch_out * b.out_hw[0] * b.out_hw[1] %>
% for n in range(b.batch):
${fn}(${x[0].ptr} + ${n * img_in}, ${x[1].ptr}, ${x[2].ptr if x[2] else "NULL"}, ${x[3].ptr}, ${x[4].ptr}, \\
${y[0].ptr} + ${n * img_out}, ${dims(b)}, ${int(p.rq.mul_per_channel)}, ${int(p.rq.add_per_channel)}, \\
${p.rq.shift}, ${p.rq.lo}, ${p.rq.hi});
% endfor"""


def _gemm_rq_strides(p, per_channel: bool):
    """(batch, row, column) strides of mul or add of a requantised GEMM over its output."""
    return channel_strides(p.rq, (p.base.batch, p.base.m, p.base.n), per_channel)


def _gemm_rq_layout(node, graph):
    p = node.params
    if None in (_gemm_rq_strides(p, p.rq.mul_per_channel), _gemm_rq_strides(p, p.rq.add_per_channel)):
        return "requantisation constants vary along an unsupported axis"
    return None


_GEMM_RQ_CALL = """<% b = p.base; ms = strides(p, p.rq.mul_per_channel); ads = strides(p, p.rq.add_per_channel) %>\\
${fn}(${x[0].ptr}, ${x[1].ptr}, ${x[2].ptr if x[2] else "NULL"}, ${x[3].ptr}, ${x[4].ptr}, ${y[0].ptr}, \\
${b.batch}, ${b.m}, ${b.n}, ${b.k}, ${b.m * b.k if b.a_batched else 0}, ${b.k * b.n if b.b_batched else 0}, \\
${b.c_rows * b.c_cols if b.c_batched else 0}, ${int(b.trans_a)}, ${int(b.trans_b)}, ${b.alpha}, ${b.beta}, \\
${b.c_rows}, ${b.c_cols}, ${", ".join(map(str, ms))}, ${", ".join(map(str, ads))}, ${p.rq.shift}, ${p.rq.lo}, ${p.rq.hi});"""


def _eltwise_call(constants: str) -> str:
    return """<% rq = p.rq; size = y[0].size; b = x[1] if p.base_op == "Add" else x[0] %>\\
${fn}(${x[0].ptr}, ${b.ptr}, ${x[-2].ptr}, ${x[-1].ptr}, ${y[0].ptr}, ${rq.outer}, ${rq.channels}, ${rq.inner}, \\
${int(x[0].size == size)}, ${int(b.size == size)}, ${int(rq.mul_per_channel)}, ${int(rq.add_per_channel)}, \\
${rq.shift}, ${rq.lo}, ${rq.hi}, """ + constants + ");"


def _with_helpers(template: str) -> str:
    return ("<%! from Deeploy.targets.siracusa.bindings import _conv_dims as dims, "
            "_gemm_rq_strides as strides %>" + template)


_GEMM_RQ = Kernel("GemmRQ", "gemm_rq.inc", _with_helpers(_GEMM_RQ_CALL), ("TA", "TB", "TC", "TM", "TAD", "TY"),
                  accepts=_rq_accepts(gemm_sum_bound, _gemm_rq_layout), extra_types=_rq_types(gemm_sum_bound))

SIRACUSA_BINDINGS: dict[str, tuple[Kernel, ...]] = {
    **GENERIC_BINDINGS,
    "Conv": (Kernel("ConvHWC", "conv2d_hwc.inc", _with_helpers(_HWC_CONV_CALL), ("TIN", "TW"),
                    accepts=_channels_last, extra_types=sum_kernel_types("TB", "TOUT", conv_sum_bound)),)
    + tuple(GENERIC_BINDINGS["Conv"]),
    "RequantizedConv": (Kernel("ConvHWC_RQ", "conv2d_hwc_rq.inc", _with_helpers(_HWC_CONV_RQ_CALL),
                               ("TIN", "TW", "TB", "TM", "TA", "TOUT"),
                               accepts=_rq_accepts(conv_sum_bound, _channels_last),
                               extra_types=_rq_types(conv_sum_bound)),),
    "RequantizedGemm": (_GEMM_RQ,),
    "RequantizedMatMul": (_GEMM_RQ,),
    "RequantizedAdd": (Kernel("AddRQ", "add_rq.inc", _eltwise_call("0, 0, 0"), ("TA", "TB", "TM", "TAD", "TY"),
                              accepts=_rq_accepts(lambda n, g: max_abs(g, n.inputs[0]) + max_abs(g, n.inputs[1]))),),
    "RequantizediGELU": (Kernel("iGELU_RQ", "igelu_rq.inc", _eltwise_call("${p.base.b}, ${p.base.one}, 0"),
                                ("TA", "TM", "TAD", "TY"),
                                accepts=_rq_accepts(lambda n, g: igelu_bound(n.params.base, max_abs(g, n.inputs[0])))),),
    "RequantizediHardswish": (Kernel("iHardswish_RQ", "ihardswish_rq.inc",
                                     _eltwise_call("${p.base.one_over_six}, ${p.base.three}, ${p.base.six}"),
                                     ("TA", "TM", "TAD", "TY"),
                                     accepts=_rq_accepts(
                                         lambda n, g: ihardswish_bound(n.params.base, max_abs(g, n.inputs[0])))),),
}
