#!/usr/bin/env bash
# Installs what building and testing needs, idempotently: this checkout as an editable Python
# package with its test dependencies (into the Python python3 runs: an active virtual environment),
# and from Debian the host build tools plus the RISC-V bare-metal toolchain (gcc, binutils,
# picolibc), QEMU and Verilator, and the Arm ones (CortexM: gcc, picolibc, QEMU); then builds the
# QEMU plugins and the CV32E40P reference core simulator (toolchain/rtl). Packages already present
# are not reinstalled.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

debs=(cmake ninja-build gcc make valgrind gcc-riscv64-unknown-elf binutils-riscv64-unknown-elf
      picolibc-riscv64-unknown-elf qemu-system-misc verilator gcc-arm-none-eabi picolibc-arm-none-eabi qemu-system-arm)
missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing Debian packages: ${missing[*]}"
  sudo_cmd=(); [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# checked from / so that the working directory does not shadow the installed package
if ! (cd / && python3 -c "import Deeploy, onnx, onnxruntime, mako, ortools, pytest, xdist, hypothesis, yaml, pythondata_cpu_cv32e40p") 2>/dev/null \
   || [ "$(cd / && python3 -c 'import Deeploy, pathlib; print(pathlib.Path(Deeploy.__file__).parents[1])' 2>/dev/null)" != "$repo" ]; then
  echo "installing this checkout (editable) and its Python dependencies into $(python3 -c 'import sys; print(sys.prefix)')" \
       "(the active virtual environment, else the system's Python)"
  python3 -m pip install -q --disable-pip-version-check -e "$repo[test]"
fi

# The QEMU plugins (toolchain/qemu_plugin): the RISC-V timing plugin and the Cortex-M instruction
# counter, each rebuilt when the sources are newer than it.
plugin_src="$repo/toolchain/qemu_plugin"
for name in deeploy_timing deeploy_arm_timing; do
  plugin="$repo/toolchain/build/lib$name.so"
  if [ ! -f "$plugin" ] || [ -n "$(find "$plugin_src" -type f -newer "$plugin")" ]; then
    echo "building the QEMU plugin: $plugin"
    mkdir -p "$(dirname "$plugin")"
    gcc -shared -fPIC -O2 -fvisibility=hidden -Wall -Wextra -o "$plugin.tmp" "$plugin_src/$name.c" -lpthread
    mv "$plugin.tmp" "$plugin"
  fi
done

# The CV32E40P simulator (RTL from the pythondata-cpu-cv32e40p wheel, Verilator): rebuilt only
# when its sources or flags changed (toolchain/rtl/build.sh keeps a stamp); about 1-2 minutes.
bash "$repo/toolchain/rtl/build.sh"
