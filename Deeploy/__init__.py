"""Deeploy: compile quantized ONNX networks to allocation-free C for microcontroller clusters."""
