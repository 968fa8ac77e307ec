"""A target is one package (docs/ARCHITECTURE.md, "Adding a target"): its platform data, its
cycle model's constants (once, the tiler takes them from the platform) and how its programs are
built, run and read back (``Deeploy.targets.runner_of``), which the test runners and ``deeploy
run`` share."""

from __future__ import annotations

import argparse
from dataclasses import MISSING, fields

import pytest

from Deeploy.platform import HOST_RUNNER
from Deeploy.targets import get_platform, runner_of
from Deeploy.targets.siracusa.linker import linker_script
from Deeploy.tiling.params import TilingParams

CLUSTER_PLATFORMS = ("Siracusa", "Siracusa_w_neureka")


def test_tiling_params_hold_no_target_values():
    """The generic tiler's parameters have no defaults that are some target's costs."""
    target_costs = {"cores", "fork_cycles", "barrier_cycles", "tile_loop_cycles", "ops_per_cycle",
                    "dma_words_1d", "dma_words_2d"}
    assert {f.name for f in fields(TilingParams) if f.default is not MISSING} & target_costs == set()


@pytest.mark.parametrize("name", CLUSTER_PLATFORMS)
def test_tiler_costs_come_from_the_cycle_model(name):
    """Fork, barrier and DMA command costs have one home, the target's cycle model; its tiler
    parameters (both levels) and its cluster engine agree with it."""
    platform = get_platform(name)
    timing = platform.timing
    for params in (platform.tiling.tiles, platform.tiling.staging):
        assert (params.fork_cycles, params.barrier_cycles) == (timing.fork_cycles, timing.barrier_cycles)
        assert (params.dma_words_1d, params.dma_words_2d) == (timing.dma_words_1d, timing.dma_words_2d)
        assert params.cores == platform.max_cores
    assert platform.tiling.tiles.dma_issue_word_cycles == timing.dma_issue_word_cycles
    assert platform.tiling.staging.dma_issue_word_cycles == timing.l3_dma_issue_word_cycles


@pytest.mark.parametrize("name", CLUSTER_PLATFORMS)
def test_cluster_build_options_from_the_target(name, tmp_path):
    """The Siracusa-family build: the cores asked for and the platform's linker script."""
    options = runner_of(name).build_options(argparse.Namespace(cores=3), tmp_path)
    script = tmp_path / "harness" / "link.ld"
    assert options == ["-DNUM_CORES=3", f"-DLINKER_SCRIPT={script}"]
    assert script.read_text() == linker_script(get_platform(name).memory)


def test_host_runner_of_generic(tmp_path):
    """Generic programs run on the host; --sanitize is its build option."""
    runner = runner_of("Generic")
    assert runner.execute is HOST_RUNNER.execute
    assert runner.build_options(argparse.Namespace(), tmp_path) == []
    assert runner.build_options(argparse.Namespace(sanitize=True), tmp_path) == ["-DDEEPLOY_SANITIZE=ON"]


def test_runner_explains_an_over_full_level():
    """A link error of an over-full memory level is explained by the target, with its size."""
    explained = runner_of("Siracusa").explain_build_error("ld: region `L2' overflowed by 1024 bytes")
    assert explained.startswith("network does not fit L2 (2097152 bytes): over by 1024 bytes")
