"""The register-blocked GEMM kernels (gemm.inc, and GemmRQ = gemm.inc with the requantisation
fused) on the shapes and operand types that select their different paths: Siracusa's 4 x 4 and
4 x 2 dot-product blocks (int8 or uint8 A and B, every signedness pair; weights transposed at
compile time, or a B input packed a column block at a time; K tails, K = 4 and 8, odd M and N;
batched MatMuls of two activations, with K = 4 two rows of outputs per hardware-loop trip),
the C 2 x 8 and 4 x 4 blocks, the 1 x 4 / 1 x 1 edges and small-tile splits, the inline
requantised store, the general store (C, per-column mul/add), and the host's dot-product path.
Outputs must match the reference interpreter's goldens bit-exactly on Generic and on Siracusa
with 1 and 8 cores; the Siracusa ELF carries the dot products' CORE-V words, and the layout pass
stores the weights N x K."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from Deeploy.elf import sections
from Deeploy.ops.fused import is_fused
from DeeployTest.generators.builder import Net
from DeeployTest.generators.golden import write_test
from DeeployTest.generators.linear import _gemm, gemm_int8_bias_rq
from DeeployTest.generators.registry import ints_in, weights
from DeeployTest.test_suite.conftest import CORPUS
from DeeployTest.test_suite.kernel_cases import case_batch, lowered, needs_qemu, run_generic, run_siracusa, tiled_layer


# (id, M, K, N, A unsigned, B an unsigned input instead of int8 weights, requantised: False, True
# or the RequantShift's calibration options)
SATURATE = {"percentile": 60.0}                       # about 20% of the outputs clipped at each bound
CASES = [
    ("rv_s8_s8", 8, 16, 16, False, False, True),      # dot products (sdotsp), weights N x K
    ("rv_u8_s8", 8, 16, 16, True, False, True),       # sdotusp, A unsigned
    ("rv_s8_u8", 8, 10, 12, False, True, True),       # a B input, packed; sdotusp, B unsigned; K tail
    ("rv_u8_u8", 12, 6, 8, True, True, True),         # sdotup
    ("odd_k", 9, 7, 19, False, False, True),          # K tail 3, row and column edges
    ("dsp_tails_u8_s8", 13, 23, 11, True, False, True),   # K % 4 = 3, M % 4 = 1, N odd
    ("dsp_tails_s8_u8", 11, 21, 9, False, True, True),    # the same with a packed B input
    ("dsp_tails_u8_u8", 7, 13, 7, True, True, True),
    ("dsp_k4", 8, 4, 6, False, False, True),          # K = 4: one loop iteration, no tail
    ("narrow_n", 16, 12, 4, False, False, True),      # N = 4: two column blocks
    ("dsp4_k_tail_u8", 16, 27, 16, True, False, True),    # 4 x 4 blocks on 8 cores, K % 4 = 3
    ("dsp4_k4", 32, 4, 16, False, False, True),       # 4 x 4, K = 4: the peeled steps only
    ("dsp4_k8_u8_u8", 16, 8, 32, True, True, True),   # 4 x 4, one loop trip; a B input packed 4 columns at a time
    ("dsp4_rows_edge", 18, 20, 16, False, False, True),   # 4 x 4 blocks and 2 edge rows
    ("narrow_n_odd_k", 16, 25, 4, False, True, True),     # N < 8, K odd, a B input
    ("gemv", 1, 32, 20, False, False, True),          # one row: 1 x 4 units over the cores
    ("tiny", 2, 3, 3, True, False, True),             # fewer outputs than cores: 1 x 1 units
    ("rv_k2", 8, 2, 16, False, False, True),          # K = 2 < 4: the C blocks
    ("rv_clip", 8, 4, 16, False, False, SATURATE),    # the clip's off-range path, both bounds
    ("rv_clip_u8", 8, 6, 12, True, False, dict(SATURATE, signed=False)),   # uint8 output
    ("rv_rq_row", 12, 8, 16, False, False, dict(SATURATE, axis=0)),   # mul/add per row, clipped
    ("plain", 10, 16, 24, False, False, False),       # int32 output: Generic's plain GEMM
    ("plain_u8", 6, 5, 9, True, True, False),
]
# Gemm with C (id, A shape, B shape, C shape, requantisation: None, "scalar", "row", "col" or
# scalar with calibration options)
GEMM_CASES = [
    ("gemm_bias_rq", (16, 32), (32, 16), (16,), "scalar"),   # C per column, the inline store
    ("gemm_bias_rq_clip", (16, 24), (24, 16), (16,), SATURATE),    # int64 requantisation, clipped
    ("gemm_bias_rq_row", (8, 16), (16, 24), (24,), "row"),    # mul/add per row
    ("gemm_bias_rq_col", (8, 16), (16, 24), (24,), "col"),    # mul/add per column: the general store
    ("gemm_matrix_c", (12, 8), (8, 16), (12, 16), None),      # C a matrix, int32 output
]

# Gemm with an int8 C and a scalar requantisation small enough for int32 (TACC), so C goes into
# the dot-product path's inline store (id, M, K, N, C shape, mul, add, shift, signed output[, C's bound]);
# the outputs clip at both bounds
BIAS_CASES = [
    ("bias_asm", 16, 24, 16, (16,), 3, -7, 8, True),
    ("bias_asm_u8", 16, 12, 12, (12,), 2, 100, 7, False),
    ("bias_asm_scalar_c", 8, 16, 16, (1,), 1, 0, 7, True),      # one C for every output
    ("bias_asm_c16", 16, 16, 16, (16,), 1, 3, 8, True, 2000),   # int16 C: lh
    ("bias_asm_c32", 16, 16, 16, (16,), 1, -5, 9, True, 40000),   # int32 C: lw
    ("bias_c_matrix", 16, 16, 16, (16, 16), 3, -7, 8, True),   # C per row too: the C block store
]

# MatMul of two activations, requantised (id, A shape, B shape, A unsigned, B unsigned): attention's
# [heads, S, d] x [heads, d, S] with d = 4, whose 4 x 4 column blocks run two rows of outputs per
# hardware-loop trip (every signedness pair), the rotation's [S, heads, d] x [S, d, d], and
# [heads, S, S] x [heads, S, d]
ACT_CASES = [
    ("act_k4_s8_s8", (4, 24, 4), (4, 4, 16), False, False),
    ("act_k4_u8_s8", (3, 16, 4), (3, 4, 12), True, False),
    ("act_k4_s8_u8", (2, 20, 4), (2, 4, 8), False, True),
    ("act_k4_u8_u8", (2, 12, 4), (2, 4, 16), True, True),
    ("act_k4_rows_edge", (2, 18, 4), (2, 4, 16), False, False),   # M % 4 = 2: 4 x 4 blocks and edge rows
    ("act_k4_rot", (16, 8, 4), (16, 4, 4), False, False),
    ("act_av", (4, 16, 16), (4, 16, 4), False, False),
    ("act_av_words_edges", (3, 13, 36), (3, 36, 8), False, False),   # B packed a word at a time; M % 4 = 1
    ("act_av_words_u8_u8", (2, 8, 20), (2, 20, 4), True, True),     # the same, unsigned; 2 batches on 8 cores
]


def _act_net(rng, a_shape, b_shape, a_unsigned, b_unsigned) -> Net:
    net = Net("MatMul")
    a = net.input("input_0", ints_in(rng, 0, 255, a_shape) if a_unsigned else ints_in(rng, -128, 127, a_shape))
    b = net.input("input_1", ints_in(rng, 0, 255, b_shape) if b_unsigned else ints_in(rng, -128, 127, b_shape))
    net.output(net.calib_rqs(net.node("MatMul", [a, b]), offset_rng=rng))
    return net


def _net(rng, m, k, n, a_unsigned, b_unsigned, requant) -> Net:
    net = Net("MatMul")
    a = net.input("input_0", ints_in(rng, 0, 255, (m, k)) if a_unsigned else ints_in(rng, -128, 127, (m, k)))
    b = (net.input("input_1", ints_in(rng, 0, 255, (k, n))) if b_unsigned
         else net.const(weights(rng, (k, n)), "MatMul.weight"))
    y = net.node("MatMul", [a, b])
    if requant:
        y = net.calib_rqs(y, offset_rng=rng, **(requant if isinstance(requant, dict) else {}))
    net.output(y)
    return net


ALL = CASES + GEMM_CASES + BIAS_CASES + ACT_CASES


def _build(case):
    """The case's network builder (rng -> Net)."""
    name, *shape = case
    if isinstance(shape[0], tuple):
        return lambda rng: _act_net(rng, *shape)
    if len(shape) >= 8:
        return lambda rng: gemm_int8_bias_rq(rng, *shape)
    if len(shape) == 6:
        return lambda rng: _net(rng, *shape)
    return lambda rng: _gemm(rng, shape[0], shape[1], shape[2], rq=shape[3])


batch_dir = case_batch([(c[0], _build(c)) for c in ALL], 7)


def test_generic(batch_dir, capsys):
    run_generic(batch_dir, capsys)


@needs_qemu
@pytest.mark.parametrize("cores", [1, 8])
def test_siracusa(batch_dir, cores, capsys):
    run_siracusa(batch_dir, cores, capsys)


@needs_qemu
@pytest.mark.parametrize("a_shape,b_shape,l1", [
    ((3, 13, 36), (3, 36, 8), 1500),    # B packed a word at a time, K % 4 = 0; M % 4 = 1
    ((5, 10, 64), (5, 64, 12), 2500),   # three column blocks a head
    ((2, 7, 23), (2, 23, 6), 500),      # K, M and N odd: B packed a byte at a time, 4 x 2 blocks
])
def test_packed_b_tiled(a_shape, b_shape, l1, tmp_path, capsys):
    """MatMuls of two activations (B packed into a panel per column block) split into several
    tiles, fewer heads than cores: bit-exact on 8 cores."""
    rng = np.random.default_rng(3)
    net = _act_net(rng, a_shape, b_shape, False, False)
    layer = tiled_layer(net, ("RequantizedMatMul",), 8, tmp_path, capsys, l1)
    assert len(layer["tiles"]) > 1, layer["tiles"]


def _simd_words(elf: Path) -> Counter:
    """The CORE-V SIMD words (custom-3 opcode 0x7b) of the ELF's code, by (funct3, funct7): the
    instruction stream of every executable section, 16-bit words where the low bits say so."""
    data = elf.read_bytes()
    words = Counter()
    for sec in sections(data):
        if not sec.flags & 0x4:   # SHF_EXECINSTR
            continue
        code, at = data[sec.offset:sec.offset + sec.size], 0
        while at + 2 <= len(code):
            half = int.from_bytes(code[at:at + 2], "little")
            if half & 3 != 3:
                at += 2
                continue
            word = int.from_bytes(code[at:at + 4], "little")
            if word & 0x7f == 0x7b:
                words[(word >> 12) & 7, word >> 25] += 1
            at += 4
    return words


SDOTSP_B = (1, 0b1010100)    # cv.sdotsp.b: funct3 001, funct7 = funct5 10101 << 2 (CV32E40P manual)


@needs_qemu
def test_siracusa_elf_has_dot_products(tmp_path, capsys):
    """The int8 x int8 GEMM runs bit-exactly on the cluster on its dot-product loop: the
    network ELF holds the loop's 8 cv.sdotsp.b words."""
    net = _net(np.random.default_rng(3), 8, 16, 16, False, False, True)
    write_test(net, tmp_path / "net")
    run_siracusa(tmp_path / "net", 8, capsys)
    assert _simd_words(tmp_path / "net" / "siracusa8" / "build" / "deeploy_test")[SDOTSP_B] >= 8


@pytest.mark.parametrize("op", ["MatMul", "Gemm"])
def test_weights_stored_transposed(tmp_path, op):
    """Siracusa's passes store an int8 GEMM's constant weights as N x K with transB = 1."""
    rng = np.random.default_rng(5)
    w = weights(rng, (12, 8))
    net = Net(op)
    a = net.input("input_0", ints_in(rng, -128, 127, (4, 12)))
    y = net.node(op, [a, net.const(w, f"{op}.weight")])
    net.output(net.calib_rqs(y, offset_rng=rng))
    write_test(net, tmp_path)
    graph = lowered(tmp_path, "Siracusa")
    gemm, = (n for n in graph.nodes if is_fused(n.op))
    assert gemm.op == "RequantizedGemm" and gemm.attrs["transB"] == 1
    np.testing.assert_array_equal(graph.tensors[gemm.inputs[1]].value, np.asarray(w).T)


@needs_qemu
def test_microllama_elf_has_dot_products(tmp_path):
    """microLlama64_parallel's Siracusa ELF carries the GEMM's CORE-V dot products (the words the
    RTL executes): compiled tiled at --l1 64000 and built, not run."""
    from Deeploy.cli import main
    from Deeploy.run import build_output
    model = CORPUS / "Models" / "microLlama" / "INT8" / "microLlama64_parallel" / "network.onnx"
    assert main(["compile", str(model), "--platform", "Siracusa", "--l1", "64000", "--doublebuffer",
                 "-o", str(tmp_path / "out"), "--emit-testbench"]) == 0
    assert _simd_words(build_output(tmp_path / "out", tmp_path / "build"))[SDOTSP_B] >= 8
