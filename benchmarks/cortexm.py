#!/usr/bin/env python3
"""Instructions per multiply-accumulate on the CortexM target for the three shapes of
specs/cortexm.md (int8, per-output-channel requantisation to int8), beside CMSIS-NN's counts
measured on the same QEMU boards: the instructions of the layers that multiply-accumulate and
requantise (not the layout transposes at a channels-last network's boundary), counted between the
layer markers of one network run, bit-exact outputs checked.

    python benchmarks/cortexm.py [--cpu cortex-m4|cortex-m55]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from Deeploy.manifest import read_manifest  # noqa: E402
from Deeploy.runtime.abi import LAYER_BASE  # noqa: E402
from Deeploy.targets.cortexm.cycles import M4_TIMING, last_run, read_records  # noqa: E402
from DeeployTest.generators.builder import Net  # noqa: E402
from DeeployTest.generators.conv import _conv  # noqa: E402
from DeeployTest.generators.golden import write_test  # noqa: E402
from DeeployTest.generators.registry import s8, weights  # noqa: E402
from DeeployTest.testUtils.runner import RunnerPlatform, run_test  # noqa: E402

CORTEXM = RunnerPlatform("CortexM", "TEST_CORTEXM")


def fully_connected(rng) -> Net:
    """1 x 256 -> 64, then a per-column requantisation."""
    net = Net("fc")
    x = net.input("input", s8(rng, (1, 256)))
    y = net.node("MatMul", [x, net.const(weights(rng, (256, 64)), "fc.weight")])
    net.output(net.calib_rqs(y, signed=True, axis=1, offset_rng=rng))
    return net


# (name, network, MACs, CMSIS-NN instructions per MAC on the Cortex-M4 and the Cortex-M55)
SHAPES = (
    ("fully connected 1x256 -> 64", fully_connected, 256 * 64, {"cortex-m4": 2.08, "cortex-m55": 0.53}),
    ("1x1 conv 16x16x16 -> 16", lambda rng: _conv(rng, (1, 16, 16, 16), 16, (1, 1), rq="signed"),
     16 * 16 * 16 * 16, {"cortex-m4": 3.98, "cortex-m55": 1.09}),
    ("3x3 conv 16x16x16 -> 16, pad 1", lambda rng: _conv(rng, (1, 16, 16, 16), 16, (3, 3), pads=(1, 1, 1, 1),
                                                         rq="signed"),
     16 * 16 * 16 * 16 * 9, {"cortex-m4": 2.33, "cortex-m55": 0.39}),
)


def instructions(net: Net, work: Path, cpu: str) -> tuple[int, float]:
    """(instructions, modelled cycles) of the network's last run, its outputs checked."""
    write_test(net, work / "net")
    args = argparse.Namespace(test=str(work / "net"), verbose=False, skipgen=False, skipsim=False,
                              gen_dir=str(work / "gen"), cpu=cpu, profileUntiled=False, timeout=None)
    with contextlib.redirect_stdout(io.StringIO()) as out:
        code = run_test(args, CORTEXM, {"platform_options": {"cpu": cpu}})
    if code != 0:
        raise SystemExit(f"{net.name}: wrong results on {cpu}:\n{out.getvalue()}")
    manifest = read_manifest(work / "gen" / "network")
    layers = [c for c in last_run(read_records(work / "gen" / "build" / "records.txt"), M4_TIMING)
              if manifest.layer_of_marker(LAYER_BASE + c.layer).op != "Transpose"]
    return sum(c.counts["insns"] for c in layers), sum(c.cycles for c in layers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cpu", default="cortex-m4", choices=("cortex-m4", "cortex-m55"))
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for k, (name, build, macs, cmsis) in enumerate(SHAPES):
            insns, cycles = instructions(build(np.random.default_rng(k)), Path(tmp) / str(k), args.cpu)
            rows.append((name, insns / macs, cycles / macs, cmsis[args.cpu]))
    print(f"\n{args.cpu}: {'shape':32s} {'instr/MAC':>9s} {'cycles/MAC':>10s} {'CMSIS-NN':>8s} {'ratio':>6s}")
    for name, ipm, cpm, cmsis in rows:
        print(f"{'':{len(args.cpu) + 1}s} {name:32s} {ipm:9.2f} {cpm:10.2f} {cmsis:8.2f} {ipm / cmsis:6.2f}")


if __name__ == "__main__":
    main()
