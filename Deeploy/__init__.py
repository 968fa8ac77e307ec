"""Deeploy: compile quantized ONNX networks to allocation-free C for microcontroller clusters."""

__version__ = "0.1.0"
