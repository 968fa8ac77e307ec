"""Generic kernels of data movement and reductions: MaxPool, Pad, Concat, Slice, Gather,
ReduceMean/ReduceSum/IntegerMean, Relu/Clip. Index math is done at generation time; the call
templates import this module as B to reach the helpers."""

from __future__ import annotations

import numpy as np

from Deeploy.targets.generic.layout import merge_strided_dims
from Deeploy.targets.platform import Kernel
from Deeploy.targets.value_range import accumulator_type, max_abs, wide_reason

__all__ = ["DATA_KERNELS"]

# Index math of MaxPool, Pad, Concat, Slice, Gather, the reductions and Relu/Clip is done here,
# at generation time; the call templates import this module as B to reach these helpers.
_DM_IMPORTS = "<%! import Deeploy.targets.generic.kernels_data as B %>\n"  # own line: % lines follow


def _dm_cint(v: int) -> str:
    """A C literal of integer ``v`` valid for any int64 value."""
    v = int(v)
    if -2**31 < v < 2**31:
        return str(v)
    if v == -2**31:
        return "(-2147483647 - 1)"
    if v == -2**63:
        return "(-9223372036854775807LL - 1)"
    return f"{v}LL" if v < 2**63 else f"{v}ULL"


def _dm_cval(dtype, v: int) -> str:
    return f"({dtype.ctype}){_dm_cint(v)}"


def _dm_array(ctype: str, name: str, values) -> str:
    values = list(values) or [0]
    return f"static const {ctype} {name}[{len(values)}] = {{{', '.join(_dm_cint(v) for v in values)}}};"


def _dm_strides(shape) -> list[int]:
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d
    return strides[::-1]


def _dm_out_type(name: str):
    """extra_types binding macro ``name`` to the node's first output type."""
    return lambda node, graph: ((name, graph.tensors[node.outputs[0]].dtype),)


def _dm_slice_view(p):
    """(first element offset, dims[6], strides[6]) of a Slice as a strided view, merged; or
    None if more than 6 dims remain."""
    in_strides = _dm_strides(p.in_shape)
    base = sum(s * st for s, st in zip(p.starts, in_strides))
    dims, strides = merge_strided_dims(list(p.out_shape), [t * st for t, st in zip(p.steps, in_strides)])
    if len(dims) > 6:
        return None
    return base, [1] * (6 - len(dims)) + dims, [0] * (6 - len(dims)) + strides


def _dm_slice_accepts(node, graph):
    return None if _dm_slice_view(node.params) is not None else "strided view needs more than 6 dims"


def _dm_pad_view(p):
    """Pad as (in_dims, begin, end, in_strides, out_block), axes without pads merged into the
    axis before them."""
    dims, b, e = list(p.in_shape) or [1], list(p.begin) or [0], list(p.end) or [0]
    k = len(dims) - 1
    while k > 0:
        if b[k] == 0 and e[k] == 0:
            d = dims[k]
            dims[k - 1] *= d
            b[k - 1] *= d
            e[k - 1] *= d
            del dims[k], b[k], e[k]
        k -= 1
    out = [d + bb + ee for d, bb, ee in zip(dims, b, e)]
    return dims, b, e, _dm_strides(dims), _dm_strides(out)


def _dm_gather_view(p):
    """(outer, D, inner, run starts, run lengths) of a Gather; runs join consecutive indices."""
    shape, a = p.data_shape, p.axis
    outer = int(np.prod(shape[:a], dtype=np.int64))
    inner = int(np.prod(shape[a + 1:], dtype=np.int64))
    starts, lens = [], []
    for i in p.indices:
        if starts and starts[-1] + lens[-1] == i:
            lens[-1] += 1
        else:
            starts.append(i)
            lens.append(1)
    return outer, shape[a], inner, starts, lens


def _dm_concat_parts(p, x, y):
    """Per non-empty input: (buf, y element offset, source type code, outer, in_inner, out_inner)."""
    axis, out_shape = p.axis, p.out_shape
    outer = int(np.prod(out_shape[:axis], dtype=np.int64))
    out_inner = int(np.prod(out_shape[axis:], dtype=np.int64))
    parts, offset = [], 0
    for buf in x:
        in_inner = int(np.prod(buf.shape[axis:], dtype=np.int64))
        if buf.size:
            code = 0 if buf.dtype == y.dtype else (buf.dtype.nbytes << 1) | (not buf.dtype.signed)
            parts.append((buf, offset, code, outer, in_inner, out_inner))
        offset += in_inner
    return parts


def _dm_reduce_view(p):
    """(kept[3], kept strides[3], reduced[3], reduced strides[3], inner) of a reduction, or None
    if more than 3 kept or 3 reduced groups of axes remain after merging."""
    strides = _dm_strides(p.in_shape)
    groups = []  # [size, stride, reduced]
    for k, d in enumerate(p.in_shape):
        if d == 1:
            continue
        reduced = k in p.axes
        if groups and groups[-1][2] == reduced:
            groups[-1][0] *= d
            groups[-1][1] = strides[k]
        else:
            groups.append([d, strides[k], reduced])
    inner = groups.pop()[0] if groups and not groups[-1][2] else 1
    kept = [g for g in groups if not g[2]]
    red = [g for g in groups if g[2]]
    if len(kept) > 3 or len(red) > 3:
        return None
    kept = [[1, 0, False]] * (3 - len(kept)) + kept
    red = [[1, 0, True]] * (3 - len(red)) + red
    return [g[0] for g in kept], [g[1] for g in kept], [g[0] for g in red], [g[1] for g in red], inner


def _dm_reduce_bound(node, graph) -> int:
    """Largest |sum + count/2|: count * max|x| + count."""
    count = max(node.params.count, 1)
    return count * max_abs(graph, node.inputs[0]) + count


def _dm_reduce_accepts(node, graph):
    if _dm_reduce_view(node.params) is None:
        return "more than 3 kept or reduced axis groups"
    return wide_reason("the sums", _dm_reduce_bound(node, graph), node, graph)


def _dm_reduce_types(node, graph):
    """TOUT (the output type) and TACC: int32 if count * max|x| + count fits, else int64."""
    return (("TOUT", graph.tensors[node.outputs[0]].dtype), ("TACC", accumulator_type(_dm_reduce_bound(node, graph))))


def _dm_divisor(node):
    """(divisor, shift): the mean's count (1 for a sum) and its log2, or -1 if not a power of 2."""
    n = node.params.count if node.op != "ReduceSum" else 1
    return n, (n.bit_length() - 1 if n & (n - 1) == 0 else -1)


def _dm_clip_bounds(node, y):
    """Clip/Relu bounds clamped into the output type (exact: the output type holds the input's)."""
    lo, hi = (0, None) if node.op == "Relu" else (node.params.lo, node.params.hi)
    t = y.dtype
    lo = t.min if lo is None else min(max(lo, t.min), t.max)
    hi = t.max if hi is None else min(max(hi, t.min), t.max)
    return _dm_cval(t, lo), _dm_cval(t, hi)


_MAXPOOL_CALL = _DM_IMPORTS + """\
${fn}(${x[0].ptr}, ${y[0].ptr}, ${p.batch * p.channels}, ${p.in_hw[0]}, ${p.in_hw[1]}, \
${p.kernel[0]}, ${p.kernel[1]}, ${p.out_hw[0]}, ${p.out_hw[1]}, ${p.stride[0]}, ${p.stride[1]}, \
${p.dilation[0]}, ${p.dilation[1]}, ${p.pads[0]}, ${p.pads[1]}, ${B._dm_cval(x[0].dtype, x[0].dtype.min)});"""

_PAD_CALL = _DM_IMPORTS + """\
% if y[0].size == 0:
/* empty output */
% else:
<% dims, b, e, ist, ob = B._dm_pad_view(p) %>\
{
    ${B._dm_array("uint32_t", "in_dims", dims)}
    ${B._dm_array("int32_t", "begin", b)}
    ${B._dm_array("int32_t", "end", e)}
    ${B._dm_array("uint32_t", "in_strides", ist)}
    ${B._dm_array("uint32_t", "out_block", ob)}
    ${fn}(${x[0].ptr}, ${y[0].ptr}, ${len(dims)}, in_dims, begin, end, in_strides, out_block, \
${B._dm_cval(y[0].dtype, p.value)});
}
% endif"""

_CONCAT_CALL = _DM_IMPORTS + """\
% for buf, offset, code, outer, in_inner, out_inner in B._dm_concat_parts(p, x, y[0]):
${fn}(${y[0].ptr} + ${offset}, ${buf.ptr}, ${code}, ${outer}, ${in_inner}, ${out_inner});
% endfor"""

_SLICE_CALL = _DM_IMPORTS + """\
% if y[0].size == 0:
/* empty output */
% else:
<% base, dims, strides = B._dm_slice_view(p) %>\
{
    ${B._dm_array("uint32_t", "dims", dims)}
    ${B._dm_array("int32_t", "strides", strides)}
    ${fn}(${x[0].ptr} + ${base}, ${y[0].ptr}, dims, strides);
}
% endif"""

_GATHER_CALL = _DM_IMPORTS + """\
% if y[0].size == 0:
/* empty output */
% else:
<% outer, d, inner, starts, lens = B._dm_gather_view(p) %>\
{
    ${B._dm_array("uint32_t", "start", starts)}
    ${B._dm_array("uint32_t", "len", lens)}
    ${fn}(${x[0].ptr}, ${y[0].ptr}, ${outer}, ${d}, ${inner}, ${len(starts)}, start, len);
}
% endif"""

_REDUCE_CALL = _DM_IMPORTS + """\
% if y[0].size == 0:
/* empty output */
% elif x[0].size == 0:
memset(${y[0].ptr}, 0, ${y[0].nbytes});
% else:
<% kept, ks, red, rs, inner = B._dm_reduce_view(p); div, shift = B._dm_divisor(node) %>\
{
    ${B._dm_array("uint32_t", "kept", kept)}
    ${B._dm_array("uint32_t", "ks", ks)}
    ${B._dm_array("uint32_t", "red", red)}
    ${B._dm_array("uint32_t", "rs", rs)}
    ${fn}(${x[0].ptr}, ${y[0].ptr}, kept, ks, red, rs, ${inner}, ${div}, ${shift});
}
% endif"""

_CLIP_CALL = _DM_IMPORTS + """<% lo, hi = B._dm_clip_bounds(node, y[0]) %>\
${fn}(${x[0].ptr}, ${y[0].ptr}, ${y[0].size}, ${lo}, ${hi});"""

_REDUCE_KERNEL = Kernel("Reduce", "reduce.inc", _REDUCE_CALL, ("TIN",), _dm_reduce_accepts,
                        extra_types=_dm_reduce_types)
_CLIP_KERNEL = Kernel("Clip", "clip.inc", _CLIP_CALL, ("T",), extra_types=_dm_out_type("TY"))

DATA_KERNELS: dict[str, tuple[Kernel, ...]] = {
    "MaxPool": (Kernel("MaxPool", "maxpool.inc", _MAXPOOL_CALL, ("T",)),),
    "Pad": (Kernel("Pad", "pad.inc", _PAD_CALL, ("T",), extra_types=_dm_out_type("TY")),),
    "Concat": (Kernel("Concat", "concat.inc", _CONCAT_CALL, extra_types=_dm_out_type("TY")),),
    "Slice": (Kernel("Slice", "slice.inc", _SLICE_CALL, ("T",), _dm_slice_accepts),),
    "Gather": (Kernel("Gather", "gather.inc", _GATHER_CALL, ("T",)),),
    "ReduceMean": (_REDUCE_KERNEL,),
    "ReduceSum": (_REDUCE_KERNEL,),
    "IntegerMean": (_REDUCE_KERNEL,),
    "Relu": (_CLIP_KERNEL,),
    "Clip": (_CLIP_KERNEL,),
}
