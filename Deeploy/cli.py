"""The ``deeploy`` command line.

    deeploy compile net.onnx --platform Generic -o out/   # standalone C project + summary
    deeploy compile net.onnx --platform Siracusa --cores 8 -o out/
    deeploy compile net.onnx --platform Siracusa --l1 64000 --defaultMemLevel=L2 --name kws -o out/
    deeploy compile net.onnx --platform Siracusa -o out/ --emit-testbench  # + main.c checking outputs.npz
    deeploy run out/                                       # build it, run it (host or QEMU): Errors: 0 out of N
    deeploy analyze net.onnx --platform Siracusa --l1 64000 [--json|--csv]   # per layer cost, memory, tiles
    deeploy validate net.onnx --platform Siracusa [--inputs x.npz]  # run it, compare with the reference
    deeploy ops --platform Generic                         # operators the platform runs
    deeploy sweep sweep.yaml -o results/ [--jobs N] [--ray [--ray-address ADDR]] [--samples N] [--retry-failed]
    deeploy sweep report results/ -o report.html           # Pareto fronts, side-by-side views, sortable table
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import gc
import os
import sys
import time
from pathlib import Path

from Deeploy.arguments import add_compile_flags, compile_options, platform_options
from Deeploy.passes.loop_flags import loop_rolling_options
from Deeploy.tiling.flags import tiling_options
from Deeploy.errors import DeeployError, error_text

__all__ = ["main"]


def _input_types(specs: list[str]):
    from Deeploy.ir.dtypes import dtype_by_name
    types = {}
    for spec in specs:
        name, sep, type_name = spec.rpartition("=")
        if not sep or not name:
            raise DeeployError(f"--input-type '{spec}' must look like NAME=int8")
        try:
            types[name] = dtype_by_name(type_name)
        except ValueError as exc:
            raise DeeployError(f"--input-type '{spec}': {exc}") from None
    return types


def _testbench(args, graph, values, onnx_path: Path):
    """The writer of ``--emit-testbench``'s main.c and testdata.h (inputs and expected outputs
    checked against the graph before anything is compiled)."""
    from Deeploy.codegen.testbench import testbench_writer
    from Deeploy.targets import get_platform
    expected = Path(args.outputs) if args.outputs else onnx_path.with_name("outputs.npz")
    if values is None:
        raise DeeployError(f"--emit-testbench needs inputs: give --inputs x.npz or put inputs.npz beside {onnx_path}")
    if not expected.is_file():
        raise DeeployError(f"--emit-testbench needs expected outputs: {expected} does not exist "
                           f"(give --outputs y.npz or put outputs.npz beside {onnx_path})")
    return testbench_writer(graph, values, expected, section=get_platform(args.platform).reference_section,
                            name=args.name)


def _load(args, say=print):
    """The model's graph and its sample inputs (--inputs, else inputs.npz beside it, else None)."""
    from Deeploy.frontend import load_npz_arrays, load_onnx, map_arrays
    onnx_path = Path(args.model)
    graph = load_onnx(onnx_path)
    samples = Path(args.inputs) if args.inputs else onnx_path.with_name("inputs.npz")
    values = None
    if args.inputs or samples.is_file():
        values = map_arrays(samples, load_npz_arrays(samples), graph.inputs, graph, "input")
        say(f"input types from {samples}")
    return onnx_path, graph, values


def _compile(args) -> None:
    from Deeploy.analysis.sizes import engine_line, memory_line
    from Deeploy.compiler import Stages, atomic_folder, check_replaceable, compile_graph
    from Deeploy.frontend import assign_input_types
    from Deeploy.frontend.onnx_loader import integer_semantics

    start = time.perf_counter()
    log = print if args.verbose else None
    stages = Stages(log)
    if args.roofline:
        from Deeploy.targets import roofs_of
        roofs_of(args.platform)   # a platform without a cycle model is refused before anything is written
    onnx_path, graph, values = _load(args)
    testbench = _testbench(args, graph, values, onnx_path) if args.emit_testbench else None
    assign_input_types(graph, values, _input_types(args.input_type))
    stages("load")
    out = Path(args.output)
    snapshots = contextlib.nullcontext()
    if args.snapshots:   # <output>_states: it and the output are refused before anything is written
        check_replaceable(out)
        snapshots = atomic_folder(f"{os.path.abspath(out)}_states", "--snapshots folder")
    with snapshots as states:
        result = compile_graph(graph, args.platform, out, source=onnx_path.name, snapshot_dir=states,
                               log=log, extra_files=testbench, stages=stages, name=args.name,
                               **compile_options(args))
    for note in result.notes:
        print("note:", note)
    s = result.summary
    kernels = collections.Counter(layer.variant for layer in result.layers)
    print(f"compiled {onnx_path} for {args.platform} in {time.perf_counter() - start:.2f} s -> {out}/")
    print(f"  layers:     {s.layers}")
    print(f"  integers:   {integer_semantics(result.graph)}")
    print("  kernels:    " + ", ".join(f"{k} x{n}" for k, n in sorted(kernels.items())))
    if args.verbose:
        floats = [f"{layer.node.name} ({layer.node.op})" for layer in result.layers
                  if any(result.graph.tensors[t].dtype.is_float and not result.graph.is_constant(t)
                         for t in layer.node.inputs + layer.node.outputs if t)]
        print("  float:      " + (", ".join(floats) or "none"))
    print(f"  constants:  {s.const_bytes} B")
    print(f"  activations: arena {s.arena_size} B (lower bound, peak of live bytes: {s.lower_bound} B)")
    print(f"  inputs+outputs: {s.io_bytes} B")
    print(f"  {memory_line(result.manifest)}")
    print(f"  {engine_line(result.manifest)}")
    if args.emit_testbench:
        print(f"  testbench:  main.c, testdata.h (build and run: deeploy run {out})")
    if args.roofline:
        _roofline(result, out)


def _roofline(result, out: Path) -> None:
    """--roofline of deeploy compile: the roofline with the tiler's estimated cycles, printed and
    written as roofline.json and roofline.html into the output folder."""
    from Deeploy.analysis.roofline import format_roofline
    from Deeploy.analysis.roofline_plot import write_roofline_html
    report = _roofline_report(result)
    print(format_roofline(report), end="")
    (out / "roofline.json").write_text(report.to_json())
    page = write_roofline_html(out / "roofline.html", report, f"Roofline: {report.platform}, {out.name}")
    print(f"Roofline files: {out / 'roofline.json'}, {page}")


def _roofline_report(result):
    """The roofline of a ``CompileResult`` with the tiler's estimated cycles."""
    from Deeploy.analysis.roofline import build_roofline, layer_work
    from Deeploy.targets import get_platform, roofs_of
    name = result.manifest.platform
    return build_roofline(result, layer_work(result, get_platform(name), roofs_of(name)), roofs_of(name))


def _analyze(args) -> None:
    from Deeploy.analyze import analyze_graph, format_csv, format_table
    from Deeploy.frontend import assign_input_types
    say = (lambda text: print(text, file=sys.stderr)) if args.json or args.csv else print
    if args.roofline:
        from Deeploy.targets import roofs_of
        if args.csv:
            raise DeeployError("--roofline has a text and a JSON form (--json), not CSV: drop --csv")
        roofs_of(args.platform)
    onnx_path, graph, values = _load(args, say)
    assign_input_types(graph, values, _input_types(args.input_type))
    if args.roofline:
        from Deeploy.analysis.roofline import format_roofline
        from Deeploy.analyze import compile_for_report
        result = compile_for_report(graph, args.platform, source=onnx_path.name, cores=args.cores,
                                    tiling=tiling_options(args), loop_rolling=loop_rolling_options(args),
                                    platform_options=platform_options(args))
        roofline = _roofline_report(result)
        print(roofline.to_json() if args.json else format_roofline(roofline), end="")
        return
    report = analyze_graph(graph, args.platform, source=onnx_path.name, cores=args.cores,
                           tiling=tiling_options(args), loop_rolling=loop_rolling_options(args),
                           platform_options=platform_options(args))
    for note in report.notes:
        say(f"note: {note}")
    print(report.to_json() if args.json else format_csv(report) if args.csv else format_table(report), end="")


def _validate(args) -> int:
    from Deeploy.validate import validate
    from Deeploy.passes.loop_flags import loop_rolling_options
    return validate(args.model, args.platform, inputs=args.inputs, outputs=args.outputs, cores=args.cores,
                    tiling=tiling_options(args), input_types=_input_types(args.input_type), seed=args.seed,
                    timeout=args.timeout, loop_rolling=loop_rolling_options(args),
                    platform_options=platform_options(args))


def _run(args) -> int:
    from Deeploy.run import run_output
    return run_output(args.folder, args.build_dir, timeout=args.timeout, verbose=args.verbose)


def _sweep(args) -> int:
    if args.config == "report":
        if args.results is None:
            raise DeeployError("deeploy sweep report needs the results folder: deeploy sweep report DIR -o report.html")
        from Deeploy.sweep.report import write_report
        print(f"Report: {write_report(args.results, args.output, args.l1_budget, args.l2_budget)}")
        return 0
    if args.results is not None:
        raise DeeployError(f"deeploy sweep takes one config file, got also '{args.results}' "
                           "(a report: deeploy sweep report DIR -o report.html)")
    from Deeploy.sweep.runner import run_sweep
    return run_sweep(args.config, args.output, jobs=args.jobs, ray=args.ray, ray_address=args.ray_address,
                     samples=args.samples, retry_failed=args.retry_failed)


def _ops(args) -> None:
    from Deeploy.ops import Trait, registered_ops
    from Deeploy.targets import get_platform
    platform = get_platform(args.platform)
    for name, op in sorted(registered_ops().items()):
        kernels = platform.bindings.get(name, ())
        none = ("(folds at compile time)" if op.has(Trait.SHAPE_ONLY) else
                "(lowered to other ops)" if op.has(Trait.LOWERED) else "(not supported)")
        print(f"{name:16s} {', '.join(k.name for k in kernels) if kernels else none}")


def main(argv: list[str] | None = None) -> int:
    # a compile allocates millions of small objects and few cycles: the default first-generation
    # threshold (700) has the cyclic collector take 5-15% of the CPU time, a larger one about 2%
    gc.set_threshold(10_000, *gc.get_threshold()[1:])
    from Deeploy import __version__
    from Deeploy.arguments import ArgumentParser, add_platform_flag
    parser = ArgumentParser(prog="deeploy", description="Compile quantized ONNX networks to C.")
    parser.add_argument("--version", action="version", version=f"deeploy {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("compile", help="compile an ONNX network into a standalone C project")
    c.add_argument("model", help="the .onnx file")
    add_platform_flag(c)
    c.add_argument("-o", "--output", required=True,
                   help="output folder: created, or replaced atomically if an earlier compile created it")
    c.add_argument("--inputs", help="npz of sample inputs deciding input integer types "
                   "(default: inputs.npz beside the model, if present)")
    c.add_argument("--input-type", action="append", default=[], metavar="NAME=TYPE",
                   help="integer type of a graph input, e.g. input=uint8")
    add_compile_flags(c)
    c.add_argument("--name", default=None, metavar="NET",
                   help="prefix of every exported C symbol (NET_InitNetwork, NET_RunNetwork, NET_inputs...) "
                        "and macro (NET_ARENA_L2_BYTES...) so several networks link into one program "
                        "(default: InitNetwork, RunNetwork, DeeployNetwork_*)")
    c.add_argument("--roofline", action="store_true",
                   help="print every layer's ops, bytes per memory level, intensity, the tiler's estimated cycles and "
                        "its roofs; write roofline.json and roofline.html into the output folder")
    c.add_argument("--snapshots", action="store_true", help="write ONNX snapshots to <output>_states/")
    c.add_argument("--emit-testbench", action="store_true",
                   help="add main.c and testdata.h: feed the inputs, check the expected outputs, print "
                        "'Errors: E out of N' (build and run it with `deeploy run <output>`)")
    c.add_argument("--outputs", help="npz of expected outputs for --emit-testbench "
                   "(default: outputs.npz beside the model)")
    c.add_argument("-v", "--verbose", action="store_true")
    c.set_defaults(run=_compile)
    a = sub.add_parser("analyze", help="per layer: op, kernel, engine, ops, bytes, memory per level, tiles; "
                       "and the totals (nothing is written)")
    a.add_argument("model", help="the .onnx file")
    add_platform_flag(a)
    a.add_argument("--inputs", help="npz of sample inputs deciding input integer types "
                   "(default: inputs.npz beside the model, if present)")
    a.add_argument("--input-type", action="append", default=[], metavar="NAME=TYPE",
                   help="integer type of a graph input, e.g. input=uint8")
    add_compile_flags(a)
    fmt = a.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="the report as JSON")
    fmt.add_argument("--csv", action="store_true", help="one CSV row per layer, then the totals")
    a.add_argument("--roofline", action="store_true",
                   help="instead: per layer its ops, bytes per memory level, intensity, the tiler's estimated cycles "
                        "and its roofs (text, or --json)")
    a.set_defaults(run=_analyze)
    v = sub.add_parser("validate", help="compile, build and run on the host or QEMU, and compare with the "
                       "reference interpreter (and onnxruntime, outputs.npz); exit 1 on a mismatch")
    v.add_argument("model", help="the .onnx file")
    add_platform_flag(v)
    v.add_argument("--inputs", help="npz of inputs (default: inputs.npz beside the model, else random values)")
    v.add_argument("--outputs", help="npz of expected outputs to check the reference against "
                   "(default: outputs.npz beside the model, with its inputs.npz)")
    v.add_argument("--input-type", action="append", default=[], metavar="NAME=TYPE",
                   help="integer type of a graph input, e.g. input=uint8")
    v.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    v.add_argument("--timeout", type=float, default=600.0, help="seconds the program may run (default 600)")
    add_compile_flags(v)
    v.set_defaults(run=_validate)
    r = sub.add_parser("run", help="build an output of `compile --emit-testbench` and run it (host or QEMU)")
    r.add_argument("folder", help="the compiled output folder")
    r.add_argument("--build-dir", help="CMake build folder (default: <folder>/build)")
    r.add_argument("--timeout", type=float, default=600.0, help="seconds the program may run (default 600)")
    r.add_argument("-v", "--verbose", action="store_true", help="show the build commands and their output")
    r.set_defaults(run=_run)
    w = sub.add_parser("sweep", help="compile, build and run every configuration of a config file (YAML or TOML); "
                       "`deeploy sweep report DIR -o report.html`: its HTML report")
    w.add_argument("config", help="the sweep config (.yaml, .yml or .toml), or `report`")
    w.add_argument("results", nargs="?", help=argparse.SUPPRESS)
    w.add_argument("-o", "--output", required=True,
                   help="the results folder (resumed if an earlier sweep wrote it); for `report`: the HTML file")
    w.add_argument("--jobs", type=int, default=None, help="points run at once on this machine (default 1)")
    w.add_argument("--ray", action="store_true", help="run the points as Ray tasks (pip install 'deeploy[sweep]')")
    w.add_argument("--ray-address", default=None, metavar="ADDR",
                   help="the Ray cluster, e.g. 10.0.0.1:6379 (default: a local Ray instance)")
    w.add_argument("--samples", type=int, default=None, metavar="N",
                   help="run N points of the cross product (Latin hypercube; config sampling: random for uniform)")
    w.add_argument("--retry-failed", action="store_true", help="run again the points whose earlier run failed")
    w.add_argument("--l1-budget", type=int, default=None, metavar="BYTES",
                   help="report: the best configuration per network uses at most this L1 (peak)")
    w.add_argument("--l2-budget", type=int, default=None, metavar="BYTES",
                   help="report: the best configuration per network uses at most this L2 (peak)")
    w.set_defaults(run=_sweep)
    o = sub.add_parser("ops", help="list operators and the platform's kernels for them")
    add_platform_flag(o)
    o.set_defaults(run=_ops)
    args = parser.parse_args(argv)
    try:
        status = args.run(args)
    except DeeployError as exc:
        print(error_text(exc, getattr(args, "verbose", False)), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("error: interrupted; nothing was written", file=sys.stderr)
        return 130
    return status or 0


if __name__ == "__main__":
    sys.exit(main())
