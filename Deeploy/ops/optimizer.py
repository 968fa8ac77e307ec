"""Optimizer steps of training graphs: SGD (inputs weight, gradient and optionally the learning
rate as a constant scalar, else the float attribute ``lr``; ``weight - lr * gradient``). The op's
output is the weight's next value (``OpDef.updates``): a constant weight becomes a variable of
the network, stored in a mutable buffer that every run overwrites with that value."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from Deeploy.errors import OpError
from Deeploy.ops._attrs import attr_float, in_tensor, require_inputs
from Deeploy.ops._registry import Cost, OpDef, register
from Deeploy.ops.examples import F32, Case, act, const, frand
from Deeploy.ops.float_math import require_float

__all__ = ["SGDParams"]


@dataclass(frozen=True)
class SGDParams:
    shape: tuple[int, ...]
    lr: float


def _sgd_parse(node, graph):
    require_inputs(node, 2, 3)
    require_float(node, graph)
    weight, grad = graph.tensors[node.inputs[0]], graph.tensors[node.inputs[1]]
    if tuple(grad.shape) != tuple(weight.shape):
        raise OpError(node, f"the gradient has shape {list(grad.shape)}, the weight {list(weight.shape)}: "
                      "they must be equal")
    rate = in_tensor(node, graph, 2)
    if rate is not None:
        if not graph.is_constant(rate.name) or rate.size != 1:
            raise OpError(node, f"the learning rate '{rate.name}' must be a constant scalar")
        if "lr" in node.attrs:
            raise OpError(node, "gives the learning rate twice (input and attribute 'lr'); keep one")
        lr = float(rate.value.reshape(-1)[0])
    else:
        lr = attr_float(node, "lr", None)
        if lr is None:
            raise OpError(node, "needs the learning rate: the float attribute 'lr' or a constant third input")
    if not np.isfinite(lr):
        raise OpError(node, f"the learning rate {lr} is not finite")
    return SGDParams(tuple(weight.shape), float(lr))


def _sgd_reference(p, xs):
    w, g = xs[0].astype(np.float64), xs[1].astype(np.float64)
    return [(w - np.float64(np.float32(p.lr)) * g).astype(np.float32)]


def _sgd_cost(p, ins, outs):
    return Cost(ops=2 * outs[0].size, bytes=ins[0].nbytes + ins[1].nbytes + outs[0].nbytes)


def _sgd_cases(rng):
    return [Case("lr_attribute", (act(frand(rng, [4, 6]), F32), act(frand(rng, [4, 6]), F32)), dict(lr=0.05)),
            Case("lr_input", (act(frand(rng, [5]), F32), act(frand(rng, [5]), F32), const(np.array(0.25, F32))))]


register(OpDef("SGD", _sgd_parse, lambda p, ins: [(p.shape, ins[0].dtype)], _sgd_reference, _sgd_cost,
               tiling="broadcast", examples=_sgd_cases, updates=0))
