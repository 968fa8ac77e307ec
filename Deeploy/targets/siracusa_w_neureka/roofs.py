"""Siracusa_w_neureka's roofs for the roofline report: Siracusa's for the cluster's layers
(``Deeploy/targets/siracusa/roofs.py``), and for a layer on the NPU its mode's peak from the NPU's
geometry (``params.NEUREKA``, specs/neureka.md "Throughput"): 1x1 streams one 32-channel weight
word per output channel per cycle into 6x6 pixels (36 x 32 = 1152 MAC/cycle); 3x3 dense is
bit-serial, 8 cycles per output channel for 9 taps x 28 channels (36 x 9 x 28 / 8 = 1134);
3x3 depthwise one channel per 8 cycles (36 x 9 / 8 = 40.5); a MAC counts 2 ops. Untiled, the
NPU reads and writes through its TCDM port (32 B/cycle); tiled, its tiles come by DMA as the
cluster's do."""

from __future__ import annotations

from Deeploy.analysis.roofs import Roof, Roofs
from Deeploy.targets.siracusa.roofs import cluster_bandwidth, cluster_peak
from Deeploy.targets.siracusa_w_neureka.params import NEUREKA
from Deeploy.targets.siracusa_w_neureka.platform import NPU_ENGINE

__all__ = ["ROOFS", "npu_peak_macs"]


def npu_peak_macs(mode: str) -> float:
    """Peak multiply-accumulates per cycle of the NPU in ``mode`` ("1x1", "3x3", "3x3dw")."""
    pixels = NEUREKA.array * NEUREKA.array
    if mode == "1x1":
        return pixels * NEUREKA.in_subtile_1x1
    if mode == "3x3dw":
        return pixels * 9 / NEUREKA.weight_bits
    return pixels * 9 * NEUREKA.in_subtile_3x3 / NEUREKA.weight_bits


def _on_npu(layer) -> bool:
    return layer is not None and layer.engine.name == NPU_ENGINE.name


def _peak(layer, graph, cores: int) -> Roof:
    if not _on_npu(layer):
        return cluster_peak(layer, graph, cores)
    mode = layer.node.params.mode
    macs = npu_peak_macs(mode)
    return Roof(f"{layer.engine.name} {mode}", 2 * macs,
                f"NPU {mode}: {macs:g} MAC/cycle ({NEUREKA.array}x{NEUREKA.array} PEs, {NEUREKA.weight_bits}-bit weights)")


def _bandwidth(level: str, tiled: bool, layer=None) -> Roof:
    if _on_npu(layer) and not tiled:
        return Roof("NPU port", NEUREKA.l1_bytes_per_cycle, f"the NPU's TCDM port {NEUREKA.l1_bytes_per_cycle} B/cycle")
    return cluster_bandwidth(level, tiled, layer)


ROOFS = Roofs(engine_peak=_peak, bandwidth=_bandwidth)
