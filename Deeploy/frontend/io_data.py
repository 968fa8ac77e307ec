"""Reference data files: ``inputs.npz`` / ``outputs.npz`` map positionally to the graph's
inputs / outputs; extra trailing arrays (copies of initializers) are ignored."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from Deeploy.errors import FrontendError
from Deeploy.frontend.onnx_loader import integer_values
from Deeploy.ir.graph import Graph

__all__ = ["load_npz_arrays", "map_arrays"]


def load_npz_arrays(path: str | Path) -> list[np.ndarray]:
    """The arrays of an npz file in stored order."""
    path = Path(path)
    if not path.is_file():
        raise FrontendError(f"{path}: no such file")
    try:
        with np.load(path, allow_pickle=False) as data:
            return [data[k] for k in data.files]
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise FrontendError(f"{path}: not a readable npz file ({exc})") from None


def map_arrays(path: str | Path, arrays: list[np.ndarray], names: list[str], graph: Graph,
               role: str) -> dict[str, np.ndarray]:
    """Pair ``arrays`` with the graph tensors ``names`` by position, checking shapes.

    Returns int64 arrays keyed by tensor name. ``role`` is 'input' or 'output' for messages.
    """
    if len(arrays) < len(names):
        raise FrontendError(f"{path}: holds {len(arrays)} arrays but the network has {len(names)} "
                            f"{role}s ({', '.join(names)})")
    mapped = {}
    for k, (name, array) in enumerate(zip(names, arrays)):
        shape = graph.tensors[name].shape
        what = f"{path}: array {k} (for {role} '{name}')"
        values = integer_values(array, what)
        if shape is not None and tuple(values.shape) != tuple(shape):
            if values.size != int(np.prod(shape, dtype=np.int64)):
                raise FrontendError(f"{what} has shape {list(values.shape)}, expected {list(shape)}")
            values = values.reshape(shape)
        mapped[name] = values
    return mapped
