# Sourced by every scripts/device-*: the checkout, $OUT, the binaries staged by
# scripts/build-for-device, a fresh cache and experience DB and the python3 on PATH (as a new
# user has them), the summary file and say().
#   source "$(dirname "$0")/lib/device.sh" SUMMARY_FILE_NAME
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
OUT=${OUT:-$root/device-out}
mkdir -p "$OUT"
bin=$root/.device/bin
work=$(mktemp -d)
if [[ ! -x $bin/kopt ]]; then
  scripts/build-for-device > "$work/build.log" 2>&1 || { cat "$work/build.log"; exit 4; }
fi
export KOPT_BINARY=$bin/kopt KOPT_SOURCE_DIR=$root
export KOPT_CACHE_DIR=${KOPT_CACHE_DIR:-$work/cache}  # fresh: roofs measured on first use
export KOPT_EXPERIENCE_DB=${KOPT_EXPERIENCE_DB:-$work/experience.db}
unset KOPT_PYTHON  # as a new user: the python3 on PATH
summary=$OUT/${1:-summary.txt}
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }
# "NVIDIA H100 80GB HBM3, 580.159.04, SM 1980 / 1980 MHz, mem 2619 MHz, 36 C, 71 W"
gpu_line() {
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw \
    --format=csv,noheader 2>&1 | head -1
}
# "/usr/bin/python3 torch 2.11.0 triton 3.6.0"
python_line() {
  echo "$(command -v python3) $(python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)' 2>&1 | tail -1)"
}
# Seconds since START (a `date +%s.%N`), one decimal.
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
# At most 8 files come back from $OUT: where there are more, all but the summary and the files
# named in keep_out (relative to $OUT, set by the script) go into $OUT/more-SUMMARY.tar.gz (the
# summary's name without .txt: scripts run one after another in one call keep each other's), so
# that no log is dropped on the way back.
keep_out=()
pack_out() {
  local n
  n=$(find "$OUT" -type f | wc -l)
  ((n > 8)) || return 0
  local list=$work/pack-list
  local archive
  archive=more-$(basename "$summary" .txt).tar.gz
  (cd "$OUT" && find . -type f ! -name 'more*.tar.gz' | sed 's|^\./||') | while read -r f; do
    [[ $f == "$(basename "$summary")" ]] && continue
    printf '%s\n' "${keep_out[@]}" | grep -qxF "$f" && continue
    echo "$f"
  done > "$list"
  tar -czf "$OUT/$archive" -C "$OUT" -T "$list" && (cd "$OUT" && xargs -d '\n' rm -f < "$list") &&
    find "$OUT" -mindepth 1 -type d -empty -delete
}
trap pack_out EXIT
