"""A long chain network (Add, RequantShift, Relu repeated on int8) for the compiler's scale checks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

__all__ = ["write_chain"]


def write_chain(folder: Path, nodes: int, width: int = 16) -> Path:
    """``folder``/network.onnx: ``nodes`` nodes x -> Add(3) -> RequantShift(*5 + 2, >> 3) -> Relu -> ...
    (an Add and its RequantShift fuse on platforms that fuse them),
    and inputs.npz (int8 values). Returns the ONNX path."""
    folder.mkdir(parents=True, exist_ok=True)
    inits = [numpy_helper.from_array(np.array([v], np.float32), name) for name, v in (("c", 3), ("mul", 5), ("add", 2))]
    made, x = [], "x"
    for k in range(nodes):
        y = "y" if k == nodes - 1 else f"t{k}"
        if k % 3 == 0:
            made.append(helper.make_node("Add", [x, "c"], [y], name=f"add{k}"))
        elif k % 3 == 1:
            made.append(helper.make_node("RequantShift", [x, "mul", "add"], [y], name=f"rq{k}", div=8, n_levels=256,
                                         signed=1))
        else:
            made.append(helper.make_node("Relu", [x], [y], name=f"relu{k}"))
        x = y
    graph = helper.make_graph(made, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, width])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, width])], inits)
    path = folder / "network.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    np.savez(folder / "inputs.npz", x=np.arange(-width // 2, width - width // 2, dtype=np.int8).reshape(1, width))
    return path
