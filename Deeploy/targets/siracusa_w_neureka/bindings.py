"""Kernels of Siracusa_w_neureka: Siracusa's, plus the NPU job (``NeurekaConv``) on the
``neureka`` engine through its driver (``TargetLibraries/Neureka``)."""

from __future__ import annotations

from Deeploy.targets.npu.kernel import job_kernel
from Deeploy.targets.siracusa.bindings import SIRACUSA_BINDINGS
from Deeploy.targets.siracusa_w_neureka.ops import NEUREKA_SPEC

__all__ = ["NEUREKA_BINDINGS", "NEUREKA_CONV"]

NEUREKA_CONV = job_kernel(NEUREKA_SPEC, "neureka_conv.inc", "Deeploy.targets.siracusa_w_neureka.ops")

NEUREKA_BINDINGS = {**SIRACUSA_BINDINGS, "NeurekaConv": (NEUREKA_CONV,)}
