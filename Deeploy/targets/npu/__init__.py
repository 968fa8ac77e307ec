"""What every NPU target shares (no target of its own: no ``platform`` module): an engine's
description (``spec.NpuSpec``), the engine assignment (``assign.py``), the lowering into NPU jobs
(``lower.py``), the job op's semantics (``job.py``) and the tiler's price of a job tile
(``tile_cycles.py``). Each engine's package gives its weight layout, job registers and throughput
(``siracusa_w_neureka``: Neureka; ``gap9_w_ne16``: NE16)."""
