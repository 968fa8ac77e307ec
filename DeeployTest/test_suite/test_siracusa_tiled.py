"""Every network that runs untiled on Siracusa, run tiled (every layer out of L1, tiles moved by
DMA) under QEMU on 8 cores: outputs must match the goldens bit-exactly. Which networks do not
fit --l2 is decided up front from the test's own files (data and live activation bytes, not the
compiler's sizing): exactly those must be refused with the clear error, and then run with
--defaultMemLevel L3 in the same test; any other refusal fails. By default every network but the
project's deep stacks (conftest.DEEP_STACK_NODES) runs in one of the default configurations (picked by a stable digest of its name, so that the family as a
whole covers both L1 sizes, data in L2 and in L3, single and double buffering), the single-kernel
networks merged 16 at a time; the other configurations, the full cross product and the
single-kernel networks one by one run with ``-m slow``."""

from __future__ import annotations

import argparse
import itertools
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from Deeploy.errors import DeeployError
from Deeploy.frontend import assign_input_types, infer_graph, load_npz_arrays, load_onnx, map_arrays
from Deeploy.targets import get_platform
from Deeploy.targets.siracusa.linker import l1_reserved_bytes
from Deeploy.targets.siracusa.qemu import elf_symbols
from Deeploy.tiling.network import TilingOptions, level_limits
from DeeployTest.generators.batch import batch_folder, batch_ids, batches
from DeeployTest.testUtils.runner import RunnerPlatform, run_test
from DeeployTest.test_suite.conftest import DEEPLOY_TEST, deep_stack, share_of
from DeeployTest.test_suite.test_siracusa_networks import FLOATS, NETWORKS, _id, pytestmark  # noqa: F401

TILED = RunnerPlatform("Siracusa", "TEST_SIRACUSA_TILED")

# (l1, default memory level, double buffering)
DEFAULT = [(64000, "L2", False), (16000, "L2", True), (64000, "L3", True)]
FULL = [c for c in itertools.product((64000, 16000), ("L2", "L3"), (False, True)) if c not in DEFAULT]
FLOAT_DEFAULT = (16000, "L2", True)   # the float corpus's only default configuration; the rest are slow


def _config_id(c) -> str:
    return f"{c[0]}-{c[1]}-{'db' if c[2] else 'sb'}"


def _is_kernel(network: Path) -> bool:
    """A single-kernel network (the project's own or the corpus's): these run merged by default."""
    return bool({"Kernels", "IntKernels"} & set(network.parts))


def _default_config(network: Path) -> tuple:
    """The one configuration a network runs in by default."""
    if network in FLOATS:
        return FLOAT_DEFAULT
    return DEFAULT[share_of(_id(network), len(DEFAULT))]


def _cases(configs, slow: bool = False) -> list:
    """(network, configuration) parameters; all but a network's default configuration are slow, and
    so are the single runs of the single-kernel networks (test_tiled_kernels runs them merged) and
    the deep stacks (conftest.DEEP_STACK_NODES)."""
    return [pytest.param(d, c, id=f"{_id(d)}-{_config_id(c)}",
                         marks=pytest.mark.slow if slow or c != _default_config(d) or _is_kernel(d) or deep_stack(d)
                         else ())
            for d in NETWORKS for c in configs]


BATCH = 16   # single-kernel networks merged per run (generators/batch.py)


def _kernel_batches() -> list:
    """(configuration, cases) of the single-kernel networks, each in its default configuration,
    merged BATCH at a time (integer and float graphs apart: whether a FLOAT-declared tensor holds
    integers is decided per graph)."""
    groups = batches([(_id(d), d) for d in NETWORKS if _is_kernel(d)], BATCH,
                     kind=lambda d: (_default_config(d), d in FLOATS))
    return [(_default_config(cases[0][1]), cases) for cases in groups]


VIEWS = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"}   # outputs share their input's storage
UNDECIDED = 0.05   # a need within 5 % of --l2 is too close to call from the test's side


def expected_l2_bytes(test_dir: Path, level: str) -> int:
    """The L2 a network needs, from its own files and independently of the compiler's sizing:
    graph inputs, outputs and constants (unless they live in L3), the peak of simultaneously
    live activations in execution order (a view shares its source's storage; values computed
    from constants alone are constants); --l2 budgets these data only (code lives in the rest of L2)."""
    graph = load_onnx(test_dir / "network.onnx")
    inputs = map_arrays(test_dir / "inputs.npz", load_npz_arrays(test_dir / "inputs.npz"), graph.inputs, graph, "input")
    assign_input_types(graph, inputs)
    infer_graph(graph)
    io = set(graph.inputs) | set(graph.outputs)
    constants = {t.name for t in graph.constants()}
    data = sum(graph.tensors[n].nbytes for n in io | constants)
    for node in graph.nodes:
        if all(not x or x in constants for x in node.inputs):
            constants |= set(node.outputs)
    root: dict[str, str] = {}
    for node in graph.nodes:
        for out in node.outputs:
            src = node.inputs[0] if node.inputs else ""
            root[out] = root.get(src, src) if node.op in VIEWS and src and src not in constants else out
    last: dict[str, int] = {}
    for k, node in enumerate(graph.nodes):
        for x in node.inputs + node.outputs:
            if x and x not in constants and x not in io and root.get(x, x) not in io:
                last[root.get(x, x)] = k
    live: dict[str, int] = {}
    peak = 0
    for k, node in enumerate(graph.nodes):
        for x in node.inputs + node.outputs:
            if root.get(x, x) in last:
                live[root.get(x, x)] = graph.tensors[root.get(x, x)].nbytes
        peak = max(peak, sum(live.values()))
        live = {r: b for r, b in live.items() if last[r] > k}
    return (data if level == "L2" else 0) + peak


def _run_tiled(test_dir, l1: int, level: str, db: bool, capsys, cores: int, profile: bool,
               platform: str = "Siracusa", platform_options: dict | None = None) -> str:
    name = f"l1_{l1}_{level}_{'db' if db else 'sb'}" + "".join(f"_{k}" for k in sorted(platform_options or {}))
    name += f"_cores{cores}" if cores != 8 else ""
    folder = f"TEST_{platform.upper()}_TILED"
    gen = DEEPLOY_TEST / folder / name / _id(test_dir)
    args = argparse.Namespace(test=str(test_dir), verbose=False, skipgen=False, skipsim=False, gen_dir=str(gen),
                              cores=cores, l1=l1, l2=TilingOptions.l2, defaultMemLevel=level, doublebuffer=db,
                              profileTiling=profile, plotMemAlloc=False, timeout=None)
    runner = TILED if platform == "Siracusa" else RunnerPlatform(platform, folder)
    options = {"cores": cores, "tiling": TilingOptions(l1, TilingOptions.l2, level, db)}
    code = run_test(args, runner, options | ({"platform_options": platform_options} if platform_options else {}))
    out = capsys.readouterr().out
    assert code == 0, out
    assert "Errors: 0 out of" in out and "Runtime: " in out, out
    # the L1 the runtime's own state takes stays within what the largest --l1 leaves it
    symbols = elf_symbols(gen / "build" / "deeploy_test")
    arena = re.search(r"deeploy_l1_arena\[(\d+)\]", (gen / "network" / "Network.c").read_text())
    state = symbols["__deeploy_l1_bss_end"] - symbols["__deeploy_l1_bss_start"] - int(arena.group(1))
    memory = get_platform(platform).memory
    physical = next(m.size for m in memory if m.name == "L1")
    assert 0 <= state <= physical - l1_reserved_bytes() - level_limits(memory)["L1"][0], state
    return out


def run_tiled(test_dir, l1: int, level: str, db: bool, capsys, cores: int = 8, profile: bool = False,
              platform: str = "Siracusa", platform_options: dict | None = None) -> str:
    """Run the network tiled (on ``platform``); if its data cannot fit --l2 (decided by
    ``expected_l2_bytes``), the compiler must refuse it with the clear error, and the network
    must then run from L3."""
    l2 = TilingOptions.l2
    need = expected_l2_bytes(test_dir, level)
    assert abs(need - l2) > UNDECIDED * l2, f"{test_dir}: needs about {need} B of L2, too close to --l2 {l2} to decide"
    if need <= l2:
        return _run_tiled(test_dir, l1, level, db, capsys, cores, profile, platform, platform_options)
    with pytest.raises(DeeployError) as refusal:
        _run_tiled(test_dir, l1, level, db, capsys, cores, profile, platform, platform_options)
    message = str(refusal.value)
    assert f"more than --l2 {l2}" in message, message
    if level == "L2":
        assert "--defaultMemLevel L3" in message, message
        assert expected_l2_bytes(test_dir, "L3") < l2 * (1 - UNDECIDED), test_dir
        return _run_tiled(test_dir, l1, "L3", db, capsys, cores, profile, platform, platform_options)
    return message


@pytest.mark.parametrize("test_dir,config", _cases(DEFAULT))
def test_tiled_network(test_dir, config, capsys):
    run_tiled(test_dir, *config, capsys)


@pytest.mark.parametrize("test_dir,config", _cases(FULL, slow=True))
def test_tiled_network_full(test_dir, config, capsys):
    run_tiled(test_dir, *config, capsys)


KERNEL_BATCHES = _kernel_batches()


@pytest.mark.parametrize("config,cases", KERNEL_BATCHES,
                         ids=[f"{_config_id(c)}-{i}" for (c, _), i in zip(KERNEL_BATCHES, batch_ids(
                             [b for _, b in KERNEL_BATCHES]))])
def test_tiled_kernels(config, cases, tmp_path, capsys):
    run_tiled(batch_folder(cases, tmp_path), *config, capsys)


# compact convolutional transformers exported at opsets 20 and 12 (their sequence pooling is a
# Softmax over the tokens of [1, T, 1]): on one core at the tightest L1 by default (test_tiled_network
# runs them on 8 cores), the rest of (l1, level, double buffering, cores) with -m slow
CCT = [DEEPLOY_TEST / "Tests" / "Models" / "Float" / f"CCT_opset{v}" for v in (20, 12)]
CCT_DEFAULT = [(8000, "L3", False, 1)]
CCT_FULL = [c for c in itertools.product((64000, 16000, 8000), ("L2", "L3"), (False, True), (1, 8))
            if c not in CCT_DEFAULT and not (c[3] == 8 and (c[0], c[1], c[2]) in DEFAULT + FULL)]


def _cct_cases(configs, slow: bool = False) -> list:
    return [pytest.param(d, c, id=f"{_id(d)}-{_config_id(c)}-cores{c[3]}", marks=pytest.mark.slow if slow else ())
            for d in CCT for c in configs]


@pytest.mark.parametrize("test_dir,config", _cct_cases(CCT_DEFAULT) + _cct_cases(CCT_FULL, slow=True))
def test_tiled_compact_transformer(test_dir, config, capsys):
    l1, level, db, cores = config
    run_tiled(test_dir, l1, level, db, capsys, cores=cores)


MINI = DEEPLOY_TEST / "Tests" / "Models" / "miniMobileNetv2"


def test_profile_traces_every_tile(capsys):
    """--profileTiling=tiles: three phase lines per L1 tile of every tiled layer, as many tiles as
    the generated schedule has, with their ops, and a per-layer summary."""
    out = run_tiled(MINI, 16000, "L2", True, capsys, profile="tiles")
    manifest = json.loads((DEEPLOY_TEST / "TEST_SIRACUSA_TILED" / "l1_16000_L2_db" / _id(MINI) / "network" /
                           "manifest.json").read_text())
    assert manifest["tiles"]
    for entry in manifest["tiles"]:
        lines = [line for line in out.splitlines() if line.startswith(f"[{entry['layer']} L1][{entry['buffering']}]")]
        assert len(lines) == 3 * len(entry["tile_ops"]) == 3 * entry["tiles"], entry["layer"]
        for k, ops in enumerate(entry["tile_ops"]):
            head = f"[{entry['layer']} L1][{entry['buffering']}][{ops} ops][Tile {k}]"
            for phase in ("load phase", "kernel", "store phase"):
                assert re.search(re.escape(f"{head} {phase} ") + r"\d+ cycles", out), (head, phase)
        n = len(entry["tile_ops"])
        assert re.search(re.escape(f"[{entry['layer']}] {n} tile{'s' if n != 1 else ''} ") + r".*hidden", out)


def test_infeasible_l1_names_layer_and_smallest_l1(tmp_path):
    """A too small --l1: one error line naming the layer and the smallest --l1 that fits every
    layer (with -v also what keeps its tiles large); exit code 1 and no generated network."""
    gen = tmp_path / "gen"
    proc = subprocess.run([sys.executable, str(DEEPLOY_TEST / "testRunner_tiled_siracusa.py"), "-t", str(MINI),
                           "--l1", "100", "--gen-dir", str(gen)], capture_output=True, text=True)
    assert proc.returncode == 1
    line, = proc.stderr.splitlines()   # one line of at most 160 characters, the why under -v
    assert len(line) <= 160 and "not fit L1 = 100 B" in line and line.endswith("(-v: details)"), line
    why = subprocess.run([sys.executable, str(DEEPLOY_TEST / "testRunner_tiled_siracusa.py"), "-t", str(MINI),
                          "--l1", "100", "--gen-dir", str(gen), "-v"], capture_output=True, text=True)
    assert why.returncode == 1 and "stays whole" in why.stderr, why.stderr
    need = int(re.search(r"the smallest size that fits every layer is (\d+) B", proc.stderr).group(1))
    assert "Traceback" not in proc.stderr and not (gen / "network").exists()
    ok = subprocess.run([sys.executable, str(DEEPLOY_TEST / "testRunner_tiled_siracusa.py"), "-t", str(MINI),
                         "--l1", str(need), "--skipsim", "--gen-dir", str(gen)], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr


def test_plot_memory_allocation(tmp_path, capsys):
    """--plotMemAlloc writes one HTML page with a panel per memory level and the tile slots."""
    args = argparse.Namespace(test=str(MINI), verbose=False, skipgen=False, skipsim=True, gen_dir=str(tmp_path),
                              cores=8, l1=16000, l2=TilingOptions.l2, defaultMemLevel="L3", doublebuffer=True,
                              profileTiling=False, plotMemAlloc=True, timeout=None)
    assert run_test(args, TILED, {"cores": 8, "tiling": TilingOptions(16000, TilingOptions.l2, "L3", True)}) == 0
    page = (tmp_path / "memory_allocation.html").read_text()
    for level in ("L1", "L2", "L3"):
        assert f">{level}" in page
    assert "tile (slot 1/" in page and "L2 tile" in page
