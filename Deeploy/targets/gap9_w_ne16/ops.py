"""Ne16Conv: one job of GAP9's NE16 (``specs/gap9.md`` §3), the generic NPU job op
(``Deeploy/targets/npu/job.py``) with NE16's weight layout (``weights.py``), limits and job model
(``params.py``), registered when the target is imported; ``config_word`` is its CONF0 register.
NE16 reads unsigned activations only (the spec lists no signed-input bit; the pulp-nnx driver
supports uint8 input [NX]): the lowering adds 128 to int8 inputs and corrects the bias."""

from __future__ import annotations

from Deeploy.targets.gap9.platform import GAP9_L1
from Deeploy.targets.gap9_w_ne16.params import NE16
from Deeploy.targets.gap9_w_ne16.weights import decode_weights, encode_weights
from Deeploy.targets.npu.job import NpuConvParams, register_job_op
from Deeploy.targets.npu.spec import MODES, NpuSpec

__all__ = ["NE16_SPEC", "config_word", "run_columns"]

# NE16 takes a layer where it pays off against GAP9's cluster (its depthwise mode is slower
# than the cores on small layers: params.NE16.peak_macs)
NE16_SPEC = NpuSpec("ne16", "Ne16Conv", NE16.array, NE16.max_pad, NE16.max_shift, False,
                    encode_weights, decode_weights, NE16.job_cycles, GAP9_L1, NE16.job_setup)


def config_word(p: NpuConvParams, signed_input: bool = False) -> int:
    """The job's CONF0 (spec §3 "CONF0 bits"): weight bits - 1 [2:0] (8-bit weights), mode
    [6:5] (3x3 0, 3x3 depthwise 1, 1x1 2, as pulp-nnx), layer-wise weight offset (15); with
    normquant: norm-quant (4), norm mode [13:12] (8-bit scale 0, 32-bit 2), shift [20:16], norm
    bias (25), quant mode [22:21] 8-bit outputs (0), identity (23, *choice*: set = no ReLU as
    Neureka's bit 23) for signed outputs; without: 32-bit outputs (quant mode 2) and identity.
    Rounding (11) stays clear: the rounding term is in the bias. The linear (7), stride-2 (8),
    streamin (14) and mode16 (3) bits are not used."""
    word = (NE16.weight_bits - 1) | (MODES.index(p.mode) << 5) | (1 << 15)
    if not p.normquant:
        return word | (2 << 21) | (1 << 23)
    norm = 0 if p.scale8 else 2 << 12
    return word | (1 << 4) | norm | (p.shift << 16) | (1 << 25) | ((1 << 23) if p.out_signed else 0)


register_job_op(NE16_SPEC)


def run_columns(p: NpuConvParams) -> int:
    """The columns of the 3-row job NE16 computes the pixels of a plane of ``p`` in (then the 1 or
    2 left over: ``Ne16Params.planes``), 0 when it computes the plane as one job."""
    planes = NE16.planes(p.mode, *p.out_plane, p.cout, p.cin, 1 if p.normquant else 4)
    return planes[0][2] if planes[0][1:] != p.out_plane else 0
