"""Test folders merged into one: every case's network side by side in one graph, so that a family
of small kernel cases is compiled, built and run once instead of once per case.

Each case's names (nodes, tensors, graph inputs and outputs) get the prefix ``<case>.``; its
sample inputs and goldens move to the merged folder's npz files under the prefixed tensor names,
as the frontend pairs them with the case's own graph. A mismatch or a compile error then names
the case it comes from (``Mismatch in output '<case>.<output>' ...``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Hashable, Sequence

import numpy as np
import onnx
from onnx import compose, helper

from Deeploy.frontend import load_npz_arrays, load_onnx, map_arrays
from Deeploy.ir.dtypes import dtype_of_values
from DeeployTest.generators.golden import save_arrays

__all__ = ["merge_tests", "batches", "batch_folder", "batch_ids"]


def _opsets(folder: Path) -> tuple:
    model = onnx.load(str(folder / "network.onnx"), load_external_data=False)
    return tuple(sorted((o.domain, o.version) for o in model.opset_import))


def _bytes(folder: Path) -> int:
    return sum((folder / f).stat().st_size for f in ("network.onnx", "inputs.npz", "outputs.npz"))


def batches(cases: Sequence[tuple[str, Path]], size: int, budget: int = 512_000,
            kind: Callable[[Path], Hashable] = lambda folder: None) -> list[list[tuple[str, Path]]]:
    """``cases`` ((name, test folder)) in groups that :func:`merge_tests` accepts (one set of opsets
    each) of one ``kind``, at most ``size`` cases and ``budget`` bytes of files (a case beyond it
    alone), in their order; the same groups on every machine."""
    by_key: dict[tuple, list[list[tuple[str, Path]]]] = {}
    for name, folder in cases:
        groups = by_key.setdefault((kind(folder), _opsets(folder)), [[]])
        nbytes = _bytes(folder)
        if len(groups[-1]) == size or (groups[-1] and sum(_bytes(f) for _, f in groups[-1]) + nbytes > budget):
            groups.append([])
        groups[-1].append((name, folder))
    return [group for groups in by_key.values() for group in groups]


def _arrays(folder: Path, role: str) -> dict[str, np.ndarray]:
    """The case's inputs or outputs keyed by tensor name, as the test runner pairs them."""
    graph = load_onnx(folder / "network.onnx")
    npz = folder / f"{role}s.npz"
    names = graph.inputs if role == "input" else graph.outputs
    return map_arrays(npz, load_npz_arrays(npz), names, graph, role)


def _stored(values: np.ndarray) -> np.ndarray:
    """Integer values in the narrowest type that holds them (what the runner reads back is the same)."""
    return values if values.dtype.kind == "f" else values.astype(dtype_of_values(values).numpy)


def merge_tests(cases: Sequence[tuple[str, Path]], folder: Path) -> Path:
    """Write one test folder (``folder``) running every ``(case name, test folder)`` of ``cases``;
    the cases must share their opsets (a network's meaning depends on them)."""
    graph = onnx.GraphProto(name="batch")
    opsets: dict[str, int] = {}
    inputs: dict[str, np.ndarray] = {}
    outputs: dict[str, np.ndarray] = {}
    for name, source in cases:
        model = compose.add_prefix(onnx.load(str(source / "network.onnx")), f"{name}.")
        for entry in model.opset_import:
            if opsets.setdefault(entry.domain, entry.version) != entry.version:
                raise ValueError(f"case '{name}': opset {entry.version} of domain '{entry.domain}' differs from "
                                 f"the batch's {opsets[entry.domain]}; batch it separately")
        for field in ("node", "initializer", "input", "output", "value_info"):
            getattr(graph, field).extend(getattr(model.graph, field))
        inputs.update({f"{name}.{k}": v for k, v in _arrays(source, "input").items()})
        outputs.update({f"{name}.{k}": v for k, v in _arrays(source, "output").items()})
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets.items()])
    folder.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(folder / "network.onnx"))
    save_arrays(folder / "inputs.npz", {k: _stored(v) for k, v in inputs.items()})
    save_arrays(folder / "outputs.npz", {k: _stored(v) for k, v in outputs.items()})
    return folder


def batch_folder(cases: Sequence[tuple[str, Path]], root: Path) -> Path:
    """The test folder running ``cases``: merged below ``root`` (named after the first case), or, for
    a batch of one, the case's own folder (its file's quirks kept)."""
    if len(cases) == 1:
        return cases[0][1]
    return merge_tests(cases, root / ("kernels-" + cases[0][0].replace("/", "_")))


def batch_ids(groups: Sequence[Sequence[tuple[str, Path]]]) -> list[str]:
    """Test ids of ``groups``: the first and last case's names."""
    return [b[0][0] + (f"..{b[-1][0]}" if len(b) > 1 else "") for b in groups]
