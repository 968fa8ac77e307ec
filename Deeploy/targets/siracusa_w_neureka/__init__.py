"""Siracusa with its Neureka NPU and weight memory (``specs/neureka.md``)."""

from Deeploy.targets.siracusa_w_neureka import ops  # noqa: F401  (registers the NPU job, NeurekaConv)
