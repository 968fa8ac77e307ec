"""The firmware interface of a generated network: the C names it exports (prefixed by
``--name`` so several networks link into one program) and what Network.h says about each graph
input and output (shape, element type, quantization where the graph defines it)."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

import numpy as np

from Deeploy.errors import DeeployError
from Deeploy.ir.graph import Graph

__all__ = ["NetworkApi", "io_quantization", "io_quantizations"]

DEFAULT_NAME = "DeeployNetwork"
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class NetworkApi:
    """Exported C names. ``name`` None (or ``DeeployNetwork``) keeps the historical symbols
    (``InitNetwork``, ``RunNetwork``, ``DeeployNetwork_inputs``...); a name NET gives
    ``NET_InitNetwork``, ``NET_RunNetwork``, ``NET_inputs``... and macros ``NET_...``."""

    name: str | None = None

    def __post_init__(self):
        if self.name is not None and not _IDENT.fullmatch(self.name):
            raise DeeployError(f"--name '{self.name}' is not a C identifier (letters, digits and _, "
                               f"not starting with a digit), e.g. --name kws")
        if self.name is not None and self.name != DEFAULT_NAME and re.fullmatch(r"deeploy(_.*)?", self.name, re.I):
            raise DeeployError(f"--name '{self.name}' would give names of the runtime's own (deeploy_..., "
                               f"DEEPLOY_...); choose another, e.g. --name kws")
        if self.name == DEFAULT_NAME:
            object.__setattr__(self, "name", None)

    @property
    def prefix(self) -> str:
        """Prefix of the exported data symbols (inputs, outputs, user arenas)."""
        return self.name or DEFAULT_NAME

    @property
    def init(self) -> str:
        return f"{self.name}_InitNetwork" if self.name else "InitNetwork"

    @property
    def run(self) -> str:
        return f"{self.name}_RunNetwork" if self.name else "RunNetwork"

    @property
    def library(self) -> str:
        """The CMake target of the network's static library."""
        return f"{self.name}_network" if self.name else "deeploy_network"

    @property
    def header(self) -> str | None:
        """``NET.h``, the header a firmware includes (it includes ``Network.h`` beside it); None
        without a name or for a name whose header would be another file of the output."""
        return f"{self.name}.h" if self.name and self.name.lower() not in ("network", "testdata") else None

    @property
    def macro(self) -> str:
        """Prefix of the macros of Network.h."""
        return self.name.upper() if self.name else "DEEPLOY_NETWORK"


def _values(graph: Graph, name: str) -> str | None:
    """The constant's values as text (a scalar, or a list of up to 8), None if not constant."""
    t = graph.tensors.get(name)
    if t is None or t.value is None:
        return None
    flat = np.asarray(t.value).reshape(-1)
    text = [f"{v:.9g}" if flat.dtype.kind == "f" else str(int(v)) for v in flat[:8].tolist()]
    if flat.size == 1:
        return text[0]
    return "[" + ", ".join(text) + (", ..." if flat.size > 8 else "") + f"] ({flat.size} channels)"


def _requant(node) -> str | None:
    """The requantization a node ends with (RequantShift or a kernel fused with one)."""
    p = node.params
    fields = [p] + ([getattr(p, f.name) for f in dataclasses.fields(p)] if dataclasses.is_dataclass(p) else [])
    for q in fields:
        if all(hasattr(q, a) for a in ("shift", "lo", "hi", "mul_per_channel")):
            rounded = f"(acc*mul + add + 2^{q.shift - 1}) >> {q.shift}" if q.shift else "acc*mul + add"
            return (f"requantized by {node.op} '{node.name}': y = clip({rounded}, {q.lo}, {q.hi}); "
                    f"real-valued scale: not defined by the graph")
    return None


def io_quantization(graph: Graph, name: str, output: bool) -> str:
    """One line on the quantization of a graph input or output, as far as the graph defines it."""
    if output:
        node = graph.producer(name)
        if node is not None and node.op == "QuantizeLinear":
            zp = _values(graph, node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else "0"
            return (f"real value = (y - zero point) * scale (QuantizeLinear '{node.name}'): "
                    f"scale {_values(graph, node.inputs[1])}, zero point {zp}")
        if node is not None and node.op == "DequantizeLinear":
            return f"dequantized (float) by DequantizeLinear '{node.name}'"
        text = _requant(node) if node is not None else None
        if text:
            return text
    else:
        for node in graph.nodes:
            if node.op == "DequantizeLinear" and node.inputs and node.inputs[0] == name:
                zp = _values(graph, node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else "0"
                return (f"real value = (x - zero point) * scale (DequantizeLinear '{node.name}'): "
                        f"scale {_values(graph, node.inputs[1])}, zero point {zp}")
    return "quantization: not defined by the graph"


def io_quantizations(graph: Graph) -> list[str]:
    """The quantization lines of every graph input, then every output (take them from the graph as
    loaded: lowering folds its QuantizeLinear/DequantizeLinear nodes into integer ops)."""
    return [io_quantization(graph, n, False) for n in graph.inputs] + [io_quantization(graph, n, True)
                                                                       for n in graph.outputs]
