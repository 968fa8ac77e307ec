"""Reference data files: ``inputs.npz`` / ``outputs.npz`` matched to the graph's inputs / outputs.

Matching rules (every violation is a ``FrontendError`` naming the file, the array and the tensor):

- By name: when the arrays are named after the tensors (every input, resp. output, has an array
  of its name), each tensor gets the array of its name.
- By position otherwise, for unnamed arrays (``np.savez(path, *arrays)`` stores ``arr_0``,
  ``arr_1``, ...; ``input_0``.../``output_0``... and other names that name no tensor of the role
  count as unnamed too). An array named like one of the tensors but stored at another tensor's
  position is refused as ambiguous.
- A file with more arrays than the network has inputs, in a network that lists initializers as
  graph inputs too (``torch.onnx.export`` with ``keep_initializers_as_inputs``), is read by
  position in that declared input order: the arrays at initializers' positions must hold their
  values, and arrays after the last declared input (state the exporter kept, such as BatchNorm
  ``num_batches_tracked`` counters) are ignored with a note.
- Extra arrays: accepted if they are copies of constants of the network (same shape and
  values; some exporters store the initializers too), or, when every tensor has an array of its
  name, if their own name names no tensor of the network (ignored with a note: data the file
  keeps for another tool, such as a training graph's loss gradient). Any other extra array, and
  any missing one, is an error.
- Shapes: an array must have its tensor's shape, except that size-1 dims may be added or
  dropped (``[1, 10]`` for ``[10]``): that keeps every value at its place. Any other difference,
  even with the same number of elements (``[4, 6]`` for ``[6, 4]``), is an error, since reading
  the data in another shape would silently reinterpret it.
"""

from __future__ import annotations

import re
import sys
import zipfile
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from Deeploy.errors import FrontendError
from Deeploy.frontend.onnx_loader import data_values, integer_values
from Deeploy.ir.graph import Graph

__all__ = ["load_npz_arrays", "map_arrays", "check_shape", "SHAPE_RULE"]

SHAPE_RULE = "arrays must have the tensor's shape; only size-1 dims may be added or dropped"


def load_npz_arrays(path: str | Path) -> dict[str, np.ndarray]:
    """The arrays of an npz file by name, in stored order."""
    path = Path(path)
    if not path.is_file():
        raise FrontendError(f"{path}: no such file; write it with numpy.savez (one array per graph tensor)")
    if path.stat().st_size == 0:
        raise FrontendError(f"{path}: the file is empty, not a valid .npz file (write it with numpy.savez)")
    try:
        with open(path, "rb") as f:
            magic = f.read(4)
    except OSError as exc:
        raise FrontendError(f"{path}: cannot be read ({exc.strerror})") from None
    if magic not in (b"PK\x03\x04", b"PK\x05\x06"):
        raise FrontendError(f"{path}: not a valid .npz file (not a zip archive of arrays); "
                            "write it with numpy.savez")
    try:
        with np.load(path, allow_pickle=False) as data:
            return {key: data[key] for key in data.files}
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, KeyError) as exc:
        reason = ("an array holds Python objects, which are not loaded" if "pickle" in str(exc)
                  else f"{type(exc).__name__}: {exc}")
        raise FrontendError(f"{path}: not a valid .npz file ({reason}); write it with numpy.savez") from None


def _squeezed(shape: Sequence[int]) -> tuple[int, ...]:
    return tuple(int(d) for d in shape if d != 1)


def check_shape(values: np.ndarray, shape: Sequence[int], what: str) -> np.ndarray:
    """``values`` in the tensor's ``shape``; the shapes may differ only by size-1 dims."""
    shape = tuple(int(d) for d in shape)
    if tuple(values.shape) == shape:
        return values
    if values.size == int(np.prod(shape, dtype=np.int64)) and _squeezed(values.shape) == _squeezed(shape):
        return values.reshape(shape)
    error = FrontendError(f"{what} has shape {list(values.shape)}: give the tensor's shape {list(shape)}")
    error.details = f"{values.size} values, expected {int(np.prod(shape, dtype=np.int64))}; {SHAPE_RULE}"
    raise error


def _is_constant_copy(array: np.ndarray, graph: Graph) -> bool:
    for tensor in graph.constants():
        if tuple(tensor.shape) == tuple(array.shape) and array.dtype.kind in "iubf":
            with np.errstate(invalid="ignore"):
                if np.array_equal(tensor.value, array):
                    return True
    return False


def _positional_key(key: str, role: str) -> bool:
    return re.fullmatch(rf"(arr|{role})_\d+", key) is not None


def _pairing(path: Path, keys: list[str], names: list[str], role: str) -> list[tuple[int, str]]:
    """(tensor position, array key) pairs: by name if every tensor has an array of its name,
    else by position."""
    if set(names) <= set(keys):
        return [(k, name) for k, name in enumerate(names)]
    named = [key for key in keys if key in names]
    unnamed_style = all(_positional_key(key, role) or key not in names for key in keys)
    if named and not unnamed_style:
        missing = [n for n in dict.fromkeys(names) if n not in keys]
        raise FrontendError(f"{path}: has arrays named after {role}s ({', '.join(repr(n) for n in named)}) but "
                            f"none for {', '.join(repr(n) for n in missing)}; name every array after its {role} "
                            f"or store them unnamed in {role} order (numpy.savez(path, *arrays))")
    for position, key in enumerate(keys[:len(names)]):
        if key in names and names[position] != key:
            raise FrontendError(f"{path}: array '{key}' is named like {role} '{key}' (position "
                                f"{names.index(key)}) but stored at position {position}, the place of {role} "
                                f"'{names[position]}'; name every array after its {role} or store them in "
                                f"{role} order")
    if len(keys) < len(names):
        raise FrontendError(f"{path}: holds {len(keys)} arrays but the network has {len(names)} {role}s "
                            f"({', '.join(names)}); arrays for {', '.join(names[len(keys):])} are missing")
    return list(zip(range(len(names)), keys))


def _declared_pairing(path: Path, arrays: Mapping[str, np.ndarray], names: list[str],
                      graph: Graph) -> list[tuple[int, str]]:
    """(input position, array key) pairs of a positional file in the file's own input order, the
    initializers it lists as graph inputs included: their arrays must hold the initializers'
    values; arrays after the last declared input are ignored with a note, and initializers after the
    last array keep their values."""
    keys, declared = list(arrays), list(graph.declared_inputs)
    missing = [n for n in declared[len(keys):] if n in names]   # trailing initializers keep their values
    if missing:
        raise FrontendError(f"{path}: holds {len(keys)} arrays but the network lists {len(declared)} graph inputs "
                            f"(initializers included); arrays for {', '.join(missing)} are missing")
    pairs = []
    for key, name in zip(keys, declared):
        if name in names:
            pairs.append((names.index(name), key))
            continue
        t = graph.tensors[name]
        what = f"{path}: array '{key}' (for initializer '{name}', listed as a graph input)"
        values = check_shape(data_values(arrays[key], what), t.shape, what)
        if not np.array_equal(values.astype(t.value.dtype), t.value):
            raise FrontendError(f"{what} differs from the initializer's values, which the network is compiled "
                                "with; store the initializer's values there or leave it out of the graph inputs")
    for key in keys[len(declared):]:
        print(f"note: {path}: array '{key}' follows the network's {len(declared)} declared inputs; ignored",
              file=sys.stderr)
    return pairs


def map_arrays(path: str | Path, arrays: Mapping[str, np.ndarray] | Sequence[np.ndarray], names: list[str],
               graph: Graph, role: str) -> dict[str, np.ndarray]:
    """Match the arrays of ``path`` to the graph tensors ``names`` (see the module rules).

    ``arrays``: by name as :func:`load_npz_arrays` returns them (a plain sequence counts as
    unnamed). Returns int64 arrays (float32 when they hold non-integer values) keyed by tensor name, in the tensors' shapes where those are
    known. ``role`` is 'input' or 'output', for messages.
    """
    path = Path(path)
    if not isinstance(arrays, Mapping):
        arrays = {f"arr_{k}": a for k, a in enumerate(arrays)}
    keys = list(arrays)
    listed = [n for n in graph.declared_inputs if n not in names]   # initializers listed as graph inputs
    pairs = _pairing(path, keys, list(names), role)
    used = {key for _, key in pairs}
    unused = [key for key in keys if key not in used and not _is_constant_copy(arrays[key], graph)]
    if role == "input" and listed and unused and not set(names) <= set(keys):
        # arrays beyond the inputs that copy no constant: the file's positional order, initializers included
        pairs, unused = _declared_pairing(path, arrays, list(names), graph), []
    by_name = all(name in keys for name in names)
    extra = [key for key in unused if not by_name or _positional_key(key, role) or key in graph.tensors]
    for key in unused:
        if key not in extra:   # beside arrays named after every tensor, one naming nothing: say so
            print(f"note: {path}: array '{key}' names no tensor of the network; ignored", file=sys.stderr)
    if extra:
        raise FrontendError(f"{path}: holds {len(keys)} arrays, {len(extra)} more than the network's {len(names)} "
                            f"{role}s ({', '.join(names)}) and not copies of its constants: "
                            f"{', '.join(repr(k) for k in extra)}; remove them")
    mapped: dict[str, np.ndarray] = {}
    for position, key in pairs:
        name = names[position]
        what = f"{path}: array '{key}' (for {role} '{name}')"
        values = data_values(arrays[key], what)
        declared = graph.tensors[name].dtype
        if values.dtype.kind == "f" and name not in graph.float_declared and declared is not None \
                and not declared.is_float:
            integer_values(arrays[key], f"{what}, declared {declared.name} in the network,")  # not float data
        shape = graph.tensors[name].shape
        if shape is not None:
            values = check_shape(values, shape, what)
        if name in mapped and not np.array_equal(mapped[name], values):
            raise FrontendError(f"{what} differs from the other array for {role} '{name}', which the network "
                                f"lists twice; both must hold the same values")
        mapped[name] = values
    return mapped
