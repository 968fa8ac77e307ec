"""Kernels of GAP9_w_ne16: GAP9's (the Siracusa family's), plus the NE16 job (``Ne16Conv``) on the
``ne16`` engine through its driver (``TargetLibraries/NE16``)."""

from __future__ import annotations

from Deeploy.signature import param
from Deeploy.targets.gap9.platform import GAP9
from Deeploy.targets.gap9_w_ne16.ops import NE16_SPEC
from Deeploy.targets.npu.kernel import job_kernel

__all__ = ["NE16_BINDINGS", "NE16_CONV"]

NE16_CONV = job_kernel(NE16_SPEC, "ne16_conv.inc", "Deeploy.targets.gap9_w_ne16.ops",
                       (param("uint32_t cols", "${run_columns(p)}",
                              "1x1: a plane's pixels as 3 rows of this many and the rest (Ne16Params.planes), "
                              "0: the plane as one job"),), ("run_columns",))

NE16_BINDINGS = {**GAP9.bindings, "Ne16Conv": (NE16_CONV,)}
