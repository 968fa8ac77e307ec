"""The Generic platform's binding table: op type -> kernels (first accepting one wins), each
with the Mako template of its call. Kernels are type-generic; see Kernel."""

from __future__ import annotations

import numpy as np

from Deeploy.ir.dtypes import INT32, INT64
from Deeploy.targets.generic.layout import broadcast_operands, transpose_operands
from Deeploy.targets.platform import Kernel

__all__ = ["GENERIC_BINDINGS"]

_IMPORTS = "<%! from Deeploy.targets.generic.layout import broadcast_operands, transpose_operands %>"


def _max_abs(graph, name: str) -> int:
    t = graph.tensors[name]
    if t.is_constant:
        return int(np.abs(t.value).max()) if t.size else 0
    return max(-t.dtype.min, t.dtype.max)


def _requant_accumulator(node, graph):
    """int32 accumulation when x * mul + add + rounding provably fits, else int64."""
    x, mul, add = node.inputs
    bound = _max_abs(graph, x) * _max_abs(graph, mul) + _max_abs(graph, add) + (1 << node.params.shift)
    return (("TACC", INT32 if bound < 2**31 else INT64),)


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


# ---- data movement and reductions ----
# Index math of MaxPool, Pad, Concat, Slice, Gather, the reductions and Relu/Clip is done here,
# at generation time; the call templates import this module as B to reach these helpers.
_DM_IMPORTS = "<%! import Deeploy.targets.generic.bindings as B %>\n"  # own line: % lines follow


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
    dims = list(p.out_shape)
    strides = [t * st for t, st in zip(p.steps, in_strides)]
    keep = [k for k, d in enumerate(dims) if d != 1]
    dims, strides = ([dims[k] for k in keep], [strides[k] for k in keep]) if keep else ([1], [1])
    k = len(dims) - 1
    while k > 0:
        if strides[k - 1] == strides[k] * dims[k]:
            dims[k - 1] *= dims[k]
            strides[k - 1] = strides[k]
            del dims[k], strides[k]
        k -= 1
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


def _dm_reduce_accepts(node, graph):
    return None if _dm_reduce_view(node.params) is not None else "more than 3 kept or reduced axis groups"


def _dm_reduce_types(node, graph):
    """TOUT (the output type) and TACC: int32 if count * max|x| + count fits, else int64."""
    t = graph.tensors[node.inputs[0]].dtype
    count = max(node.params.count, 1)
    bound = count * max(-t.min, t.max) + count
    return (("TOUT", graph.tensors[node.outputs[0]].dtype), ("TACC", INT32 if bound < 2**31 else INT64))


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
# ---- end data movement and reductions ----

# ---- integer nonlinearities and normalisations ----
# Integer softmaxes, normalisations, activations and divisions (specs/integer-ops.md). Each
# kernel's intermediate types (TACC, TSUM, TMUL) are the narrowest of int32 / int64 that provably
# hold every intermediate for the operands' value ranges (a constant's actual values, else its
# type's range); a node whose intermediates could exceed int64 is rejected.
from Deeploy.ir.dtypes import UINT32 as _UINT32  # noqa: E402

_NL_IMPORTS = ("<%! from Deeploy.targets.generic.bindings import _nl_rows\n"
               "from Deeploy.targets.generic.layout import broadcast_operands %>")


def _nl_range(graph, name: str) -> tuple[int, int]:
    t = graph.tensors[name]
    if t.is_constant:
        return (int(t.value.min()), int(t.value.max())) if t.size else (0, 0)
    return t.dtype.min, t.dtype.max


def _nl_abs(graph, name: str) -> int:
    lo, hi = _nl_range(graph, name)
    return max(-lo, hi)


def _nl_signed(bound: int, shift: int = 0):
    """INT32 or INT64 for values of magnitude <= bound that are right-shifted by ``shift``."""
    if bound < 2**31 and shift < 32:
        return INT32
    if bound < 2**63 and shift < 64:
        return INT64
    return None


def _nl_rows(x_shape, operand_shapes):
    """Row-wise layout of operands broadcast onto x (normalised over its last axis): the row
    dims ``[r0, r1, r2]`` and per operand ``(s0, s1, s2, cs)``: element strides of its row start
    over the row dims and its step (0 or 1) along the row; None if more than 3 row dims remain."""
    rank, width = len(x_shape), x_shape[-1]
    shapes = [[1] * (rank - len(s)) + list(s) for s in operand_shapes]
    laid = broadcast_operands(tuple(x_shape[:-1]), [s[:-1] for s in shapes], max_dims=3)
    if laid is None:
        return None
    dims, strides = laid
    return dims, [tuple(v * s[-1] for v in st) + (1 if s[-1] == width and width > 1 else 0,)
                  for s, st in zip(shapes, strides)]


def _nl_kernel(name, source, call, types, plan, scratch=None, shared=None):
    """A Kernel whose ``plan(node, graph)`` returns its extra type macros, or why it cannot run."""
    def accepts(node, graph):
        result = plan(node, graph)
        return result if isinstance(result, str) else None
    return Kernel(name, source, call, types, accepts, scratch, lambda n, g: plan(n, g), shared_scratch=shared)


def _typed(**bounds):
    """Extra types for named bounds ``macro=(bound, shift)``, or the reason one does not fit."""
    out = []
    for macro, (bound, shift) in bounds.items():
        t = _nl_signed(bound, shift)
        if t is None:
            return f"{macro} intermediates (|v| <= {bound}, shift {shift}) exceed int64"
        out.append((macro, t))
    return tuple(out)


def _isoftmax_exp_range(p, span: int):
    """(min e, max e, max |p + b|) over d = max - x in [0, span], exactly: per z block the
    quadratic a*(p + b)^2 + c is extreme at the ends of p's range or at its vertex p = -b."""
    a, b, c, L = p.coeff_a, p.coeff_b, p.coeff_c, p.log2
    emin = emax = None
    tmax = 0
    for z in range(32):
        dlo = z * L
        if dlo > span:
            break
        dhi = span if z == 31 else min((z + 1) * L - 1, span)
        plo, phi = z * L - dhi, z * L - dlo
        for q in {plo, phi} | ({-b} if plo <= -b <= phi else set()):
            e = (a * (q + b) ** 2 + c) >> z
            emin = e if emin is None else min(emin, e)
            emax = e if emax is None else max(emax, e)
            tmax = max(tmax, abs(q + b))
    return emin, emax, tmax


def _isoftmax_plan(node, graph):
    p, xt = node.params, graph.tensors[node.inputs[0]].dtype
    if xt.bits > 32:
        return f"input type {xt} is wider than 32 bits"
    if p.log2 >= 2**31:
        return f"log2 = {p.log2} does not fit 31 bits"
    emin, emax, tmax = _isoftmax_exp_range(p, xt.max - xt.min)
    if emin < 0:
        return "coeffA/coeffC make the exp approximation negative for some inputs"
    if tmax >= 2**31 or abs(p.coeff_a) * tmax * tmax + abs(p.coeff_c) >= 2**63:
        return "exp intermediates exceed int64"
    width, levels = p.shape[-1], p.n_levels - 1
    if emax * levels <= 2**31 and emax * width < 2**32:
        return (("TACC", _UINT32),)
    if emax * max(levels, width) < 2**63:
        return (("TACC", INT64),)
    return "row sums exceed int64"


def _isoftmax_buffer(node, graph, lut: bool) -> int:
    """Bytes of the e table (256 entries) or of one row of e values, with alignment slack (the
    kernel aligns it), rounded up to 8: isoftmax.inc computes the same size."""
    if (graph.tensors[node.inputs[0]].dtype.bits == 8) != lut:
        return 0
    n = _isoftmax_plan(node, graph)[0][1].nbytes
    entries = 256 if lut else node.params.shape[-1]
    return -(-(entries * n + n - 1) // 8) * 8


def _isoftmax_scratch(node, graph):
    """Per core: one row of e values (inputs wider than 8 bits)."""
    return _isoftmax_buffer(node, graph, lut=False)


def _isoftmax_shared(node, graph):
    """Shared by the cores: the e(d) table of 8-bit inputs, built by all of them."""
    return _isoftmax_buffer(node, graph, lut=True)


def _itamax_plan(node, graph):
    if graph.tensors[node.inputs[0]].dtype.bits > 32:
        return "input wider than 32 bits"
    return () if node.params.shape[-1] < 2**24 else "rows longer than 2^24"


def _itapartialmax_plan(node, graph):
    if graph.tensors[node.inputs[0]].dtype.bits > 16:
        return "input wider than 16 bits"
    return () if node.params.shape[-1] < 2**23 else "rows longer than 2^23"


def _layernorm_plan(node, graph):
    p, (x, w, b) = node.params, node.inputs
    if _nl_rows(p.shape, [graph.tensors[w].shape, graph.tensors[b].shape]) is None:
        return "weight/bias broadcast needs more than 3 row dimensions"
    lo, hi = _nl_range(graph, x)
    xm, span = max(-lo, hi), hi - lo
    return _typed(TSUM=(4 * p.width * xm * xm, 0),
                  TMUL=(span * _nl_abs(graph, w) + _nl_abs(graph, b) + span, p.shift))


def _rmsnorm_plan(node, graph):
    p, (x, w) = node.params, node.inputs
    if _nl_rows(p.shape, [graph.tensors[w].shape]) is None:
        return "weight broadcast needs more than 3 row dimensions"
    xm = _nl_abs(graph, x)
    return _typed(TSUM=(p.width * xm * xm, 0), TMUL=(xm * _nl_abs(graph, w) + xm, p.shift))


def _nonorm_plan(node, graph):
    p, (x, w, b) = node.params, node.inputs
    if broadcast_operands(p.shape, [graph.tensors[w].shape, graph.tensors[b].shape]) is None:
        return "weight/bias broadcast needs more than 4 dimensions after merging"
    inner = _nl_abs(graph, x) * _nl_abs(graph, w) + _nl_abs(graph, b)
    return _typed(TACC=(max(inner, inner * abs(p.mul), abs(p.mul)), p.shift))


def _igelu_plan(node, graph):
    p, xm = node.params, _nl_abs(graph, node.inputs[0])
    inner = p.b * p.b + 2 * abs(p.one) + 1
    return _typed(TACC=(max(xm, inner, xm * inner), 0))


def _ihardswish_plan(node, graph):
    p, xm = node.params, _nl_abs(graph, node.inputs[0])
    gate = p.six * abs(p.one_over_six)
    return _typed(TACC=(max(xm + abs(p.three), p.six, abs(p.one_over_six), gate, xm * gate), 0))


def _true_div_plan(node, graph):
    xm, k = _nl_abs(graph, node.inputs[0]), abs(node.params.coeff)
    return _typed(TACC=(max(xm, k, xm * k), 0))


def _int_div_plan(node, graph):
    p, (a, b) = node.params, node.inputs
    if broadcast_operands(p.shape, [graph.tensors[a].shape, graph.tensors[b].shape]) is None:
        return "broadcast pattern needs more than 4 dimensions after merging"
    scale = abs(p.delta * p.eta)
    num = _nl_abs(graph, a) * scale
    den = _nl_abs(graph, b) * abs(p.eta) + abs(p.eps)
    return _typed(TACC=(2 * num + 2 * den + scale + abs(p.eta) + abs(p.eps), 0))


_ISOFTMAX_CALL = """${fn}(${x[0].ptr}, ${y[0].ptr}, ${shared if x[0].dtype.bits == 8 else scratch}, \
${x[0].size // x[0].shape[-1]}, \
${x[0].shape[-1]}, ${p.coeff_a}, ${p.coeff_b}, ${p.coeff_c}, ${p.log2}, ${p.n_levels - 1}, \
${256 if x[0].dtype.bits == 8 else 0});"""

_ITAMAX_CALL = """${fn}(${x[0].ptr}, ${y[0].ptr}, ${x[0].size // x[0].shape[-1]}, ${x[0].shape[-1]}, \
${p.n_levels - 1});"""

_ITAPARTIALMAX_CALL = """${fn}(${x[0].ptr}, ${y[0].ptr}, ${x[0].size // x[0].shape[-1]}, \
${x[0].shape[-1]}, ${p.group_width}, ${p.n_levels // 2 - 1});"""

_ILAYERNORM_CALL = _NL_IMPORTS + """<% r, (ws, bs) = _nl_rows(x[0].shape, [x[1].shape, x[2].shape]) %>\
${fn}(${x[0].ptr}, ${x[1].ptr}, ${x[2].ptr}, ${y[0].ptr}, ${", ".join(map(str, r))}, ${x[0].shape[-1]}, \
${", ".join(map(str, ws))}, ${", ".join(map(str, bs))}, ${p.shift}, ${p.lo}, ${p.hi});"""

_IRMSNORM_CALL = _NL_IMPORTS + """<% r, (ws,) = _nl_rows(x[0].shape, [x[1].shape]) %>\
${fn}(${x[0].ptr}, ${x[1].ptr}, ${y[0].ptr}, ${", ".join(map(str, r))}, ${x[0].shape[-1]}, \
${", ".join(map(str, ws))}, ${p.shift}, ${p.lo}, ${p.hi});"""

_INONORM_CALL = _NL_IMPORTS + """<% dims, (sw, sb) = broadcast_operands(y[0].shape, [x[1].shape, x[2].shape]) %>\
${fn}(${x[0].ptr}, ${x[1].ptr}, ${x[2].ptr}, ${y[0].ptr}, ${", ".join(map(str, dims))}, \
${", ".join(map(str, sw))}, ${", ".join(map(str, sb))}, ${p.mul}, ${p.shift}, ${p.lo}, ${p.hi});"""

_IGELU_CALL = """${fn}(${x[0].ptr}, ${y[0].ptr}, ${y[0].size}, ${p.b}, ${p.one});"""

_IHARDSWISH_CALL = """${fn}(${x[0].ptr}, ${y[0].ptr}, ${y[0].size}, ${p.one_over_six}, ${p.three}, ${p.six});"""

_TRUE_DIV_CALL = """${fn}(${x[0].ptr}, ${y[0].ptr}, ${y[0].size}, ${p.coeff});"""

_INT_DIV_CALL = _NL_IMPORTS + """<% dims, (sa, sb) = broadcast_operands(y[0].shape, [x[0].shape, x[1].shape]) %>\
${fn}(${x[0].ptr}, ${x[1].ptr}, ${y[0].ptr}, ${", ".join(map(str, dims))}, ${", ".join(map(str, sa))}, \
${", ".join(map(str, sb))}, ${p.delta * p.eta}, ${p.eta}, ${p.eps});"""
# ---- end integer nonlinearities and normalisations ----

_COPY = Kernel("Copy", "copy.inc", _COPY_CALL)

GENERIC_BINDINGS: dict[str, tuple[Kernel, ...]] = {
    "Add": (Kernel("Add", "add.inc", _BINARY_CALL, ("TA", "TB", "TY"), _broadcastable),),
    "Sub": (Kernel("Sub", "sub.inc", _BINARY_CALL, ("TA", "TB", "TY"), _broadcastable),),
    "Mul": (Kernel("Mul", "mul.inc", _BINARY_CALL, ("TA", "TB", "TY"), _broadcastable),),
    "RequantShift": (Kernel("RequantShift", "requant_shift.inc", _REQUANT_CALL, ("TIN", "TM", "TA", "TOUT"),
                            extra_types=_requant_accumulator),),
    "Conv": (
        Kernel("DWConv2d", "conv2d_depthwise.inc", _DWCONV_CALL, ("TIN", "TW", "TB", "TOUT"),
               accepts=lambda n, g: None if n.params.depthwise else "not depthwise"),
        Kernel("Conv2d", "conv2d.inc", _CONV_CALL, ("TIN", "TW", "TB", "TOUT"), scratch=_conv_patch_bytes),
    ),
    "Gemm": (Kernel("Gemm", "gemm.inc", _GEMM_CALL, ("TA", "TB", "TC", "TY")),),
    "MatMul": (Kernel("Gemm", "gemm.inc", _GEMM_CALL, ("TA", "TB", "TC", "TY")),),
    "Transpose": (Kernel("Transpose", "transpose.inc", _TRANSPOSE_CALL, ("T",), _transposable),),
    "Reshape": (_COPY,),
    "Flatten": (_COPY,),
    "Squeeze": (_COPY,),
    "Unsqueeze": (_COPY,),
    "Identity": (_COPY,),
    # -- data movement and reductions --
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
    # -- end data movement and reductions --
    # -- integer nonlinearities and normalisations --
    "iSoftmax": (_nl_kernel("iSoftmax", "isoftmax.inc", _ISOFTMAX_CALL, ("TIN", "TOUT"), _isoftmax_plan,
                            _isoftmax_scratch, _isoftmax_shared),),
    "ITAMax": (_nl_kernel("ITAMax", "itamax.inc", _ITAMAX_CALL, ("TIN", "TOUT"), _itamax_plan),),
    "ITAPartialMax": (_nl_kernel("ITAPartialMax", "itapartialmax.inc", _ITAPARTIALMAX_CALL, ("TIN", "TOUT"),
                                 _itapartialmax_plan),),
    "iLayerNorm": (_nl_kernel("iLayerNorm", "ilayernorm.inc", _ILAYERNORM_CALL, ("TIN", "TW", "TB", "TOUT"),
                              _layernorm_plan),),
    "iRMSNorm": (_nl_kernel("iRMSNorm", "irmsnorm.inc", _IRMSNORM_CALL, ("TIN", "TW", "TOUT"), _rmsnorm_plan),),
    "iNoNorm": (_nl_kernel("iNoNorm", "inonorm.inc", _INONORM_CALL, ("TIN", "TW", "TB", "TOUT"), _nonorm_plan),),
    "iGELU": (_nl_kernel("iGELU", "igelu.inc", _IGELU_CALL, ("TIN", "TOUT"), _igelu_plan),),
    "iHardswish": (_nl_kernel("iHardswish", "ihardswish.inc", _IHARDSWISH_CALL, ("TIN", "TOUT"),
                              _ihardswish_plan),),
    "TrueIntegerDiv": (_nl_kernel("TrueIntegerDiv", "true_integer_div.inc", _TRUE_DIV_CALL, ("TIN", "TOUT"),
                                  _true_div_plan),),
    "IntegerDiv": (_nl_kernel("IntegerDiv", "integer_div.inc", _INT_DIV_CALL, ("TA", "TB", "TY"),
                              _int_div_plan),),
    # -- end integer nonlinearities and normalisations --
}
