#!/usr/bin/env python3
"""Instructions executed by RunNetwork (valgrind callgrind, repeatable) for float32 networks on
the Generic platform: three corpus float kernels and the project's float models.

    python benchmarks/generic_float_instructions.py [--corpus ../shared/corpus]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.generic_instructions import run_network_instructions  # noqa: E402

KERNELS = ["Kernels/FP32/GEMM/Regular", "Kernels/FP32/Conv/Regular_2D_Bias", "Kernels/FP32/Softmax/Regular"]
MODELS = ["Models/Float/MobileNet", "Models/Float/Llama", "Models/Float/ViT"]   # below DeeployTest/Tests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default=str(REPO.parent / "shared" / "corpus"))
    args = parser.parse_args()
    tests = [Path(args.corpus) / k for k in KERNELS] + [REPO / "DeeployTest" / "Tests" / m for m in MODELS]
    print(f"{'network':45s} {'RunNetwork instr':>17s}")
    with tempfile.TemporaryDirectory() as tmp:
        for k, test in enumerate(tests):
            n = run_network_instructions(test, Path(tmp) / str(k))
            name = str(test.relative_to(args.corpus) if test.is_relative_to(args.corpus) else
                       test.relative_to(REPO / "DeeployTest"))
            print(f"{name:45s} {n:17,d}")


if __name__ == "__main__":
    main()
