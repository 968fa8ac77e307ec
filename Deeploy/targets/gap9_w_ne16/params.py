"""NE16's geometry and throughput, each with its source (``specs/gap9.md`` §3, cited as *spec*;
its keys: [NE] the ne16 RTL, [NX] pulp-nnx, [GV] GVSoC). *choice* marks a value the spec does not
give, with the reason. The engine assignment, the weight encoding and the job model read these;
nothing else restates them."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Ne16Params", "NE16"]


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _subtiles(planes: list[tuple[int, int, int]], a: int) -> int:
    """The ``a x a`` output subtiles of jobs over ``planes`` (first pixel, rows, columns)."""
    return sum(_ceil(h, a) * _ceil(w, a) for _, h, w in planes)


@dataclass(frozen=True)
class Ne16Params:
    """One NE16 instance.

    array:              output subtile 3x3 pixels (spec: "Subtile: input 5x5x16 -> output 3x3x32" [NX];
                        9 columns of the 9x9 array [NE]).
    out_subtile:        32 output channels per subtile (TP_OUT 32 [NE]); depthwise: 16, the channels of
                        one input subtile (TP_IN 16 [NE]: depthwise swaps cout/cin, [NX] Ne16Weight).
    in_subtile:         16 input channels per weight group (TP_IN 16, block 16 [NE]; weight layout [NX]).
    weight_bits:        8: the compiler stores int8 weights (the engine takes 2..8 bits [NE README]).
    max_pad:            *choice* 2 per side as Neureka: the padding register has 4 bits per side [NX]
                        but the 5x5 input subtile of a 3x3 output (spec) needs at most 1 + the window.
    max_shift:          the quantisation shift has 5 bits, CONF0 bits 16-20 (spec).
    load_1x1, load_3x3: cycles to load one input subtile: 19 (1x1) / 31 (3x3) (spec "GVSoC timing
                        constants: load overhead" [GV ne16.cpp]).
    matvec_overhead:    17 cycles per input subtile around the matrix-vector product (spec [GV]).
    bits_per_cycle_3x3: one bit plane of 9 taps x 16 channels for 9 pixels per cycle in 3x3 modes
                        (spec, derived upper bound): ``weight_bits`` cycles per output channel.
    channels_per_cycle_1x1: *choice* 1x1 takes one output channel per cycle with all its bit planes
                        in the array's rows (9 rows hold 8 planes); the spec gives no 1x1 rate.
    quant_per_cycle:    4 outputs quantised per cycle (spec [GV ne16_fsm.cpp]).
    fifo_cycles:        +6 cycles of FIFO/control per subtile (spec [GV]).
    port_bytes:         256-bit (32 B) memory port after realignment (spec [NE ne16_package.sv]): one
                        store per output pixel of up to 32 bytes.
    queue_depth:        *choice* 2 job contexts, as Neureka's HWPE register file (the spec does not say).
    peak_macs_3x3:      162 8x8-bit MACs per cycle: one bit plane of 9 taps x 16 channels for 9 pixels
                        per cycle (spec, derived upper bound): the profiles' utilisation.
    job_setup:          *measured* 230 core cycles per job beyond the job (ne16_conv.inc on core 0:
                        acquire, 24 register writes, trigger, wait): single-job tiles of
                        miniMobileNetv2 on the virtual platform, kernel less NPU busy cycles 217..232;
                        what a second job of a plane must save (``planes``).
    """

    array: int = 3
    out_subtile: int = 32
    out_subtile_dw: int = 16
    in_subtile: int = 16
    weight_bits: int = 8
    max_pad: int = 2
    max_shift: int = 31
    load_1x1: int = 19
    load_3x3: int = 31
    matvec_overhead: int = 17
    quant_per_cycle: int = 4
    fifo_cycles: int = 6
    port_bytes: int = 32
    queue_depth: int = 2
    peak_macs_3x3: float = 162.0
    job_setup: int = 230

    def subtile_cycles(self, mode: str, ko: int, ki: int, out_bytes: int = 1) -> int:
        """Modelled cycles of one spatial (3x3) subtile over all output channels: per
        output-channel subtile, every input subtile is loaded (19 / 31) and multiplied (17 + per
        output channel 1 cycle in 1x1, ``weight_bits`` in 3x3 modes; depthwise: one input subtile
        of its 16 channels), then the subtile's outputs are quantised (4 per cycle), stored (one
        port word per pixel) and 6 cycles of FIFO/control pass."""
        a = self.array
        load = self.load_1x1 if mode == "1x1" else self.load_3x3
        per_channel = 1 if mode == "1x1" else self.weight_bits
        ko_sub = self.out_subtile_dw if mode == "3x3dw" else self.out_subtile
        ki_subs = 1 if mode == "3x3dw" else _ceil(ki, self.in_subtile)
        cycles = 0
        for k0 in range(0, ko, ko_sub):
            here = min(ko_sub, ko - k0)
            body = ki_subs * (load + self.matvec_overhead + here * per_channel)
            tail = _ceil(a * a * here, self.quant_per_cycle) + a * a * _ceil(here * out_bytes, self.port_bytes)
            cycles += body + tail + self.fifo_cycles
        return cycles

    def planes(self, mode: str, ho: int, wo: int, ko: int, ki: int, out_bytes: int = 1) -> list[tuple[int, int, int]]:
        """The jobs (first pixel, rows, columns) NE16 computes an ``ho x wo`` output plane in: one
        job over the plane; in 1x1 mode, whose pixels are independent and contiguous in memory,
        its pixels as 3 rows and a row of the 1 or 2 left over where the subtiles this saves
        cost more than programming the second job (``job_setup``): 64 pixels in 7 + 1 subtiles,
        not 9 as 8x8."""
        a = self.array
        grid = [(0, ho, wo)]
        px = ho * wo
        run = [(0, a, px // a)] + ([(px // a * a, 1, px % a)] if px % a else [])
        saved = (_subtiles(grid, a) - _subtiles(run, a)) * self.subtile_cycles(mode, ko, ki, out_bytes)
        return run if mode == "1x1" and saved > (len(run) - 1) * self.job_setup else grid

    def job_cycles(self, mode: str, ho: int, wo: int, ko: int, ki: int, out_bytes: int = 1) -> int:
        """Modelled cycles of the jobs of one ``ho x wo`` output plane (``planes``): its 3x3
        subtiles' (``subtile_cycles``)."""
        return (_subtiles(self.planes(mode, ho, wo, ko, ki, out_bytes), self.array)
                * self.subtile_cycles(mode, ko, ki, out_bytes))

    def peak_macs(self, mode: str) -> float:
        """Multiply-accumulates per cycle of a full subtile in ``mode`` (the job model's rate)."""
        a = self.array
        if mode == "3x3dw":
            return a * a * 9 * self.out_subtile_dw / self.job_cycles(mode, a, a, self.out_subtile_dw, 1)
        taps = 1 if mode == "1x1" else 9
        return a * a * taps * self.in_subtile * self.out_subtile / self.job_cycles(
            mode, a, a, self.out_subtile, self.in_subtile)


NE16 = Ne16Params()
