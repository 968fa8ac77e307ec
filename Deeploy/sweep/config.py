"""A sweep's config file (YAML or TOML) and the points it asks for.

    networks: [DeeployTest/Tests/Models/miniMobileNetv2]   # test folders, .onnx files, globs
    platforms: [Siracusa, Siracusa_w_neureka]
    l1: [8000, 16000, 32000, 64000]          # any flag of `deeploy compile` (add_compile_flags),
    doublebuffer: [false, true]              # named without its dashes: a value or a list
    l2: {from: 256000, to: 1024000, factor: 2}   # or a range: step (arithmetic) or factor
    timeout: 900                             # seconds per point (default 1800)
    sampling: lhs                            # --samples N: Latin hypercube (lhs) or random
    seed: 0                                  # of the sample

A network needs ``inputs.npz`` and ``outputs.npz`` beside its ONNX file (the testbench checks
every point's outputs). Paths are relative to the working directory, else to the config's folder;
a glob pattern (``DeeployTest/Tests/Kernels/**``) names every test folder it matches.
Every value is checked with the flag's own parser before anything runs."""

from __future__ import annotations

import argparse
import difflib
import glob
import hashlib
import itertools
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from Deeploy import __version__
from Deeploy.errors import DeeployError

__all__ = ["Point", "SweepConfig", "load_config", "flag_parser", "flag_names", "DEFAULT_TIMEOUT"]

DEFAULT_TIMEOUT = 1800.0
SETTINGS = ("networks", "platforms", "timeout", "sampling", "seed")
SAMPLINGS = ("lhs", "random")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        raise DeeployError(message)


def flag_parser() -> argparse.ArgumentParser:
    """The flags a point takes: those of ``deeploy compile`` that decide the generated code."""
    from Deeploy.arguments import add_compile_flags
    p = _Parser(prog="sweep", add_help=False)
    add_compile_flags(p)
    return p


def _flag_actions(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """Config key (a long option without its dashes) -> its action."""
    return {opt[2:]: a for a in parser._actions for opt in a.option_strings if opt.startswith("--")}


def flag_names() -> list[str]:
    """Every flag name a config may use, in the parser's order."""
    return list(_flag_actions(flag_parser()))


def _argv(action: argparse.Action, name: str, value) -> list[str]:
    """The command-line words of ``name: value``; a value of the wrong kind is refused."""
    option = f"--{name}"
    if action.nargs == 0:   # a switch
        if not isinstance(value, bool):
            raise DeeployError(f"flag '{name}' is a switch: give true or false, not {value!r}")
        return [option] if value else []
    if isinstance(value, (bool, dict)) or value is None:
        raise DeeployError(f"flag '{name}' takes a value (as --{name} VALUE), not {value!r}")
    if isinstance(action, argparse._AppendAction):
        words = value if isinstance(value, list) else [value]
        return [w for v in words for w in (option, str(v))]
    if isinstance(value, list):
        raise DeeployError(f"flag '{name}': each of its values is a single value, not the list {value!r}")
    return [option, str(value)]


@dataclass(frozen=True)
class Point:
    """One configuration: a network (its ONNX file), a platform and the flags given."""

    model: str                          # absolute path of the ONNX file
    platform: str
    flags: tuple[tuple[str, object], ...]
    model_digest: str                   # of the ONNX file, its inputs.npz and outputs.npz

    @property
    def network(self) -> str:
        """The network's name: its folder's for ``network.onnx``, else the file's stem."""
        path = Path(self.model)
        return path.parent.name if path.name == "network.onnx" else path.stem

    @property
    def key(self) -> str:
        """The digest of the model files, platform, flags and compiler version: the point's identity."""
        text = json.dumps([self.model_digest, self.platform, sorted(self.flags), __version__], default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:20]

    def argv(self) -> list[str]:
        actions = _flag_actions(flag_parser())
        return [w for name, value in self.flags for w in _argv(actions[name], name, value)]

    def to_json(self) -> dict:
        return {"model": self.model, "platform": self.platform, "flags": [list(f) for f in self.flags],
                "model_digest": self.model_digest}

    @classmethod
    def from_json(cls, data: dict) -> "Point":
        return cls(data["model"], data["platform"], tuple((k, v) for k, v in data["flags"]), data["model_digest"])


@dataclass(frozen=True)
class SweepConfig:
    path: Path
    models: tuple[Path, ...]
    platforms: tuple[str, ...]
    axes: tuple[tuple[str, tuple], ...]   # flag name -> its values
    timeout: float = DEFAULT_TIMEOUT
    sampling: str = "lhs"
    seed: int = 0

    def points(self, samples: int | None = None) -> list[Point]:
        """The cross product, or up to ``samples`` distinct points of it (``sampling``, ``seed``)."""
        digests = {m: _digest(m) for m in self.models}
        dims = [list(self.models), list(self.platforms)] + [list(values) for _, values in self.axes]
        names = [name for name, _ in self.axes]
        if samples is None or samples >= math.prod(len(d) for d in dims):
            picks = itertools.product(*(range(len(d)) for d in dims))
        else:
            picks = _sample(dims, samples, self.sampling, self.seed)
        points = []
        for idx in dict.fromkeys(tuple(int(i) for i in pick) for pick in picks):
            model, platform, *values = (d[i] for d, i in zip(dims, idx))
            points.append(Point(str(model), platform, tuple(zip(names, values)), digests[model]))
        return points


def _sample(dims: list[list], n: int, sampling: str, seed: int) -> list[tuple]:
    """``n`` index tuples: Latin hypercube (each dimension's values in ``n`` equal strata, one
    sample per stratum, strata shuffled per dimension) or uniform random distinct points."""
    rng = np.random.default_rng(seed)
    sizes = [len(d) for d in dims]
    if sampling == "random":
        flat = rng.choice(math.prod(sizes), size=n, replace=False)
        return [np.unravel_index(int(f), sizes) for f in flat]
    columns = [np.floor((rng.permutation(n) + rng.random(n)) / n * k).astype(int) for k in sizes]
    return list(zip(*columns))


def _digest(model: Path) -> str:
    h = hashlib.sha256()
    for path in (model, model.with_name("inputs.npz"), model.with_name("outputs.npz")):
        h.update(path.read_bytes())
    return h.hexdigest()


def _read(path: Path) -> dict:
    try:
        text = path.read_text()
    except OSError as exc:
        raise DeeployError(f"cannot read sweep config '{path}': {exc.strerror or exc}") from None
    kind = {".toml": "TOML", ".yaml": "YAML", ".yml": "YAML"}.get(path.suffix)
    if kind is None:
        raise DeeployError(f"sweep config '{path}': name a .yaml, .yml or .toml file")
    if kind == "TOML":
        import tomllib as parser
        loads = parser.loads
    else:
        try:
            import yaml as parser
        except ImportError:
            raise DeeployError("YAML sweep configs need the pyyaml package: pip install 'deeploy[sweep]' "
                               "(or write the config as TOML)") from None
        loads = parser.safe_load
    try:
        data = loads(text)
    except Exception as exc:   # tomllib.TOMLDecodeError, yaml.YAMLError
        raise DeeployError(f"sweep config '{path}' is not valid {kind}: {' '.join(str(exc).split())}") from None
    if not isinstance(data, dict):
        raise DeeployError(f"sweep config '{path}' must be a mapping of keys (networks, platforms, flags)")
    return data


def _values(where: str, value) -> list:
    """A key's values: a list, a single value, or a range {from, to, step | factor}."""
    if isinstance(value, list):
        if not value:
            raise DeeployError(f"{where}: an empty list; give at least one value")
        return value
    if not isinstance(value, dict):
        return [value]
    if set(value) not in ({"from", "to", "step"}, {"from", "to", "factor"}) or \
            not all(isinstance(v, int) and not isinstance(v, bool) for v in value.values()):
        raise DeeployError(f"{where}: a range is {{from: A, to: B, step: S}} or {{from: A, to: B, factor: F}} "
                           f"with integers, got {value}")
    lo, hi = value["from"], value["to"]
    if "step" in value:
        if value["step"] <= 0 or hi < lo:
            raise DeeployError(f"{where}: the range needs from <= to and a positive step, got {value}")
        return list(range(lo, hi + 1, value["step"]))
    if value["factor"] < 2 or lo <= 0 or hi < lo:
        raise DeeployError(f"{where}: the range needs 0 < from <= to and a factor of at least 2, got {value}")
    out = [lo]
    while out[-1] * value["factor"] <= hi:
        out.append(out[-1] * value["factor"])
    return out


def _models(where: str, entry, base: Path) -> list[Path]:
    """The ONNX files of a ``networks`` entry: a test folder, an .onnx file, or a glob pattern
    (``DeeployTest/Tests/Kernels/**``: every test folder below)."""
    if not isinstance(entry, str):
        raise DeeployError(f"{where}: {entry!r} is not a path; give a test folder or an .onnx file")
    if glob.has_magic(entry):
        for root in (Path.cwd(), base):
            found = sorted(Path(m) for m in glob.glob(str(root / entry), recursive=True))
            found = [m / "network.onnx" if m.is_dir() else m for m in found]
            found = [m for m in found if m.suffix == ".onnx" and m.is_file()]
            if found:
                return [_checked(where, m, m) for m in found]
        raise DeeployError(f"{where}: '{entry}' matches no test folder (with network.onnx) or .onnx file, "
                           f"relative to the working directory or to {base}")
    for candidate in (Path(entry), base / entry):
        model = candidate / "network.onnx" if candidate.is_dir() else candidate
        if model.is_file():
            return [_checked(where, entry, model)]
    raise DeeployError(f"{where}: '{entry}' not found (a test folder with network.onnx, or an .onnx file; "
                       f"relative to the working directory or to {base})")


def _checked(where: str, entry, model: Path) -> Path:
    missing = [n for n in ("inputs.npz", "outputs.npz") if not model.with_name(n).is_file()]
    if missing:
        raise DeeployError(f"{where}: '{entry}' has no {' and no '.join(missing)} beside {model.name} "
                           f"(each point runs a testbench checking its outputs)")
    return model.resolve()


def load_config(path: str | Path) -> SweepConfig:
    """The config at ``path``, every key and value checked (one error naming the key and the fix)."""
    from Deeploy.targets import get_platform
    path = Path(path)
    data = _read(path)
    where = lambda key: f"sweep config '{path}', key '{key}'"   # noqa: E731
    parser = flag_parser()
    actions = _flag_actions(parser)
    for key in data:
        if key not in SETTINGS and key not in actions:
            close = difflib.get_close_matches(str(key), [*SETTINGS, *actions], n=1)
            raise DeeployError(f"{where(key)}: unknown key" + (f"; did you mean '{close[0]}'?" if close else "")
                               + f" (settings: {', '.join(SETTINGS)}; flags: {', '.join(actions)})")
    if "networks" not in data:
        raise DeeployError(f"sweep config '{path}' names no networks: add networks: [test folder or .onnx file, ...]")
    models = tuple(dict.fromkeys(m for e in _values(where("networks"), data["networks"])
                                 for m in _models(where("networks"), e, path.parent)))
    platforms = tuple(dict.fromkeys(_values(where("platforms"), data.get("platforms", "Siracusa"))))
    for name in platforms:
        try:
            get_platform(str(name))
        except DeeployError as exc:
            raise DeeployError(f"{where('platforms')}: {exc}") from None
    axes = []
    for key, value in data.items():
        if key in SETTINGS:
            continue
        values = _values(where(key), value)
        for v in values:
            try:
                parser.parse_args(_argv(actions[key], key, v))
            except DeeployError as exc:
                raise DeeployError(f"{where(key)}: value {v!r}: {exc}") from None
        axes.append((key, tuple(values)))
    timeout = data.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise DeeployError(f"{where('timeout')}: {timeout!r}; give the seconds a point may take, e.g. timeout: 900")
    sampling = data.get("sampling", "lhs")
    if sampling not in SAMPLINGS:
        raise DeeployError(f"{where('sampling')}: {sampling!r}; give one of {', '.join(SAMPLINGS)}")
    seed = data.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise DeeployError(f"{where('seed')}: {seed!r}; give an integer")
    return SweepConfig(path, models, tuple(str(p) for p in platforms), tuple(axes), float(timeout), sampling, seed)
