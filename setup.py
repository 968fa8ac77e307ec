"""Packaging hook (the metadata is in pyproject.toml): a built wheel carries the repository's
TargetLibraries/, cmake/ and toolchain/ folders as Deeploy/_data/, where Deeploy/resources.py
looks for them. Editable installs use the folders in place."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

DATA_FOLDERS = ("TargetLibraries", "cmake", "toolchain")
# built files, and the installer of a checkout (toolchain/install.sh)
_SKIP = shutil.ignore_patterns("build", "__pycache__", "*.pyc", "*.o", "*.so", "install.sh")


class BuildPyWithData(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        root = Path(__file__).resolve().parent
        target = Path(self.build_lib) / "Deeploy" / "_data"
        for name in DATA_FOLDERS:
            shutil.rmtree(target / name, ignore_errors=True)
            shutil.copytree(root / name, target / name, ignore=_SKIP)


setup(cmdclass={"build_py": BuildPyWithData})
