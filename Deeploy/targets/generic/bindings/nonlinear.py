"""Generic kernels of the integer nonlinearities and normalisations (specs/integer-ops.md):
softmaxes, norms, activations and divisions."""

from __future__ import annotations

from Deeploy.ir.dtypes import INT32, INT64, UINT16, UINT32
from Deeploy.platform import Kernel
from Deeploy.signature import FILL, Signature, param, params
from Deeploy.targets.generic.bindings.strides import broadcast_operands
from Deeploy.ops.bounds import max_abs, value_range

__all__ = ["NONLINEAR_KERNELS"]

# Integer softmaxes, normalisations, activations and divisions (specs/integer-ops.md). Each
# kernel's intermediate types (TACC, TSUM, TMUL) are the narrowest of int32 / int64 that provably
# hold every intermediate for the operands' value ranges (a constant's actual values, else its
# type's range); a node whose intermediates could exceed int64 is rejected.

_NL_IMPORTS = ("<%! from Deeploy.targets.generic.bindings.nonlinear import _nl_rows\n"
               "from Deeploy.targets.generic.bindings.strides import broadcast_operands %>")


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


def _nl_kernel(name, source, call, types, plan, scratch=None, shared=None, scratch_optional=False):
    """A Kernel whose ``plan(node, graph)`` returns its extra type macros, or why it cannot run."""
    def accepts(node, graph):
        result = plan(node, graph)
        return result if isinstance(result, str) else None
    return Kernel(name, source, call, types, accepts, scratch, lambda n, g: plan(n, g), shared_scratch=shared,
                  scratch_optional=scratch_optional)


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
    return _isoftmax_tacc(node.params, graph.tensors[node.inputs[0]].dtype)


def _isoftmax_tacc(p, xt):
    """TACC (row sums, e * levels_m1) and TE (the e(d) table's entries: uint16_t when every e
    fits) of an iSoftmax with params ``p`` on inputs of type ``xt``, or why it cannot run."""
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
    if emax * levels < 2**31 and emax * width < 2**32:
        tacc = UINT32
    elif emax * max(levels, width) < 2**63:
        tacc = INT64
    else:
        return "row sums exceed int64"
    return (("TACC", tacc), ("TE", UINT16 if emax < 2**16 else tacc))


# The e(d) table of 8-bit inputs costs 256 exp evaluations (shared by the cores); without it
# every element's e is computed twice (row sum, output). The table pays from 128 elements.
ISOFTMAX_TABLE_MIN_ELEMENTS = 128


def isoftmax_uses_table(bits: int, elements: int) -> bool:
    """Whether an iSoftmax call over ``elements`` inputs of ``bits`` bits tabulates e(d)."""
    return bits == 8 and elements >= ISOFTMAX_TABLE_MIN_ELEMENTS


def _isoftmax_table_bytes(node, graph):
    """Shared by the cores: the e(d) table (256 TE entries, plus alignment slack: the kernel
    aligns it), rounded up to 8, when this call uses one (isoftmax.inc); else nothing. The call
    is the whole layer, or one tile of it when tiled: small tiles need no scratch. Without
    scratch (a NULL ``shared``) the kernel computes every e directly, so the table is optional."""
    x = graph.tensors[node.inputs[0]]
    if not isoftmax_uses_table(x.dtype.bits, x.size):
        return 0
    n = _isoftmax_plan(node, graph)[1][1].nbytes
    return -(-(256 * n + n - 1) // 8) * 8


def _isoftmax_rq_plan(node, graph):
    p, (x, mul, add) = node.params, node.inputs
    tacc = _isoftmax_tacc(p.base, graph.tensors[x].dtype)
    if isinstance(tacc, str):
        return tacc
    if _nl_rows(p.base.shape, [graph.tensors[mul].shape, graph.tensors[add].shape]) is None:
        return "mul/add broadcast needs more than 3 row dimensions"
    bound = (p.base.n_levels - 1) * max_abs(graph, mul) + max_abs(graph, add) + (1 << p.rq.shift)
    trq = _typed(TRQ=(bound, p.rq.shift))
    return trq if isinstance(trq, str) else tacc + trq


def isoftmax_rq_table(elements: int, mul_size: int, add_size: int) -> bool:
    """Whether a requantised iSoftmax call tabulates its outputs (scalar mul and add, a call
    large enough to pay for the table)."""
    return mul_size == 1 and add_size == 1 and elements >= ISOFTMAX_TABLE_MIN_ELEMENTS


def _isoftmax_rq_bytes(node, graph):
    """Shared: the e(d) table as for iSoftmax, then the outputs of every softmax value
    (isoftmax_rq.inc); nothing when the call uses neither. Optional as for iSoftmax."""
    x, mul, add = (graph.tensors[i] for i in node.inputs)
    table = isoftmax_uses_table(x.dtype.bits, x.size)
    outputs = isoftmax_rq_table(x.size, mul.size, add.size)
    if not (table or outputs):
        return 0
    n = _isoftmax_rq_plan(node, graph)[1][1].nbytes
    levels = node.params.base.n_levels * graph.tensors[node.outputs[0]].dtype.nbytes
    return -(-((256 * n if table else 0) + n - 1 + (levels if outputs else 0)) // 8) * 8


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
    lo, hi = value_range(graph, x)
    xm, span = max(-lo, hi), hi - lo
    return _typed(TSUM=(4 * p.width * xm * xm, 0),
                  TMUL=(span * max_abs(graph, w) + max_abs(graph, b) + span, p.shift))


def _rmsnorm_plan(node, graph):
    p, (x, w) = node.params, node.inputs
    if _nl_rows(p.shape, [graph.tensors[w].shape]) is None:
        return "weight broadcast needs more than 3 row dimensions"
    xm = max_abs(graph, x)
    return _typed(TSUM=(p.width * xm * xm, 0), TMUL=(xm * max_abs(graph, w) + xm + abs(p.offset), p.shift))


def _nonorm_plan(node, graph):
    p, (x, w, b) = node.params, node.inputs
    if broadcast_operands(p.shape, [graph.tensors[w].shape, graph.tensors[b].shape]) is None:
        return "weight/bias broadcast needs more than 4 dimensions after merging"
    inner = max_abs(graph, x) * max_abs(graph, w) + max_abs(graph, b)
    return _typed(TACC=(max(inner, inner * abs(p.mul), abs(p.mul)), p.shift))


def igelu_bound(p, xm: int) -> int:
    """Largest |intermediate| (output included) of iGELU with params ``p`` on |x| <= xm."""
    inner = p.b * p.b + 2 * abs(p.one) + 1
    return max(xm, inner, xm * inner)


def ihardswish_bound(p, xm: int) -> int:
    """Largest |intermediate| (output included) of iHardswish with params ``p`` on |x| <= xm."""
    gate = p.six * abs(p.one_over_six)
    return max(xm + abs(p.three), p.six, abs(p.one_over_six), gate, xm * gate)


def _igelu_plan(node, graph):
    return _typed(TACC=(igelu_bound(node.params, max_abs(graph, node.inputs[0])), 0))


def _ihardswish_plan(node, graph):
    return _typed(TACC=(ihardswish_bound(node.params, max_abs(graph, node.inputs[0])), 0))


def _true_div_plan(node, graph):
    xm, k = max_abs(graph, node.inputs[0]), abs(node.params.coeff)
    return _typed(TACC=(max(xm, k, xm * k), 0))


def _int_div_plan(node, graph):
    p, (a, b) = node.params, node.inputs
    if broadcast_operands(p.shape, [graph.tensors[a].shape, graph.tensors[b].shape]) is None:
        return "broadcast pattern needs more than 4 dimensions after merging"
    scale = abs(p.delta * p.eta)
    num = max_abs(graph, a) * scale
    den = max_abs(graph, b) * abs(p.eta) + abs(p.eps)
    return _typed(TACC=(2 * num + 2 * den + scale + abs(p.eta) + abs(p.eps), 0))


_X, _Y = "${x[0].ptr}", "${y[0].ptr}"
_ROWS = (param("uint32_t rows", "${x[0].size // x[0].shape[-1]}", "rows (all but the last axis)"),
         param("uint32_t width", "${x[0].shape[-1]}", "row length (the last axis)"))
_UNARY = (param("const TIN *restrict x", _X, "input"), param("TOUT *restrict y", _Y, "output"))
_ELEMENTS = param("uint32_t size", "${y[0].size}", "elements")
_TACC = {"TACC": "int32_t or int64_t: wide enough for every intermediate (checked by the binding)"}
_NORM_OUT = (param("uint32_t shift", "${p.shift}"), param("int32_t lo", "${p.lo}"),
             param("int32_t hi", "${p.hi}", "output shift and clip bounds"))

_ISOFTMAX_CALL = Signature(
    "iSoftmax over rows of `width` (I-BERT second-order exp, specs/integer-ops.md); with lut_size = 256 "
    "the e(d) table is built in the shared scratch, without (lut_size = 0, scratch NULL) each e is "
    "computed directly: the same result.",
    (_UNARY, param("void *scratch", '${shared if table else "NULL"}', "the shared e(d) table, or NULL"), FILL, _ROWS,
     param("int64_t a", "${p.coeff_a}"), param("int64_t b", "${p.coeff_b}"),
     param("int64_t c", "${p.coeff_c}", "exp polynomial coefficients"),
     param("uint32_t log2", "${p.log2}", "the exp's log2 constant"),
     param("uint32_t levels_m1", "${p.n_levels - 1}", "output levels - 1"),
     param("uint32_t lut_size", "${256 if table else 0}", "256 with a table, else 0")),
    setup="""<%! from Deeploy.targets.generic.bindings.nonlinear import isoftmax_uses_table %>\
<% table = shared != "NULL" and isoftmax_uses_table(x[0].dtype.bits, x[0].size) %>""",
    types={"TACC": "uint32_t when e * levels_m1 < 2^31 and the row sums fit 32 bits, else int64_t",
           "TE": "the e(d) table's entries: uint16_t when every e fits, else TACC"})

_ITAMAX_CALL = Signature(
    "ITAMax: base-2 integer softmax over rows of `width` (specs/integer-ops.md).",
    (_UNARY, _ROWS, param("uint32_t levels_m1", "${p.n_levels - 1}", "output levels - 1")))

_ITAPARTIALMAX_CALL = Signature(
    "ITAPartialMax: ITAMax streamed over column groups of `group` (specs/integer-ops.md).",
    (_UNARY, _ROWS, param("uint32_t group", "${p.group_width}", "column group width"),
     param("uint32_t levels_half_m1", "${p.n_levels // 2 - 1}", "output levels / 2 - 1")))

_ROW_LAYOUT = (params("uint32_t r#", "${r[#]}", 3, "row dims (1-padded)"),
               param("uint32_t width", "${x[0].shape[-1]}", "row length (the last axis)"))

def _row_strides(name: str, what: str) -> tuple:
    """An operand broadcast onto the rows: its element strides over the row dims (Mako list
    ``<name>s``) and its step along a row."""
    return (params(f"uint32_t {name}s#", f"${{{name}s[#]}}", 3, f"{what}'s element strides over the row dims"),
            param(f"uint32_t {name}cs", f"${{{name}s[3]}}", f"{what}'s step along a row (0 or 1)"))


_ISOFTMAX_RQ_CALL = Signature(
    "iSoftmax fused with its RequantShift: v as iSoftmax, y = clip((v * mul + add + 2^(shift-1)) >> shift, "
    "lo, hi); mul and add broadcast onto the rows. With scratch the e(d) table (lut_size = 256) and, for "
    "scalar mul and add, the output of every v (rq_table = 1) are tabulated in it; without, computed directly.",
    (param("const TIN *restrict x", _X, "input"), param("const TM *restrict mul", "${x[1].ptr}", "multiplier"),
     param("const TA *restrict add", "${x[2].ptr}", "offset"), param("TOUT *restrict y", _Y, "output"),
     param("void *scratch", '${shared if table or outputs else "NULL"}', "the shared tables, or NULL"), FILL,
     _ROW_LAYOUT, _row_strides("m", "mul"), _row_strides("ad", "add"),
     param("int64_t a", "${p.base.coeff_a}"), param("int64_t b", "${p.base.coeff_b}"),
     param("int64_t c", "${p.base.coeff_c}", "exp polynomial coefficients"),
     param("uint32_t log2", "${p.base.log2}", "the exp's log2 constant"),
     param("uint32_t levels_m1", "${p.base.n_levels - 1}", "softmax levels - 1"),
     param("uint32_t lut_size", "${256 if table else 0}", "256 with the e(d) table, else 0"),
     param("uint32_t rq_table", "${int(outputs)}", "1: the outputs tabulated"),
     param("uint32_t shift", "${p.rq.shift}"), param("int32_t lo", "${p.rq.lo}"),
     param("int32_t hi", "${p.rq.hi}", "requantisation shift and output bounds")),
    setup=_NL_IMPORTS + """<%! from Deeploy.targets.generic.bindings.nonlinear import isoftmax_rq_table, isoftmax_uses_table %>\
<% table = shared != "NULL" and isoftmax_uses_table(x[0].dtype.bits, x[0].size)
outputs = shared != "NULL" and isoftmax_rq_table(x[0].size, x[1].size, x[2].size)
r, (ms, ads) = _nl_rows(x[0].shape, [x[1].shape, x[2].shape]) %>""",
    types={"TACC": "as iSoftmax", "TE": "as iSoftmax", "TRQ": "v * mul + add + rounding: int32_t or int64_t"})

_ILAYERNORM_CALL = Signature(
    "iLayerNorm over rows of `width` (specs/integer-ops.md): y = clip((trunc((x - mean) * w / std) + bias) "
    ">> shift, lo, hi); w and bias broadcast onto x.",
    (param("const TIN *restrict x", _X, "input"), param("const TW *restrict w", "${x[1].ptr}", "weight"),
     param("const TB *restrict bias", "${x[2].ptr}", "bias"), param("TOUT *restrict y", _Y, "output"),
     _ROW_LAYOUT, _row_strides("w", "w"), _row_strides("b", "bias"), _NORM_OUT),
    setup=_NL_IMPORTS + "<% r, (ws, bs) = _nl_rows(x[0].shape, [x[1].shape, x[2].shape]) %>",
    types={"TSUM": "row sums: int32_t or int64_t", "TMUL": "d * w + bias: int32_t or int64_t"})

_IRMSNORM_CALL = Signature(
    "iRMSNorm over rows of `width` (specs/integer-ops.md): y = clip((trunc(x * w / std) >> shift) + offset, lo, "
    "hi); w broadcasts onto x.",
    (param("const TIN *restrict x", _X, "input"), param("const TW *restrict w", "${x[1].ptr}", "weight"),
     param("TOUT *restrict y", _Y, "output"), _ROW_LAYOUT, _row_strides("w", "w"), _NORM_OUT,
     param("int32_t offset", "${p.offset}", "added before the clip (a uint8 output's zero point)")),
    setup=_NL_IMPORTS + "<% r, (ws,) = _nl_rows(x[0].shape, [x[1].shape]) %>",
    types={"TSUM": "sum of squares: int32_t or int64_t", "TMUL": "x * w: int32_t or int64_t"})

_INONORM_CALL = Signature(
    "iNoNorm: y = clip(((x * w + bias) * mul) >> shift, lo, hi) elementwise; w and bias broadcast onto x "
    "over up to 4 merged dims.",
    (param("const TIN *restrict x", _X, "input"), param("const TW *restrict w", "${x[1].ptr}", "weight"),
     param("const TB *restrict bias", "${x[2].ptr}", "bias"), param("TOUT *restrict y", _Y, "output"),
     params("uint32_t d#", "${dims[#]}", 4, "dims after merging (1-padded)"),
     params("uint32_t sw#", "${sw[#]}", 4, "w's element strides (0 on broadcast dims)"),
     params("uint32_t sb#", "${sb[#]}", 4, "bias's element strides (0 on broadcast dims)"),
     param("int64_t mul", "${p.mul}", "multiplier"), _NORM_OUT),
    setup=_NL_IMPORTS + "<% dims, (sw, sb) = broadcast_operands(y[0].shape, [x[1].shape, x[2].shape]) %>",
    types={"TACC": "(x * w + bias) * mul: int32_t or int64_t"})

_IGELU_CALL = Signature(
    "iGELU elementwise (specs/integer-ops.md): q = min(|x|, -b); L = sign(x) * (one - (q + b)^2); "
    "y = x * ((one + L) >> 1).",
    (_UNARY, _ELEMENTS, param("int64_t b", "${p.b}"), param("int64_t one", "${p.one}", "constants (b < 0)")),
    types=_TACC)

_IHARDSWISH_CALL = Signature(
    "iHardswish elementwise (specs/integer-ops.md): y = x * (clip(x + three, 0, six) * one_over_six).",
    (_UNARY, _ELEMENTS, param("int64_t one_over_six", "${p.one_over_six}"), param("int64_t three", "${p.three}"),
     param("int64_t six", "${p.six}", "constants")), types=_TACC)

_TRUE_DIV_CALL = Signature(
    "TrueIntegerDiv elementwise: y = x * coeff, coeff = floor(Delta * eta / (y * eta + eps)) computed at "
    "compile time.",
    (_UNARY, _ELEMENTS, param("int64_t coeff", "${p.coeff}")), types=_TACC)

_INT_DIV_CALL = Signature(
    "IntegerDiv of two broadcast operands (specs/integer-ops.md): y = round(a * scale / (b * eta + eps)), "
    "halves away from zero; a zero denominator gives 0.",
    (param("const TA *restrict a", _X, "numerator operand"), param("const TB *restrict b", "${x[1].ptr}",
                                                                   "denominator operand"),
     param("TY *restrict y", _Y, "output"),
     params("uint32_t d#", "${dims[#]}", 4, "output dims after merging (1-padded)"),
     params("uint32_t sa#", "${sa[#]}", 4, "a's element strides (0 on broadcast dims)"),
     params("uint32_t sb#", "${sb[#]}", 4, "b's element strides (0 on broadcast dims)"),
     param("int64_t scale", "${p.delta * p.eta}", "Delta * eta"), param("int64_t eta", "${p.eta}"),
     param("int64_t eps", "${p.eps}", "the denominator's scale and offset")),
    setup=_NL_IMPORTS + "<% dims, (sa, sb) = broadcast_operands(y[0].shape, [x[0].shape, x[1].shape]) %>",
    types={"TACC": "wide enough for 2 * |a * scale| + 2 * |b * eta + eps|: int32_t or int64_t"})

NONLINEAR_KERNELS: dict[str, tuple[Kernel, ...]] = {
    "iSoftmax": (_nl_kernel("iSoftmax", "isoftmax.inc", _ISOFTMAX_CALL, ("TIN", "TOUT"), _isoftmax_plan,
                            shared=_isoftmax_table_bytes, scratch_optional=True),),
    "RequantizediSoftmax": (_nl_kernel("iSoftmax_RQ", "isoftmax_rq.inc", _ISOFTMAX_RQ_CALL,
                                       ("TIN", "TM", "TA", "TOUT"), _isoftmax_rq_plan,
                                       shared=_isoftmax_rq_bytes, scratch_optional=True),),
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
}
