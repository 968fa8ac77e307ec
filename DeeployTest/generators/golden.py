"""Golden outputs and test folders.

Standard ONNX nodes are evaluated with onnxruntime (on float32 tensors holding the integers, as
the files declare them) and must agree exactly with the compiler's numpy reference; custom
integer ops come from the numpy references (``Deeploy.ops``). A graph made only of standard ops
is run by onnxruntime as a whole and its outputs are the goldens. The written file is then read
back through the compiler's frontend and interpreted again (``run_reference``) to make sure the
file says what the builder meant.
"""

from __future__ import annotations

import io
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

from Deeploy.frontend import assign_input_types, infer_graph, load_onnx
from Deeploy.ir.dtypes import dtype_of_values
from Deeploy.ops import Trait, ops_with
from Deeploy.reference import run_reference
from DeeployTest.generators.builder import Net
from DeeployTest.generators.limits import BuildError

__all__ = ["write_test", "save_npz", "save_arrays", "STANDARD_OPS"]

# ops onnxruntime runs with the integer meaning the compiler gives them
STANDARD_OPS = ops_with(Trait.STANDARD)
# onnxruntime computes the float mean; the integer ReduceMean rounds it half up
_ROUND_HALF_UP = {"ReduceMean"}
_FLOAT_EXACT = 2 ** 24

_ZIP_DATE = (1980, 1, 1, 0, 0, 0)


def save_npz(path: Path, arrays: list[np.ndarray], prefix: str) -> None:
    """An npz file with byte-identical content on every run (fixed zip timestamps); each
    array in the narrowest integer type that holds it, keys ``<prefix>_<k>``."""
    narrow = {}
    for k, a in enumerate(arrays):
        a = np.asarray(a, dtype=np.int64)
        narrow[f"{prefix}_{k}"] = a.astype(dtype_of_values(a).numpy)
    save_arrays(path, narrow)


def save_arrays(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """An npz file of ``arrays`` as they are, byte-identical on every run (fixed zip timestamps)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        for key, a in arrays.items():
            member = io.BytesIO()
            np.lib.format.write_array(member, np.ascontiguousarray(a), allow_pickle=False)
            info = zipfile.ZipInfo(f"{key}.npy", date_time=_ZIP_DATE)
            info.external_attr = 0o644 << 16
            zf.writestr(info, member.getvalue())
    _write_if_changed(path, buf.getvalue())


def _write_if_changed(path: Path, data: bytes) -> None:
    if path.is_file() and path.read_bytes() == data:
        return
    path.write_bytes(data)


# ---- onnxruntime ---------------------------------------------------------------------------
def _session(model: onnx.ModelProto):
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    opts.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def _from_float(op: str, value: np.ndarray, what: str) -> np.ndarray:
    value = np.asarray(value, dtype=np.float64)
    if op in _ROUND_HALF_UP:
        value = np.floor(value + 0.5 + 1e-3)
    if value.size and not np.all(value == np.round(value)):
        raise BuildError(f"{what}: onnxruntime produced non-integer values")
    return value.astype(np.int64)


def _opset(net: Net) -> int:
    return net.ort_opset or net.opset


def _ort_node_check(net: Net) -> int:
    """Run every standard node alone in onnxruntime on the reference values of its inputs and
    compare with the reference output. Returns the number of nodes checked."""
    inits = {t.name: t for t in net.initializers}
    checked = 0
    for proto in net.nodes:
        if proto.op_type not in STANDARD_OPS or proto.domain not in ("", "ai.onnx") \
                or proto.name in net.ort_skip:
            continue
        feeds, vis, used_inits = {}, [], []
        for i in proto.input:
            if not i:
                continue
            if i in inits:
                used_inits.append(inits[i])
            elif i not in feeds:
                feeds[i] = net.values[i].astype(np.float32)
                vis.append(helper.make_tensor_value_info(i, TensorProto.FLOAT, list(net.values[i].shape)))
        outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in proto.output if o]
        g = helper.make_graph([proto], "check", vis, outs, used_inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", _opset(net))])
        m.ir_version = 8
        results = _session(m).run(None, feeds)
        for o, r in zip([o for o in proto.output if o], results):
            got = _from_float(proto.op_type, r, f"{proto.op_type} '{proto.name}'")
            want = net.values[o]
            if got.shape != want.shape or not np.array_equal(got, want):
                big = max([float(np.max(np.abs(v), initial=0)) for v in feeds.values()] + [0.0])
                raise BuildError(f"{proto.op_type} '{proto.name}': onnxruntime and the numpy reference "
                                 f"disagree on '{o}' (shapes {got.shape} vs {want.shape}; largest input "
                                 f"magnitude {big:g}{', beyond exact float32' if big >= _FLOAT_EXACT else ''})")
        checked += 1
    return checked


def _ort_goldens(net: Net, model: onnx.ModelProto) -> list[np.ndarray] | None:
    """Outputs of the whole model from onnxruntime, if every node is a standard op."""
    if any(n.op_type not in STANDARD_OPS or n.name in net.ort_skip for n in net.nodes):
        return None
    m = onnx.ModelProto()
    m.CopyFrom(model)
    del m.opset_import[:]
    m.opset_import.extend([helper.make_opsetid("", _opset(net))])
    feeds = {n: net.values[n].astype(np.float32) for n in net.inputs}
    results = _session(m).run(None, feeds)
    ops = {o: n.op_type for n in net.nodes for o in n.output}
    return [_from_float(ops.get(name, ""), r, f"output '{name}'") for name, r in zip(net.outputs, results)]


# ---- test folders --------------------------------------------------------------------------
def write_test(net: Net, folder: Path, ort_check: bool = True) -> dict:
    """Write network.onnx, inputs.npz and outputs.npz of ``net`` into ``folder``.

    Returns a summary: nodes, ORT-checked nodes, golden source, bytes written. A float network
    (``floatnets.FloatNet``) writes itself, with goldens from onnxruntime."""
    if hasattr(net, "write"):
        return net.write(folder)
    model = net.to_onnx()
    data = model.SerializeToString()

    # 1. the file, read back by the compiler's frontend, must mean what the builder evaluated
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "network.onnx"
        path.write_bytes(data)
        graph = load_onnx(path)
    inputs = {n: net.values[n] for n in net.inputs}
    assign_input_types(graph, inputs)
    infer_graph(graph)
    ref = run_reference(graph, inputs)
    expected = net.output_values()
    for name, want in zip(net.outputs, expected):
        if not np.array_equal(ref[name], want):
            raise BuildError(f"{net.name}: output '{name}' differs between the builder and the "
                             "reference interpreter on the written file")

    # 2. onnxruntime for the standard ops
    checked, source = 0, "reference"
    if ort_check:
        checked = _ort_node_check(net)
        whole = _ort_goldens(net, model)
        if whole is not None:
            for name, got, want in zip(net.outputs, whole, expected):
                if got.shape != want.shape or not np.array_equal(got, want):
                    raise BuildError(f"{net.name}: onnxruntime output '{name}' differs from the reference")
            expected, source = whole, "onnxruntime"

    folder.mkdir(parents=True, exist_ok=True)
    _write_if_changed(folder / "network.onnx", data)
    save_npz(folder / "inputs.npz", net.input_values(), "input")
    save_npz(folder / "outputs.npz", expected, "output")
    size = sum((folder / f).stat().st_size for f in ("network.onnx", "inputs.npz", "outputs.npz"))
    return {"nodes": len(net.nodes), "ort_checked": checked, "golden": source, "bytes": size,
            "data_bytes": net.data_bytes()}


def remove_stale(root: Path, keep: set[Path]) -> list[Path]:
    """Delete test folders under ``root`` (folders holding a network.onnx) not in ``keep``."""
    removed = []
    for onnx_file in sorted(root.rglob("network.onnx")):
        folder = onnx_file.parent
        if folder.resolve() not in keep:
            for f in ("network.onnx", "inputs.npz", "outputs.npz"):
                (folder / f).unlink(missing_ok=True)
            removed.append(folder)
            d = folder
            while d != root and d.is_dir() and not any(d.iterdir()):
                d.rmdir()
                d = d.parent
    return removed

