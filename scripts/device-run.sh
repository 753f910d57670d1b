#!/usr/bin/env bash
# Run what scripts/device-bundle.sh gathered in .device-bundle/, on the GPU machine, from the
# repository root. Prints the GPUs, runs each bundled binary with IRIS_BACKEND=cuda (unless
# the environment says otherwise), and prints a pass/fail table last. Exits non-zero when a
# binary failed or timed out.
#
# Usage: bash scripts/device-run.sh [NAME...] [-- ARGS...]
#
#   NAME      run only the bundled binaries of these names (default: all of them)
#   ARGS      passed to every binary after the arguments the MANIFEST gives it
#
# Environment:
#   IRIS_BACKEND         the backend to run on (default: cuda)
#   IRIS_REQUIRE_GPU     set to 1 (default): GPU tests fail instead of skipping when the
#                        backend does not open; set it empty to let them skip
#   DEVICE_RUN_TIMEOUT   seconds one binary may run (default: 240)
#   IRIS_BUNDLE_DIR      the bundle folder, relative to the repository root (default: .device-bundle)
#   OUT                  when set, the whole log goes to $OUT/device-run.log and the table to
#                        $OUT/summary.txt
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bundle="$root/${IRIS_BUNDLE_DIR:-.device-bundle}"
manifest="$bundle/MANIFEST"
timeout_s=${DEVICE_RUN_TIMEOUT:-240}
export IRIS_BACKEND=${IRIS_BACKEND:-cuda}
export RUST_BACKTRACE=${RUST_BACKTRACE:-1}
export IRIS_REQUIRE_GPU=${IRIS_REQUIRE_GPU-1}
[[ -n $IRIS_REQUIRE_GPU ]] || unset IRIS_REQUIRE_GPU

names=()
extra=()
while (($#)); do
    if [[ $1 == -- ]]; then
        shift
        extra=("$@")
        break
    fi
    names+=("$1")
    shift
done

if [[ ! -f $manifest ]]; then
    echo "device-run: no $manifest: build it with scripts/device-bundle.sh and carry .device-bundle" >&2
    exit 2
fi

log=/dev/null
if [[ -n ${OUT:-} ]]; then
    mkdir -p "$OUT"
    log="$OUT/device-run.log"
    : >"$log"
fi

say() { echo "$*" | tee -a "$log"; }

wanted() {
    ((${#names[@]} == 0)) && return 0
    local n
    for n in "${names[@]}"; do
        [[ $n == "$1" || $n == "$2" ]] && return 0
    done
    return 1
}

say "== GPUs"
if command -v nvidia-smi >/dev/null; then
    nvidia-smi -L 2>&1 | tee -a "$log"
else
    say "nvidia-smi: not found"
fi
say "driver library: $( (ldconfig -p 2>/dev/null | grep -m1 -o '/[^ ]*libcuda\.so\.1$') || echo 'libcuda.so.1 not in the loader cache')"
say "== bundle: $(sed -n 2p "$manifest" | sed 's/^# //')"
say "== IRIS_BACKEND=$IRIS_BACKEND, timeout ${timeout_s}s per binary"

# A bundled launcher (bin:iris-run of iris-host) is what the process tests start.
[[ -x $bundle/bin-iris-host-iris-run ]] && export IRIS_RUN_BIN="$bundle/bin-iris-host-iris-run"

rows=()
failed=0
while IFS=$'\t' read -r kind name package file args; do
    [[ -z $kind || $kind == \#* ]] && continue
    [[ $kind == bin ]] && continue
    wanted "$name" "$file" || continue
    read -r -a argv <<<"$args"
    say ""
    say "== $file ${argv[*]} ${extra[*]}"
    start=$(date +%s.%N)
    timeout --kill-after=10 "$timeout_s" "$bundle/$file" "${argv[@]}" "${extra[@]}" </dev/null 2>&1 | tee -a "$log"
    rc=${PIPESTATUS[0]}
    secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    case $rc in
    0) verdict=pass ;;
    124 | 137) verdict=timeout ;;
    *) verdict=FAIL ;;
    esac
    [[ $verdict == pass ]] || failed=$((failed + 1))
    rows+=("$(printf '%-8s %-7s %4s %8ss  %s (%s)' "$verdict" "$kind" "$rc" "$secs" "$name" "$package")")
done <"$manifest"

table() {
    echo ""
    echo "== summary"
    printf '%-8s %-7s %4s %9s  %s\n' result kind rc time target
    printf '%s\n' "${rows[@]}"
    echo "${#rows[@]} run, $failed failed"
}
((${#rows[@]})) || {
    say "device-run: nothing in the bundle matched: ${names[*]}"
    exit 2
}
table | tee -a "$log"
[[ -n ${OUT:-} ]] && table >"$OUT/summary.txt"
((failed == 0))
