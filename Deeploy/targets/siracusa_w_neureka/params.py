"""Neureka's geometry and throughput, each with its source (``specs/neureka.md``, cited as
*spec* with its section; *derived* = computed there from cited constants). The engine
assignment, the weight encoding and the NPU timing read these; nothing else restates them."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["NeurekaParams", "NEUREKA", "WeightMemoryParams", "WEIGHT_MEMORY"]


@dataclass(frozen=True)
class NeurekaParams:
    """One Neureka instance.

    array:              6x6 processing elements; an output subtile is array x array pixels
                        (spec "Geometry": RTL / GVSoC).
    out_subtile:        32 output channels per subtile (28 for 3x3 depthwise) (spec "Geometry").
    in_subtile_1x1:     32 input channels per weight row in 1x1 mode (spec "Offline weight layout").
    in_subtile_3x3:     28 input channels per weight row in 3x3 modes (spec "Offline weight layout").
    weight_bits:        8: the only width the driver uses (spec "What it computes").
    row_bytes:          32 B per weight row = one weight-port word per cycle (spec "Throughput": RTL package).
    max_pad:            at most 2 pixels of padding per side, done by the engine (spec "What it computes").
    max_shift:          the one normquant right shift per layer has 5 bits: 0..31 (spec "What it computes").
    queue_depth:        2 job register contexts (spec "Geometry, registers, job queue").
    load_extra_cycles, setup_cycles, normquant_cycles: per-subtile overheads of the GVSoC FSM
                        (spec "Throughput": about 6, 3-10 (mid value 6), about 30).
    l1_bytes_per_cycle: 32 B/cycle from the TCDM (spec "Throughput": GVSoC).
    """

    array: int = 6
    out_subtile: int = 32
    out_subtile_dw: int = 28
    in_subtile_1x1: int = 32
    in_subtile_3x3: int = 28
    weight_bits: int = 8
    row_bytes: int = 32
    max_pad: int = 2
    max_shift: int = 31
    queue_depth: int = 2
    load_extra_cycles: int = 6
    setup_cycles: int = 6
    normquant_cycles: int = 30
    l1_bytes_per_cycle: int = 32

    def in_subtile(self, mode: str) -> int:
        """Input channels per weight row in ``mode`` ("1x1", "3x3", "3x3dw")."""
        return self.in_subtile_1x1 if mode == "1x1" else self.in_subtile_3x3

    def job_cycles(self, mode: str, ho: int, wo: int, ko: int, ki: int, out_bytes: int = 1) -> int:
        """Modelled cycles of one job (spec "Throughput", rough model per (Ko subtile, HoWo
        subtile)): for every output-channel and spatial subtile, every input-channel subtile
        loads its activations (one access per input pixel plus ``load_extra_cycles``) and streams
        the weights (1 cycle per output channel in 1x1, ``weight_bits`` in 3x3; depthwise: one
        channel at a time), then normquant and one store per output pixel (x4 for int32)."""
        a = self.array
        spatial = -(-ho // a) * -(-wo // a)
        pixels_in = a * a if mode == "1x1" else (a + 2) * (a + 2)
        load = pixels_in + self.load_extra_cycles
        cycles = 0
        ko_sub = self.out_subtile_dw if mode == "3x3dw" else self.out_subtile
        for k0 in range(0, ko, ko_sub):
            k_here = min(ko_sub, ko - k0)
            if mode == "3x3dw":
                per = load + self.setup_cycles + k_here * self.weight_bits
            else:
                ki_subs = -(-ki // self.in_subtile(mode))
                per_weights = k_here * (1 if mode == "1x1" else self.weight_bits)
                per = ki_subs * (load + self.setup_cycles + per_weights)
            cycles += spatial * (per + self.normquant_cycles + a * a * (4 if out_bytes == 4 else 1))
        return cycles


NEUREKA = NeurekaParams()


@dataclass(frozen=True)
class WeightMemoryParams:
    """The weight memory (Neural Memory Subsystem) the NPU reads weights from through its own port
    (spec "Weight memory").

    window_base, window_bytes: its address window on the chip, 8 MiB at 0x10400000 (MRAM at +0,
                        SRAM at +4 MiB) (spec "Weight memory": GVSoC Siracusa model). The
                        virtual platform (QEMU virt) has no RAM there: the linker gives the level
                        its own region (``siracusa/linker.py``), which the program's weight
                        pointers then name.
    sram_offset:        the SRAM part starts 4 MiB into the window; the peer models it as a 4 MiB
                        level, so does ``platform.WMEM_LEVEL`` (``--wmem-size`` changes it).
    word_bytes:         32 B per weight word, one word per cycle through the weight port
                        (spec "Weight memory": 1 cycle per 32-byte word; "Throughput": 288-bit
                        port, 256 bit after realignment).
    latency_cycles:     1 cycle per word, against TCDM latency + 1 from L1 (spec "Weight memory").
                        The job model (``NeurekaParams.job_cycles``) already streams one word per
                        cycle; what the weight memory saves is the DMA of the weights into L1.
    """

    window_base: int = 0x1040_0000
    window_bytes: int = 8 << 20
    sram_offset: int = 4 << 20
    word_bytes: int = 32
    latency_cycles: int = 1


WEIGHT_MEMORY = WeightMemoryParams()
