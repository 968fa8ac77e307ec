"""The folder a runner generates a test into: where it is, what it was generated from, and
generation that either completes or leaves nothing behind.

Location (``DeeployTest/<gen_root>/...``), one folder per test folder:

- a test below ``DeeployTest/Tests``: ``Tests/<path below Tests>``;
- a test in the external corpus: ``<path below the corpus>`` (``corpus/<path>`` if that path
  starts like one of the other two kinds);
- any other folder: ``external/<folder name>-<digest of its absolute path>``.

``source.json`` in the folder records the test folder, the platform, the compile options and
digests of the test's files (the external data ``network.onnx`` reads included); ``--skipgen``
reuses the folder only if they all still match. Runs of the same folder take turns (:func:`claimed`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

import onnx

from Deeploy.errors import DeeployError

__all__ = ["RECORD", "PRODUCTS", "gen_dir_for", "source_record", "check_reusable", "claimed", "Generation"]

DEEPLOY_TEST = Path(__file__).resolve().parents[1]
CORPUS = DEEPLOY_TEST.parents[1] / "shared" / "corpus"
RECORD = "source.json"
PRODUCTS = ("network", "harness", "deeployStates", "memory_allocation.html", "profile.json", "trace.json",
            "profile.html", RECORD)   # profile files: written by a profiled run, removed when regenerating
TEST_FILES = ("network.onnx", "inputs.npz", "outputs.npz")
_RESERVED = ("Tests", "external", "corpus")
_STAGE, _TRASH = ".generating.", ".replaced."   # temporary folders of a generation inside its folder


def gen_dir_for(test_dir: Path, gen_root: str) -> Path:
    """``DeeployTest/<gen_root>/<unique path of the test folder>`` (see the module notes)."""
    test_dir = test_dir.resolve()
    root = DEEPLOY_TEST / gen_root
    own = DEEPLOY_TEST / "Tests"
    if test_dir.is_relative_to(own) and test_dir != own:
        return root / test_dir.relative_to(DEEPLOY_TEST)
    corpus = CORPUS.resolve()
    if test_dir.is_relative_to(corpus) and test_dir != corpus:
        rel = test_dir.relative_to(corpus)
        return root / ("corpus" / rel if rel.parts[0] in _RESERVED else rel)
    digest = hashlib.sha256(str(test_dir).encode()).hexdigest()[:12]
    return root / "external" / f"{test_dir.name}-{digest}"


def _digest(path: Path) -> str | None:
    if not path.is_file():
        return None
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _plain(value):
    if dataclasses.is_dataclass(value):
        return dataclasses.asdict(value)
    return str(value)


def _external_data(model: Path) -> list[str]:
    """The files (relative to the model's folder) holding tensors of ``model`` stored outside it."""
    try:
        proto = onnx.load(str(model), load_external_data=False)
    except Exception:   # unreadable: the compile reports it
        return []

    def tensors(graph):
        yield from graph.initializer
        for node in graph.node:
            for attr in node.attribute:
                yield from (attr.t, *attr.tensors)
                for sub in (attr.g, *attr.graphs):
                    yield from tensors(sub)
    return sorted({entry.value for t in tensors(proto.graph) if t.data_location == onnx.TensorProto.EXTERNAL
                   for entry in t.external_data if entry.key == "location"})


def source_record(test_dir: Path, platform: str, options: dict | None) -> dict:
    """What a generated folder is made from: test folder, platform, options, digests of the test's
    files and of the model's external data."""
    names = (*TEST_FILES, *_external_data(test_dir / "network.onnx"))
    return {"test": str(test_dir.resolve()), "platform": platform,
            "options": json.loads(json.dumps(options or {}, default=_plain, sort_keys=True)),
            "files": {name: _digest(test_dir / name) for name in names}}


def check_reusable(gen: Path, record: dict) -> None:
    """Refuse ``--skipgen`` unless ``gen`` holds code generated from exactly ``record``."""
    redo = "; generate it again (run without --skipgen)"
    if not (gen / "network" / "Network.c").is_file() or not (gen / "network" / "main.c").is_file():
        raise DeeployError(f"--skipgen given but nothing was generated in {gen}{redo}")
    try:
        stored = json.loads((gen / RECORD).read_text())
    except (OSError, ValueError):
        raise DeeployError(f"--skipgen: {gen} does not record which test it was generated from{redo}") from None
    if stored.get("test") != record["test"]:
        raise DeeployError(f"--skipgen: {gen} was generated from {stored.get('test')}, not from "
                           f"{record['test']}{redo}")
    if stored.get("platform") != record["platform"]:
        raise DeeployError(f"--skipgen: {gen} was generated for {stored.get('platform')}, not for "
                           f"{record['platform']}{redo}")
    if stored.get("options") != record["options"]:
        raise DeeployError(f"--skipgen: {gen} was generated with options {stored.get('options')}, now "
                           f"{record['options']}{redo}")
    files = stored.get("files", {})
    changed = [name for name in sorted(files.keys() | record["files"].keys())
               if files.get(name) != record["files"].get(name)]
    if changed:
        raise DeeployError(f"--skipgen: {', '.join(changed)} in {record['test']} changed since {gen} was "
                           f"generated{redo}")


def _topmost_missing(folder: Path) -> Path | None:
    if folder.exists():
        return None
    while not folder.parent.exists() and folder.parent != folder:
        folder = folder.parent
    return folder


@contextlib.contextmanager
def claimed(gen: Path) -> Iterator[Path | None]:
    """Hold ``gen`` (created with its parents if missing) for one run: runs of the same folder
    take turns (an exclusive ``flock`` on the folder). Yields the topmost folder it created,
    removed again with its parents when the run leaves them empty."""
    while True:
        created = _topmost_missing(gen)
        try:
            gen.mkdir(parents=True, exist_ok=True)
            fd = os.open(gen, os.O_RDONLY | os.O_DIRECTORY)
        except OSError as exc:
            raise DeeployError(f"cannot create the generated-code folder {gen}: {exc.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"waiting for another run generating into {gen}", flush=True)
            fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            if os.path.samestat(os.stat(gen), os.fstat(fd)):   # not removed by the run we waited for
                break
        except FileNotFoundError:
            pass
        os.close(fd)
    try:
        yield created
    finally:
        os.close(fd)
        folder = gen
        while created is not None and folder.is_relative_to(created):
            try:
                folder.rmdir()      # only if empty
            except FileNotFoundError:
                pass
            except OSError:
                break
            folder = folder.parent


class Generation:
    """One generation attempt into ``gen`` (held with :func:`claimed`): products are written
    into ``stage`` (a temporary folder inside ``gen``) and :meth:`install` replaces the previous
    products with them all at once. :meth:`discard` removes what this attempt put in place."""

    def __init__(self, gen: Path, created: Path | None, owned: bool = True):
        """``created``: the folder :func:`claimed` made for this attempt. ``owned``: ``gen`` is the
        runner's own default folder. Elsewhere (``--gen-dir``), products of an earlier generation
        are replaced only if a source record shows the runner wrote them."""
        self.gen = gen
        found = [name for name in PRODUCTS if (gen / name).exists()]
        if found and not owned and not (gen / RECORD).is_file():
            raise DeeployError(f"{gen} holds {', '.join(found)} that the test runner did not generate; "
                               "name a new or empty --gen-dir (nothing was changed)")
        for stale in (*gen.glob(f"{_STAGE}*"), *gen.glob(f"{_TRASH}*")):   # of runs killed before their clean-up
            shutil.rmtree(stale, ignore_errors=True)                        # (none can run: gen is held)
        self._created = created
        try:
            self.stage = Path(tempfile.mkdtemp(prefix=_STAGE, dir=gen))
        except OSError as exc:
            raise DeeployError(f"cannot create the generated-code folder {gen}: {exc.strerror}") from None
        self.installed = False

    def install(self, record: dict) -> None:
        """Write the source record and move the staged products into place."""
        (self.stage / RECORD).write_text(json.dumps(record, indent=1) + "\n")
        trash = Path(tempfile.mkdtemp(prefix=_TRASH, dir=self.gen))
        try:
            for name in PRODUCTS:
                if (self.gen / name).exists():
                    os.replace(self.gen / name, trash / name)
            self.installed = True
            for name in PRODUCTS:
                if (self.stage / name).exists():
                    os.replace(self.stage / name, self.gen / name)
        finally:
            shutil.rmtree(trash, ignore_errors=True)
            shutil.rmtree(self.stage, ignore_errors=True)

    def discard(self) -> None:
        """Remove the stage and whatever this attempt installed (all of ``gen`` if it created it)."""
        shutil.rmtree(self.stage, ignore_errors=True)
        if not self.installed:
            return
        if self._created is not None:
            shutil.rmtree(self.gen, ignore_errors=True)
            return
        for name in PRODUCTS:
            path = self.gen / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            elif path.exists() or path.is_symlink():
                path.unlink()
