"""Running one generated kernel test folder bit-exactly on Generic and on Siracusa, measuring a
kernel's modelled cycles on one tile, and lowering it for a platform (the kernel path tests
share these)."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from Deeploy.binding import bind
from Deeploy.frontend import assign_input_types, infer_graph, load_npz_arrays, load_onnx, map_arrays
from Deeploy.ir.graph import Graph
from Deeploy.passes.manager import run_passes
from Deeploy.targets import get_platform
from Deeploy.tiling.network import TilingOptions
from DeeployTest.generators.batch import merge_tests
from DeeployTest.generators.golden import write_test
from DeeployTest.testRunner_generic import GENERIC
from DeeployTest.testUtils.runner import RunnerPlatform, run_test

SIRACUSA = RunnerPlatform("Siracusa", "TEST_SIRACUSA")
TILED = RunnerPlatform("Siracusa", "TEST_SIRACUSA_TILED")
ONE_TILE_L1 = 200_000   # every operand fits: one tile, the kernel runs once on L1 data
needs_qemu = pytest.mark.skipif(
    shutil.which("qemu-system-riscv32") is None or shutil.which("riscv64-unknown-elf-gcc") is None,
    reason="RISC-V toolchain or QEMU missing: run bash toolchain/install.sh")


def _check(code: int, out: str) -> None:
    assert code == 0, out
    assert "Errors: 0 out of" in out, out


def run_generic(case_dir: Path, capsys) -> None:
    args = argparse.Namespace(test=str(case_dir), verbose=False, skipgen=False, skipsim=False,
                              gen_dir=str(case_dir / "generic"))
    _check(run_test(args, GENERIC), capsys.readouterr().out)


def run_siracusa(case_dir: Path, cores: int, capsys) -> None:
    args = argparse.Namespace(test=str(case_dir), verbose=False, skipgen=False, skipsim=False,
                              gen_dir=str(case_dir / f"siracusa{cores}"), cores=cores, profileUntiled=False,
                              timeout=None)
    _check(run_test(args, SIRACUSA, {"cores": cores}), capsys.readouterr().out)


def run_tiled(case_dir: Path, gen: Path, l1: int, capsys) -> None:
    """Run the test folder bit-exactly tiled on Siracusa (8 cores, data in L2, double-buffered)."""
    tiling = TilingOptions(l1, TilingOptions.l2, "L2", True)
    args = argparse.Namespace(test=str(case_dir), verbose=False, skipgen=False, skipsim=False, gen_dir=str(gen),
                              cores=8, l1=l1, l2=tiling.l2, defaultMemLevel="L2", doublebuffer=True,
                              profileTiling=None, plotMemAlloc=False, timeout=None)
    _check(run_test(args, TILED, {"cores": 8, "tiling": tiling}), capsys.readouterr().out)


def byte_values(rng: np.random.Generator, shape, unsigned: bool = False) -> np.ndarray:
    """Uniform 8-bit sample values of ``shape``, the type's lowest first and its highest last."""
    lo, hi = (0, 255) if unsigned else (-128, 127)
    v = rng.integers(lo, hi + 1, size=shape)
    v.flat[0], v.flat[-1] = lo, hi
    return v


def case_folders(cases: list[tuple[str, object]], seed: int):
    """A ``case_dir`` fixture over ``cases`` ((name, build(rng) -> Net)): each case's test folder,
    written with a generator seeded ``seed``."""
    @pytest.fixture(params=cases, ids=[c[0] for c in cases])
    def case_dir(request, tmp_path):
        name, build = request.param
        write_test(build(np.random.default_rng(seed)), tmp_path / name)
        return tmp_path / name
    return case_dir


def case_batch(cases: list[tuple[str, object]], seed: int):
    """A module-scoped ``batch_dir`` fixture: one test folder running every case of ``cases``
    ((name, build(rng) -> Net), each written with a generator seeded ``seed``) side by side
    (``generators/batch.py``): the family is compiled, built and run once per platform, and a
    mismatch names its case."""
    @pytest.fixture(scope="module")
    def batch_dir(tmp_path_factory):
        root = tmp_path_factory.mktemp("cases")
        for name, build in cases:
            write_test(build(np.random.default_rng(seed)), root / name)
        return merge_tests([(name, root / name) for name, _ in cases], root / "batch")
    return batch_dir


def tiled_layer(net, ops: tuple[str, ...], cores: int, folder: Path, capsys, l1: int = ONE_TILE_L1) -> dict:
    """The ``--profileTiling`` entry of the first layer of ``net`` whose op is one of ``ops``, run
    bit-exactly tiled on Siracusa with ``l1`` bytes of L1 (written and generated below ``folder``)."""
    test, gen = folder / "net", folder / "gen"
    write_test(net, test)
    tiling = TilingOptions(l1, TilingOptions.l2, "L2", False)
    args = argparse.Namespace(test=str(test), verbose=False, skipgen=False, skipsim=False, gen_dir=str(gen),
                              cores=cores, l1=tiling.l1, l2=tiling.l2, defaultMemLevel="L2", doublebuffer=False,
                              profileTiling="all", plotMemAlloc=False, timeout=None)
    _check(run_test(args, TILED, {"cores": cores, "tiling": tiling}), capsys.readouterr().out)
    return next(e for e in json.loads((gen / "profile.json").read_text())["layers"] if e["op"] in ops)


def one_tile_kernel(net, ops: tuple[str, ...], cores: int, folder: Path, capsys) -> tuple[float, str]:
    """The kernel phase's modelled cycles and the kernel's name of the first layer of ``net``
    whose op is one of ``ops``, run bit-exactly tiled on Siracusa at an L1 where it is one tile."""
    layer = tiled_layer(net, ops, cores, folder, capsys)
    return sum(t["kernel"] for t in layer["tiles"] if t["level"] == "L1"), layer["kernel"]


def lowered(case_dir: Path, platform: str) -> Graph:
    """The test folder's graph with its sample inputs' types, after ``platform``'s passes."""
    graph = load_onnx(case_dir / "network.onnx")
    npz = case_dir / "inputs.npz"
    assign_input_types(graph, map_arrays(npz, load_npz_arrays(npz), graph.inputs, graph, "input"))
    infer_graph(graph)
    return run_passes(graph, get_platform(platform).passes)


def bound_ops(case_dir: Path, platform: str, cores: int = 8) -> list[str]:
    """The op of every layer the test folder's network binds to on ``platform``."""
    return [layer.node.op for layer in bind(lowered(case_dir, platform), get_platform(platform), cores)]
