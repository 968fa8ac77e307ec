"""The Generic platform: portable C for the host, one unbounded memory."""

from Deeploy.passes.constant_folding import fold_constants
from Deeploy.passes.qdq import lower_qdq
from Deeploy.passes.variadic import split_variadic
from Deeploy.targets.generic.bindings import GENERIC_BINDINGS
from Deeploy.platform import MemoryLevel, Platform

__all__ = ["GENERIC", "PLATFORM"]

GENERIC = Platform(
    name="Generic",
    libraries=("Generic",),
    memory=(MemoryLevel("L2", None, alignment=4),),
    bindings=GENERIC_BINDINGS,
    passes=(split_variadic, lower_qdq, fold_constants),
    default_level="L2",
    cmake_platform="Generic",
)

PLATFORM = GENERIC
