"""Which buffers a small fast memory holds: the 0/1 knapsack over their sizes and the modelled
cycles each saves there, solved exactly with CP-SAT (not first-come in graph order).

``choose(items, capacity)`` -> the names whose values sum highest with sizes within ``capacity``;
ties go to the fewest bytes (one CP-SAT worker: deterministic)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

__all__ = ["Item", "choose"]


@dataclass(frozen=True)
class Item:
    """A candidate buffer: ``size`` bytes (as placed, alignment included), ``value`` cycles saved."""

    name: str
    size: int
    value: int


def choose(items: Sequence[Item], capacity: int, seconds: float = 10.0) -> list[str]:
    """The names of the items to place (in the order given): the most value within ``capacity``
    bytes. Items of no value are never placed; an item larger than the capacity never fits."""
    live = [it for it in items if it.value > 0 and it.size <= capacity]
    if not live:
        return []
    if sum(it.size for it in live) <= capacity:      # everything worth placing fits
        return [it.name for it in live]
    from ortools.sat.python import cp_model
    model = cp_model.CpModel()
    take = [model.NewBoolVar(f"x{k}") for k in range(len(live))]
    model.Add(sum(it.size * x for it, x in zip(live, take)) <= capacity)
    value = sum(it.value * x for it, x in zip(live, take))
    best = _solve(model, value, seconds)
    model.Add(value >= best)                         # then the fewest bytes among the best
    model.Minimize(sum(it.size * x for it, x in zip(live, take)))
    solver = _solver(seconds)
    _check(solver, solver.Solve(model))
    return [it.name for it, x in zip(live, take) if solver.Value(x)]


def _solver(seconds: float):
    from ortools.sat.python import cp_model
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = seconds
    solver.parameters.num_workers = 1                # deterministic
    return solver


def _check(solver, status) -> None:
    from ortools.sat.python import cp_model
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        raise RuntimeError(f"weight placement: CP-SAT found no solution (status {solver.StatusName(status)})")


def _solve(model, value, seconds: float) -> int:
    model.Maximize(value)
    solver = _solver(seconds)
    _check(solver, solver.Solve(model))
    return int(solver.ObjectiveValue())
