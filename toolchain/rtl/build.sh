#!/usr/bin/env bash
# Builds the CV32E40P reference core simulator (toolchain/rtl/tb.cpp around cv32e40p_top, RTL from
# the pythondata-cpu-cv32e40p wheel) with Verilator into toolchain/build/rtl/lat<A>_<O>/cv32e40p_sim.
# Skipped when the sources, the flags and the Verilator version are those of the existing build.
#
#   bash toolchain/rtl/build.sh [FPU_ADDMUL_LAT [FPU_OTHERS_LAT]]     (default 0 0: Siracusa's)
#
# Parameters: COREV_PULP=1 (PULP extensions, hardware loops), FPU=1, NUM_MHPMCOUNTERS=14
# (mhpmcounter3..16 count events 2..15, see Deeploy/targets/pulp/rtl.py).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
addmul="${1:-0}"; others="${2:-0}"
out="$here/../build/rtl/lat${addmul}_${others}"
rtl="$(python3 -c 'import pythondata_cpu_cv32e40p as p; print(p.data_location)')/rtl"
command -v verilator >/dev/null || { echo "verilator not found: apt-get install verilator (bash toolchain/install.sh)" >&2; exit 1; }

# the wheel's core + FPU file list, without its tracer, testbench wrapper and clock gate (clock_gate.sv)
files=()
while read -r line; do
  case "$line" in
    '${DESIGN_RTL_DIR}'*) f="${line/\$\{DESIGN_RTL_DIR\}/$rtl}"
      case "$f" in *tracer_pkg.sv|*tb_wrapper.sv|*sim_clock_gate.sv) ;; *) files+=("$f") ;; esac ;;
  esac
done < "$rtl/../cv32e40p_fpu_manifest.flist"
files+=("$here/clock_gate.sv")
incs=(-I"$rtl/include" -I"$rtl/../bhv" -I"$rtl/../bhv/include" -I"$rtl/vendor/pulp_platform_common_cells/include")
flags=(--cc --exe --build -j 2 --top-module cv32e40p_top -O3 --x-assign fast --x-initial fast --noassert
       -Wno-fatal -Wno-lint -Wno-style -Wno-BLKANDNBLK -Wno-MULTIDRIVEN -Wno-UNOPTFLAT
       -GCOREV_PULP=1 -GCOREV_CLUSTER=0 -GFPU=1 -GFPU_ADDMUL_LAT="$addmul" -GFPU_OTHERS_LAT="$others"
       -GNUM_MHPMCOUNTERS=14 -CFLAGS -O1 -CFLAGS -std=c++17)

stamp="$( { verilator --version; printf '%s\n' "${flags[@]}"; cat "${files[@]}" "$here/tb.cpp" "$here/build.sh"; } | sha256sum | cut -d' ' -f1)"
if [ -x "$out/cv32e40p_sim" ] && [ "$(cat "$out/stamp" 2>/dev/null)" = "$stamp" ]; then
  exit 0
fi
echo "building the CV32E40P simulator (FPU_ADDMUL_LAT=$addmul FPU_OTHERS_LAT=$others): $out/cv32e40p_sim"
rm -rf "$out.tmp"; mkdir -p "$out.tmp"
verilator "${flags[@]}" "${incs[@]}" --Mdir "$out.tmp/obj" -o cv32e40p_sim "${files[@]}" "$here/tb.cpp" \
  > "$out.tmp/build.log" 2>&1 || { tail -30 "$out.tmp/build.log" >&2; exit 1; }
mv "$out.tmp/obj/cv32e40p_sim" "$out.tmp/cv32e40p_sim"
rm -rf "$out.tmp/obj"
echo "$stamp" > "$out.tmp/stamp"
rm -rf "$out"; mv "$out.tmp" "$out"
