"""Kernels of GAP9_w_ne16: GAP9's (the Siracusa family's), plus the NE16 job (``Ne16Conv``) on the
``ne16`` engine through its driver (``TargetLibraries/NE16``)."""

from __future__ import annotations

from Deeploy.targets.gap9.platform import GAP9
from Deeploy.targets.gap9_w_ne16.ops import NE16_SPEC
from Deeploy.targets.npu.kernel import job_kernel

__all__ = ["NE16_BINDINGS", "NE16_CONV"]

NE16_CONV = job_kernel(NE16_SPEC, "ne16_conv.inc", "Deeploy.targets.gap9_w_ne16.ops")

NE16_BINDINGS = {**GAP9.bindings, "Ne16Conv": (NE16_CONV,)}
