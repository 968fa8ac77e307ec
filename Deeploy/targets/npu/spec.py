"""One NPU engine as the generic NPU pieces see it: its engine and job-op names, its geometry and
limits, its offline weight encoder and decoder and its job cycle model. The values come from the
engine's package (``siracusa_w_neureka/params.py``, ``gap9_w_ne16/params.py``), with their sources."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

__all__ = ["NpuSpec", "EncodedWeights", "MODES"]

MODES = ("3x3", "3x3dw", "1x1")     # the job op's ``mode`` attribute indexes this (both engines' mode bits)


@dataclass(frozen=True)
class EncodedWeights:
    """An engine's weight blob (uint8, the shape its layout gives) and the layer-wise offset the
    job's weight-offset register carries (the engine adds it to every stored weight)."""

    mode: str
    data: np.ndarray
    offset: int
    cout: int
    cin: int

    @property
    def shape(self) -> tuple[int, ...]:
        return self.data.shape

    @property
    def nbytes(self) -> int:
        return int(self.data.size)


@dataclass(frozen=True)
class NpuSpec:
    """engine:       the ``Engine`` name its jobs run on; op: the job op it lowers layers into.
    array:           output subtile side in pixels (a GEMM's rows are refactored to fill it).
    max_pad:         padding per side the engine generates; max_shift: its normquant shift range.
    signed_input:    it reads int8 activations (else uint8 only: int8 inputs get +128 first and
                     the bias the matching correction, ``lower.py``).
    encode(w, mode): ``EncodedWeights`` of int8 ``[Cout, Cin, kh, kw]`` weights (depthwise ``[C, 1, 3, 3]``);
    decode(data, mode, offset, cout, cin): the weights back, int64.
    job_cycles(mode, ho, wo, ko, ki, out_bytes): modelled cycles of one job.
    cluster_tiles:   the cluster's ``TilingParams``: given, a layer goes to the NPU only where its
                     jobs (and its input's shift to uint8) take fewer modelled cycles than the
                     tiler's price of the cluster's kernel (``assign.decisions``); None: every layer
                     the NPU can run goes to it.
    job_setup_cycles: core cycles one job costs beyond the job itself (its driver on core 0:
                     acquire a context, write the registers, trigger, wait), added per job there."""

    engine: str
    op: str
    array: int
    max_pad: int
    max_shift: int
    signed_input: bool
    encode: Callable[[np.ndarray, str], EncodedWeights]
    decode: Callable[..., np.ndarray]
    job_cycles: Callable[..., int]
    cluster_tiles: Any = None
    job_setup_cycles: int = 0
