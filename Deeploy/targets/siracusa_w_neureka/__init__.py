"""Siracusa with its Neureka NPU and weight memory (``specs/neureka.md``)."""
