"""Reductions: ReduceMean (integer mean, rounding half up), ReduceSum and IntegerMean, with axes
as attributes or inputs depending on the opset."""

from __future__ import annotations

import numpy as np

from DeeployTest.generators.builder import Net
from DeeployTest.generators.registry import s8, test, u8


def _reduce(op, x, attrs=None, axes_input=None, opset=13, domain=""):
    net = Net(op, opset=opset)
    x = net.input("input", x)
    ins = [x]
    if axes_input is not None:
        ins.append(net.const(np.asarray(axes_input, dtype=np.int64), f"{op}.axes", dtype=np.int64))
    net.output(net.node(op, ins, attrs, domain=domain))
    return net


@test("Kernels/ReduceMean/Axis1_NoKeepDims")
def reduce_mean_axis1(rng):
    return _reduce("ReduceMean", s8(rng, (1, 16, 8, 8)), {"axes": [1], "keepdims": 0}, opset=11)


@test("Kernels/ReduceMean/LastAxis_KeepDims")
def reduce_mean_last(rng):
    # width 6: many means end in exactly .5, where rounding half up matters
    return _reduce("ReduceMean", s8(rng, (2, 16, 6)), {"axes": [-1], "keepdims": 1}, opset=13)


@test("Kernels/ReduceMean/All_Axes_Uint8")
def reduce_mean_all(rng):
    return _reduce("ReduceMean", u8(rng, (1, 4, 6, 6)), {"keepdims": 0}, opset=13)


@test("Kernels/ReduceMean/Axes_Input_Opset18")
def reduce_mean_input(rng):
    return _reduce("ReduceMean", s8(rng, (1, 8, 6, 4)), {"keepdims": 1}, axes_input=[2, 3], opset=18)


@test("Kernels/ReduceSum/Axis1_NoKeepDims")
def reduce_sum_axis1(rng):
    return _reduce("ReduceSum", s8(rng, (1, 16, 8, 8)), {"axes": [1], "keepdims": 0}, opset=11)


@test("Kernels/ReduceSum/Axes_Input_KeepDims")
def reduce_sum_input(rng):
    return _reduce("ReduceSum", s8(rng, (1, 8, 6, 6)), {"keepdims": 1}, axes_input=[2, 3], opset=13)


@test("Kernels/ReduceSum/All_Axes")
def reduce_sum_all(rng):
    return _reduce("ReduceSum", u8(rng, (4, 32)), {"keepdims": 0}, opset=13)


@test("Kernels/IntegerMean/GlobalAverage")
def integer_mean_global(rng):
    return _reduce("IntegerMean", s8(rng, (1, 16, 6, 6)), {"axes": [2, 3], "keepdims": 1})


@test("Kernels/IntegerMean/LastAxis_NoKeepDims")
def integer_mean_last(rng):
    return _reduce("IntegerMean", s8(rng, (1, 8, 20)), {"axes": [-1], "keepdims": 0})
