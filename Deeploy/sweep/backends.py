"""Where a sweep's points run, each through ``run_isolated`` (a process of its own): a local pool
of ``jobs`` points at a time, or Ray tasks on a cluster. Both call ``done(record)`` in the
calling thread as each point finishes, in the order they finish."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Callable

from Deeploy.errors import DeeployError
from Deeploy.sweep.config import Point
from Deeploy.sweep.point import failed_record, run_isolated, stop_running

__all__ = ["run_local", "run_ray", "POINT_CPUS"]

POINT_CPUS = 1          # a point compiles, builds and simulates on one core at a time
RAY_RETRIES = 2         # a task whose worker dies runs again, up to this many times


def run_local(points: list[Point], done: Callable[[dict], None], *, jobs: int, timeout: float,
              work_root: Path) -> None:
    """The points on this machine, ``jobs`` at a time."""
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(run_isolated, p, timeout, work_root) for p in points]
        try:
            for future in as_completed(futures):
                done(future.result())
        except BaseException:   # interrupted: no new point starts, the running ones are killed
            for future in futures:
                future.cancel()
            stop_running()
            raise


def run_ray(points: list[Point], done: Callable[[dict], None], *, address: str | None, timeout: float) -> None:
    """The points as Ray tasks of ``POINT_CPUS`` CPUs each, on the cluster at ``address`` (None: a
    local Ray instance started for the sweep). A task whose worker died ``RAY_RETRIES`` times is
    recorded as "lost" (a re-run runs it again). Every node needs Deeploy, its toolchain and
    the networks at the same paths."""
    try:
        import ray
    except ImportError:
        raise DeeployError("--ray needs the ray package: pip install 'deeploy[sweep]'") from None
    try:
        ray.init(address=address, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise DeeployError(f"cannot connect to the Ray cluster at {address}: {' '.join(str(exc).split())[:200]} "
                           f"(start one with `ray start --head`, or drop --ray-address for a local one)") from None
    try:
        task = ray.remote(num_cpus=POINT_CPUS, max_retries=RAY_RETRIES)(run_isolated)
        pending = {task.remote(p, timeout): p for p in points}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            point = pending.pop(ready[0])
            try:
                record = ray.get(ready[0])
            except ray.exceptions.RayError as exc:
                lines = str(exc).strip().splitlines()
                record = failed_record(point, "lost", f"Ray task failed ({type(exc).__name__}"
                                                      f"{': ' + lines[0] if lines else ''})")
            done(record)
    finally:
        ray.shutdown()
