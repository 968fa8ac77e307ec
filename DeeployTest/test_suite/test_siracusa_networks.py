"""Every network that runs on Generic, compiled for Siracusa, cross-compiled for RV32 and run
untiled under QEMU on 1 and on 8 cluster cores: outputs must match the goldens bit-exactly, and
the modelled cycle counts must be sane: positive, bounded by the instructions the harts executed
(counted by the timing plugin) and, for networks with enough work, lower on 8 cores than on 1.
By default one stable share of the networks runs here (all run tiled by default); ``-m slow``
runs every one."""

from __future__ import annotations

import argparse
import re
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest

from Deeploy.errors import BuildError
from Deeploy.targets import get_platform
from Deeploy.targets.siracusa.timing import read_records
from DeeployTest.generators.batch import batch_folder, batch_ids, batches
from DeeployTest.testUtils.runner import RunnerPlatform, run_test
from DeeployTest.test_suite.conftest import CORPUS, DEEPLOY_TEST, FLOAT_CORPUS, REJECTED, deep_stack, network_dirs, share_of

pytestmark = pytest.mark.skipif(shutil.which("qemu-system-riscv32") is None or
                                shutil.which("riscv64-unknown-elf-gcc") is None,
                                reason="RISC-V toolchain or QEMU missing: run bash toolchain/install.sh")

SIRACUSA_PLATFORM = get_platform("Siracusa")
L2_BYTES = next(m.size for m in SIRACUSA_PLATFORM.memory if m.name == "L2")


def _constant_values(test_dir: Path) -> int:
    """How many constant values the network holds (each takes at least one byte)."""
    model = onnx.load(test_dir / "network.onnx", load_external_data=False)
    return sum(int(np.prod(t.dims, dtype=np.int64)) for t in model.graph.initializer)


ALL_NETWORKS = network_dirs(DEEPLOY_TEST, "Tests") + [d for d in network_dirs(
    CORPUS, "Kernels/Integer", "Models/miniMobileNetv2", "Models/microLlama/INT8", *FLOAT_CORPUS)
    if str(d.relative_to(CORPUS)) not in REJECTED]
# untiled, everything lives in L2: networks with more constants than L2 has bytes cannot run and
# must say so (test_too_large_for_l2_untiled); the tiled runner moves their constants to L3
TOO_LARGE = [d for d in ALL_NETWORKS if _constant_values(d) > L2_BYTES]
NETWORKS = [d for d in ALL_NETWORKS if d not in TOO_LARGE]
# the float corpus: in the default suite on 8 cores (test_float_network_8_cores), on 1 and 8 cores
# with -m slow
FLOATS = {d for d in NETWORKS if d.is_relative_to(CORPUS) and str(d.relative_to(CORPUS)).startswith(FLOAT_CORPUS)}
SIRACUSA = RunnerPlatform("Siracusa", "TEST_SIRACUSA")


def _id(path: Path) -> str:
    for root in (DEEPLOY_TEST / "Tests", CORPUS):
        if path.is_relative_to(root):
            return ("corpus/" if root == CORPUS else "") + str(path.relative_to(root))
    return path.name


ENOUGH_WORK = 100_000     # modelled 1-core cycles from which 8 cores must be faster
LAYER_OVERHEAD = 2_000    # bound of the cycles a layer adds beyond its instructions (fork, barriers)


UNTILED_SHARES = 6   # the untiled runs of one in this many integer models are in the default suite
BATCH = 16           # single-kernel networks merged per run (generators/batch.py)


def _is_kernel(d: Path) -> bool:
    return bool({"Kernels", "IntKernels"} & set(d.parts))


def _untiled_by_default(d: Path) -> bool:
    """Every network runs tiled on the cluster by default (test_siracusa_tiled.py); its untiled
    1- and 8-core runs are in the default suite for one stable share of the integer models but the
    deep stacks, and with ``-m slow`` for the rest; the single-kernel networks run merged
    (test_siracusa_kernels, test_float_kernels_8_cores)."""
    return d not in FLOATS and not _is_kernel(d) and not deep_stack(d) and \
        share_of("untiled " + _id(d), UNTILED_SHARES) == 0


# (integer and float graphs apart: whether a FLOAT-declared tensor holds integers is decided per graph)
INTEGER_BATCHES, FLOAT_BATCHES = (batches([(_id(d), d) for d in NETWORKS if _is_kernel(d) and (d in FLOATS) == floats],
                                           BATCH) for floats in (False, True))


def network_params() -> list:
    """NETWORKS as pytest parameters named by ``_id``, marked slow unless run by default."""
    return [pytest.param(d, id=_id(d), marks=() if _untiled_by_default(d) else pytest.mark.slow) for d in NETWORKS]


def _float_errors(out: str) -> str:
    """The worst float errors the harness printed (empty for an integer network)."""
    found = re.search(r"\(float outputs: [^)]*\)", out)
    return found.group(0) if found else ""


def _run(test_dir: Path, cores: int, capsys) -> tuple[int, int, dict[int, int]]:
    """(modelled network cycles, layers, instructions per hart) of one bit-exact run (float
    outputs: within the harness's tolerance); the harness's output is kept in ``_run.out``."""
    gen = DEEPLOY_TEST / "TEST_SIRACUSA" / f"cores{cores}" / _id(test_dir)
    args = argparse.Namespace(test=str(test_dir), verbose=False, skipgen=False, skipsim=False,
                              gen_dir=str(gen), cores=cores, profileUntiled=False, timeout=None)
    code = run_test(args, SIRACUSA, {"cores": cores})
    out = capsys.readouterr().out
    assert code == 0, out
    assert "Errors: 0 out of" in out, out
    cycles = re.search(r"^Runtime: (\d+) cycles$", out, re.M)
    layers = re.search(r"Compiled .*?: (\d+) layers", out)
    assert cycles and layers, out
    records = read_records(gen / "build" / "records.txt")
    _run.out = out
    return int(cycles.group(1)), int(layers.group(1)), {h: records.final(h).insns for h in records.by_hart}


@pytest.mark.slow
@pytest.mark.parametrize("test_dir", sorted(FLOATS), ids=[_id(p) for p in sorted(FLOATS)])
def test_float_network_8_cores(test_dir, capsys):
    """A float corpus test on 8 cores: outputs within the tolerance, positive modelled cycles."""
    cycles, _, _ = _run(test_dir, 8, capsys)
    assert cycles > 0


@pytest.mark.parametrize("cases", FLOAT_BATCHES, ids=batch_ids(FLOAT_BATCHES))
def test_float_kernels_8_cores(cases, tmp_path, capsys):
    """The float corpus tests merged, on 8 cores: outputs within the tolerance, positive cycles."""
    cycles, _, _ = _run(batch_folder(cases, tmp_path), 8, capsys)
    assert cycles > 0


@pytest.mark.parametrize("test_dir", network_params())
def test_siracusa_network(test_dir, capsys):
    _check_1_and_8_cores(test_dir, capsys)


@pytest.mark.parametrize("cases", INTEGER_BATCHES, ids=batch_ids(INTEGER_BATCHES))
def test_siracusa_kernels(cases, tmp_path, capsys):
    _check_1_and_8_cores(batch_folder(cases, tmp_path), capsys)


def _check_1_and_8_cores(test_dir: Path, capsys) -> None:
    """Bit-exact on 1 and 8 cores, cycles within what the instructions allow, 8 cores faster on
    enough work."""
    timing = SIRACUSA_PLATFORM.timing
    worst = timing.base_cpi + max(timing.l1_latency, timing.l2_latency, timing.l3_latency)
    runs, errors = {}, {}
    for cores in (1, 8):
        runs[cores] = _run(test_dir, cores, capsys)
        errors[cores] = _float_errors(_run.out)
    # every output is accumulated in the same order whatever the core count: the same worst errors
    assert errors[1] == errors[8], errors
    for cores, (cycles, layers, insns) in runs.items():
        assert cycles > 0, (cores, cycles)
        # no instruction costs more than one access at the slowest level
        assert cycles <= sum(insns.values()) * worst + layers * LAYER_OVERHEAD, (cores, cycles, insns)
    c1, _, _ = runs[1]
    c8, _, insns8 = runs[8]
    # worker harts run only the network's layers, once per RunNetwork call of the harness; the
    # cycles are those of one call
    workers = {h: n / SIRACUSA.harness_runs for h, n in insns8.items() if h != 0}
    assert set(workers) == set(range(1, 8)), insns8
    # every worker instruction takes at least one cycle, and 1 core does all the workers' work alone
    assert c8 >= max(workers.values()) * timing.base_cpi, (c8, workers)
    assert c1 >= sum(workers.values()) * timing.base_cpi / 2, (c1, workers)
    if c1 >= ENOUGH_WORK:
        assert c1 / 10 <= c8 < c1, (c1, c8)


@pytest.mark.parametrize("test_dir", TOO_LARGE, ids=[_id(p) for p in TOO_LARGE])
def test_too_large_for_l2_untiled(test_dir, tmp_path):
    """A network whose constants exceed L2 fails untiled with the linker's error and its remedies
    (the runner prints it as one line)."""
    args = argparse.Namespace(test=str(test_dir), verbose=False, skipgen=False, skipsim=False,
                              gen_dir=str(tmp_path / "gen"), cores=8, profileUntiled=False, timeout=None)
    with pytest.raises(BuildError, match=r"does not fit L2 .*over by \d+ bytes.*--defaultMemLevel L3"):
        run_test(args, SIRACUSA, {"cores": 8})
