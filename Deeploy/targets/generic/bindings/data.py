"""Generic kernels of data movement and reductions: MaxPool, Pad, Concat, Slice, Gather,
ReduceMean/ReduceSum/IntegerMean, ArgMax/ArgMin, Relu/Clip, integer Cast, Expand, Split, Where, Resize, Shape. Index math is done at generation time; the call
templates import this module as B to reach the helpers."""

from __future__ import annotations

import numpy as np

from Deeploy.codegen.c_text import c_float
from Deeploy.codegen.c_values import CArray, c_int
from Deeploy.ir.dtypes import BFLOAT16, FLOAT32
from Deeploy.targets.generic.bindings.strides import broadcast_operands, contiguous_strides, merge_strided_dims
from Deeploy.platform import Kernel
from Deeploy.signature import Signature, param
from Deeploy.ops.bounds import accumulator_type, max_abs, wide_reason

__all__ = ["DATA_KERNELS"]

# Index math of MaxPool, Pad, Concat, Slice, Gather, the reductions and Relu/Clip is done here,
# at generation time; the call templates import this module as B to reach these helpers.
_DM_IMPORTS = "<%! import Deeploy.targets.generic.bindings.data as B %>\n"  # own line: % lines follow


def _dm_cval(dtype, v: int | float) -> str:
    if dtype.is_float:
        return c_float(v)
    return f"({dtype.ctype}){c_int(v)}"


def _dm_array(ctype: str, name: str, values) -> CArray:
    return CArray(ctype, name, tuple(int(v) for v in values))


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


def _dm_expand_view(x, y):
    """(0, dims[6], strides[6]) of x broadcast onto y as a strided view (stride 0 on broadcast dims), or
    None if more than 6 dims remain."""
    view = broadcast_operands(y.shape, [x.shape], max_dims=6)
    return None if view is None else (0, view[0], [int(s) for s in view[1][0]])


def _dm_split_views(p, x, y):
    """Per output of a Split: (output, first element offset in x, dims[6], strides[6])."""
    strides, views, start = contiguous_strides(x.shape), [], 0
    for out in y:
        dims, st = merge_strided_dims(list(out.shape), list(strides))
        views.append((out, start * strides[p.axis], [1] * (6 - len(dims)) + dims, [0] * (6 - len(dims)) + st))
        start += out.shape[p.axis]
    return views


def _dm_resize_tables(p, x):
    """Resize's per-axis tables, one axis after another: output dims, the input element offsets read
    (lo, hi), their weights, and the interpolated axes (linear)."""
    strides = contiguous_strides(x.shape)
    lo = [i * s for t, s in zip(p.taps, strides) for i in t.lo]
    hi = [i * s for t, s in zip(p.taps, strides) for i in t.hi]
    w_lo = [w for t in p.taps for w in t.w_lo]
    w_hi = [w for t in p.taps for w in t.w_hi]
    return list(p.out_shape), lo, hi, w_lo, w_hi, list(p.resized)


def _dm_float_array(name: str, values) -> str:
    return f"static const float {name}[{max(len(values), 1)}] = {{{', '.join(c_float(v) for v in values) or '0'}}};"


def _dm_slice_accepts(node, graph):
    return None if _dm_slice_view(node.params) is not None else "strided view needs more than 6 dims"


def _dm_pad_view(p):
    """Pad as (in_dims, begin, end, in_strides, out_block), axes without pads merged into the
    axis before them (in the other modes than constant, only into one without pads too)."""
    dims, b, e = list(p.in_shape) or [1], list(p.begin) or [0], list(p.end) or [0]
    k = len(dims) - 1
    while k > 0:
        if b[k] == 0 and e[k] == 0 and (p.mode == "constant" or b[k - 1] == e[k - 1] == 0):
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


_X, _Y = "${x[0].ptr}", "${y[0].ptr}"
_EMPTY = """% if y[0].size == 0:
/* empty output */
% else:
"""

def _with_arrays(view: str, *arrays: tuple[str, str, str]) -> str:
    """The call (unless the output is empty) inside a block declaring argument arrays (C type,
    C name, the Mako expression of the values that the statement ``view`` computes)."""
    decls = "".join(f'    ${{B._dm_array("{ctype}", "{name}", {values})}}\n' for ctype, name, values in arrays)
    return _EMPTY + f"<% {view} %>\\\n{{\n{decls}    {{call}}\n}}\n% endif"


_MAXPOOL_CALL = Signature(
    "Max pooling, NCHW, as 2-D (a 1-D pooling has H = KH = 1): y = max over the window's taps inside the "
    "input (padding never wins), and optionally the flat index into x of each window's first maximum.",
    (param("const T *restrict x", _X, "input"), param("T *restrict y", _Y, "output"),
     param("int64_t *restrict indices", '${y[1].ptr if p.indices else "NULL"}', "Indices output, or NULL"),
     param("uint32_t C", "${p.batch * p.channels}", "batch * channels"),
     param("uint32_t H", "${p.in_hw[0]}"), param("uint32_t W", "${p.in_hw[1]}", "input size"),
     param("uint32_t KH", "${p.kernel[0]}"), param("uint32_t KW", "${p.kernel[1]}", "window size"),
     param("uint32_t OH", "${p.out_hw[0]}"), param("uint32_t OW", "${p.out_hw[1]}", "output size"),
     param("uint32_t SH", "${p.stride[0]}"), param("uint32_t SW", "${p.stride[1]}", "strides"),
     param("uint32_t DH", "${p.dilation[0]}"), param("uint32_t DW", "${p.dilation[1]}", "dilations"),
     param("uint32_t PT", "${p.pads[0]}"), param("uint32_t PL", "${p.pads[1]}", "top and left padding"),
     param("T lowest", "${B._dm_cval(x[0].dtype, x[0].dtype.min)}", "the minimum of T"),
     param("uint32_t storage_order", "${p.storage_order}", "1: indices count spatial positions column-major")),
    setup=_DM_IMPORTS)

_PAD_VIEW = (param("uint32_t rank", "${len(dims)}", "dims of the merged view"),
             param("const uint32_t *in_dims", "in_dims", "x's dims"),
             param("const int32_t *begin", "begin"), param("const int32_t *end", "end", "pads per dim"),
             param("const uint32_t *in_strides", "in_strides", "x's element strides"),
             param("const uint32_t *out_block", "out_block", "y's element strides"))
_PAD_AROUND = _with_arrays("dims, b, e, ist, ob = B._dm_pad_view(p)", ("uint32_t", "in_dims", "dims"),
                           ("int32_t", "begin", "b"), ("int32_t", "end", "e"), ("uint32_t", "in_strides", "ist"),
                           ("uint32_t", "out_block", "ob"))
_PAD_CALL = Signature(
    "Constant Pad (negative pads crop) of x viewed as `rank` dims, axes without pads merged into the axis "
    "before them: begin[k] (end[k]) fill elements before (after) axis k, or that many rows dropped if "
    "negative.",
    (param("const T *restrict x", _X, "input"), param("TY *restrict y", _Y, "output"), *_PAD_VIEW,
     param("TY value", "${B._dm_cval(y[0].dtype, p.value)}", "fill value")),
    setup=_DM_IMPORTS, around=_PAD_AROUND, types={"TY": "the output's type (holds T and the fill value)"})
_PAD_MODE_CALL = Signature(
    "Pad in mode reflect, edge or wrap of x viewed as `rank` dims (neighbouring axes without pads merged): "
    "negative begin[k] (end[k]) drop input rows, positive ones add rows read from the remaining input.",
    (param("const T *restrict x", _X, "input"), param("T *restrict y", _Y, "output"), *_PAD_VIEW,
     param("uint32_t mode", '${("reflect", "edge", "wrap").index(p.mode) + 1}', "1 reflect, 2 edge, 3 wrap")),
    setup=_DM_IMPORTS, around=_PAD_AROUND)

def _constant_pad(node, graph):
    return None if node.params.mode == "constant" else f"mode '{node.params.mode}'"


_CONCAT_CALL = Signature(
    "One input of a Concat (one call per non-empty input): x viewed as [outer][in_inner] is written into "
    "y viewed as [outer][out_inner].",
    (param("TY *restrict y", "${y[0].ptr} + ${offset}", "the output at this input's column offset"),
     param("const void *restrict x", "${buf.ptr}", "the input"),
     param("uint32_t src", "${code}", "x's element type: 0 when it is TY, else (bytes << 1) | unsigned"),
     param("uint32_t outer", "${outer}"), param("uint32_t in_inner", "${in_inner}"),
     param("uint32_t out_inner", "${out_inner}", "x is [outer][in_inner], y [outer][out_inner]")),
    setup=_DM_IMPORTS, around="""\
% for buf, offset, code, outer, in_inner, out_inner in B._dm_concat_parts(p, x, y[0]):
{call}
% endfor""", types={"TY": "the output's type"})

_SLICE_CALL = Signature(
    "y = strided view of x (Slice): output element (i0..i5) reads x[sum ik * strides[k]]; dims padded to "
    "6 with 1.",
    (param("const T *restrict x", "${x[0].ptr} + ${base}", "the first element read"),
     param("T *restrict y", _Y, "output"), param("const uint32_t dims[6]", "dims", "output dims"),
     param("const int32_t strides[6]", "strides", "element strides of x (negative for negative steps)")),
    setup=_DM_IMPORTS, around=_with_arrays("base, dims, strides = B._dm_slice_view(p)",
                                           ("uint32_t", "dims", "dims"), ("int32_t", "strides", "strides")))

_EXPAND_CALL = Signature(
    "y = x broadcast onto y's shape (Expand), as the strided view of slice.inc with stride 0 on broadcast dims.",
    _SLICE_CALL.params, setup=_DM_IMPORTS,
    around=_with_arrays("base, dims, strides = B._dm_expand_view(x[0], y[0])",
                        ("uint32_t", "dims", "dims"), ("int32_t", "strides", "strides")))

_SPLIT_CALL = Signature(
    "One output of a Split (one call per output), as the strided view of slice.inc starting at the output's "
    "first element.",
    (param("const T *restrict x", "${x[0].ptr} + ${base}", "the first element read"),
     param("T *restrict y", "${out.ptr}", "this output"), param("const uint32_t dims[6]", "dims", "output dims"),
     param("const int32_t strides[6]", "strides", "element strides of x")),
    setup=_DM_IMPORTS, around="""\
% for out, base, dims, strides in B._dm_split_views(p, x[0], y):
% if out.size:
{
    ${B._dm_array("uint32_t", "dims", dims)}
    ${B._dm_array("int32_t", "strides", strides)}
    {call}
}
% endif
% endfor""")

_WHERE_CALL = Signature(
    "y = c ? a : b elementwise (Where), c, a and b broadcast onto y over up to 4 merged dims.",
    (param("const TC *restrict c", _X, "condition"), param("const TA *restrict a", "${x[1].ptr}", "taken where c"),
     param("const TB *restrict b", "${x[2].ptr}", "taken elsewhere"), param("TY *restrict y", _Y, "output"),
     param("const uint32_t dims[4]", "dims", "output dims after merging, outermost first (1-padded)"),
     param("const uint32_t sc[4]", "sc"), param("const uint32_t sa[4]", "sa"),
     param("const uint32_t sb[4]", "sb", "element strides of c, a and b (0 on broadcast dims)")),
    setup=_DM_IMPORTS,
    around=_with_arrays("dims, (sc, sa, sb) = B.broadcast_operands(y[0].shape, [t.shape for t in x])",
                        ("uint32_t", "dims", "dims"), ("uint32_t", "sc", "sc"), ("uint32_t", "sa", "sa"),
                        ("uint32_t", "sb", "sb")), types={"TY": "the output's type"})

_RESIZE_AROUND = _EMPTY + """<% dims, lo, hi, w_lo, w_hi, lin = B._dm_resize_tables(p, x[0]) %>\\
{
    ${B._dm_array("uint32_t", "dims", dims)}
    ${B._dm_array("uint32_t", "lo", lo)}
% if p.linear:
    ${B._dm_array("uint32_t", "hi", hi)}
    ${B._dm_float_array("w_lo", w_lo)}
    ${B._dm_float_array("w_hi", w_hi)}
    ${B._dm_array("uint32_t", "lin", lin or [0])}
% endif
    {call}
}
% endif"""
_RESIZE_PARAMS = (param("const T *restrict x", _X, "input"), param("T *restrict y", _Y, "output"),
                  param("uint32_t rank", "${len(dims)}", "axes (at most 8)"),
                  param("const uint32_t *dims", "dims", "output dims"),
                  param("const uint32_t *lo", "lo", "per axis and output index: the input element offset read"))
_RESIZE_CALL = Signature("Nearest Resize: per-axis tables of the input element offsets each output index reads.",
                         _RESIZE_PARAMS, setup=_DM_IMPORTS, around=_RESIZE_AROUND)
_FRESIZE_CALL = Signature(
    "Linear Resize of float data: per-axis tables of the two input element offsets and weights of each output "
    "index; the interpolated axes' corners summed.",
    _RESIZE_PARAMS + (param("const uint32_t *hi", "hi", "the second offset (linear)"),
                      param("const float *w_lo", "w_lo"), param("const float *w_hi", "w_hi", "their weights"),
                      param("uint32_t m", "${len(lin)}"), param("const uint32_t *lin", "lin", "the interpolated axes")),
    setup=_DM_IMPORTS, around=_RESIZE_AROUND)

_SHAPE_CALL = Signature(
    "Shape (a node when its output is a graph output; else it folds to a constant): y = the input's dims.",
    (param("int64_t *restrict y", _Y, "output"), param("const int64_t *dims", "dims", "the dims"),
     param("uint32_t n", "${y[0].size}", "how many")),
    setup=_DM_IMPORTS, around=_with_arrays("", ("int64_t", "dims", "p.dims")))

_GATHER_CALL = Signature(
    "Gather of constant indices along one axis, x viewed as [outer][D][inner]; the indices come as runs "
    "of consecutive values (start[r], len[r]).",
    (param("const T *restrict x", _X, "input"), param("T *restrict y", _Y, "output"),
     param("uint32_t outer", "${outer}"), param("uint32_t D", "${d}"),
     param("uint32_t inner", "${inner}", "x viewed as [outer][D][inner]"),
     param("uint32_t runs", "${len(starts)}", "index runs"), param("const uint32_t *start", "start"),
     param("const uint32_t *len", "len", "each run's first index and length")),
    setup=_DM_IMPORTS, around=_with_arrays("outer, d, inner, starts, lens = B._dm_gather_view(p)",
                                           ("uint32_t", "start", "starts"), ("uint32_t", "len", "lens")))

_REDUCE_CALL = Signature(
    "ReduceSum / rounded integer mean (ReduceMean, IntegerMean): y = floor((sum + divisor/2) / divisor) "
    "over the reduced axes; an empty input gives zeros without a call.",
    (param("const TIN *restrict x", _X, "input"), param("TOUT *restrict y", _Y, "output"),
     param("const uint32_t kept[3]", "kept", "kept dims"), param("const uint32_t ks[3]", "ks",
                                                                  "their element strides"),
     param("const uint32_t red[3]", "red", "reduced dims"), param("const uint32_t rs[3]", "rs",
                                                                   "their element strides"),
     param("uint32_t inner", "${inner}", "contiguous kept run (1 when the last axis is reduced)"),
     param("uint32_t divisor", "${div}", "the mean's count, 1 for a sum"),
     param("int32_t shift", "${shift}", "log2(divisor), or -1 if not a power of 2")),
    setup=_DM_IMPORTS, around="""\
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
    {call}
}
% endif""", types={"TOUT": "the output's type",
                   "TACC": "accumulator: int32_t if count * max|x| + count fits, else int64_t"})

_ARG_CALL = Signature(
    "ArgMax / ArgMin: y = the index of the first (last: the last) extremum of x along one axis, as int64.",
    (param("const TIN *restrict x", _X, "input"), param("TOUT *restrict y", _Y, "output"),
     param("const uint32_t kept[3]", "kept", "kept dims"), param("const uint32_t ks[3]", "ks",
                                                                  "their element strides"),
     param("const uint32_t red[3]", "red", "the reduced axis (size-1 dims dropped)"),
     param("const uint32_t rs[3]", "rs", "its element strides"),
     param("uint32_t inner", "${inner}", "contiguous kept run (1 when the last axis is reduced)"),
     param("uint32_t last", "${int(p.select_last)}", "1: the last of equal extrema")),
    setup=_DM_IMPORTS, around="""\
% if y[0].size == 0:
/* empty output */
% else:
<% kept, ks, red, rs, inner = B._dm_reduce_view(p) %>\
{
    ${B._dm_array("uint32_t", "kept", kept)}
    ${B._dm_array("uint32_t", "ks", ks)}
    ${B._dm_array("uint32_t", "red", red)}
    ${B._dm_array("uint32_t", "rs", rs)}
    {call}
}
% endif""", types={"TOUT": "int64_t"})

_CLIP_CALL = Signature(
    "y = min(max(x, lo), hi) elementwise (Clip; Relu is lo = 0), computed in TY, which holds every value "
    "of T.",
    (param("const T *restrict x", _X, "input"), param("TY *restrict y", _Y, "output"),
     param("uint32_t n", "${y[0].size}", "elements"),
     param("TY lo", "${lo}"), param("TY hi", "${hi}", "bounds, clamped into TY's range")),
    setup=_DM_IMPORTS + "<% lo, hi = B._dm_clip_bounds(node, y[0]) %>", types={"TY": "the output's type"})

_CAST_CALL = Signature(
    "Cast between integer types: y = x converted, keeping the target's low bits (ONNX wraps around).",
    (param("const T *restrict x", _X, "input"), param("TY *restrict y", _Y, "output"),
     param("uint32_t n", "${y[0].size}", "elements")), types={"TY": "the output's type"})

def _dm_expand_accepts(node, graph):
    x, y = (graph.tensors[n] for n in (node.inputs[0], node.outputs[0]))
    return None if _dm_expand_view(x, y) is not None else "broadcast view needs more than 6 dims"


def _dm_split_accepts(node, graph):
    x = graph.tensors[node.inputs[0]]
    outs = [graph.tensors[o] for o in node.outputs]
    return None if all(len(d) == 6 for _, _, d, _ in _dm_split_views(node.params, x, outs)) \
        else "an output's strided view needs more than 6 dims"


def _dm_resize_accepts(linear: bool):
    def accepts(node, graph):
        p = node.params
        if p.linear != linear:
            return "linear mode" if p.linear else "nearest mode"
        return None if len(p.in_shape) <= 8 else "more than 8 axes"
    return accepts


def _dm_where_accepts(node, graph):
    shapes = [graph.tensors[i].shape for i in node.inputs]
    if broadcast_operands(node.params.shape, shapes) is None:
        return "broadcast pattern needs more than 4 dimensions after merging"
    return None


_REDUCE_KERNEL = Kernel("Reduce", "reduce.inc", _REDUCE_CALL, ("TIN",), _dm_reduce_accepts,
                        extra_types=_dm_reduce_types)
_CLIP_KERNEL = Kernel("Clip", "clip.inc", _CLIP_CALL, ("T",), extra_types=_dm_out_type("TY"))


def _dm_extremum_accepts(node, graph):
    return None if _dm_reduce_view(node.params) is not None else "more than 3 kept or reduced axis groups"

_COPIED = (FLOAT32, BFLOAT16)   # kernels that only move elements take any float type

DATA_KERNELS: dict[str, tuple[Kernel, ...]] = {
    "MaxPool": (Kernel("MaxPool", "maxpool.inc", _MAXPOOL_CALL, ("T",), floats=(FLOAT32,)),),
    "Pad": (Kernel("Pad", "pad.inc", _PAD_CALL, ("T",), _constant_pad, extra_types=_dm_out_type("TY"),
                   floats=(FLOAT32,)),
            Kernel("PadMode", "pad_mode.inc", _PAD_MODE_CALL, ("T",), floats=(FLOAT32,))),
    "Concat": (Kernel("Concat", "concat.inc", _CONCAT_CALL, extra_types=_dm_out_type("TY"), floats=(FLOAT32,)),),
    "Slice": (Kernel("Slice", "slice.inc", _SLICE_CALL, ("T",), _dm_slice_accepts, floats=_COPIED),),
    "Gather": (Kernel("Gather", "gather.inc", _GATHER_CALL, ("T",), floats=_COPIED),),
    "Expand": (Kernel("Expand", "slice.inc", _EXPAND_CALL, ("T",), _dm_expand_accepts, floats=_COPIED),),
    "Split": (Kernel("Split", "slice.inc", _SPLIT_CALL, ("T",), _dm_split_accepts, floats=_COPIED),),
    "Resize": (Kernel("FResize", "fresize.inc", _FRESIZE_CALL, ("T",), _dm_resize_accepts(True), floats=_COPIED),
               Kernel("Resize", "resize.inc", _RESIZE_CALL, ("T",), _dm_resize_accepts(False), floats=_COPIED)),
    "Shape": (Kernel("Shape", "shape.inc", _SHAPE_CALL, floats=_COPIED),),
    "Where": (Kernel("Where", "where.inc", _WHERE_CALL, ("TC", "TA", "TB"), _dm_where_accepts,
                     extra_types=_dm_out_type("TY"), floats=_COPIED),),
    "ReduceMean": (_REDUCE_KERNEL,),
    "ReduceSum": (_REDUCE_KERNEL,),
    "IntegerMean": (_REDUCE_KERNEL,),
    "Cast": (Kernel("Cast", "cast.inc", _CAST_CALL, ("T",), extra_types=_dm_out_type("TY")),),
    "ReduceMax": (Kernel("MaxReduce", "maxreduce.inc", _REDUCE_CALL, ("TIN",), _dm_extremum_accepts,
                         extra_types=_dm_out_type("TOUT")),),
    "ReduceMin": (Kernel("MinReduce", "minreduce.inc", _REDUCE_CALL, ("TIN",), _dm_extremum_accepts,
                         extra_types=_dm_out_type("TOUT")),),
    "ArgMax": (Kernel("ArgMax", "argmax.inc", _ARG_CALL, ("TIN",), _dm_extremum_accepts,
                      extra_types=_dm_out_type("TOUT"), floats=(FLOAT32,)),),
    "ArgMin": (Kernel("ArgMin", "argmin.inc", _ARG_CALL, ("TIN",), _dm_extremum_accepts,
                      extra_types=_dm_out_type("TOUT"), floats=(FLOAT32,)),),
    "Relu": (_CLIP_KERNEL,),
    "Clip": (_CLIP_KERNEL,),
}
