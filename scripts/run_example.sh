#!/usr/bin/env bash
# Set-up and the main job end to end: installs what is needed, compiles the default example
# network for the Generic platform (host C) and for Siracusa (8 RV32 cores under QEMU), builds
# it with CMake and runs it against its golden outputs.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$repo/toolchain/install.sh"
python3 "$repo/DeeployTest/testRunner_generic.py" -t Tests/Models/miniMobileNetv2
python3 "$repo/DeeployTest/testRunner_siracusa.py" -t Tests/Models/miniMobileNetv2 --cores=8
