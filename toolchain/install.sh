#!/usr/bin/env bash
# Installs what building and testing needs, idempotently: this checkout as an editable Python
# package with its test dependencies (into the Python python3 runs: an active virtual environment),
# and from Debian the host build tools plus the RISC-V bare-metal toolchain
# (gcc, binutils, picolibc) and QEMU. Packages already present are not reinstalled.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

debs=(cmake ninja-build gcc make valgrind gcc-riscv64-unknown-elf binutils-riscv64-unknown-elf
      picolibc-riscv64-unknown-elf qemu-system-misc)
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
if ! (cd / && python3 -c "import Deeploy, onnx, onnxruntime, mako, ortools, pytest, xdist, hypothesis") 2>/dev/null \
   || [ "$(cd / && python3 -c 'import Deeploy, pathlib; print(pathlib.Path(Deeploy.__file__).parents[1])' 2>/dev/null)" != "$repo" ]; then
  echo "installing this checkout (editable) and its Python dependencies into $(python3 -c 'import sys; print(sys.prefix)')" \
       "(the active virtual environment, else the system's Python)"
  python3 -m pip install -q --disable-pip-version-check -e "$repo[test]"
fi

# The QEMU timing plugin (toolchain/qemu_plugin): rebuilt when its sources are newer than it.
plugin_src="$repo/toolchain/qemu_plugin"
plugin="$repo/toolchain/build/libdeeploy_timing.so"
if [ ! -f "$plugin" ] || [ -n "$(find "$plugin_src" -type f -newer "$plugin")" ]; then
  echo "building the QEMU timing plugin: $plugin"
  mkdir -p "$(dirname "$plugin")"
  gcc -shared -fPIC -O2 -fvisibility=hidden -Wall -Wextra -o "$plugin.tmp" "$plugin_src/deeploy_timing.c" -lpthread
  mv "$plugin.tmp" "$plugin"
fi
