"""``deeploy sweep``: a design-space sweep. A config (YAML or TOML) names networks, platforms
and values for the compile flags; every point of their cross product (or a sample of it) is
compiled, built and run on the host or the platform's virtual platform, and its cycles, profile
split, memory peaks and code size are appended to a results folder as it finishes.

* ``config``: the config file, its points and their sampling;
* ``point``: one point, compiled, built and run in a process of its own;
* ``backends``: where the points run (a local pool, or Ray tasks);
* ``store``: the results folder (``results.jsonl`` and ``results.csv``), resumable;
* ``report``: the HTML page of a results folder (Pareto fronts, side-by-side views, table);
* ``runner``: ``run_sweep``, the points of a config that a results folder lacks, on a backend.

The package imports none of them, so that ``python -m Deeploy.sweep.point`` runs a point alone.
"""
