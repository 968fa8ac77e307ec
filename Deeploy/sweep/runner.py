"""``deeploy sweep CONFIG -o DIR``: the config's points that ``DIR`` has no result for run on a
backend; each finished point is appended to ``DIR`` and printed on one line."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from Deeploy.errors import DeeployError
from Deeploy.sweep.backends import run_local, run_ray
from Deeploy.sweep.config import load_config
from Deeploy.sweep.store import DONE, ResultStore

__all__ = ["run_sweep"]


def _flags_text(flags: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in flags.items())


def run_sweep(config: str | Path, out: str | Path, *, jobs: int | None = None, ray: bool = False,
              ray_address: str | None = None, samples: int | None = None, retry_failed: bool = False,
              say: Callable[[str], None] = lambda line: print(line, flush=True)) -> int:
    """Run the points of ``config`` that ``out`` has no result for (``retry_failed``: nor a
    successful one); 0 once every point has a record, 1 if a point was lost with its Ray worker,
    130 if interrupted."""
    if jobs is not None and jobs < 1:
        raise DeeployError(f"--jobs {jobs}: give at least 1")
    if samples is not None and samples < 1:
        raise DeeployError(f"--samples {samples}: give at least 1")
    if ray_address and not ray:
        raise DeeployError("--ray-address needs --ray")
    if ray and jobs is not None:
        raise DeeployError("--jobs sizes the local pool; with --ray the cluster's CPUs decide: drop --jobs")
    cfg = load_config(config)
    points = cfg.points(samples)
    store = ResultStore(out, config)
    skip = ("ok",) if retry_failed else DONE
    todo = [p for p in points if store.records.get(p.key, {}).get("status") not in skip]
    backend = f"Ray at {ray_address}" if ray_address else "a local Ray instance" if ray else \
        f"{jobs or 1} local process{'es' if (jobs or 1) > 1 else ''}"
    say(f"sweep: {len(points)} point{'s' if len(points) != 1 else ''}, {len(points) - len(todo)} with results in "
        f"{out}, {len(todo)} to run on {backend}")
    finished = []

    def done(record: dict) -> None:
        store.append(record)
        finished.append(record)
        result = (f"{record['cycles']:.0f} cycles" if record.get("cycles") is not None else "ok") \
            if record["status"] == "ok" else f"{record['status']}: {record['error']}"
        say(f"[{len(finished)}/{len(todo)}] {record['network']} {record['platform']} "
            f"{_flags_text(record['flags'])}: {result}")

    try:
        if todo and ray:
            run_ray(todo, done, address=ray_address, timeout=cfg.timeout)
        elif todo:
            run_local(todo, done, jobs=jobs or 1, timeout=cfg.timeout, work_root=Path(out) / ".work")
    except KeyboardInterrupt:
        say(f"sweep: interrupted; the {len(finished)} points that finished are in {out} (the same command resumes)")
        return 130
    statuses = [store.records[p.key]["status"] for p in points]
    counts = {s: statuses.count(s) for s in dict.fromkeys(statuses)}
    say("sweep: " + ", ".join(f"{n} {s}" for s, n in counts.items()) + f"; results in {Path(out) / 'results.csv'}")
    return 1 if "lost" in counts else 0
