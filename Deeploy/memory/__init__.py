"""Memory planning: lifetimes and static arenas."""
