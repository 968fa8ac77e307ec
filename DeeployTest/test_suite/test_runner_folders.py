"""The runners' generated folders: one per test folder (never shared by two tests), reused by
--skipgen only for the test, platform, options and files it was generated from, left without
anything of an attempt that failed to compile or was interrupted; user names that reach the
generated C cannot break it."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from Deeploy.compiler import OUTPUT_MARK
from DeeployTest.testUtils.gen_folder import gen_dir_for
from DeeployTest.test_suite.conftest import CORPUS, DEEPLOY_TEST

GENERIC = DEEPLOY_TEST / "testRunner_generic.py"
TILED = DEEPLOY_TEST / "testRunner_tiled_siracusa.py"


def _relu_test(folder: Path, x: str = "x", y: str = "y", node: str = "relu") -> Path:
    folder.mkdir(parents=True)
    vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [4, 8])  # noqa: E731
    model = helper.make_model(helper.make_graph([helper.make_node("Relu", [x], [y], name=node)], "g", [vi(x)], [vi(y)]),
                              opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, folder / "network.onnx")
    values = np.arange(32).reshape(4, 8) - 16
    np.savez(folder / "inputs.npz", values)
    np.savez(folder / "outputs.npz", np.maximum(values, 0))
    return folder


def _runner(script: Path, *args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(script), *map(str, args)], capture_output=True, text=True,
                          timeout=600, **kw)


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _one_error(proc: subprocess.CompletedProcess, *needles: str) -> None:
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def test_generated_folder_is_keyed_by_the_whole_test_path(tmp_path):
    a, b = tmp_path / "a" / "net1", tmp_path / "b" / "net1"
    assert gen_dir_for(a, "TEST_GENERIC") != gen_dir_for(b, "TEST_GENERIC")
    assert gen_dir_for(a, "TEST_GENERIC") == gen_dir_for(a, "TEST_GENERIC")
    assert gen_dir_for(a, "TEST_GENERIC").parent == DEEPLOY_TEST / "TEST_GENERIC" / "external"
    own = DEEPLOY_TEST / "Tests" / "Models" / "miniMobileNetv2"
    assert gen_dir_for(own, "TEST_GENERIC") == DEEPLOY_TEST / "TEST_GENERIC" / "Tests" / "Models" / "miniMobileNetv2"
    corpus = CORPUS / "Models" / "miniMobileNetv2"
    assert gen_dir_for(corpus, "TEST_SIRACUSA") == DEEPLOY_TEST / "TEST_SIRACUSA" / "Models" / "miniMobileNetv2"
    # a folder called Tests or corpus elsewhere is not the project's or the corpus's
    other = tmp_path / "corpus" / "Models" / "miniMobileNetv2"
    assert gen_dir_for(other, "TEST_GENERIC") not in (gen_dir_for(corpus, "TEST_GENERIC"),
                                                     gen_dir_for(own, "TEST_GENERIC"))


@pytest.fixture
def two_tests_named_alike(tmp_path):
    a, b = _relu_test(tmp_path / "a" / "net1"), _relu_test(tmp_path / "b" / "net1")
    np.savez(b / "outputs.npz", np.zeros((4, 8)))      # b's golden differs: reusing a's code would hide it
    yield a, b
    for test in (a, b):
        gen = gen_dir_for(test, "TEST_GENERIC")
        if gen.is_dir():
            subprocess.run(["rm", "-rf", str(gen)], check=True)


def test_skipgen_never_reuses_another_tests_code(two_tests_named_alike, tmp_path):
    a, b = two_tests_named_alike
    assert _runner(GENERIC, "-t", a, "--skipsim").returncode == 0
    _one_error(_runner(GENERIC, "-t", b, "--skipgen"), "--skipgen", "nothing was generated")
    shared = tmp_path / "shared_gen"
    assert _runner(GENERIC, "-t", a, "--skipsim", "--gen-dir", shared).returncode == 0
    _one_error(_runner(GENERIC, "-t", b, "--skipgen", "--gen-dir", shared), "--skipgen", str(a), str(b))
    _one_error(_runner(TILED, "-t", a, "--skipgen", "--gen-dir", shared), "--skipgen", "Generic")
    np.savez(a / "outputs.npz", np.ones((4, 8)))
    _one_error(_runner(GENERIC, "-t", a, "--skipgen", "--gen-dir", shared), "outputs.npz", "changed")


def test_failed_compile_leaves_nothing_of_its_attempt(tmp_path):
    """Data that do not fit --l2 fail the tiled compile after the first graph snapshots: the
    generated folder keeps exactly what it held (nothing, or the earlier generation)."""
    test = _relu_test(tmp_path / "net")
    fresh = tmp_path / "fresh"
    _one_error(_runner(TILED, "-t", test, "--l2", "16", "--gen-dir", fresh), "does not fit L2")
    assert not fresh.exists()
    gen = tmp_path / "gen"
    assert _runner(GENERIC, "-t", test, "--skipsim", "--gen-dir", gen).returncode == 0
    before = _tree(gen)
    assert any(name.startswith("deeployStates/") for name in before)
    _one_error(_runner(TILED, "-t", test, "--l2", "16", "--gen-dir", gen), "does not fit L2")
    assert _tree(gen) == before


def _big_add_test(folder: Path) -> Path:
    """y = x + w with 64 Ki-element operands: the C build takes long enough to interrupt it."""
    from onnx import numpy_helper
    folder.mkdir(parents=True)
    shape = [256, 256]
    vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, shape)  # noqa: E731
    w = numpy_helper.from_array((np.arange(65536) % 50).reshape(shape).astype(np.float32), "w")
    model = helper.make_model(helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"], name="add")], "g",
                                                [vi("x")], [vi("y")], [w]), opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, folder / "network.onnx")
    x = (np.arange(65536) % 60 - 30).reshape(shape)
    np.savez(folder / "inputs.npz", x)
    np.savez(folder / "outputs.npz", x + (np.arange(65536) % 50).reshape(shape))
    return folder


def test_ctrl_c_ends_with_one_line_and_no_partial_output(tmp_path):
    test, gen = _big_add_test(tmp_path / "net"), tmp_path / "gen"
    proc = subprocess.Popen([sys.executable, "-u", str(GENERIC), "-t", str(test), "--gen-dir", str(gen)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        for line in proc.stdout:
            if line.startswith("Compiled"):           # generated; the build is starting
                os.killpg(proc.pid, signal.SIGINT)      # what Ctrl-C in a terminal does
                break
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0, "the run ended before the interrupt reached it"
    assert proc.returncode == 130, err
    assert err.strip().splitlines() == ["error: interrupted"], err
    assert not gen.exists()


def test_names_with_comment_delimiters_reach_c_safely(tmp_path):
    x, y = 'in*/ x /* "q" \\ ??/', 'out*/ %s "y"'
    test = _relu_test(tmp_path / "net", x, y, node="re*/lu")
    gen = tmp_path / "gen"
    proc = _runner(GENERIC, "-t", test, "--gen-dir", gen)
    assert proc.returncode == 0 and "Errors: 0 out of 64" in proc.stdout, proc.stdout + proc.stderr
    header = (gen / "network" / "Network.h").read_text()
    for line in header.splitlines():
        if line.startswith("/*"):
            assert line.count("*/") == 1 and line.endswith("*/"), line


def test_compile_snapshots_appear_only_when_compilation_succeeds(tmp_path):
    test = _relu_test(tmp_path / "net")
    (test / "notes.txt").write_text("the user's own file")
    deeploy = [sys.executable, "-m", "Deeploy.cli", "compile", "network.onnx", "--snapshots", "-o"]
    failed = subprocess.run(deeploy + ["notes.txt"], capture_output=True, text=True, cwd=test)  # refused output
    _one_error(failed, "notes.txt")
    assert sorted(p.name for p in test.iterdir()) == ["inputs.npz", "network.onnx", "notes.txt", "outputs.npz"]
    ok = subprocess.run(deeploy + ["out"], capture_output=True, text=True, cwd=test)
    assert ok.returncode == 0, ok.stderr
    states = {p.name for p in (test / "out_states").iterdir()} - {OUTPUT_MARK}
    assert "frontend.onnx" in states and all(name.endswith(".onnx") for name in states), states


def test_user_names_give_ascii_identifiers_and_closed_comments(tmp_path):
    """Constant names become ASCII C identifiers; node names with comment delimiters stay inside
    the comments of tiled layers too."""
    from onnx import numpy_helper
    from Deeploy.compiler import compile_graph
    from Deeploy.frontend import assign_input_types, load_onnx
    from Deeploy.tiling.network import TilingOptions
    vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [4, 8])  # noqa: E731
    weight = numpy_helper.from_array(np.ones((4, 8), np.float32), "gewicht_ä*/")
    nodes = [helper.make_node("Add", ["x", "gewicht_ä*/"], ["s"], name="a/*dd*/"),
             helper.make_node("Relu", ["s"], ["y"], name="re/*lu")]
    model = helper.make_model(helper.make_graph(nodes, "g", [vi("x")], [vi("y")], [weight]),
                              opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, tmp_path / "m.onnx")
    for platform, tiling in (("Generic", None), ("Siracusa", TilingOptions())):
        graph = load_onnx(tmp_path / "m.onnx")
        assign_input_types(graph, {"x": np.zeros((4, 8), np.int64)})
        out = tmp_path / platform
        compile_graph(graph, platform, out, tiling=tiling)
        code = (out / "Network.c").read_text()
        body = re.sub(r"/\*.*?\*/", "", code, flags=re.S)        # identifiers outside comments
        idents = re.findall(r"\bc_[^\s\[\];,()*]*", body)
        assert idents and all(re.fullmatch(r"[A-Za-z0-9_]+", ident) for ident in idents), idents
        depth = 0
        for k in range(len(code) - 1):    # every comment closes where the generator closes it
            pair = code[k:k + 2]
            if pair == "/*":
                assert depth == 0, code[max(0, k - 80):k + 80]
                depth = 1
            elif pair == "*/" and depth:
                depth = 0


def test_a_build_folder_the_runner_did_not_make_is_kept(tmp_path):
    """--gen-dir u with a build/ of the user's: refused with one line, u untouched."""
    test, gen = _relu_test(tmp_path / "net"), tmp_path / "u"
    (gen / "build").mkdir(parents=True)
    (gen / "build" / "firmware.elf").write_text("the user's program")
    before = _tree(gen)
    _one_error(_runner(GENERIC, "-t", test, "--gen-dir", gen), str(gen / "build"), "did not")
    assert _tree(gen) == before and [p.name for p in gen.iterdir()] == ["build"]


def test_skipgen_notices_changed_external_data(tmp_path):
    """The weights stored beside network.onnx (ONNX external data, w.bin) are part of what
    --skipgen checks."""
    from onnx import numpy_helper
    test, gen = tmp_path / "net", tmp_path / "gen"
    test.mkdir()
    vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [4, 8])  # noqa: E731
    w = (np.arange(32) % 5).reshape(4, 8)
    weight = numpy_helper.from_array(w.astype(np.float32), "w")
    model = helper.make_model(helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"], name="add")], "g",
                                                [vi("x")], [vi("y")], [weight]),
                              opset_imports=[helper.make_opsetid("", 13)])
    onnx.save_model(model, str(test / "network.onnx"), save_as_external_data=True, location="w.bin",
                    size_threshold=0)
    x = np.arange(32).reshape(4, 8) - 16
    np.savez(test / "inputs.npz", x)
    np.savez(test / "outputs.npz", x + w)
    assert (test / "w.bin").is_file()
    assert _runner(GENERIC, "-t", test, "--skipsim", "--gen-dir", gen).returncode == 0
    reused = _runner(GENERIC, "-t", test, "--skipgen", "--gen-dir", gen)
    assert reused.returncode == 0 and "Errors: 0 out of 64" in reused.stdout, reused.stdout + reused.stderr
    (test / "w.bin").write_bytes(np.full(32, 2, np.float32).tobytes())
    _one_error(_runner(GENERIC, "-t", test, "--skipgen", "--gen-dir", gen), "w.bin", "changed")


def test_two_runs_of_one_test_at_once_both_succeed(tmp_path):
    """Runs generating into the same folder take turns: neither fails, and the folder keeps a
    complete generation that --skipgen reuses."""
    test, gen = _relu_test(tmp_path / "net"), tmp_path / "gen"
    cmd = [sys.executable, str(GENERIC), "-t", str(test), "--gen-dir", str(gen)]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0 and "Errors: 0 out of 64" in out, out + err
    reused = _runner(GENERIC, "-t", test, "--skipgen", "--gen-dir", gen)
    assert reused.returncode == 0 and "Errors: 0 out of 64" in reused.stdout, reused.stdout + reused.stderr
    assert not [p.name for p in gen.iterdir() if p.name.startswith(".")]


def test_a_run_killed_hard_leaves_nothing_after_the_next_run(tmp_path):
    """kill -9 during a generation skips every clean-up: the next run into the folder removes
    the stage the killed one left (no run holds the folder any more)."""
    test, gen = _relu_test(tmp_path / "net"), tmp_path / "gen"
    assert _runner(GENERIC, "-t", test, "--skipsim", "--gen-dir", gen).returncode == 0
    code = ("import sys, time, runpy, Deeploy.compiler as c\n"
            "real = c.emit_project\n"
            "def slow(*a, **k):\n"
            "    r = real(*a, **k); print('filled', flush=True); time.sleep(60); return r\n"
            "c.emit_project = slow\n"
            "sys.argv = sys.argv[1:]\n"
            "runpy.run_path(sys.argv[0], run_name='__main__')\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(GENERIC), "-t", str(test), "--gen-dir", str(gen)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while proc.stdout.readline().strip() != "filled" and time.time() < deadline:
        pass
    proc.kill()
    proc.communicate(timeout=60)
    assert [p.name for p in gen.iterdir() if p.name.startswith(".")], "the killed run left no stage"
    assert _runner(GENERIC, "-t", test, "--skipsim", "--gen-dir", gen).returncode == 0
    assert not [p.name for p in gen.iterdir() if p.name.startswith(".")]
