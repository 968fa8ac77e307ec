"""GemmRQ with constant weights and a long K on the cluster. The requantisation's proven bound
(sum * mul + add) picks its accumulator: int32 takes Siracusa's 4 x 4 dot-product blocks with the
inline store, int64 the 4 x 2 blocks with the general store. With k products of the operands'
largest values, a K of 256 proved int64 for weights whose actual sums fit int32 easily, so 64 x 256
x 64 ran at 1.40 MAC/cycle per core against 2.02 with K = 64. A constant operand bounds the sums
by its largest sum of |values| along K instead (the tighter of the two)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from Deeploy.ops.bounds import gemm_sum_bound
from DeeployTest.generators.golden import write_test
from DeeployTest.generators.linear import _matmul
from DeeployTest.test_suite.kernel_cases import lowered, one_tile_kernel
from DeeployTest.test_suite.test_siracusa_networks import pytestmark  # noqa: F401


def _weights(test) -> np.ndarray:
    """The test folder's constant B (MatMul.weight), K x N."""
    init = onnx.load(test / "network.onnx").graph.initializer
    return numpy_helper.to_array(next(t for t in init if t.name == "MatMul.weight")).astype(np.int64)


@pytest.mark.parametrize("m,k,n", [(64, 256, 64), (5, 33, 7)])
def test_constant_weights_bound_the_sums_by_their_column_sums(m, k, n, tmp_path):
    """The sums' bound of A (int8, |a| <= 128) times constant B: 128 x B's largest column sum of
    |b|, not K x 128 x max|b| (the layout pass stores B transposed: the sum runs along K either way)."""
    net = _matmul(np.random.default_rng(0), (m, k), (k, n), const_b=True, rq=True)
    write_test(net, tmp_path / "net")
    b = np.abs(_weights(tmp_path / "net"))
    graph = lowered(tmp_path / "net", "Siracusa")
    node = next(nd for nd in graph.nodes if nd.op == "RequantizedGemm")
    assert gemm_sum_bound(node, graph) == 128 * int(b.sum(axis=0).max())


def test_long_k_runs_the_4x4_blocks(tmp_path, capsys):
    """64 x 256 x 64 on 8 cores: each core's 32 4 x 4 blocks run K / 4 = 64 trips of 24
    instructions for 64 MACs, the blocks' set-up and requantised store amortised over 4x the
    trips of K = 64, which reaches 2.02 MAC/cycle per core: K = 256 must reach at least 2.0
    (the 4 x 2 blocks with the general store: 1.40)."""
    net = _matmul(np.random.default_rng(0), (64, 256), (256, 64), const_b=True, rq=True)
    cycles, kernel = one_tile_kernel(net, ("RequantizedGemm",), 8, tmp_path, capsys)
    assert 64 * 256 * 64 / cycles / 8 >= 2.0, (kernel, cycles, 64 * 256 * 64 / cycles / 8)


@pytest.mark.parametrize("cores", [1, 8])
@pytest.mark.parametrize("m,k,n", [(17, 258, 9), (8, 1030, 12), (3, 256, 5)])
def test_long_k_bit_exact(m, k, n, cores, tmp_path, capsys):
    """Long K, K not a multiple of 4, odd M and N: outputs bit-exact (checked by the run)."""
    net = _matmul(np.random.default_rng(1), (m, k), (k, n), const_b=True, rq=True)
    one_tile_kernel(net, ("RequantizedGemm",), cores, tmp_path, capsys)
