"""Packaging hook (the metadata is in pyproject.toml): a built wheel carries the repository's
TargetLibraries/, cmake/ and toolchain/ folders, and docs/examples/ as examples/, in Deeploy/_data/,
where Deeploy/resources.py looks for them. Editable installs use the folders in place."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

DATA_FOLDERS = {"TargetLibraries": "TargetLibraries", "cmake": "cmake", "toolchain": "toolchain",
                "docs/examples": "examples"}   # repository folder: folder in Deeploy/_data
# built files, and the installer of a checkout (toolchain/install.sh)
_SKIP = shutil.ignore_patterns("build", "__pycache__", "*.pyc", "*.o", "*.so", "install.sh")


class BuildPyWithData(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        root = Path(__file__).resolve().parent
        target = Path(self.build_lib) / "Deeploy" / "_data"
        for source, name in DATA_FOLDERS.items():
            shutil.rmtree(target / name, ignore_errors=True)
            shutil.copytree(root / source, target / name, ignore=_SKIP)


setup(cmdclass={"build_py": BuildPyWithData})
