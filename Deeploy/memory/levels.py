"""The memory levels of a platform, as the planner and the tiler see them."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MemoryLevel"]


@dataclass(frozen=True)
class MemoryLevel:
    """A memory the planner places buffers in; ``size`` None means unbounded. ``data_attr`` and
    ``const_attr`` are the C attributes (macros of the runtime) placing variables in it;
    ``reserved`` bytes of it belong to the runtime (stacks, its own state)."""

    name: str
    size: int | None
    alignment: int = 4
    data_attr: str = ""
    const_attr: str = ""
    reserved: int = 0             # bytes the platform's runtime keeps in this level
    reserved_for: str = ""        # what they hold (for messages)
