#!/usr/bin/env python3
"""Instructions executed by RunNetwork (valgrind callgrind, repeatable) for the Generic
platform, and compile seconds of the largest network.

    python benchmarks/generic_instructions.py [--corpus ../shared/corpus]

Peer figures (its Generic target, gcc -O2) are printed beside ours for reference.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from Deeploy.compiler import compile_graph  # noqa: E402
from Deeploy.frontend import assign_input_types, load_npz_arrays, load_onnx, map_arrays  # noqa: E402
from DeeployTest.testUtils.harness import write_harness  # noqa: E402

CASES = [  # (test folder below the corpus, or the project's below DeeployTest/; the peer's instructions)
    ("Kernels/Integer/MatMul/Regular", 1.55e6),
    ("Kernels/Integer/Conv/Regular_2D_RQ", 9.71e6),
    ("Models/miniMobileNetv2", 4.09e6),
    # the project's int8 DS-CNN in the shape of the MLPerf Tiny keyword-spotting network, against the
    # peer's figure for that network
    ("DeeployTest/Tests/Models/KWS_DSCNN", 70.26e6),
    # the project's int8 CCT-2 with embedding 128 (about 20M multiply-accumulates; the peer's ICCT
    # file is not available here: its figure for that compact transformer)
    ("DeeployTest/Tests/Models/CCT128", 188.45e6),
]


def case_dir(case: str, corpus: Path) -> Path:
    """The test folder of a case: the project's own, or one of the corpus."""
    return REPO / case if case.startswith("DeeployTest/") else corpus / case
COMPILE_CASE = "Models/microLlama/INT8/microLlama128"


def load(test: Path):
    graph = load_onnx(test / "network.onnx")
    inputs = map_arrays(test / "inputs.npz", load_npz_arrays(test / "inputs.npz"), graph.inputs, graph, "input")
    expected = map_arrays(test / "outputs.npz", load_npz_arrays(test / "outputs.npz"), graph.outputs, graph, "output")
    assign_input_types(graph, inputs)
    return graph, inputs, [expected[n] for n in graph.outputs]


def run_network_instructions(test: Path, work: Path) -> int:
    graph, inputs, expected = load(test)
    result = compile_graph(graph, "Generic", work / "network")
    write_harness(result.graph, inputs, expected, work / "harness", runs=1)
    build = work / "build"
    subprocess.run(["cmake", "-S", str(REPO), "-B", str(build), "-DPLATFORM=Generic",
                    f"-DNETWORK_DIR={work / 'network'}", f"-DHARNESS_DIR={work / 'harness'}"],
                   check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(build)], check=True, capture_output=True)
    out = work / "callgrind.out"
    proc = subprocess.run(["valgrind", "--tool=callgrind", "--toggle-collect=RunNetwork",
                           f"--callgrind-out-file={out}", str(build / "deeploy_test")],
                          capture_output=True, text=True)
    if "Errors: 0 out of" not in proc.stdout:
        raise SystemExit(f"{test}: wrong results under callgrind:\n{proc.stdout}")
    totals = re.search(r"^totals:\s+(\d+)", out.read_text(), re.M)
    return int(totals.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default=str(REPO.parent / "shared" / "corpus"))
    args = parser.parse_args()
    corpus = Path(args.corpus)
    print(f"{'network':40s} {'RunNetwork instr':>17s} {'peer':>10s} {'ratio':>6s}")
    with tempfile.TemporaryDirectory() as tmp:
        for k, (case, peer) in enumerate(CASES):
            n = run_network_instructions(case_dir(case, corpus), Path(tmp) / str(k))
            print(f"{case:40s} {n:17,d} {peer / 1e6:9.2f}M {n / peer:6.2f}")
        for snapshots in (False, True):
            start = time.perf_counter()
            graph, _, _ = load(corpus / COMPILE_CASE)
            compile_graph(graph, "Generic", Path(tmp) / "llama",
                          snapshot_dir=Path(tmp) / "states" if snapshots else None)
            print(f"compile {COMPILE_CASE} for Generic{' with ONNX snapshots' if snapshots else ''}: "
                  f"{time.perf_counter() - start:.2f} s (load, passes, binding, planning, C emission)")


if __name__ == "__main__":
    main()
