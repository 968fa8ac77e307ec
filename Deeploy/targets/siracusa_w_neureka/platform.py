"""Siracusa_w_neureka: Siracusa (its memory, cluster engine, bindings, passes, tiling and cycle
model, by composition) plus the Neureka NPU as a second engine and its weight memory as a memory
level (``specs/neureka.md``). ``configure`` applies the user's options (``--no-npu-for``,
``--wmem-size``, ``--neureka-wmem``: NPU weights placed in the weight memory, ``wmem.py``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from Deeploy.errors import DeeployError
from Deeploy.platform import Engine, MemoryLevel, Platform
from Deeploy.targets.siracusa.platform import SIRACUSA, SIRACUSA_PASSES
from Deeploy.targets.npu.lower import make_assign_engines
from Deeploy.targets.npu.tile_cycles import with_npu_tiles
from Deeploy.targets.siracusa_w_neureka.bindings import NEUREKA_BINDINGS
from Deeploy.targets.siracusa_w_neureka.ops import NEUREKA_SPEC
from Deeploy.targets.siracusa_w_neureka.params import WEIGHT_MEMORY
from Deeploy.targets.siracusa_w_neureka.wmem import WMEM, place_weights, stream_into_wmem

__all__ = ["PLATFORM", "NPU_ENGINE", "WMEM_LEVEL", "WMEM_DEFAULT_SIZE", "configure", "with_wmem_size"]

MiB = 1024 * 1024

# The NPU: one job at a time per context, programmed by one core (spec "Geometry, registers, job
# queue"); it is not a cluster, its layers are not forked. Tiled in the table loop, a tile's jobs run
# while the next tile's are programmed (the queue holds two): the loop waits through npu_tile_sync (deeploy_npu.h).
NPU_ENGINE = Engine("neureka", cores=1, forked=False, runtime="neureka.h", tile_sync="npu_tile_sync")

# The SRAM part of the Neural Memory Subsystem, modelled as a 4 MiB level as the peer does (spec
# "Weight memory": 8 MiB window at 0x10400000, SRAM at +4 MiB; params.WEIGHT_MEMORY); 32-byte
# weight words. Its contents are constants (DEEPLOY_WMEM_CONST, neureka.h) loaded with the program,
# and the double buffers of rolled regions' weights streamed into it (DEEPLOY_WMEM).
WMEM_DEFAULT_SIZE = WEIGHT_MEMORY.window_bytes - WEIGHT_MEMORY.sram_offset
WMEM_LEVEL = MemoryLevel(WMEM, WMEM_DEFAULT_SIZE, alignment=WEIGHT_MEMORY.word_bytes, const_attr="DEEPLOY_WMEM_CONST",
                        data_attr="DEEPLOY_WMEM")

# Siracusa's passes, then the engine assignment (after the layout pass: it reads channels-last convs).
NEUREKA_PASSES = (*SIRACUSA_PASSES, make_assign_engines(NEUREKA_SPEC))


def configure(no_npu_for: Sequence[str] = (), wmem_size: int = WMEM_DEFAULT_SIZE, neureka_wmem: bool = False
              ) -> Platform:
    """The platform with the layers named in ``no_npu_for`` kept on the cluster, a weight memory
    of ``wmem_size`` bytes (a positive multiple of 32) and, with ``neureka_wmem``, the NPU weights
    that save the most modelled cycles placed in it (``wmem.py``)."""
    if wmem_size <= 0 or wmem_size % WMEM_LEVEL.alignment:
        raise DeeployError(f"--wmem-size {wmem_size}: give a positive multiple of {WMEM_LEVEL.alignment} bytes")
    if wmem_size > WEIGHT_MEMORY.window_bytes:
        raise DeeployError(f"weight memory size {wmem_size} B is more than its {WEIGHT_MEMORY.window_bytes} B address "
                           f"window (MRAM and SRAM); give --wmem-size {WEIGHT_MEMORY.window_bytes} or less")
    memory = tuple(replace(m, size=wmem_size) if m.name == WMEM_LEVEL.name else m for m in PLATFORM.memory)
    return replace(PLATFORM, memory=memory, passes=(*SIRACUSA_PASSES, make_assign_engines(NEUREKA_SPEC, no_npu_for)),
                   place_weights=place_weights if neureka_wmem else None,
                   stream_into=stream_into_wmem if neureka_wmem else None)



PLATFORM = replace(
    SIRACUSA,
    name="Siracusa_w_neureka",
    libraries=(*SIRACUSA.libraries, "NPU", "Neureka"),
    bindings=NEUREKA_BINDINGS,
    memory=(*SIRACUSA.memory, WMEM_LEVEL),
    passes=NEUREKA_PASSES,
    tiling=with_npu_tiles(SIRACUSA.tiling, NEUREKA_SPEC),   # NPU tiles priced by its job model
    engines=(*SIRACUSA.engines, NPU_ENGINE),   # the cluster stays first: kernels naming no engine run there
    configure=configure,
)


def with_wmem_size(size: int) -> Platform:
    """The platform with a weight memory of ``size`` bytes."""
    return configure(wmem_size=size)
