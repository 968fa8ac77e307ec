"""``deeploy validate``: does the deployed network compute what the model says? The reference
interpreter (``Deeploy/reference.py``) evaluates the ONNX graph (its QDQ groups lowered to the
integer ops onnxruntime runs them as, ``passes/qdq.py``) on the inputs (given, inputs.npz
beside the model, or seeded random values of the input types); its outputs are checked against
outputs.npz beside the model (if any) and onnxruntime (where it runs the graph), and become the
expected values of a testbench compiled with the network into a temporary folder, built and run
on the host or the platform's virtual platform (``Deeploy/run.py``). Integer outputs must match
exactly, float ones within the testbench's tolerance (``FLOAT_TOLERANCE``)."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Callable

import numpy as np

from Deeploy.codegen.testbench import FLOAT_TOLERANCE, write_harness
from Deeploy.compiler import compile_graph
from Deeploy.errors import DeeployError
from Deeploy.frontend import assign_input_types, infer_graph, load_npz_arrays, load_onnx, map_arrays
from Deeploy.ir.dtypes import DType
from Deeploy.ir.graph import Graph
from Deeploy.passes.manager import run_passes
from Deeploy.passes.qdq import lower_qdq
from Deeploy.reference import run_reference
from Deeploy.run import run_output
from Deeploy.targets import get_platform
from Deeploy.tiling.network import TilingOptions

__all__ = ["random_inputs", "compare", "onnxruntime_outputs", "validate"]


def random_inputs(graph: Graph, seed: int = 0) -> dict[str, np.ndarray]:
    """Values for every graph input of its type and shape: integers uniform over the type's
    range, floats standard normal; the same for the same seed."""
    rng = np.random.default_rng(seed)
    out = {}
    for name in graph.inputs:
        t = graph.tensors[name]
        if t.shape is None:
            raise DeeployError(f"input '{name}' has no static shape; give sample values with --inputs x.npz")
        if t.dtype.is_float:
            out[name] = rng.standard_normal(t.shape).astype(np.float32)
        else:
            out[name] = rng.integers(t.dtype.min, t.dtype.max, size=t.shape, endpoint=True, dtype=np.int64)
    return out


def compare(expected: np.ndarray, got: np.ndarray, dtype: DType) -> tuple[float, int]:
    """(worst absolute error, elements beyond the tolerance): integers exactly, floats within
    ``FLOAT_TOLERANCE`` of their type (NaN matches NaN)."""
    e = np.asarray(expected, dtype=np.float64).ravel()
    g = np.asarray(got, dtype=np.float64).ravel()
    if e.size != g.size:
        return float("inf"), max(e.size, g.size)
    with np.errstate(invalid="ignore"):
        err = np.where((e == g) | (np.isnan(e) & np.isnan(g)), 0.0, np.abs(e - g))
    err = np.where(np.isnan(err), np.inf, err)     # NaN against a number
    if dtype.is_float:
        rtol, atol = FLOAT_TOLERANCE[dtype]
        bad = int(np.count_nonzero(err > atol + rtol * np.abs(np.nan_to_num(e))))
    else:
        bad = int(np.count_nonzero(err))
    return (float(err.max()) if err.size else 0.0), bad


def onnxruntime_outputs(onnx_path: Path, inputs: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray] | None, str]:
    """The graph's outputs from onnxruntime, or None and why it does not run the graph."""
    try:
        import onnx
        import onnxruntime as ort
        from onnx.helper import tensor_dtype_to_np_dtype
        declared = {i.name: tensor_dtype_to_np_dtype(i.type.tensor_type.elem_type)
                    for i in onnx.load(str(onnx_path), load_external_data=False).graph.input}
        options = ort.SessionOptions()
        options.log_severity_level = 3
        session = ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])
        feed = {arg.name: inputs[arg.name].astype(declared[arg.name]) for arg in session.get_inputs()}
        names = [o.name for o in session.get_outputs()]
        return dict(zip(names, session.run(names, feed))), ""
    except Exception as exc:   # any failure means "onnxruntime does not run this graph"
        return None, _ort_reason(str(exc)) or type(exc).__name__


def _ort_reason(text: str) -> str:
    """onnxruntime's error, short and whole: its closing "Error ..." clause (e.g. "No Op registered
    for RequantShift with domain_version of 13") when it has one, else its first line, cut at a word."""
    text = re.sub(r"\[ONNXRuntimeError\] : \d+ : |Load model from .*? failed:", "", text).strip()
    closing = re.search(r"\bError:? ([^\n]+)$", text)
    line = closing.group(1).strip() if closing else (text.splitlines()[0] if text else "")
    return line if len(line) <= 120 else line[:120].rsplit(" ", 1)[0] + " ..."


def _declared_float(onnx_path: Path) -> dict[str, bool]:
    """Per graph output of the ONNX file: whether it is declared a float type."""
    import onnx
    from onnx.helper import tensor_dtype_to_np_dtype
    outputs = onnx.load(str(onnx_path), load_external_data=False).graph.output
    return {o.name: tensor_dtype_to_np_dtype(o.type.tensor_type.elem_type).kind == "f" for o in outputs}


def _check(what: str, expected: dict[str, np.ndarray], got: dict[str, np.ndarray], graph: Graph,
           say: Callable[[str], None], why_not_binding: str = "") -> bool:
    """Print the worst error over the graph outputs; True if every element is within the
    tolerance or the comparison only informs (``why_not_binding``)."""
    worst, bad, total = 0.0, 0, 0
    for name in graph.outputs:
        w, b = compare(expected[name], got[name], graph.tensors[name].dtype)
        worst, bad, total = max(worst, w), bad + b, total + expected[name].size
    say(f"{what}: worst error {worst:.6g}, {bad} of {total} elements beyond the tolerance"
        + (f" (for information: {why_not_binding})" if why_not_binding else ""))
    return bad == 0 or bool(why_not_binding)


def validate(model: str | Path, platform: str, *, inputs: str | Path | None = None,
             outputs: str | Path | None = None, cores: int | None = None, tiling: TilingOptions | None = None,
             input_types: dict[str, DType] | None = None, seed: int = 0, timeout: float = 600.0,
             say: Callable[[str], None] = print, **options) -> int:
    """0 if the reference agrees with outputs.npz and onnxruntime (where they exist) and the
    deployed network agrees with the reference, else 1. ``options``: more options of ``compile_graph``
    (``loop_rolling``, ``platform_options``)."""
    onnx_path = Path(model)
    samples = Path(inputs) if inputs else onnx_path.with_name("inputs.npz")
    graph = load_onnx(onnx_path)
    values = None
    if inputs or samples.is_file():
        values = map_arrays(samples, load_npz_arrays(samples), graph.inputs, graph, "input")
        say(f"inputs from {samples}")
    assign_input_types(graph, values, input_types)
    if values is None:
        values = random_inputs(graph, seed)
        say(f"inputs: random values of the input types (seed {seed})")
    reference_graph = load_onnx(onnx_path)
    assign_input_types(reference_graph, values, input_types)
    infer_graph(reference_graph)
    reference_graph = run_passes(reference_graph, [lower_qdq])     # QDQ groups as onnxruntime computes them
    expected = run_reference(reference_graph, values)
    ok = True
    golden_path = Path(outputs) if outputs else onnx_path.with_name("outputs.npz")
    if outputs or (golden_path.is_file() and not inputs and samples.is_file()):   # the goldens of inputs.npz
        golden = map_arrays(golden_path, load_npz_arrays(golden_path), reference_graph.outputs, reference_graph,
                            "output")
        ok &= _check(f"reference vs {golden_path.name}", golden, expected, reference_graph, say)
    ort_out, why = onnxruntime_outputs(onnx_path, values)
    if ort_out is not None and not set(reference_graph.outputs) <= set(ort_out):
        ort_out, why = None, "its outputs are named differently"
    if ort_out is None:
        say(f"reference vs onnxruntime: not compared (onnxruntime does not run this graph: {why})")
    else:
        declared = _declared_float(onnx_path)
        integer = [o for o in reference_graph.outputs
                   if declared.get(o) and reference_graph.tensors[o].dtype.is_integer]
        why = ("the ONNX graph declares float outputs that the network computes in integer arithmetic, "
               "where onnxruntime rounds differently") if integer else ""
        ok &= _check("reference vs onnxruntime", expected, ort_out, reference_graph, say, why)
    target = get_platform(platform)
    order = list(graph.outputs)

    def testbench(compiled: Graph, folder: Path) -> None:
        write_harness(compiled, values, [expected[n] for n in order], folder, runs=1,
                      section=target.reference_section)

    with tempfile.TemporaryDirectory(prefix="deeploy-validate-") as tmp:
        result = compile_graph(graph, platform, Path(tmp) / "out", source=onnx_path.name, cores=cores,
                               tiling=tiling, extra_files=testbench, **options)
        for note in result.notes:
            say(f"note: {note}")
        cores = result.manifest.cores
        say(f"device vs reference ({platform}, {cores} core{'s' if cores != 1 else ''}"
            f"{', tiled' if tiling else ''}):")
        ok &= run_output(Path(tmp) / "out", Path(tmp) / "build", timeout=timeout) == 0
    say("validate: " + ("ok" if ok else "MISMATCH (see above)"))
    return 0 if ok else 1
