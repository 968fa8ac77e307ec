"""Random small integer graphs (``DeeployTest/fuzzing``): every graph's goldens come from the
reference interpreter and, for standard ops, onnxruntime (bit-exact agreement checked); the C
compiled by the Generic runner must match them bit-exactly, and a smaller slice goes through
the Siracusa runner (QEMU) and the tiled runner with a small ``--l1``.

The default slice is deterministic (``derandomize``); ``-m fuzz_long`` runs at least
``DEEPLOY_FUZZ_GRAPHS`` (default 2000) random graphs, collecting every failing batch.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from DeeployTest.fuzzing.check import fuzz_count, run_batch, run_tiled_batch, run_zero_sized, write_batch  # noqa: E402
from DeeployTest.fuzzing.graphs import batches, zero_sized_graphs  # noqa: E402
from DeeployTest.testRunner_generic import GENERIC  # noqa: E402
from DeeployTest.testUtils.runner import RunnerPlatform  # noqa: E402

FIXED = dict(derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck),
             print_blob=False)
GRAPHS_PER_BATCH = 24
NEEDS_QEMU = pytest.mark.skipif(shutil.which("qemu-system-riscv32") is None or
                                shutil.which("riscv64-unknown-elf-gcc") is None,
                                reason="RISC-V toolchain or QEMU missing: run bash toolchain/install.sh")


def generic_slice(tmp_path: Path, custom_ops: bool, sanitize: bool = False, count: int = 10) -> int:
    """Run the deterministic slice (its first ``count`` batches) on Generic; returns how many graphs it ran."""
    graphs = []

    @settings(max_examples=count, **FIXED)
    @given(batches(GRAPHS_PER_BATCH, custom_ops))
    def check(batch):
        folder = tmp_path / f"batch{len(graphs)}"
        write_batch(batch, folder)
        run_batch(batch, folder, GENERIC, sanitize=sanitize)
        graphs.append(len(batch.graphs))

    check()
    return sum(graphs)


# the plain slices are slow: the default suite runs their first batches under the sanitizers
# (test_sanitize.py::test_fuzz_slice_sanitized), which check the same outputs
@pytest.mark.slow
def test_fuzz_generic_standard_ops(tmp_path):
    """Standard ops only: onnxruntime's outputs of the whole model are the goldens."""
    assert generic_slice(tmp_path, custom_ops=False) >= 150


@pytest.mark.slow
def test_fuzz_generic_with_custom_ops(tmp_path):
    """With the integer custom ops (iSoftmax, ITAMax, iGELU, norms, ...): reference goldens,
    standard nodes checked one by one against onnxruntime."""
    assert generic_slice(tmp_path, custom_ops=True) >= 150


def test_fuzz_zero_sized_tensors(tmp_path):
    """Graphs with an empty input (a zero-sized dim) through elementwise ops, Clip/Relu, Transpose,
    Concat, Pad and views: built and bit-exact on Generic, or rejected with one clear error."""
    seen = []

    @settings(max_examples=15, **FIXED)
    @given(zero_sized_graphs())
    def check(batch):
        folder = tmp_path / f"graph{len(seen)}"
        write_batch(batch, folder)
        seen.append(run_zero_sized(batch, folder, GENERIC))

    check()
    assert len(seen) >= 10


@NEEDS_QEMU
@pytest.mark.parametrize("cores", [8, 3])
def test_fuzz_siracusa(tmp_path, cores):
    runner = RunnerPlatform("Siracusa", "TEST_SIRACUSA")

    @settings(max_examples=3, **FIXED)
    @given(batches(12, custom_ops=cores == 3))
    def check(batch):
        folder = tmp_path / "batch"
        write_batch(batch, folder)
        run_batch(batch, folder, runner, {"cores": cores}, cores=cores, profileUntiled=False)

    check()


@NEEDS_QEMU
@pytest.mark.parametrize("platform, folder", [("Siracusa", "TEST_SIRACUSA"),
                                              ("Siracusa_w_neureka", "TEST_SIRACUSA_W_NEUREKA")])
def test_fuzz_compiler_names(tmp_path, platform, folder):
    """Nodes and tensors named as the compiler names what it makes for their neighbours (a
    RequantShift '<conv>_in_hwc' before Conv '<conv>', a constant '<conv>.npu_bias', ...): the
    names the passes make must not meet them, bit-exact on 8 cores."""
    runner = RunnerPlatform(platform, folder)

    @settings(max_examples=5, **FIXED)
    @given(batches(12, max_dim=10, clash=True))
    def check(batch):
        write_batch(batch, tmp_path)
        run_batch(batch, tmp_path, runner, {"cores": 8}, cores=8, profileUntiled=False)

    check()


@NEEDS_QEMU
@pytest.mark.parametrize("l1, level, double_buffer", [(512, "L2", False), (2048, "L3", True)])
def test_fuzz_tiled_siracusa(tmp_path, l1, level, double_buffer):
    """Tiny L1: a layer that does not fit must be reported with the smallest L1 that does, and
    the run with that L1 must pass."""
    runner = RunnerPlatform("Siracusa", "TEST_SIRACUSA_TILED")

    @settings(max_examples=3, **FIXED)
    @given(batches(6, max_dim=12))
    def check(batch):
        folder = tmp_path / "batch"
        write_batch(batch, folder)
        run_tiled_batch(batch, folder, runner, l1, cores=8, level=level, double_buffer=double_buffer)

    check()


@pytest.mark.fuzz_long
def test_fuzz_long(tmp_path):
    """At least DEEPLOY_FUZZ_GRAPHS random graphs (new ones every run; standard-op batches and
    batches with custom ops) on Generic; every 5th batch also on Siracusa and every 10th tiled
    with a small L1. Every failing batch is collected and reported at the end."""
    target = fuzz_count(2000)
    done, failures, start = [], [], time.perf_counter()
    siracusa = RunnerPlatform("Siracusa", "TEST_SIRACUSA")
    tiled = RunnerPlatform("Siracusa", "TEST_SIRACUSA_TILED")
    qemu = shutil.which("qemu-system-riscv32") is not None

    @settings(max_examples=max(10, target // GRAPHS_PER_BATCH), database=None, deadline=None,
              suppress_health_check=list(HealthCheck), phases=["generate"])
    @given(st.one_of(batches(GRAPHS_PER_BATCH), batches(GRAPHS_PER_BATCH, custom_ops=True)),
           batches(6, custom_ops=True, max_dim=12))
    def check(batch, large):
        if sum(done) >= target:
            return
        k = len(done)
        folder = tmp_path / f"batch{k % 4}"
        cores, level = 1 + k % 8, ("L2", "L3")[k // 10 % 2]
        steps = [("Generic", lambda: run_batch(batch, folder, GENERIC))]
        if qemu and k % 5 == 4:
            steps.append((f"Siracusa {cores} cores", lambda: run_batch(batch, folder, siracusa, {"cores": cores},
                                                                       cores=cores, profileUntiled=False)))
        if qemu and k % 10 == 9:
            steps.append((f"tiled Siracusa --l1 1024 {level}", lambda: run_tiled_batch(
                batch, folder, tiled, 1024, cores=8, level=level, double_buffer=k % 20 == 9)))
        if qemu and k % 10 == 4:    # larger tensors, so that the tiler splits them
            steps.append(("tiled Siracusa --l1 512, large", lambda: run_tiled_batch(
                large, tmp_path / "large", tiled, 512, cores=cores, level=level, double_buffer=k % 20 == 4)))
        where = "goldens"
        try:
            write_batch(batch, folder)
            if qemu and k % 10 == 4:
                write_batch(large, tmp_path / "large")
            for where, step in steps:
                step()
        except Exception as exc:  # every failure is recorded, the run goes on
            failing = large if "large" in where else batch
            failures.append(f"batch {k} ({where}): {type(exc).__name__}: {exc}\n{failing!r}"[:6000])
            print("FAILED", failures[-1], flush=True)
        done.append(len(batch.graphs) + (len(large.graphs) if qemu and k % 10 == 4 else 0))
        print(f"batch {k}: {len(batch.graphs)} graphs, {', '.join(w for w, _ in steps)}; "
              f"{sum(done)} graphs, {len(failures)} failing batches, {time.perf_counter() - start:.0f} s", flush=True)

    while sum(done) < target:       # each call draws new random batches
        check()
    print(f"fuzz_long: {sum(done)} graphs in {len(done)} batches, {len(failures)} failing batches, "
          f"{time.perf_counter() - start:.0f} s")
    assert sum(done) >= target, f"only {sum(done)} graphs generated"
    assert not failures, "\n\n".join(failures)
