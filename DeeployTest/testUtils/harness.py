"""The test runners' harness is Deeploy's testbench (``Deeploy.codegen.testbench``)."""

from Deeploy.codegen.testbench import FLOAT_TOLERANCE, testbench_writer, write_harness  # noqa: F401
