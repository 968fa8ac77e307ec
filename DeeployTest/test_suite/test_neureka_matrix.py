"""The NPU's test matrix on Siracusa_w_neureka (8 cores, QEMU, outputs bit-exact):

* the NPU kernel tests of the corpus, each single and double buffered, data in L2: the 1x1
  (plain; requantized with signed and with unsigned outputs), 3x3 depthwise and 3x3 dense
  (plain and requantized) at --l1 32000, GEMM with per-column requantization and batched GEMM
  at --l1 16000 (each must put a layer on the NPU);
* with data in L3: MobileNet-family networks (miniMobileNetv2 of the tests and of the corpus,
  the depthwise-separable KWS_DSCNN) at --l1 2000, the corpus attention block at 2500 (single
  buffered) and 5000 (double buffered), the one-token microLlama32 at 10000;
* every network the tiled Siracusa suite runs (``test_siracusa_tiled.NETWORKS``) with the NPU
  at --l1 64000 and 16000, data in L2 and L3 (``run_tiled``: networks whose data cannot fit
  --l2 must be refused and then run from L3), without and with the weight memory
  (``--neureka-wmem``).

A representative subset runs by default; the whole matrix with

    python -m pytest DeeployTest/test_suite/test_neureka_matrix.py -m slow -p no:xdist
"""

from __future__ import annotations

import itertools

import pytest

from DeeployTest.test_suite.conftest import CORPUS, DEEPLOY_TEST
from DeeployTest.test_suite.test_neureka_runs import _tiled, pytestmark  # noqa: F401
from DeeployTest.test_suite.test_siracusa_networks import NETWORKS, _id
from DeeployTest.test_suite.test_siracusa_tiled import run_tiled

PLATFORM = "Siracusa_w_neureka"
KERNELS = [(k, 32000) for k in ("Conv/PW_2D", "Conv/PW_2D_RQ/Regular_RQ", "Conv/PW_2D_RQ/Unsigned_RQ", "Conv/DW_3x3",
                                "Conv/DW_3x3_RQ", "Conv/Regular_3x3", "Conv/Regular_3x3_RQ")]
KERNELS += [(k, 16000) for k in ("GEMM/Regular_RQPerColumn", "GEMM/Batch_RQ")]
MODELS = DEEPLOY_TEST / "Tests" / "Models"
# (network, --l1, double buffering), data in L3
L3_CASES = [(d, 2000, db) for d in (MODELS / "miniMobileNetv2", CORPUS / "Models" / "miniMobileNetv2",
                                    MODELS / "KWS_DSCNN") for db in (False, True)]
L3_CASES += [(CORPUS / "Kernels" / "Integer" / "Attention", 2500, False),
             (CORPUS / "Kernels" / "Integer" / "Attention", 5000, True)]
L3_CASES += [(MODELS / "microLlama" / "microLlama32", 10000, db) for db in (False, True)]
# the default suite's share: requantized 1x1 with unsigned outputs, a per-column GEMM, the
# attention block and the one-token microLlama from L3 (miniMobileNetv2 and PW_2D run in test_neureka_runs)
DEFAULT_KERNELS = {("Conv/PW_2D_RQ/Unsigned_RQ", True), ("Conv/Regular_3x3_RQ", False),
                   ("GEMM/Regular_RQPerColumn", True)}
DEFAULT_L3 = {("Attention", 2500, False), ("microLlama32", 10000, True)}
NETWORK_CONFIGS = list(itertools.product((64000, 16000), ("L2", "L3"), (False, True)))


def _kernel_cases():
    return [pytest.param(k, l1, db, id=f"{k}-{l1}-{'db' if db else 'sb'}",
                         marks=() if (k, db) in DEFAULT_KERNELS else pytest.mark.slow)
            for k, l1 in KERNELS for db in (False, True)]


def _l3_cases():
    return [pytest.param(d, l1, db, id=f"{_id(d)}-{l1}-{'db' if db else 'sb'}",
                        marks=() if (d.name, l1, db) in DEFAULT_L3 else pytest.mark.slow)
            for d, l1, db in L3_CASES]


@pytest.mark.parametrize("kernel,l1,db", _kernel_cases())
def test_npu_kernel(kernel, l1, db, corpus, capsys):
    _tiled(corpus / "Kernels" / "Integer" / kernel, l1, "L2", db, capsys)


@pytest.mark.parametrize("test_dir,l1,db", _l3_cases())
def test_npu_network_from_l3(test_dir, l1, db, capsys):
    if not test_dir.is_dir():
        pytest.skip(f"{test_dir} not found")
    _tiled(test_dir, l1, "L3", db, capsys)


@pytest.mark.slow
@pytest.mark.parametrize("test_dir,config", [
    pytest.param(d, c, id=f"{_id(d)}-{c[0]}-{c[1]}-{'db' if c[2] else 'sb'}")
    for d in NETWORKS for c in NETWORK_CONFIGS])
def test_tiled_network_with_npu(test_dir, config, capsys):
    run_tiled(test_dir, *config, capsys, platform=PLATFORM)


@pytest.mark.slow
@pytest.mark.parametrize("test_dir,config", [
    pytest.param(d, c, id=f"{_id(d)}-{c[0]}-{c[1]}-{'db' if c[2] else 'sb'}")
    for d in NETWORKS for c in NETWORK_CONFIGS])
def test_tiled_network_with_npu_and_weight_memory(test_dir, config, capsys):
    run_tiled(test_dir, *config, capsys, platform=PLATFORM, platform_options={"neureka_wmem": True})
