#!/usr/bin/env python3
"""ONNX's own node tests through the Generic path: the test cases the ``onnx`` package generates
(model, inputs, expected outputs), for the standard ops Generic runs plus common ones, each
compiled, built and run as ``testRunner_generic.py`` does (reusing the CMake platform build).

    python benchmarks/onnx_conformance.py [--jobs 2] [-k relu] [--keep DIR]

Float outputs are compared with ONNX's own tolerance (rtol 1e-3, atol 1e-5, or the case's if
looser), integers exactly. Every case is one of: passed; wrong (the program ran and an output
differs); disputed (wrong against ONNX's expected outputs, which onnxruntime does not give
either, and exact with onnxruntime's); refused (a one-line ``DeeployError`` while compiling); crashed (a traceback, a
multi-line error, a failed build or a program that did not report). Per class the count and the
first reasons are printed, then ``onnx node tests: <pass> passed, <wrong> wrong, <refused>
refused of <N>`` and the pass rate over the cases whose element types are float32, bfloat16 or
8-64-bit integers.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import multiprocessing
import re
import shutil
import sys
import tempfile
import traceback
import warnings
from collections import Counter, defaultdict
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from Deeploy.errors import BuildError, DeeployError  # noqa: E402
from Deeploy.ir.dtypes import BFLOAT16, FLOAT32  # noqa: E402
from Deeploy.ops import Trait, registered_ops  # noqa: E402
from Deeploy.targets import get_platform  # noqa: E402
from DeeployTest.testRunner_generic import GENERIC  # noqa: E402
from DeeployTest.testUtils.runner import run_test  # noqa: E402

__all__ = ["CLASSES", "Outcome", "selected_ops", "node_cases", "standard_typed", "run_cases", "summary"]

# standard ops beyond those Generic binds that networks commonly carry
COMMON_OPS = frozenset({
    "Constant", "ConstantOfShape", "Shape", "Split", "Resize", "Where", "Expand", "Unsqueeze", "Squeeze", "Reshape",
    "Flatten", "Transpose", "Concat", "Slice", "Gather", "Cast", "Pad", "Identity", "ReduceMax", "ReduceMin",
    "ReduceMean", "ReduceSum", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum",
    "ReduceLogSumExp", "ArgMax", "Softmax", "LayerNormalization", "MatMul", "Max", "Min", "Sum", "Mean",
})
# element types of the pass-rate line: float32, bfloat16 and the 8-64-bit integers
STANDARD_TYPES = frozenset(onnx.TensorProto.DataType.Value(n) for n in (
    "FLOAT", "BFLOAT16", "INT8", "INT16", "INT32", "INT64", "UINT8", "UINT16", "UINT32", "UINT64"))
ONNX_TOLERANCE = (1e-3, 1e-5)   # onnx's backend tests: rtol 1e-3; atol 1e-5 no tighter than its 1e-7
# disputed: wrong against ONNX's expected outputs, which onnxruntime does not give either, and
# exact with onnxruntime's (the two references disagree: e.g. Resize align_corners on scales)
CLASSES = ("passed", "wrong", "refused", "crashed", "disputed")


@dataclass(frozen=True)
class Outcome:
    name: str
    kind: str       # one of CLASSES
    reason: str     # empty when passed
    standard: bool  # every element type is float32, bfloat16 or an 8-64-bit integer
    frozen: tuple[str, ...] = ()   # graph inputs given as initializers (parameter inputs)


def selected_ops() -> frozenset[str]:
    """The standard ops ``deeploy ops --platform Generic`` lists as running (or folding), plus
    ``COMMON_OPS``."""
    bindings = get_platform("Generic").bindings
    return frozenset(name for name, op in registered_ops().items() if op.has(Trait.STANDARD)
                     and (name in bindings or op.has(Trait.SHAPE_ONLY))) | COMMON_OPS


def node_cases(modules: list[str] | None = None, ops: frozenset[str] | None = None) -> list:
    """The onnx package's node test cases (``onnx.backend.test.case.node``): all of them, or those
    its modules ``modules`` define (``["relu", "clip"]``: much faster than collecting all), whose
    nodes are all ``ops`` (default ``selected_ops()``) and whose inputs and outputs are tensors."""
    from onnx.backend.test.case import node
    ops = selected_ops() if ops is None else ops
    with warnings.catch_warnings():   # the generators' own overflow and divide-by-zero warnings
        warnings.simplefilter("ignore", RuntimeWarning)
        if modules is None:
            cases = node.collect_testcases(None)
        else:
            for module in modules:   # importing a module runs its exports, which register its cases
                importlib.import_module(f"{node.__name__}.{module}")
            cases = list(node._NodeTestCases)
    graph_values = lambda g: list(g.input) + list(g.output)   # noqa: E731
    return [c for c in cases if {n.op_type for n in c.model.graph.node} <= ops
            and all(v.type.HasField("tensor_type") for v in graph_values(c.model.graph))]


def _element_types(model: onnx.ModelProto) -> set[int]:
    g = model.graph
    types = {v.type.tensor_type.elem_type for v in (*g.input, *g.output)} | {t.data_type for t in g.initializer}
    for node in g.node:
        types |= {a.t.data_type for a in node.attribute if a.type == onnx.AttributeProto.TENSOR}
        types |= {a.i for a in node.attribute if a.name == "to"}   # Cast's target type
    return types


def standard_typed(case) -> bool:
    return _element_types(case.model) <= STANDARD_TYPES


def _numpy(value) -> np.ndarray:
    return numpy_helper.to_array(value) if isinstance(value, onnx.TensorProto) else np.asarray(value)


def _array(value) -> np.ndarray:
    """A case's input or output as an npz-storable array (bfloat16 and small floats as float32)."""
    array = _numpy(value)
    if array.dtype.kind == "V" or array.dtype == BFLOAT16.numpy or array.dtype.name.startswith("float8") \
            or array.dtype.name.startswith("float4"):
        array = array.astype(np.float32)
    elif array.dtype.kind in "iu" and array.dtype.itemsize == 1 and array.dtype.name not in ("int8", "uint8"):
        array = array.astype(np.int8 if array.dtype.name.startswith("int") else np.uint8)   # 4- and 2-bit
    return array


def _write_case(case, folder: Path, frozen: frozenset[str] = frozenset(),
                expected: list | None = None) -> tuple[float, float]:
    """The test folder of ``case`` (network.onnx, inputs.npz, outputs.npz: the case's outputs, or
    ``expected``), the graph inputs ``frozen`` made initializers holding the case's values; its
    float tolerance."""
    folder.mkdir(parents=True, exist_ok=True)
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    inputs, outputs = case.data_sets[0]
    outputs = outputs if expected is None else expected
    g = model.graph
    values = {v.name: a for v, a in zip(g.input, inputs)}
    kept = [v for v in g.input if v.name not in frozen]
    g.initializer.extend(numpy_helper.from_array(_numpy(values[n]), n) for n in sorted(frozen))
    del g.input[:]
    g.input.extend(kept)
    onnx.save(model, str(folder / "network.onnx"))
    np.savez(folder / "inputs.npz", **{v.name: _array(values[v.name]) for v in kept})
    np.savez(folder / "outputs.npz", **{v.name: _array(a) for v, a in zip(g.output, outputs)})
    return _tolerance(case)


def _tolerance(case) -> tuple[float, float]:
    """(rtol, atol) of a float comparison: ONNX's own, or the case's if looser."""
    return max(case.rtol, ONNX_TOLERANCE[0]), max(case.atol, ONNX_TOLERANCE[1])


# an op refusing a parameter input (axes, shape, pads, min...) that is not a constant
_NOT_CONSTANT = re.compile(r"'([^']+)'\) must be a constant initializer")


def _first_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[0].strip() if lines else "(no message)"


def _run_case(job: tuple) -> Outcome:
    """Compile, build and run one case in ``work``; its outcome (every exception is caught).

    ONNX's node tests feed parameter inputs (a Reshape's shape, a Clip's min) as graph inputs; an
    ahead-of-time compiler needs them known, as a deployed model holds them: each graph input the
    compiler refuses as not constant is made an initializer holding the case's value, and the case
    compiled again."""
    case, work = job
    folder = Path(work) / case.name
    standard = standard_typed(case)
    names = {v.name for v in case.model.graph.input}
    frozen: frozenset[str] = frozenset()
    while True:
        outcome, error = _attempt(case, folder, frozen, standard)
        needed = _NOT_CONSTANT.search(error)
        if not needed or needed.group(1) not in names - frozen:
            break
        frozen |= {needed.group(1)}
    if outcome.kind == "wrong":
        theirs = _onnxruntime_outputs(case)
        if theirs is not None and not _close(theirs, case.data_sets[0][1], *_tolerance(case)) \
                and _attempt(case, folder, frozen, standard, theirs)[0].kind == "passed":
            outcome = replace(outcome, kind="disputed", reason=f"exact with onnxruntime, whose outputs differ "
                                                                f"from ONNX's expected ones ({outcome.reason})")
    return replace(outcome, frozen=tuple(sorted(frozen)))


def _onnxruntime_outputs(case) -> list | None:
    """onnxruntime's outputs of ``case`` (None if it cannot run it)."""
    import onnxruntime as ort
    try:
        session = ort.InferenceSession(case.model.SerializeToString(), providers=["CPUExecutionProvider"])
        inputs = case.data_sets[0][0]
        return session.run(None, {v.name: _numpy(a) for v, a in zip(case.model.graph.input, inputs)})
    except Exception:   # noqa: BLE001: onnxruntime lacks the kernel or refuses the model
        return None


def _close(ours: list, theirs: list, rtol: float, atol: float) -> bool:
    return all(np.allclose(np.asarray(a, np.float64), _numpy(b).astype(np.float64), rtol=rtol, atol=atol)
               for a, b in zip(ours, theirs))


def _attempt(case, folder: Path, frozen: frozenset[str], standard: bool,
             expected: list | None = None) -> tuple[Outcome, str]:
    """One compile, build and run of ``case`` (checked against ``expected``, default the case's
    outputs); its outcome and the refusal's message (or "")."""
    out = io.StringIO()
    try:
        rtol, atol = _write_case(case, folder / "test", frozen, expected)
        rp = replace(GENERIC, harness_tolerance={FLOAT32: (rtol, atol)})
        args = argparse.Namespace(test=str(folder / "test"), gen_dir=str(folder / "gen"), verbose=False,
                                  skipgen=False, skipsim=False, keep_failed=False, timeout=60.0)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            code = run_test(args, rp)
    except BuildError as exc:
        return Outcome(case.name, "crashed", f"build: {_first_line(str(exc))}", standard), ""
    except DeeployError as exc:
        message = str(exc).strip()
        if "\n" in message:
            return Outcome(case.name, "crashed", _first_line(message), standard), ""
        return Outcome(case.name, "refused", message, standard), message
    except Exception as exc:   # noqa: BLE001: a traceback is a finding, not a stop
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return Outcome(case.name, "crashed", f"{type(exc).__name__}: {_first_line(str(exc))} "
                                             f"({Path(where.filename).name}:{where.lineno})", standard), ""
    finally:
        shutil.rmtree(folder / "gen", ignore_errors=True)
    text = out.getvalue()
    if code == 0:
        return Outcome(case.name, "passed", "", standard), ""
    result = re.search(r"Errors: \d+ out of \d+", text)
    if not result:
        return Outcome(case.name, "crashed", f"the program reported no result: {_first_line(text[-400:])}",
                       standard), ""
    detail = [line.strip() for line in text.splitlines() if "expected" in line.lower()][:1]
    return Outcome(case.name, "wrong", "; ".join([result.group(0), *detail]), standard), ""


def run_cases(cases: list, jobs: int = 1, work: Path | None = None) -> list[Outcome]:
    """Every case's outcome, ``jobs`` at a time (one process each, forked from this one)."""
    with contextlib.ExitStack() as stack:
        root = work or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="onnx_conformance.")))
        todo = [(case, str(root)) for case in cases]
        if jobs <= 1:
            return [_run_case(job) for job in todo]
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            return list(pool.imap(_run_case, todo, chunksize=1))


def _reason_key(reason: str) -> str:
    """A reason with names and numbers blanked, to count alike failures together."""
    return re.sub(r"'[^']*'|\d+", "_", reason)


def summary(outcomes: list[Outcome], shown: int = 5) -> list[str]:
    """Per failure class its count and the first reasons (alike reasons counted together), then
    the totals line and the pass rate over the standard-typed cases."""
    lines = []
    by_kind = defaultdict(list)
    for o in outcomes:
        by_kind[o.kind].append(o)
    for kind in CLASSES[1:]:
        found = by_kind[kind]
        lines.append(f"{kind}: {len(found)}")
        groups = Counter(_reason_key(o.reason) for o in found)
        first = {}
        for o in found:
            first.setdefault(_reason_key(o.reason), o)
        for key, count in groups.most_common(shown if kind == "refused" else len(groups)):
            lines.append(f"  {count:4d} x {first[key].name}: {first[key].reason}")
    counts = Counter(o.kind for o in outcomes)
    standard = [o for o in outcomes if o.standard]
    passed = sum(o.kind == "passed" for o in standard)
    frozen = [o for o in outcomes if o.frozen]
    lines.append(f"parameter inputs given as initializers in {len(frozen)} cases "
                 f"({sum(o.kind == 'passed' for o in frozen)} of them passed)")
    crashed = f"; {counts['crashed']} crashed" if counts["crashed"] else ""
    disputed = f"; {counts['disputed']} disputed" if counts["disputed"] else ""
    lines.append(f"onnx node tests: {counts['passed']} passed, {counts['wrong']} wrong, {counts['refused']} refused "
                 f"of {len(outcomes)}{crashed}{disputed}")
    lines.append(f"float32/bfloat16/integer-typed: {passed} of {len(standard)} passed "
                 f"({100.0 * passed / max(1, len(standard)):.1f}%)")
    return lines


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--jobs", "-j", type=int, default=max(1, multiprocessing.cpu_count()),
                   help="cases compiled and run at once (default: the CPU count)")
    p.add_argument("-k", default=None, help="only the cases whose name contains this (e.g. relu)")
    p.add_argument("--keep", type=Path, default=None, help="write the test folders here and keep them")
    p.add_argument("--list", action="store_true", help="print every case's outcome")
    p.add_argument("--reasons", type=int, default=8, help="refusal reasons shown (most frequent first)")
    args = p.parse_args()
    cases = [c for c in node_cases() if args.k is None or args.k in c.name]
    outcomes = run_cases(cases, args.jobs, args.keep)
    if args.list:
        for o in outcomes:
            print(f"{o.kind:8s} {o.name}: {o.reason}")
    print("\n".join(summary(outcomes, args.reasons)))
    return 1 if any(o.kind in ("wrong", "crashed") for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
