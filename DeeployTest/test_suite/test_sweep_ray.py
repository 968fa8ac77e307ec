"""``deeploy sweep --ray`` on a Ray cluster the test starts (``ray start --head`` on 127.0.0.1,
2 CPUs): the same records as the local backend; Ray workers and the sweep itself killed mid-sweep
lose no finished point and a re-run completes the rest. Marker ``ray`` (Ray's start-up is slow;
``.ci/run`` runs it with the ``sweep`` extra installed)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from Deeploy.sweep.runner import run_sweep
from DeeployTest.test_suite.conftest import REPO
from DeeployTest.test_suite.test_sweep import ADD, needs_cross

pytestmark = [pytest.mark.ray, needs_cross]
ray = pytest.importorskip("ray", reason="the Ray backend needs the sweep extra: pip install 'deeploy[sweep]'")

SWEEP = f"networks: [{ADD}]\nplatforms: [Siracusa]\nl1: [2000, 4000, 8000]\ndoublebuffer: false\n"
MEASURED = ("status", "error", "cycles", "compute", "exposed_dma", "dma_issue", "dma_wait", "overhead", "peak_L1",
            "peak_L2", "peak_L3", "code_text", "code_rodata", "code_data")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def cluster():
    """The address of a one-node Ray cluster with 2 CPUs, stopped (by its ``ray start`` process)
    after the module's tests."""
    temp = Path(f"/tmp/ray-sweep-{os.getpid()}")    # short: Ray's socket paths must fit 107 characters
    port = _free_port()
    # a token left by an earlier local Ray instance would turn token authentication on for this
    # cluster, which ray.init(address=...) does not follow: off for this loopback-only cluster
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p),
           "RAY_AUTH_MODE": "disabled"}
    log = open(temp.with_suffix(".log"), "w")
    head = subprocess.Popen([shutil.which("ray") or "ray", "start", "--head", "--block", "--port", str(port),
                             "--node-ip-address", "127.0.0.1", "--num-cpus", "2", "--temp-dir", str(temp),
                             "--include-dashboard", "false", "--disable-usage-stats"],
                            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while "Ray runtime started" not in temp.with_suffix(".log").read_text():
            assert head.poll() is None and time.monotonic() < deadline, temp.with_suffix(".log").read_text()
            time.sleep(1)
        yield temp, f"127.0.0.1:{port}"
    finally:
        head.send_signal(signal.SIGTERM)
        try:
            head.wait(90)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
        log.close()
        shutil.rmtree(temp, ignore_errors=True)
        temp.with_suffix(".log").unlink(missing_ok=True)


def _records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def _by_key(out: Path) -> dict[str, dict]:
    return {r["key"]: {k: r.get(k) for k in MEASURED} for r in _records(out)}


def test_ray_gives_the_local_records(tmp_path, cluster):
    _, address = cluster
    config = tmp_path / "sweep.yaml"
    config.write_text(SWEEP)
    assert run_sweep(config, tmp_path / "local", jobs=2, say=lambda _: None) == 0
    assert run_sweep(config, tmp_path / "ray", ray=True, ray_address=address, say=lambda _: None) == 0
    local, remote = _by_key(tmp_path / "local"), _by_key(tmp_path / "ray")
    assert len(local) == 3 and {r["status"] for r in local.values()} == {"ok"}
    assert remote == local


def _processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every process."""
    found = {}
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit():
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                found[int(entry.name)] = (ppid, (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except (OSError, ValueError, IndexError):
            continue
    return found


def test_killed_workers_and_sweep_lose_no_finished_point(tmp_path, cluster):
    temp, address = cluster
    config = tmp_path / "sweep.yaml"
    config.write_text(SWEEP)
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
    driver = subprocess.Popen([sys.executable, "-c", "import sys; from Deeploy.cli import main; sys.exit(main())",
                               "sweep", str(config), "-o", str(out), "--ray", "--ray-address", address],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        deadline = time.monotonic() + 300
        while not (out / "results.jsonl").is_file() or not (out / "results.jsonl").read_text():
            assert driver.poll() is None and time.monotonic() < deadline
            time.sleep(0.5)
        procs = _processes()
        raylets = {pid for pid, (_, cmd) in procs.items() if "raylet/raylet" in cmd and str(temp) in cmd}
        workers = [pid for pid, (ppid, cmd) in procs.items() if ppid in raylets and cmd.startswith("ray::")
                   and "Agent" not in cmd]
        assert workers
        for pid in workers:
            os.kill(pid, signal.SIGKILL)
        driver.kill()
    finally:
        driver.kill()
        driver.wait()
    before = _records(out)
    assert 1 <= len(before) < 3 and {r["status"] for r in before} == {"ok"}
    assert run_sweep(config, out, ray=True, ray_address=address, say=lambda _: None) == 0
    after = _records(out)
    assert after[:len(before)] == before                            # nothing finished was lost or redone
    assert len({r["key"] for r in after}) == len(after) == 3 and {r["status"] for r in after} == {"ok"}
