#!/usr/bin/env python3
"""Rolled vs unrolled repeated layers (``--loop-rolling``) on tiled Siracusa (8 cores, --l1 64000,
modelled cycles of the QEMU virtual platform): for the decoder stacks of 2, 4, 8 and 16 layers
(``DeeployTest/Tests/Models/Stacks``), with data in L2 and again in L3 (parameters streamed),
``.text``, ``.rodata`` (the runner's ``Code:`` line), the L2 peak (its ``Memory:`` line) and
cycles; then the targets, PASS or MISS each:

1. rolled ``.text`` of 16 layers within 10% of 2 layers (both levels);
2. rolled cycles within 3% of unrolled (every stack and level; faster is a pass);
3. data in L3: L2 peak at most two iterations' parameters (the stream's slot, from the generated
   ``Network.c``) plus activations (the arena of the same rolled network with data in L2, which
   holds activations and tile buffers but no parameters) plus the L2 staging of the other L3
   operands (the constants every iteration shares, kept once, and the KV caches: tile by tile,
   the most one layer stages, from ``manifest.json``), none of which grows with depth;
4. data in L3: at least 90% of the streamed parameter traffic hidden under compute. From the
   run's ``trace.json`` (``--profileTiling``): the L3 engine's transfers issued outside every
   tile of every layer (``profile.json``'s tile windows) are the streamed copies (the tile loops
   issue theirs inside their tiles); each one's engine-busy interval is compared with the
   intervals the program (core 0) stalled waiting on the L3 engine. Hidden = 1 - (busy cycles of
   streamed copies during such stalls) / (all busy cycles of streamed copies): a stall counts
   against the stream whether the core waits for a streamed chunk or for a tile transfer queued
   behind one. The first iteration's parameters, which nothing precedes, are included (the
   figure for the copies issued after the first iteration, the steady state, is printed too);
5. ``BigWeights`` (2.5 MiB of int8 weights) runs rolled at the default ``--l2`` (parameters moved
   to L3 and streamed).

Then the corpus microLlama64 on the NPU platform, rolled with data in L3, without and with its NPU
weights streamed into a weight memory that holds two iterations' worth but not eight.

    python benchmarks/loop_rolling.py [--stacks 2,4,8,16]

Each run prints the runner's command so it can be repeated by hand (generated folders under
deeploy_bench-<hash>/loop_rolling in the temporary directory).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

from bench_dir import BENCH_DIR

REPO = Path(__file__).resolve().parents[1]
STACKS = REPO / "DeeployTest" / "Tests" / "Models" / "Stacks"
RUNNER = REPO / "DeeployTest" / "testRunner_tiled_siracusa.py"
NPU_RUNNER = REPO / "DeeployTest" / "testRunner_tiled_siracusa_w_neureka.py"
CORPUS = REPO.parent / "shared" / "corpus" / "Models" / "microLlama" / "INT8"
WMEM_STREAM = ["--neureka-wmem", "--wmem-size", str(256 * 1024)]   # 8 layers' NPU weights do not fit, 2 do
OUT = BENCH_DIR / "loop_rolling"


def run(network: str, level: str | None, rolled: bool, profile: bool = False, npu: list[str] | None = None) -> dict:
    """One runner invocation (``npu``: on the NPU platform with these flags); its figures (and the
    generated folder)."""
    gen = OUT / f"{network}_{level or 'default'}_{'rolled' if rolled else 'unrolled'}{'_npu' if npu is not None else ''}"
    test = STACKS / network if npu is None else CORPUS / network
    cmd = [sys.executable, str(RUNNER if npu is None else NPU_RUNNER), "-t", str(test), "--cores=8", "--gen-dir", str(gen)]
    cmd += ["--l1", "64000"] + (["--defaultMemLevel", level] if level else []) + (npu or [])
    cmd += ["--loop-rolling"] if rolled else []
    cmd += ["--profileTiling"] if profile else []
    print("$", " ".join(cmd[1:]), flush=True)
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO / "DeeployTest").stdout
    if not re.search(r"^Errors: 0 out of", out, re.M):
        sys.exit(f"run failed:\n{out[-3000:]}")
    code = re.search(r"^Code: \.text (\d+) B, \.rodata (\d+) B", out, re.M)
    wmem = re.search(r"^Memory: .*?WMEM (\d+) B", out, re.M)
    return dict(gen=gen, text=int(code.group(1)), rodata=int(code.group(2)), wmem=int(wmem.group(1)) if wmem else 0,
                loop=re.search(r"(\d+ iterations of \d+ layers run as one loop)", out),
                l2=int(re.search(r"^Memory: .*?L2 (\d+) B", out, re.M).group(1)),
                arena=int(re.search(r"arena (\d+) B", out).group(1)),
                cycles=int(re.search(r"^Runtime: (\d+) cycles", out, re.M).group(1)))


def stream_slot(gen: Path) -> int:
    """Bytes of one iteration's streamed parameters (0: nothing streamed)."""
    m = re.search(r"iteration j's parameters \((\d+) B\)", (gen / "network" / "Network.c").read_text())
    return int(m.group(1)) if m else 0


def staging_peak(gen: Path) -> int:
    """The most bytes one layer stages in L2 for its operands in L3."""
    per_layer: dict[int, int] = {}
    for b in json.loads((gen / "network" / "manifest.json").read_text())["buffers"]:
        if b["kind"] == "staging":
            per_layer[b["first"]] = per_layer.get(b["first"], 0) + b["size"]
    return max(per_layer.values(), default=0)


def _overlap(a: float, b: float, spans: list[tuple[float, float]]) -> float:
    return sum(max(0.0, min(b, e) - max(a, s)) for s, e in spans)


def hidden_stream(gen: Path) -> tuple[float, float, int, float, float]:
    """(busy cycles of streamed copies, of which the program stalled on, number of copies, and the
    first two for the copies issued after the first iteration)."""
    c = (gen / "network" / "Network.c").read_text()
    tables = re.findall(r"deeploy_s\d+_(?:first_at|piece)\[\] = \{([^}]*)\}", c)
    first = sum(len(t.split(",")) - 1 for t in tables)   # the copies the first iteration issues
    profile = json.loads((gen / "profile.json").read_text())
    events = json.loads((gen / "trace.json").read_text())["traceEvents"]
    tiles = sorted((t["start"], t["start"] + t["load"] + t["kernel"] + t["store"])
                   for layer in profile["layers"] for t in layer.get("tiles", ()))
    issues = [e["args"]["start_cycle"] for e in events
              if e.get("name") == "DMA issue" and e.get("args", {}).get("engine") == "L3"]
    engine = [e for e in events if e.get("cat") == "dma" and e.get("ph") == "X" and e.get("pid") == 3
              and e.get("tid") == 1]   # the L3 engine's lane, in issue order
    if len(issues) != len(engine):
        sys.exit(f"{gen}: {len(issues)} L3 issue events for {len(engine)} L3 transfers; cannot pair them")
    stalls = [(e["args"]["start_cycle"], e["args"]["start_cycle"] + e["args"]["cycles"]) for e in events
              if e.get("name") == "DMA wait" and e.get("args", {}).get("engine") == "L3"]
    busy = waited = later_busy = later_waited = 0.0
    count = 0
    for issue, e in zip(issues, engine):
        if not e["name"].startswith("L3->") or any(s <= issue < t for s, t in tiles):
            continue
        a, b = e["args"]["start_cycle"], e["args"]["start_cycle"] + e["args"]["cycles"]
        busy += b - a
        waited += _overlap(a, b, stalls)
        count += 1
        if count > first:
            later_busy += b - a
            later_waited += _overlap(a, b, stalls)
    return busy, waited, count, later_busy, later_waited


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stacks", default="2,4,8,16", help="decoder stack depths (default 2,4,8,16)")
    args = ap.parse_args()
    depths = [int(d) for d in args.stacks.split(",")]

    res: dict[tuple[int, str, bool], dict] = {}
    for level in ("L2", "L3"):
        for n in depths:
            for rolled in (False, True):
                res[n, level, rolled] = run(f"Decoder{n}", level, rolled, profile=rolled and level == "L3")
    big = run("BigWeights", None, True)
    npu = {flags: run("microLlama64", "L3", True, profile=bool(flags), npu=list(flags))
           for flags in ((), tuple(WMEM_STREAM))}

    print("\nTiled Siracusa, 8 cores, --l1 64000 (modelled cycles; bytes):")
    print(f"{'stack':8s} {'data':4s} {'.text unr':>10s} {'.text rol':>10s} {'.rodata unr':>11s} {'.rodata rol':>11s} "
          f"{'L2 unr':>8s} {'L2 rol':>8s} {'cycles unr':>11s} {'cycles rol':>11s} {'rol/unr':>8s}")
    for level in ("L2", "L3"):
        for n in depths:
            u, r = res[n, level, False], res[n, level, True]
            print(f"Decoder{n:<2d} {level:4s} {u['text']:10d} {r['text']:10d} {u['rodata']:11d} {r['rodata']:11d} "
                  f"{u['l2']:8d} {r['l2']:8d} {u['cycles']:11d} {r['cycles']:11d} {r['cycles'] / u['cycles']:8.4f}")

    print("\nTargets:")
    lo, hi = min(depths), max(depths)
    for level in ("L2", "L3"):
        a, b = res[lo, level, True]["text"], res[hi, level, True]["text"]
        print(f"  {verdict(b <= 1.10 * a)} rolled .text, data in {level}: {hi} layers {b} B vs {lo} layers {a} B "
              f"({100 * (b / a - 1):+.1f}%, target within 10%)")
    for level in ("L2", "L3"):
        for n in depths:
            u, r = res[n, level, False]["cycles"], res[n, level, True]["cycles"]
            print(f"  {verdict(r <= 1.03 * u)} cycles Decoder{n}, data in {level}: rolled {r} vs unrolled {u} "
                  f"({100 * (r / u - 1):+.2f}%, target at most 3% slower)")
    for n in depths:
        r = res[n, "L3", True]
        slot, activations, staging = stream_slot(r["gen"]), res[n, "L2", True]["arena"], staging_peak(r["gen"])
        bound = 2 * slot + activations + staging
        print(f"  {verdict(slot > 0 and r['l2'] <= bound)} L2 peak Decoder{n}, data in L3: {r['l2']} B <= 2 x {slot} B "
              f"parameters + {activations} B activations + {staging} B staging of shared constants and caches "
              f"= {bound} B")
        busy, waited, count, later_busy, later_waited = hidden_stream(r["gen"])
        share = 1 - waited / busy if busy else 0.0
        later = f"{100 * (1 - later_waited / later_busy):.1f}%" if later_busy else "none"
        print(f"  {verdict(busy > 0 and share >= 0.90)} streamed weights hidden, Decoder{n}: {count} copies, engine busy "
              f"{busy:.0f} cycles, program stalled during {waited:.0f}: {100 * share:.1f}% hidden (target >= 90%; "
              f"copies issued after the first iteration: {later})")
    slot = stream_slot(big["gen"])
    how = f"parameters streamed, {slot} B per iteration" if slot else \
        "parameters moved to L3 staged tile by tile (two iterations' worth do not fit L2: not streamed)"
    loop = big["loop"].group(1) if big["loop"] else "NOT rolled"
    print(f"  {verdict(big['cycles'] > 0 and big['loop'] is not None)} BigWeights rolled at the default --l2: ran "
          f"bit-exact, {loop}, {big['cycles']} cycles, L2 peak {big['l2']} B; {how}")
    plain, streamed = npu[()], npu[tuple(WMEM_STREAM)]
    busy, waited, count, _, _ = hidden_stream(streamed["gen"])
    wmem_slot = int(re.search(r"iteration j's parameters \((\d+) B\) in slot j % 2 of \(deeploy_stream_WMEM",
                              (streamed["gen"] / "network" / "Network.c").read_text()).group(1))
    print(f"\nNPU, microLlama64 rolled, data in L3 ({' '.join(WMEM_STREAM)}: NPU weights streamed into the weight memory):")
    print(f"  without the weight memory: {plain['cycles']} cycles, L2 peak {plain['l2']} B")
    print(f"  streamed into it: {streamed['cycles']} cycles, L2 peak {streamed['l2']} B, WMEM {streamed['wmem']} B "
          f"(2 x {wmem_slot} B NPU weights per iteration); {count} streamed copies, "
          f"{100 * (1 - waited / busy):.1f}% hidden")


if __name__ == "__main__":
    main()
