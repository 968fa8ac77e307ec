"""The Generic platform's binding table: op type -> kernels (first accepting one wins), each
with its typed C signature, from which its call is rendered. Kernels are type-generic (see
Kernel); one module per family defines them."""

from __future__ import annotations

from Deeploy.targets.generic.bindings.core import CORE_KERNELS
from Deeploy.targets.generic.bindings.data import DATA_KERNELS
from Deeploy.targets.generic.bindings.nonlinear import NONLINEAR_KERNELS
from Deeploy.targets.platform import Kernel

__all__ = ["GENERIC_BINDINGS"]

GENERIC_BINDINGS: dict[str, tuple[Kernel, ...]] = {**CORE_KERNELS, **DATA_KERNELS, **NONLINEAR_KERNELS}
