"""Paths of the iSoftmax and Transpose kernels the corpus does not reach: the exact per-row
reciprocal (integer_math.h deeploy_divisor) on row sums of 1, 2 and 3 and on sums near 2^29,
rows shared by cores; Transpose rows moved as words (one and two words per row), rows split
between cores, odometer carries over several outer dims, int16 rows, and the element-wise
fallback for rows that are not a multiple of 4 bytes or are strided. Outputs must match the
reference interpreter's goldens bit-exactly on Generic and on Siracusa with 8 cores; the
division helper is also checked against C's division on the host."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from DeeployTest.generators.builder import Net
from DeeployTest.generators.integer import isoftmax_attrs
from DeeployTest.generators.registry import ints_in
from DeeployTest.test_suite.kernel_cases import case_batch, needs_qemu, run_generic, run_siracusa

_KERNELS = Path(__file__).resolve().parents[2] / "TargetLibraries" / "Generic" / "kernels"


def _softmax(x, attrs):
    def build(rng):
        net = Net("iSoftmax")
        net.output(net.node("iSoftmax", [net.input("input", x(rng))], attrs))
        return net
    return build


def _few_maxima(rng):
    """Rows of 64 with 1, 2 or 3 copies of their maximum: with e(0) = 1 and e(d > 0) = 0 the
    row sums are 1, 2 and 3 (3 rows: shared by the 8 cores)."""
    x = rng.integers(-128, 100, size=(3, 64))
    for r in range(3):
        x[r, rng.choice(64, size=r + 1, replace=False)] = 120
    return x


_ONE_HOT = {"coeffA": 0, "coeffB": 0, "coeffC": 1, "log2": 1, "n_levels": 256}
# e in [(2165 - 255)^2 + C, 2165^2 + C], about 7.1e6: e * 255 just below 2^31, row sums near 2^29
_LARGE_SUMS = {"coeffA": 1, "coeffB": 2165, "coeffC": 2456320, "log2": 1600, "n_levels": 256}


def _transpose(shape, perm, lo=-128, hi=127):
    def build(rng):
        net = Net("Transpose")
        x = net.input("input", ints_in(rng, lo, hi, shape))
        net.output(net.node("Transpose", [x], {"perm": list(perm)}))
        return net
    return build


CASES = [
    ("softmax_sums_1_2_3", _softmax(_few_maxima, _ONE_HOT)),
    ("softmax_large_sums", _softmax(lambda rng: ints_in(rng, -128, 127, (5, 64)), _LARGE_SUMS)),
    ("softmax_table_rows", _softmax(lambda rng: ints_in(rng, -128, 127, (2, 3, 40)), isoftmax_attrs(96))),
    ("transpose_two_words_split", _transpose((3, 5, 8), (1, 0, 2))),        # 15 elements per core
    ("transpose_one_word_carries", _transpose((2, 5, 3, 4), (0, 2, 1, 3))),
    ("transpose_int16_words", _transpose((3, 7, 2), (1, 0, 2), -3000, 3000)),
    ("transpose_six_byte_rows", _transpose((3, 5, 6), (1, 0, 2))),
    ("transpose_strided", _transpose((2, 3, 4, 6), (2, 0, 3, 1))),
]


batch_dir = case_batch(CASES, 3)


def test_generic(batch_dir, capsys):
    run_generic(batch_dir, capsys)


@needs_qemu
def test_siracusa(batch_dir, capsys):
    run_siracusa(batch_dir, 8, capsys)


_DIVISION_CHECK = r"""
#include <stdio.h>
#include "integer_math.h"
static uint64_t st = 88172645463325252ull;
static uint32_t rnd(void) { st ^= st << 13; st ^= st >> 7; st ^= st << 17; return (uint32_t)st; }
int main(void) {
    const uint32_t top = 0x7fffffffu;
    unsigned bad = 0;
    for (uint32_t k = 0; k < 200000; k++) {
        uint32_t d = k % 4 == 0 ? 1 + k / 4
                   : k % 4 == 1 ? ((uint32_t)1 << (k / 4 % 32)) + (k / 128) % 3 - 1
                   : k % 4 == 2 ? rnd() : (rnd() >> (rnd() % 32)) | 1;
        d = d ? d : 1;
        const deeploy_divisor_t v = deeploy_divisor(d);
        const uint32_t q = rnd() % (top / d + 1);
        const uint32_t ns[] = {0, 1, d - 1, d, d + 1, top, top - 1, top - top % d, top - top % d - 1,
                               rnd(), rnd(), q * d, q * d - 1};
        for (unsigned i = 0; i < sizeof ns / sizeof ns[0]; i++) {
            const uint32_t n = ns[i] & top;
            if (deeploy_div_exact(n, v) != n / d && bad++ < 5)
                printf("n=%u d=%u: %u, not %u\n", n, d, deeploy_div_exact(n, v), n / d);
        }
    }
    printf("%u mismatches\n", bad);
    return bad != 0;
}
"""


@pytest.mark.skipif(shutil.which("cc") is None, reason="no host C compiler")
def test_exact_division_matches_c_division(tmp_path):
    src = tmp_path / "check.c"
    src.write_text(_DIVISION_CHECK)
    subprocess.run(["cc", "-O2", "-I", str(_KERNELS), str(src), "-o", str(tmp_path / "check")], check=True)
    run = subprocess.run([str(tmp_path / "check")], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout
    assert run.stdout.strip() == "0 mismatches"


_DIVISOR_CHECK = r"""
#include <stdio.h>
#include <stdlib.h>
#include "integer_math.h"
/* deeploy_divisor (32-bit arithmetic) against the 64-bit definition, for d in each [lo, hi] */
int main(int argc, char **argv) {
    unsigned bad = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        const uint64_t lo = strtoull(argv[i], 0, 0), hi = strtoull(argv[i + 1], 0, 0);
        for (uint64_t d = lo; d <= hi; d++) {
            const deeploy_divisor_t v = deeploy_divisor((uint32_t)d);
            const uint32_t c = d > 1 ? 32 - (uint32_t)__builtin_clz((uint32_t)d - 1) : 0;
            const uint32_t m = (uint32_t)((((uint64_t)1 << (31 + c)) + d - 1) / d);
            if ((v.c != c || v.m != m) && bad++ < 5)
                printf("d=%llu: m=%u c=%u, not m=%u c=%u\n", (unsigned long long)d, v.m, v.c, m, c);
        }
    }
    printf("%u mismatches\n", bad);
    return bad != 0;
}
"""


def _check_divisor(tmp_path, ranges):
    src = tmp_path / "divisor.c"
    src.write_text(_DIVISOR_CHECK)
    subprocess.run(["cc", "-O2", "-I", str(_KERNELS), str(src), "-o", str(tmp_path / "divisor")], check=True)
    run = subprocess.run([str(tmp_path / "divisor"), *(str(v) for r in ranges for v in r)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout
    assert run.stdout.strip() == "0 mismatches"


@pytest.mark.skipif(shutil.which("cc") is None, reason="no host C compiler")
def test_divisor_in_32_bits_matches_64_bit_formula(tmp_path):
    """Every d up to 2^22, the neighbourhood of every power of two, and the top of the range."""
    near_powers = [(max(1, (1 << k) - 300), (1 << k) + 300) for k in range(22, 31)]
    _check_divisor(tmp_path, [(1, 1 << 22), *near_powers, ((1 << 31) - (1 << 20), 1 << 31)])


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("cc") is None, reason="no host C compiler")
def test_divisor_in_32_bits_every_d(tmp_path):
    """Exhaustive: every divisor 1 <= d <= 2^31 (about 20 s)."""
    _check_divisor(tmp_path, [(1, 1 << 31)])
