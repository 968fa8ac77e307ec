"""The folder a runner generates a test into: where it is, what it was generated from, and
generation that either completes or leaves nothing behind.

Location (``DeeployTest/<gen_root>/...``), one folder per test folder:

- a test below ``DeeployTest/Tests``: ``Tests/<path below Tests>``;
- a test in the external corpus: ``<path below the corpus>`` (``corpus/<path>`` if that path
  starts like one of the other two kinds);
- any other folder: ``external/<folder name>-<digest of its absolute path>``.

``source.json`` in the folder records the test folder, the platform, the compile options and
digests of the test's files; ``--skipgen`` reuses the folder only if they all still match.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

from Deeploy.errors import DeeployError

__all__ = ["RECORD", "PRODUCTS", "gen_dir_for", "source_record", "check_reusable", "Generation"]

DEEPLOY_TEST = Path(__file__).resolve().parents[1]
CORPUS = DEEPLOY_TEST.parents[1] / "shared" / "corpus"
RECORD = "source.json"
PRODUCTS = ("network", "harness", "deeployStates", "memory_allocation.html", "profile.json", "trace.json",
            "profile.html", RECORD)   # profile files: written by a profiled run, removed when regenerating
TEST_FILES = ("network.onnx", "inputs.npz", "outputs.npz")
_RESERVED = ("Tests", "external", "corpus")


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


def source_record(test_dir: Path, platform: str, options: dict | None) -> dict:
    """What a generated folder is made from: test folder, platform, options, file digests."""
    return {"test": str(test_dir.resolve()), "platform": platform,
            "options": json.loads(json.dumps(options or {}, default=_plain, sort_keys=True)),
            "files": {name: _digest(test_dir / name) for name in TEST_FILES}}


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
    changed = [name for name in TEST_FILES if stored.get("files", {}).get(name) != record["files"][name]]
    if changed:
        raise DeeployError(f"--skipgen: {', '.join(changed)} in {record['test']} changed since {gen} was "
                           f"generated{redo}")


class Generation:
    """One generation attempt into ``gen``: products are written into ``stage`` (a temporary
    folder inside ``gen``) and :meth:`install` replaces the previous products with them all at
    once. :meth:`discard` removes what this attempt put in place (and the folders it created)."""

    def __init__(self, gen: Path, owned: bool = True):
        """``owned``: ``gen`` is the runner's own default folder. Elsewhere (``--gen-dir``),
        products of an earlier generation are replaced only if a source record shows the runner
        wrote them."""
        self.gen = gen
        found = [name for name in PRODUCTS if (gen / name).exists()] if gen.is_dir() else []
        if found and not owned and not (gen / RECORD).is_file():
            raise DeeployError(f"{gen} holds {', '.join(found)} that the test runner did not generate; "
                               "name a new or empty --gen-dir (nothing was changed)")
        missing = gen
        while not missing.parent.exists() and missing.parent != missing:
            missing = missing.parent
        self._created = None if gen.exists() else missing    # topmost folder this attempt creates
        try:
            gen.mkdir(parents=True, exist_ok=True)
            self.stage = Path(tempfile.mkdtemp(prefix=".generating.", dir=gen))
        except OSError as exc:
            raise DeeployError(f"cannot create the generated-code folder {gen}: {exc.strerror}") from None
        self.installed = False

    def install(self, record: dict) -> None:
        """Write the source record and move the staged products into place."""
        (self.stage / RECORD).write_text(json.dumps(record, indent=1) + "\n")
        trash = Path(tempfile.mkdtemp(prefix=".replaced.", dir=self.gen))
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
        """Remove the stage and whatever this attempt installed; remove the folders it created."""
        shutil.rmtree(self.stage, ignore_errors=True)
        if self.installed:
            for name in PRODUCTS:
                path = self.gen / name
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path, ignore_errors=True)
                elif path.exists() or path.is_symlink():
                    path.unlink()
        if self._created is None:
            return
        if self.installed:
            shutil.rmtree(self.gen, ignore_errors=True)
        folder = self.gen
        while folder.is_relative_to(self._created):
            try:
                folder.rmdir()      # only if empty: another run may have used it meanwhile
            except FileNotFoundError:
                pass
            except OSError:
                return
            folder = folder.parent
