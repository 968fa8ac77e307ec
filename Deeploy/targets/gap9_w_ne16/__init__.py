"""GAP9 with its NE16 accelerator (``specs/gap9.md`` §3)."""

from Deeploy.targets.gap9_w_ne16 import ops  # noqa: F401  (registers the NE16 job, Ne16Conv)
