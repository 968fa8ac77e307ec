"""The cluster's iRMSNorm on the PULP DSP extension (TargetLibraries/Siracusa/kernels/
irmsnorm_lanes.inc: the sum of squares by byte-lane dot products, the outputs by one exact high
multiply per element): signed and unsigned 8-bit inputs, 8-, 16- and 32-bit weights of both
signs, widths that are no multiple of 4 (rows starting inside a word, an odd element last),
fewer rows than cores (rows shared between cores) and more, inputs at the 8-bit extremes, a row
whose std is 1, an output offset (uint8 and int8 out), and the corpus's RMSNorm kernel test and microLlama64. Siracusa binds the lanes
kernel to these calls, and their outputs match the reference interpreter's goldens bit-exactly on
Generic, on Siracusa with 1 and 8 cores and tiled."""

from __future__ import annotations

import argparse
import shutil

import pytest

from DeeployTest.generators.builder import Net
from DeeployTest.testUtils.runner import run_test
from DeeployTest.test_suite.conftest import CORPUS
from DeeployTest.test_suite.kernel_cases import (SIRACUSA, byte_values, case_batch, _check, needs_qemu, run_generic,
                                                 run_siracusa, run_tiled)

L1 = 2000   # several tiles


def _rms(shape, w_lo, w_hi, D, unsigned_in=False, **attrs):
    def build(rng):
        v = byte_values(rng, shape, unsigned_in)
        v.reshape(-1, shape[-1])[1] = rng.integers(0 if unsigned_in else -1, 2, size=shape[-1])  # std 1
        w = rng.integers(w_lo, w_hi, size=shape[-1])
        net = Net("iRMSNorm")
        net.output(net.node("iRMSNorm", [net.input("input", v), net.const(w, "weight")],
                            {"D": D, "n_levels": 256, **attrs}, name="rmsnorm"))
        return net
    return build


CASES = [
    # microLlama's: 32-bit weights, shift 16; 16 rows on 8 cores
    ("int8_w32_16x64", _rms((1, 16, 64), -4_000_000, 4_000_000, 2**16)),
    ("int8_w8_3x37_rows_shared", _rms((3, 37), -128, 128, 8)),
    ("int8_w16_5x130", _rms((5, 130), -3000, 3000, 2**10)),
    ("uint8_w8_9x19", _rms((9, 19), -128, 128, 4, unsigned_in=True)),
    # an output offset: uint8 out (the clip as cv.clipr around the offset) and int8 out (cv.max / cv.min)
    ("int8_w32_16x63_uint8_out", _rms((16, 63), -4_000_000, 4_000_000, 2**16, offset=128, signed=0)),
    ("int8_w8_3x37_offset", _rms((3, 37), -128, 128, 8, offset=-5)),
]


batch_dir = case_batch(CASES, 29)


def test_generic(batch_dir, capsys):
    run_generic(batch_dir, capsys)


@needs_qemu
@pytest.mark.parametrize("cores", [1, 8])
def test_siracusa_runs_the_lanes_kernel(batch_dir, cores, capsys):
    run_siracusa(batch_dir, cores, capsys)
    assert "iRMSNorm_XP_" in (batch_dir / f"siracusa{cores}" / "network" / "Network.c").read_text()


def _tiled(test, gen, l1, capsys):
    run_tiled(test, gen, l1, capsys)
    assert "iRMSNorm_XP_" in (gen / "network" / "Network.c").read_text()


@needs_qemu
def test_siracusa_tiled(batch_dir, capsys):
    _tiled(batch_dir, batch_dir / "tiled", L1, capsys)


@needs_qemu
@pytest.mark.parametrize("cores", [1, 8])
def test_corpus_rmsnorm(cores, tmp_path, capsys):
    args = argparse.Namespace(test=str(CORPUS / "Kernels/Integer/RMSNorm"), verbose=False, skipgen=False,
                              skipsim=False, gen_dir=str(tmp_path), cores=cores, profileUntiled=False, timeout=None)
    _check(run_test(args, SIRACUSA, {"cores": cores}), capsys.readouterr().out)
    assert "iRMSNorm_XP_" in (tmp_path / "network" / "Network.c").read_text()


@needs_qemu
@pytest.mark.parametrize("model", ["Kernels/Integer/RMSNorm", "Models/microLlama/INT8/microLlama64"])
def test_corpus_tiled(model, tmp_path, capsys):
    _tiled(CORPUS / model, tmp_path, 64000, capsys)


@pytest.mark.skipif(shutil.which("qemu-system-arm") is None or shutil.which("arm-none-eabi-gcc") is None,
                    reason="Arm toolchain or QEMU missing")
def test_cortexm_runs_the_portable_kernel(tmp_path, capsys):
    """CortexM shares Siracusa's binding table: without the PULP DSP extension the wrapped
    source is the portable kernel, bit-exact on the corpus's RMSNorm."""
    from DeeployTest.test_suite.test_cortexm import run_cortexm
    run_cortexm(CORPUS / "Kernels/Integer/RMSNorm", tmp_path / "gen", capsys)
    assert "iRMSNorm_XP_" in (tmp_path / "gen" / "network" / "Network.c").read_text()
