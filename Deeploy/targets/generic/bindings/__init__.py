"""The Generic platform's binding table: op type -> kernels (first accepting one wins), each
with its typed C signature, from which its call is rendered. Kernels are type-generic (see
Kernel); one module per family defines them. A float network's kernels come first: they
accept float nodes only, integer nodes fall through to the integer kernels of the op."""

from __future__ import annotations

from Deeploy.targets.generic.bindings.core import CORE_KERNELS
from Deeploy.targets.generic.bindings.data import DATA_KERNELS
from Deeploy.targets.generic.bindings.floats import FLOAT_KERNELS
from Deeploy.targets.generic.bindings.nonlinear import NONLINEAR_KERNELS
from Deeploy.platform import Kernel

__all__ = ["GENERIC_BINDINGS"]

_INTEGER: dict[str, tuple[Kernel, ...]] = {**CORE_KERNELS, **DATA_KERNELS, **NONLINEAR_KERNELS}
GENERIC_BINDINGS: dict[str, tuple[Kernel, ...]] = {op: FLOAT_KERNELS.get(op, ()) + _INTEGER.get(op, ())
                                                   for op in {**_INTEGER, **FLOAT_KERNELS}}
