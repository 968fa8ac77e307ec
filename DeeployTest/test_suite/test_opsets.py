"""Standard ops whose meaning or form changed between ONNX opsets follow the opset the file
imports (``Graph.opset``): the old form of each either computes what onnxruntime computes at that
opset, or is refused with one line naming the node, the op, the opset and how to upgrade.

Every case is a one-node model at an old opset and its counterpart at a newer one, checked
against onnxruntime through the reference interpreter and, compiled, on Generic; Softmax (whose
opset < 13 form flattens the input from ``axis`` on) also on Siracusa, untiled and tiled."""

from __future__ import annotations

import argparse

import numpy as np
import onnx
import pytest

from Deeploy.errors import OpError
from Deeploy.frontend import assign_input_types, infer_graph, load_onnx
from Deeploy.ir.dtypes import FLOAT32, INT8
from Deeploy.ir.graph import Graph, Node, Tensor
from Deeploy.ir.onnx_export import save_snapshot, to_onnx
from Deeploy.ops.examples import F32, Case, act, const, frand, i64
from Deeploy.tiling.network import TilingOptions
from DeeployTest.testUtils.runner import run_test
from DeeployTest.test_suite.kernel_cases import TILED, needs_qemu, run_generic, run_siracusa
from DeeployTest.test_suite.test_op_references import activations, assert_same, build_model, run_deeploy, run_ort

RNG = np.random.default_rng(2024)
X3 = frand(RNG, [2, 5, 3])
X4 = frand(RNG, [4, 6, 5, 8])


def _x(value=X3):
    return act(value, F32)


_GEMM = (_x(X3[0]), const(frand(RNG, [4, 3]), F32), const(frand(RNG, [4]), F32))


# op, old-opset case, its newer-opset counterpart: the same computation in both forms
PAIRS = [
    ("Softmax", Case("axis_1", (_x(),), dict(axis=1), opset=12),
     Case("axis_1", (_x(),), dict(axis=1), opset=13)),
    ("Softmax", Case("default_axis", (_x(),), {}, opset=11),
     Case("default_axis", (_x(),), {}, opset=13)),
    ("Softmax", Case("negative_axis", (_x(X4),), dict(axis=-3), opset=12),
     Case("last_axis", (_x(X4),), dict(axis=-1), opset=13)),
    ("Reshape", Case("shape_attribute", (_x(),), dict(shape=[3, 0, -1]), opset=4),
     Case("shape_input", (_x(), const(i64(3, 0, -1))), {}, opset=14)),
    ("Slice", Case("attributes", (_x(),), dict(starts=[1, -2], ends=[4, 100], axes=[1, 2]), opset=9),
     Case("inputs", (_x(), const(i64(1, -2)), const(i64(4, 100)), const(i64(1, 2))), {}, opset=13)),
    ("Clip", Case("attributes", (_x(),), dict(min=-1.5, max=2.0), opset=6),
     Case("inputs", (_x(), const(np.array(-1.5, F32)), const(np.array(2.0, F32))), {}, opset=13)),
    ("Pad", Case("attributes", (_x(),), dict(pads=[0, 1, 2, 0, 0, 1], value=0.5), opset=10),
     Case("inputs", (_x(), const(i64(0, 1, 2, 0, 0, 1)), const(np.array(0.5, F32))), {}, opset=13)),
    ("ReduceSum", Case("axes_attribute", (_x(),), dict(axes=[1], keepdims=0), opset=12),
     Case("axes_input", (_x(), const(i64(1))), dict(keepdims=0), opset=13)),
    ("ReduceMean", Case("axes_attribute", (_x(),), dict(axes=[0, 2]), opset=17),
     Case("axes_input", (_x(), const(i64(0, 2))), {}, opset=18)),
    ("Squeeze", Case("axes_attribute", (_x(X3[:, :1]),), dict(axes=[1]), opset=12),
     Case("axes_input", (_x(X3[:, :1]), const(i64(1))), {}, opset=13)),
    ("Unsqueeze", Case("axes_attribute", (_x(),), dict(axes=[0, 3]), opset=12),
     Case("axes_input", (_x(), const(i64(0, 3))), {}, opset=13)),
    ("Gemm", Case("bias_required", _GEMM, dict(transB=1, alpha=0.5, beta=2.0), opset=9),
     Case("bias_optional", _GEMM, dict(transB=1, alpha=0.5, beta=2.0), opset=13)),
    ("Flatten", Case("default_axis", (_x(X4),), {}, opset=9), Case("default_axis", (_x(X4),), {}, opset=13)),
    ("AveragePool", Case("excluding_pads", (_x(X4),), dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1]), opset=7),
     Case("excluding_pads", (_x(X4),), dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1]), opset=19)),
    ("BatchNormalization",
     Case("spatial_1", (_x(), *(const(frand(RNG, [5], 0.5, 2.0), F32) for _ in range(4))), dict(spatial=1), opset=8),
     Case("per_channel", (_x(), *(const(frand(RNG, [5], 0.5, 2.0), F32) for _ in range(4))), {}, opset=15)),
]

# op, a form whose meaning changed (onnxruntime computes something else, or nothing), the opset
# from which the file must be, and what the error names
REFUSED = [
    ("Add", Case("axis_broadcast", (_x(), _x(X3[0, :, 0])), dict(broadcast=1, axis=1), opset=6), 7, "'axis'"),
    ("Mul", Case("axis_broadcast", (_x(), _x(X3[0, :, 0])), dict(broadcast=1, axis=1), opset=6), 7, "'axis'"),
    ("Div", Case("axis_broadcast", (_x(), _x(X3[0, :, 0])), dict(broadcast=1, axis=1), opset=6), 7, "'axis'"),
    ("BatchNormalization",
     Case("spatial_0", (_x(), *(const(frand(RNG, [5, 3], 0.5, 2.0), F32) for _ in range(4))), dict(spatial=0),
          opset=8), 9, "spatial=0"),
    ("BatchNormalization",
     Case("training", (_x(), *(const(frand(RNG, [5], 0.5, 2.0), F32) for _ in range(4))), {}, opset=6),
     7, "is_test=0"),
    ("GroupNormalization",
     Case("per_group_scale", (_x(frand(RNG, [2, 4, 3])), const(frand(RNG, [2]), F32), const(frand(RNG, [2]), F32)),
          dict(num_groups=2), opset=18), 21, "per group"),
    ("Pad", Case("paddings", (_x(),), dict(paddings=[0, 1, 2, 0, 0, 1]), opset=1), 2, "'paddings'"),
    ("Cast", Case("type_name", (_x(),), dict(to="INT32"), opset=5), 6, "type name"),
    ("Concat", Case("default_axis", (_x(), _x()), {}, opset=3), 4, "default axis"),
]


def _pair_params():
    return [pytest.param(op, case, id=f"{op}-{case.label}-opset{case.opset}")
            for op, old, new in PAIRS for case in (old, new)]


def _folder(tmp_path, op: str, case: Case):
    """A test folder of the one-node model: onnxruntime's output is the golden."""
    folder = tmp_path / "test"
    folder.mkdir()
    onnx.save(build_model(op, case), folder / "network.onnx")
    np.savez(folder / "inputs.npz", **activations(case))
    np.savez(folder / "outputs.npz", y=run_ort(folder / "network.onnx", case))
    return folder


def test_loader_records_the_default_domain_opset(tmp_path):
    op, case, _ = PAIRS[0]
    model = build_model(op, case)
    model.opset_import.append(onnx.helper.make_opsetid("com.microsoft", 1))
    onnx.save(model, tmp_path / "model.onnx")
    assert load_onnx(tmp_path / "model.onnx").opset == 12


@pytest.mark.parametrize("op,case", _pair_params())
def test_form_matches_onnxruntime_at_its_opset(op, case, tmp_path):
    onnx.save(build_model(op, case), tmp_path / "model.onnx")
    got, _ = run_deeploy(tmp_path / "model.onnx", case)
    assert_same(got, run_ort(tmp_path / "model.onnx", case), case)


@pytest.mark.parametrize("op,case", _pair_params())
def test_form_runs_on_generic(op, case, tmp_path, capsys):
    run_generic(_folder(tmp_path, op, case), capsys)


@pytest.mark.parametrize("op,case,since,fragment",
                         [pytest.param(*r, id=f"{r[0]}-{r[1].label}-opset{r[1].opset}") for r in REFUSED])
def test_changed_form_is_refused(op, case, since, fragment, tmp_path):
    onnx.save(build_model(op, case, node_name="old"), tmp_path / "model.onnx")
    with pytest.raises(OpError) as refusal:
        run_deeploy(tmp_path / "model.onnx", case)
    message = str(refusal.value)
    assert message.startswith(f"node 'old' ({op}): ") and "\n" not in message, message
    for needle in (fragment, f"opset {case.opset}", f"opset >= {since}", "onnx.version_converter"):
        assert needle in message, (needle, message)


# ---- Softmax on Siracusa: the old form is a softmax over the flattened trailing axes ----------
SOFTMAX_12 = Case("axis_1_4d", (_x(X4),), dict(axis=1), opset=12)


@needs_qemu
def test_opset12_softmax_on_siracusa(tmp_path, capsys):
    run_siracusa(_folder(tmp_path, "Softmax", SOFTMAX_12), 8, capsys)


@needs_qemu
def test_opset12_softmax_tiled_on_siracusa(tmp_path, capsys):
    """Rows of 6*5*8 floats: one whole row per tile at this L1, so the tiler splits the 4 rows."""
    folder = _folder(tmp_path, "Softmax", SOFTMAX_12)
    tiling = TilingOptions(2500, TilingOptions.l2, "L2", False)
    args = argparse.Namespace(test=str(folder), verbose=False, skipgen=False, skipsim=False,
                              gen_dir=str(tmp_path / "tiled"), cores=8, l1=tiling.l1, l2=tiling.l2,
                              defaultMemLevel="L2", doublebuffer=False, profileTiling=False, plotMemAlloc=False,
                              timeout=None)
    code = run_test(args, TILED, {"cores": 8, "tiling": tiling})
    out = capsys.readouterr().out
    assert code == 0 and "Errors: 0 out of" in out, out
    assert "Softmax 'node' tiled: 4 L1 tiles" in (tmp_path / "tiled" / "network" / "Network.c").read_text()


def test_snapshot_keeps_the_files_opset(tmp_path):
    """A snapshot of an opset-12 Softmax states opset 12: onnxruntime computes the file's result from it."""
    op, case, _ = PAIRS[0]
    onnx.save(build_model(op, case), tmp_path / "model.onnx")
    graph = load_onnx(tmp_path / "model.onnx")
    assign_input_types(graph, activations(case))
    infer_graph(graph)
    save_snapshot(graph, tmp_path / "snapshot.onnx")
    assert_same(run_ort(tmp_path / "snapshot.onnx", case), run_ort(tmp_path / "model.onnx", case), case)


def test_snapshot_keeps_attributes_newer_than_the_files_opset():
    """A node in a newer form than the file's opset (a per-axis DequantizeLinear a QOperator
    model expands into) moves the snapshot to an opset that has its attributes."""
    tensors = (Tensor("x", (2, 3), INT8), Tensor("s", (3,), FLOAT32, np.ones(3, np.float32)),
               Tensor("y", (2, 3), FLOAT32))
    graph = Graph("g", {t.name: t for t in tensors}, [Node("dq", "DequantizeLinear", ["x", "s"], ["y"], {"axis": 1})],
                  ["x"], ["y"], opset=10)
    model = to_onnx(graph)
    assert [a.name for a in model.graph.node[0].attribute] == ["axis"]
    assert model.opset_import[0].version >= 13


def test_generated_goldens_follow_the_files_opset():
    """The test generator evaluates its nodes with the meaning of the opset it writes: an opset-6
    Add broadcasting along an axis is refused there as in the compiler, not computed numpy-style."""
    from DeeployTest.generators.builder import Net
    net = Net("add", opset=6)
    x, b = net.input("x", np.ones((2, 3, 3), np.int64)), net.input("b", np.arange(3))
    with pytest.raises(OpError, match="opset 6"):
        net.node("Add", [x, b], {"broadcast": 1, "axis": 1})
