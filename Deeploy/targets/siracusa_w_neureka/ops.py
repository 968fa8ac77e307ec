"""NeurekaConv: one job of the Neureka NPU (``specs/neureka.md`` "What it computes"), the generic
NPU job op (``Deeploy/targets/npu/job.py``) with Neureka's weight layout (``weights.py``), limits
and job model (``params.py``), registered when the target is imported (its package imports this
module); ``config_word`` is its config register."""

from __future__ import annotations

from Deeploy.targets.npu.job import NpuConvParams, register_job_op
from Deeploy.targets.npu.spec import MODES, NpuSpec
from Deeploy.targets.siracusa_w_neureka.params import NEUREKA
from Deeploy.targets.siracusa_w_neureka.weights import decode_weights, encode_weights

__all__ = ["NEUREKA_SPEC", "config_word"]

# signed inputs: the config word's bit 26 (specs/neureka.md "config word bits")
NEUREKA_SPEC = NpuSpec("neureka", "NeurekaConv", NEUREKA.array, NEUREKA.max_pad, NEUREKA.max_shift, True,
                       encode_weights, decode_weights, NEUREKA.job_cycles)


def config_word(p: NpuConvParams, signed_input: bool) -> int:
    """The job's config register (specs/neureka.md "config word bits"): 8-bit weights with a
    layer-wise offset, the mode, and normquant (8- or 32-bit scale, bias, shift, ReLU for
    unsigned outputs) or 32-bit outputs; bit 9 when the weights come from the weight memory."""
    word = 7 | (MODES.index(p.mode) << 5) | (1 << 15) | (int(signed_input) << 26) | (int(p.wmem) << 9)
    if not p.normquant:
        return word | (2 << 21) | (1 << 23)
    scale_width = 0 if p.scale8 else 2 << 12
    return word | (1 << 4) | scale_width | (p.shift << 16) | (1 << 25) | ((1 << 23) if p.out_signed else 0)


register_job_op(NEUREKA_SPEC)
