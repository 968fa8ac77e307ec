"""Cortex-M: one Arm Cortex-M core on QEMU's MPS2/MPS3 boards."""
