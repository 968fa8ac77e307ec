"""Constant arrays as the generator writes them (``c_initializer``) read back bit for bit when a C
compiler builds them: float32 values of every magnitude (subnormals, extremes, signed zeros,
infinities), and integers of every width."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from Deeploy.codegen.emit import c_initializer

CC = shutil.which("cc") or shutil.which("gcc")


def _float_values() -> np.ndarray:
    rng = np.random.default_rng(7)
    bits = rng.integers(0, 2 ** 32, 4000, dtype=np.uint64).astype(np.uint32)   # any float32 pattern
    values = bits.view(np.float32)
    values = values[~np.isnan(values)]   # NaN payloads are not kept; NaN is checked by kind below
    special = np.array([0.0, -0.0, np.inf, -np.inf, 1e-45, -1e-45, 3.4028235e38, 1.1754944e-38, 0.1],
                       dtype=np.float32)
    return np.concatenate([special, values, rng.standard_normal(1000).astype(np.float32)])


@pytest.mark.skipif(CC is None, reason="needs a host C compiler")
@pytest.mark.parametrize("values", [
    _float_values(),
    np.array([-128, 0, 127, 5], dtype=np.int8),
    np.arange(-40000, 40000, 7, dtype=np.int32),
    np.array([0, 65535, 300], dtype=np.uint16),
], ids=["float32", "int8", "int32", "uint16"])
def test_arrays_read_back_exactly(values, tmp_path):
    ctype = {"f": "float", "i": f"int{values.itemsize * 8}_t", "u": f"uint{values.itemsize * 8}_t"}[values.dtype.kind]
    (tmp_path / "dump.c").write_text(
        "#include <stdint.h>\n#include <stdio.h>\n"
        f"static const {ctype} data[{values.size}] = {c_initializer(values)};\n"
        "int main(void) { fwrite(data, 1, sizeof data, stdout); return 0; }\n")
    subprocess.run([CC, "-std=gnu11", "-O0", "-o", str(tmp_path / "dump"), str(tmp_path / "dump.c")], check=True)
    raw = subprocess.run([str(tmp_path / "dump")], capture_output=True, check=True).stdout
    got = np.frombuffer(raw, dtype=values.dtype)
    np.testing.assert_array_equal(got.view(f"u{values.itemsize}"), values.view(f"u{values.itemsize}"))


@pytest.mark.skipif(CC is None, reason="needs a host C compiler")
def test_nan_reads_back_as_nan(tmp_path):
    (tmp_path / "nan.c").write_text(
        "#include <math.h>\n"
        f"static const float data[2] = {c_initializer(np.array([np.nan, 1.0], dtype=np.float32))};\n"
        "int main(void) { return isnan(data[0]) && data[1] == 1.0f ? 0 : 1; }\n")
    subprocess.run([CC, "-o", str(tmp_path / "nan"), str(tmp_path / "nan.c")], check=True)
    assert subprocess.run([str(tmp_path / "nan")]).returncode == 0
