// Clock gate of the simulated core (replaces the wheel's latch-based bhv/cv32e40p_sim_clock_gate.sv,
// whose latch Verilator orders wrongly against the gated FPU clock: a multi-cycle fdiv/fsqrt never
// completes). The gate only saves power: the core's sleep unit and the FPU's request/busy enable
// decide nothing else, so the clock passes ungated.
module cv32e40p_clock_gate (
    input  logic clk_i,
    input  logic en_i,
    input  logic scan_cg_en_i,
    output logic clk_o
);
  assign clk_o = clk_i;
endmodule
