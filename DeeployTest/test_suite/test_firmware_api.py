"""The firmware interface of ``deeploy compile --name``: the example firmware of
docs/examples/firmware links two networks compiled with different names into one program (one of
them with a program-provided arena) and both give their outputs.npz; a Siracusa build with a name
links; Network.h documents each input/output (scale and zero point where the graph defines them);
bad names and tiling flags on Generic are refused."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from Deeploy.cli import main
from Deeploy.codegen.emit import c_initializer
from Deeploy.resources import examples_dir
from DeeployTest.test_suite.conftest import DEEPLOY_TEST

MODELS = DEEPLOY_TEST / "Tests" / "Models"
NETWORKS = {"kws": MODELS / "KWS_DSCNN", "resnet": MODELS / "ResNet8"}
EXAMPLE = examples_dir() / "firmware"
CROSS = shutil.which("riscv64-unknown-elf-gcc") is not None or shutil.which("riscv32-unknown-elf-gcc") is not None
RISCV = ("riscv64-unknown-elf-gcc", "qemu-system-riscv32")
TOOLS = {"Siracusa": RISCV, "CortexM": ("arm-none-eabi-gcc", "qemu-system-arm"), "MemPool": RISCV, "Snitch": RISCV}


def _samples(nets: Path, platform: str) -> str:
    """Compile the example's two networks for ``platform`` into ``nets``: the text of samples.h."""
    samples = []
    for name, model in NETWORKS.items():
        assert main(["compile", str(model / "network.onnx"), "--platform", platform, "--name", name,
                     "-o", str(nets / name)]) == 0
        (values,) = np.load(model / "inputs.npz").values()
        m = name.upper()
        samples.append(f"static const {m}_INPUT_0_TYPE {name}_sample[{m}_INPUT_0_SIZE] = "
                       f"{c_initializer(values)};\n")
    return "".join(samples)


def _check_outputs(printed: str) -> None:
    for name, model in NETWORKS.items():
        (expected,) = np.load(model / "outputs.npz").values()
        line = re.search(rf"^{name} output 0:(.*)$", printed, re.M)
        assert line, printed
        got = np.array(line.group(1).split(), dtype=np.int64)
        np.testing.assert_array_equal(got, expected.reshape(-1).astype(np.int64), err_msg=name)


def _build(source: Path, build: Path, *defs: str) -> None:
    for cmd in (["cmake", "-S", str(source), "-B", str(build), *defs], ["cmake", "--build", str(build)]):
        done = subprocess.run(cmd, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def test_two_named_networks_link_into_the_example_firmware(tmp_path, capsys):
    nets = tmp_path / "nets"
    (tmp_path / "samples.h").write_text(_samples(nets, "Generic"))
    capsys.readouterr()
    build = tmp_path / "build"
    _build(EXAMPLE, build, f"-DDEEPLOY_NETWORKS={nets}", f"-DDEEPLOY_SAMPLES={tmp_path}")
    printed = subprocess.run([str(build / "firmware")], capture_output=True, text=True, check=True, timeout=60).stdout
    _check_outputs(printed)
    # the program-provided arena is the one the keyword network uses: no static arena left in it
    symbols = subprocess.run(["nm", str(build / "firmware")], capture_output=True, text=True, check=True).stdout
    assert re.search(r" [BD] kws_arena_L2$", symbols, re.M)
    assert len(re.findall(r" [bd] deeploy_arena_L2$", symbols, re.M)) == 1   # resnet's own static arena only


@pytest.mark.parametrize("platform", TOOLS)
def test_standalone_output_builds_and_runs_with_its_toolchain_file(tmp_path, capsys, platform):
    """The standard cross build: `cmake -DCMAKE_TOOLCHAIN_FILE=<output>/cmake/<Platform>.cmake`,
    then the `run` target runs the program under QEMU."""
    if not all(shutil.which(tool) for tool in TOOLS[platform]):
        pytest.skip(f"{platform} toolchain or QEMU missing: run bash toolchain/install.sh")
    out, build = tmp_path / "out", tmp_path / "b"
    assert main(["compile", str(DEEPLOY_TEST / "Tests" / "IntKernels" / "Add" / "Regular" / "network.onnx"),
                 "--platform", platform, "--emit-testbench", "-o", str(out)]) == 0
    _build(out, build, f"-DCMAKE_TOOLCHAIN_FILE={out / 'cmake' / f'{platform}.cmake'}")
    run = subprocess.run(["cmake", "--build", str(build), "--target", "run"], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0 and "Errors: 0 out of 512" in run.stdout, run.stdout[-2000:] + run.stderr[-2000:]
    assert f"{TOOLS[platform][1]} -machine" in run.stdout   # the QEMU command, printed


@pytest.mark.skipif(not all(shutil.which(t) for t in TOOLS["Siracusa"]),
                    reason="RISC-V toolchain or QEMU missing: run bash toolchain/install.sh")
def test_example_firmware_cross_builds_with_the_toolchain_file_and_runs(tmp_path, capsys):
    """The shipped firmware example links two Siracusa networks through add_subdirectory with
    only CMAKE_TOOLCHAIN_FILE added, and the program computes both networks' outputs on QEMU."""
    from Deeploy.targets.siracusa.qemu import run_elf
    nets = tmp_path / "nets"
    (tmp_path / "samples.h").write_text(_samples(nets, "Siracusa"))
    capsys.readouterr()
    build = tmp_path / "build"
    _build(EXAMPLE, build, f"-DDEEPLOY_NETWORKS={nets}", f"-DDEEPLOY_SAMPLES={tmp_path}",
           f"-DCMAKE_TOOLCHAIN_FILE={nets / 'kws' / 'cmake' / 'Siracusa.cmake'}")
    done = run_elf(build / "firmware", plugin=False, timeout=300)
    assert done.exit_code == 0, done.stdout[-2000:]
    _check_outputs(done.stdout)


def test_network_h_documents_inputs_outputs_and_arenas(tmp_path, capsys):
    out = tmp_path / "kws"
    assert main(["compile", str(NETWORKS["kws"] / "network.onnx"), "--name", "kws", "-o", str(out)]) == 0
    header = (out / "Network.h").read_text()
    for text in ("void kws_InitNetwork(void);", "void kws_RunNetwork(void);", "extern void *const kws_inputs[1];",
                 "#define KWS_INPUT_0_SHAPE {1, 1, 49, 10}", "#define KWS_INPUT_0_TYPE int8_t",
                 "#define KWS_OUTPUT_0_SIZE 12", "input 0: 'input', int8 [1, 1, 49, 10]",
                 "quantization: not defined by the graph", "requantized by RequantShift",
                 "#define KWS_ARENA_L2_BYTES "):
        assert text in header, text
    assert "DeeployNetwork" not in header and "DeeployNetwork" not in (out / "Network.c").read_text()


def test_default_name_keeps_the_historical_symbols(tmp_path, capsys):
    out = tmp_path / "net"
    assert main(["compile", str(NETWORKS["kws"] / "network.onnx"), "-o", str(out)]) == 0
    header = (out / "Network.h").read_text()
    assert "void InitNetwork(void);" in header and "extern void *const DeeployNetwork_inputs[1];" in header
    assert "#define DEEPLOY_NETWORK_NUM_INPUTS 1" in header
    assert "add_library(deeploy_network STATIC" in (out / "CMakeLists.txt").read_text()


@pytest.mark.parametrize("args, message", [
    (["--name", "2net"], "--name '2net' is not a C identifier"),
    (["--name", "deeploy"], "--name 'deeploy' would give names of the runtime's own"),
    (["--name", "Deeploy_kws"], "--name 'Deeploy_kws' would give names of the runtime's own"),
    (["--l1", "8000"], "platform Generic cannot tile"),
    (["--doublebuffer"], "platform Generic cannot tile"),
])
def test_bad_firmware_requests_are_refused(tmp_path, capsys, args, message):
    out = tmp_path / "out"
    assert main(["compile", str(NETWORKS["kws"] / "network.onnx"), "-o", str(out), *args]) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not out.exists()


@pytest.mark.skipif(not CROSS, reason="RISC-V toolchain missing: run bash toolchain/install.sh")
def test_named_tiled_siracusa_build_links(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["compile", str(MODELS / "miniMobileNetv2" / "network.onnx"), "--platform", "Siracusa",
                 "--name", "mbv2", "--l1", "32000", "--emit-testbench", "-o", str(out)]) == 0
    assert "deeploy_l1_arena" in (out / "Network.c").read_text()   # --l1 tiles every layer
    _build(out, tmp_path / "build")
    nm = subprocess.run(["nm", str(tmp_path / "build" / "deeploy_test")], capture_output=True, text=True,
                        check=True).stdout
    assert re.search(r" T mbv2_RunNetwork$", nm, re.M) and not re.search(r" T RunNetwork$", nm, re.M)
    if shutil.which("qemu-system-riscv32"):
        capsys.readouterr()
        assert main(["run", str(out)]) == 0
        assert "Errors: 0 out of 10" in capsys.readouterr().out


def test_network_h_gives_the_scale_and_zero_point_the_graph_defines(tmp_path, capsys):
    import onnx
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["x", "sx", "zx"], ["xf"], name="deq"),
         helper.make_node("Relu", ["xf"], ["r"], name="relu"),
         helper.make_node("QuantizeLinear", ["r", "sy", "zy"], ["y"], name="quant")],
        "qdq", [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.INT8, [1, 8])],
        [helper.make_tensor("sx", TensorProto.FLOAT, [], [0.25]), helper.make_tensor("zx", TensorProto.UINT8, [], [7]),
         helper.make_tensor("sy", TensorProto.FLOAT, [], [0.125]), helper.make_tensor("zy", TensorProto.INT8, [], [-3])])
    model = tmp_path / "qdq.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), model)
    out = tmp_path / "out"
    assert main(["compile", str(model), "--name", "qdq", "-o", str(out)]) == 0, capsys.readouterr().err
    header = (out / "Network.h").read_text()
    assert "DequantizeLinear 'deq'): scale 0.25, zero point 7" in header
    assert "(QuantizeLinear 'quant'): scale 0.125, zero point -3" in header


def test_constants_named_like_the_exported_symbols_build_and_run(tmp_path, capsys):
    """--name c gives c_RunNetwork, c_inputs...: constants of those names must not take them."""
    names = ["RunNetwork", "inputs", "InitNetwork", "outputs_bytes"]
    x = np.arange(-3, 5, dtype=np.float32)
    consts = [np.arange(8, dtype=np.float32) * (k + 1) for k in range(len(names))]
    nodes, prev = [], "x"
    for k, n in enumerate(names):
        nodes.append(helper.make_node("Add", [prev, n], [f"t{k}"], name=f"add{k}"))
        prev = f"t{k}"
    vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [8])  # noqa: E731
    graph = helper.make_graph(nodes, "g", [vi("x")], [vi(prev)],
                              [numpy_helper.from_array(c, n) for c, n in zip(consts, names)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), tmp_path / "network.onnx")
    np.savez(tmp_path / "inputs.npz", x=x)
    np.savez(tmp_path / "outputs.npz", x + sum(consts))
    out = tmp_path / "out"
    assert main(["compile", str(tmp_path / "network.onnx"), "--name", "c", "-o", str(out), "--emit-testbench"]) == 0
    assert main(["run", str(out)]) == 0
    assert "Errors: 0 out of 8" in capsys.readouterr().out


@pytest.mark.parametrize("folder", ["out;1", 'out"1'], ids=["semicolon", "quote"])
def test_output_paths_cmake_cannot_take_are_refused(tmp_path, capsys, folder):
    out = tmp_path / folder
    assert main(["compile", str(NETWORKS["kws"] / "network.onnx"), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and folder in err and "CMake" in err
    assert list(tmp_path.iterdir()) == []
