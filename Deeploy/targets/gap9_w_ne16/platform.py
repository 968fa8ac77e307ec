"""GAP9_w_ne16: GAP9 (its memory, cluster engine, bindings, passes, tiling and cycle model, by
composition) plus the NE16 accelerator as a second engine (``specs/gap9.md`` §3). ``configure``
applies ``--no-npu-for`` (layers kept on the cluster)."""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from Deeploy.platform import Engine, Platform
from Deeploy.targets.gap9.platform import GAP9
from Deeploy.targets.gap9_w_ne16.bindings import NE16_BINDINGS
from Deeploy.targets.gap9_w_ne16.ops import NE16_SPEC
from Deeploy.targets.gap9_w_ne16.params import NE16
from Deeploy.targets.npu.lower import make_assign_engines
from Deeploy.targets.npu.tile_cycles import with_npu_tiles

__all__ = ["PLATFORM", "NE16_ENGINE", "configure"]

# NE16: a HWPE on the cluster's TCDM, one job at a time, programmed by one core; its layers are
# not forked. Tiled in the table loop, a tile's job runs while the next tile's is programmed (two
# contexts, params.queue_depth): the loop waits through npu_tile_sync (deeploy_npu.h).
NE16_ENGINE = Engine("ne16", cores=1, forked=False, runtime="ne16.h", tile_sync="npu_tile_sync")


def configure(no_npu_for: Sequence[str] = ()) -> Platform:
    """The platform with the layers named in ``no_npu_for`` kept on the cluster."""
    return replace(PLATFORM, passes=(*GAP9.passes, make_assign_engines(NE16_SPEC, no_npu_for)))



PLATFORM = replace(
    GAP9,
    name="GAP9_w_ne16",
    libraries=(*GAP9.libraries, "NPU", "NE16"),
    bindings=NE16_BINDINGS,
    passes=(*GAP9.passes, make_assign_engines(NE16_SPEC)),   # after the layout pass: it reads channels-last convs
    tiling=with_npu_tiles(GAP9.tiling, NE16_SPEC),   # NPU tiles priced by its job model
    tiled_only="NE16 reads and writes only the TCDM (L1)",
    timing=replace(GAP9.timing, npu_peak_macs=NE16.peak_macs_3x3),   # the profiles' NE16 utilisation
    engines=(*GAP9.engines, NE16_ENGINE),   # the cluster stays first: kernels naming no engine run there
    configure=configure,
)
