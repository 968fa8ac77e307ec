"""An eager builder of integer ("fake-float") ONNX test networks.

``Net`` writes ONNX the way QuantLib-style exports do (FLOAT-declared inputs, outputs and
initializers holding integers, custom ops in the default domain with 1-element TENSOR attributes)
and, while doing so, evaluates every node at once with the compiler's numpy references
(``Deeploy.ops``). The eager values let a generator calibrate each RequantShift on the real
activations it will see; the per-tensor bounds (largest magnitude any input of the declared types
could produce) let it keep every accumulator inside int32.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from Deeploy.frontend.onnx_loader import _attribute_value
from Deeploy.ir.dtypes import dtype_of_values
from Deeploy.ir.graph import NAME_SCOPES_KEY, Graph, Node, Tensor
from Deeploy.ops import get_op
from DeeployTest.generators.calib import calibrate
from DeeployTest.generators.limits import INT32_LIMIT, BuildError

__all__ = ["Net", "tensor_attr"]


def tensor_attr(value, rank: int = 1, dtype=np.float32) -> TensorProto:
    """A 1-element TENSOR attribute of rank 0 or 1, as QuantLib exports write them."""
    arr = np.asarray(value, dtype=dtype).reshape(() if rank == 0 else (1,))
    return numpy_helper.from_array(arr)


class Net:
    """An ONNX graph under construction, evaluated eagerly.

    ``opset``: the default-domain opset written into the file. ``ort_opset``: the opset used
    when onnxruntime checks the standard nodes (for files that, like some real exports, use an
    attribute form that their declared opset no longer allows).
    """

    def __init__(self, name: str, opset: int = 13, ort_opset: int | None = None):
        self.name = name
        self.opset = opset
        self.ort_opset = ort_opset
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[TensorProto] = []
        self.inputs: list[str] = []
        self.outputs: list[str] = []
        self.graph = Graph(name, {}, [], [], [], opset=opset)   # the ops evaluate with the file's meaning
        self.values: dict[str, np.ndarray] = {}
        self.bounds: dict[str, int] = {}
        self._counters: dict[str, int] = {}
        self._used: set[str] = set()
        self.ort_skip: set[str] = set()  # node names onnxruntime cannot run (non-standard use)
        # quirks of real exports, for the frontend: node list in reverse order, and the
        # default-domain opset import listed twice (plus PACTOps)
        self.reverse_nodes = False
        self.duplicate_opset = False
        # module path of the nodes being added, written as torch.onnx.export(dynamo=True) does:
        # node metadata pkg.torch.onnx.name_scopes = repr(['', 'layers', 'layers.0', <node name>])
        self.scopes: tuple[str, ...] = ()

    # ---- naming ------------------------------------------------------------------------------
    def fresh(self, base: str) -> str:
        k = self._counters.get(base, 0)
        while True:
            name = base if k == 0 else f"{base}_{k}"
            k += 1
            if name not in self._used:
                self._counters[base] = k
                self._used.add(name)
                return name

    def _claim(self, name: str) -> None:
        if name in self._used:
            raise BuildError(f"name '{name}' used twice")
        self._used.add(name)

    # ---- graph inputs, constants, outputs -----------------------------------------------------
    def input(self, name: str, value) -> str:
        """A graph input with its sample value; its integer type is the narrowest that holds
        the sample (what the test runner infers from inputs.npz)."""
        value = np.asarray(value, dtype=np.int64)
        self._claim(name)
        dtype = dtype_of_values(value)
        self.graph.tensors[name] = Tensor(name, tuple(value.shape), dtype)
        self.graph.inputs.append(name)
        self.inputs.append(name)
        self.values[name] = value
        # 8-bit inputs may hold anything of their type; wider ones (accumulators fed to a
        # single-op test) are bounded by their sample
        self.bounds[name] = dtype.magnitude if dtype.bits <= 8 else int(np.max(np.abs(value), initial=0))
        return name

    def const(self, value, name: str | None = None, dtype=np.float32) -> str:
        """An initializer; stored as ``dtype`` (FLOAT for data, int64 for shapes/indices)."""
        value = np.asarray(value)
        ivalue = np.asarray(value, dtype=np.int64)
        if not np.array_equal(ivalue, value):
            raise BuildError(f"constant '{name}' holds non-integer values")
        name = self.fresh(name or "const")
        if np.dtype(dtype) == np.float32 and ivalue.size and np.max(np.abs(ivalue)) > 2 ** 24:
            dtype = np.int32  # beyond exact float32 integers: an INT32 initializer, as some exports do
        stored = np.asarray(value, dtype=dtype)
        if not np.array_equal(stored.astype(np.int64), ivalue):
            raise BuildError(f"constant '{name}' does not fit {np.dtype(dtype)}")
        self.initializers.append(numpy_helper.from_array(stored, name))
        lo, hi = (int(ivalue.min()), int(ivalue.max())) if ivalue.size else (0, 0)
        self.graph.tensors[name] = Tensor(name, tuple(ivalue.shape), dtype_of_values(ivalue), ivalue)
        self.values[name] = ivalue
        self.bounds[name] = max(abs(lo), abs(hi))
        return name

    def output(self, *names: str) -> None:
        for n in names:
            self.outputs.append(n)
            self.graph.outputs.append(n)

    def rename(self, old: str, new: str) -> str:
        """Rename an activation everywhere (e.g. a graph output to 'output')."""
        self._claim(new)
        for proto in self.nodes:
            for field in (proto.input, proto.output):
                for k, v in enumerate(field):
                    if v == old:
                        field[k] = new
        for node in self.graph.nodes:
            node.inputs = [new if i == old else i for i in node.inputs]
            node.outputs = [new if o == old else o for o in node.outputs]
        t = self.graph.tensors.pop(old)
        t.name = new
        self.graph.tensors[new] = t
        self.values[new] = self.values.pop(old)
        self.bounds[new] = self.bounds.pop(old)
        for lst in (self.outputs, self.graph.outputs, self.inputs, self.graph.inputs):
            lst[:] = [new if v == old else v for v in lst]
        return new

    # ---- nodes -------------------------------------------------------------------------------
    def node(self, op: str, inputs: Sequence[str], attrs: dict[str, Any] | None = None,
             name: str | None = None, outputs: Sequence[str] | None = None, n_out: int = 1,
             domain: str = "", ort: bool = True):
        """Add one node and evaluate it. Returns the output name (or list of names)."""
        name = self.fresh(name or op)
        if outputs is None:
            outputs = [name + "_output_0"] if n_out == 1 else [f"{name}_output_{k}" for k in range(n_out)]
        for o in outputs:
            self._claim(o)
        attrs = {k: v for k, v in (attrs or {}).items() if v is not None}
        proto = helper.make_node(op, list(inputs), list(outputs), name=name, domain=domain, **attrs)
        if self.scopes:
            proto.metadata_props.add(key=NAME_SCOPES_KEY, value=repr(["", *self.scopes, name]))
        self.nodes.append(proto)
        if not ort:
            self.ort_skip.add(name)

        node = Node(name, op, list(inputs), list(outputs),
                    {a.name: _attribute_value(a) for a in proto.attribute}, domain)
        for o in outputs:
            self.graph.tensors[o] = Tensor(o)
        opdef = get_op(node)
        node.params = opdef.parse(node, self.graph)
        ins = [self.graph.tensors[i] if i else None for i in inputs]
        specs = opdef.infer(node.params, ins)
        results = opdef.reference(node.params, [self.values[i] if i else None for i in inputs])
        for o, (shape, dtype), value in zip(outputs, specs, results):
            t = self.graph.tensors[o]
            t.shape, t.dtype = tuple(int(d) for d in shape), dtype
            value = np.asarray(value, dtype=np.int64)
            if tuple(value.shape) != t.shape:
                raise BuildError(f"{op} '{name}': reference shape {value.shape} != inferred {t.shape}")
            if value.size and (value.min() < dtype.min or value.max() > dtype.max):
                raise BuildError(f"{op} '{name}': values [{value.min()}, {value.max()}] beyond {dtype}")
            self.values[o] = value
        self.graph.nodes.append(node)
        for o, b in zip(outputs, self._bound(node)):
            t = self.graph.tensors[o]
            if b >= INT32_LIMIT and t.dtype.bits <= 32:
                raise BuildError(f"{op} '{name}': worst-case magnitude {b} of '{o}' overflows int32")
            self.bounds[o] = int(b)
        return outputs[0] if len(outputs) == 1 else list(outputs)

    def _bound(self, node: Node) -> list[int]:
        """Largest |value| each output can take for any inputs of their declared types (the op's
        magnitude rule; without one, no larger than its first input)."""
        bounds = [self.bounds[i] if i else 0 for i in node.inputs]
        rule = get_op(node).magnitude
        if rule is None:
            return [bounds[0]] * len(node.outputs)
        ins = [self.graph.tensors[i] if i else None for i in node.inputs]
        return rule(node.params, bounds, ins, [self.graph.tensors[o].dtype for o in node.outputs])

    # ---- conveniences ------------------------------------------------------------------------
    def value(self, name: str) -> np.ndarray:
        return self.values[name]

    def shape(self, name: str) -> tuple[int, ...]:
        return self.graph.tensors[name].shape

    def rqs(self, x: str, mul, add, shift: int, signed: bool = True, n_levels: int = 256,
            name: str | None = None, attr_style: str = "tensor", mul_name: str | None = None,
            add_name: str | None = None) -> str:
        """RequantShift with explicit parameters. ``mul``/``add``: scalars, arrays, or names of
        existing constants (shared initializers, as in real exports).

        attr_style: 'tensor' (1-element TENSOR attributes, n_levels_out), 'tensor0' (rank-0
        div), 'int' (plain INT attributes with n_levels)."""
        mul_in = mul if isinstance(mul, str) else self.const(mul, mul_name or "rqs_mul")
        add_in = add if isinstance(add, str) else self.const(add, add_name or "rqs_add")
        mul_v, add_v = self.values[mul_in], self.values[add_in]
        bound = self.bounds[x]
        worst = int(np.max(np.abs(mul_v))) * bound + int(np.max(np.abs(add_v))) + (1 << max(shift - 1, 0))
        if worst >= INT32_LIMIT:
            raise BuildError(f"RequantShift on '{x}': worst-case accumulator {worst} overflows int32")
        div = 1 << shift
        if attr_style == "int":
            attrs = {"div": div, "n_levels": n_levels, "signed": int(signed)}
        else:
            rank = 0 if attr_style == "tensor0" else 1
            attrs = {"div": tensor_attr(div, rank), "n_levels_out": tensor_attr(n_levels),
                     "signed": tensor_attr(int(signed))}
        return self.node("RequantShift", [x, mul_in, add_in], attrs, name=name or "RequantShift")

    def calib_rqs(self, x: str, signed: bool = True, axis: int | None = None, vec_shape=None,
                  target: float | None = None, center: bool = True, max_shift: int = 20,
                  offset_rng: np.random.Generator | None = None, name: str | None = None,
                  attr_style: str = "tensor", percentile: float = 99.7,
                  zero_frac: float | None = None) -> str:
        """A RequantShift calibrated on the eager value of ``x`` (see ``calibrate``).

        axis: per-channel along this axis of x (mul/add shaped ``vec_shape`` or ``[C,1,...]``
        trailing ones to broadcast), else scalar."""
        mul, add, shift = calibrate(self.values[x], self.bounds[x], signed=signed, axis=axis,
                                    target=target, center=center, max_shift=max_shift,
                                    rng=offset_rng, percentile=percentile, zero_frac=zero_frac)
        if axis is not None:
            rank = len(self.shape(x))
            ax = axis % rank
            shape = vec_shape or (mul.size,) + (1,) * (rank - ax - 1)
            mul, add = mul.reshape(shape), add.reshape(shape)
        else:
            mul, add = int(mul[0]), int(add[0])
        return self.rqs(x, mul, add, shift, signed=signed, name=name, attr_style=attr_style,
                        mul_name=name and f"{name}.mul", add_name=name and f"{name}.add")

    # ---- export ------------------------------------------------------------------------------
    def to_onnx(self, value_info: bool = True) -> onnx.ModelProto:
        def vi(name):
            return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(self.shape(name)))

        produced = [o for n in self.nodes for o in n.output]
        inner = [o for o in produced if o not in self.outputs] if value_info else []
        nodes = self.nodes[::-1] if self.reverse_nodes else self.nodes
        graph = helper.make_graph(nodes, self.name, [vi(n) for n in self.inputs],
                                  [vi(n) for n in self.outputs], self.initializers,
                                  value_info=[vi(n) for n in inner])
        opsets = [helper.make_opsetid("", self.opset)]
        if self.duplicate_opset:
            opsets += [helper.make_opsetid("PACTOps", 1), helper.make_opsetid("", self.opset)]
        model = helper.make_model(graph, opset_imports=opsets, producer_name="DeeployTest/generate_tests.py")
        model.ir_version = 8
        return model

    def input_values(self) -> list[np.ndarray]:
        return [self.values[n] for n in self.inputs]

    def output_values(self) -> list[np.ndarray]:
        return [self.values[n] for n in self.outputs]

    def data_bytes(self) -> int:
        """Bytes of inputs and outputs in their narrowest integer types."""
        total = 0
        for v in self.input_values() + self.output_values():
            if v.size:
                total += v.size * dtype_of_values(v).nbytes
        return total

