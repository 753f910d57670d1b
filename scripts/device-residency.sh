#!/usr/bin/env bash
# The device-barrier residency check, on a GPU machine, from the repository root, with a
# bundle from scripts/device-bundle.sh holding bench:residency_probe and test:ccl:
#
#   scripts/device-bundle.sh --release test:ccl bench:residency_probe
#   (there)  bash scripts/device-residency.sh [RUNS8] [RUNS16]
#
# 1. The probe (benches/residency_probe.rs) at 8 ranks as threads with the context's hardware
#    queues (CUDA_DEVICE_MAX_CONNECTIONS) at 1, 4, 7, 8, 9 and 32, at 7 ranks with 8 queues,
#    and at 16 ranks with the default iris sets: which configurations give up on a healthy
#    rank, and the timestamps that show why.
# 2. tests/ccl.rs, CUDA only, RUNS8 times (default 30) at 8 ranks and RUNS16 times (default
#    10) at 16 ranks (scripts/ccl-stress.sh).
# Prints a table last; logs go to $OUT when it is set.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
bundle=${IRIS_BUNDLE_DIR:-.device-bundle}
out=${OUT:-$(mktemp -d)}
runs8=${1:-30}
runs16=${2:-10}
export IRIS_BACKEND=cuda IRIS_REQUIRE_GPU=1

nvidia-smi -L 2>/dev/null || true
summary=()
probe() {
    local queues=$1 ranks=$2 line
    echo "== probe: $ranks ranks, CUDA_DEVICE_MAX_CONNECTIONS=${queues:-unset}"
    if [[ -n $queues ]]; then
        CUDA_DEVICE_MAX_CONNECTIONS=$queues timeout 180 "$bundle/bench-iris-residency_probe" \
            --ranks "$ranks" --epochs 200 --rounds 5 --limit-ms 300 >"$out/probe.tmp" 2>&1
    else
        env -u CUDA_DEVICE_MAX_CONNECTIONS timeout 180 "$bundle/bench-iris-residency_probe" \
            --ranks "$ranks" --epochs 200 --rounds 5 --limit-ms 300 >"$out/probe.tmp" 2>&1
    fi
    cat "$out/probe.tmp" >>"$out/probe.log"
    # The first failure in full (the timestamps), then the summary line.
    grep -m1 -A"$ranks" "FAILED" "$out/probe.tmp" | cut -c1-220
    line=$(grep "^probe " "$out/probe.tmp" || echo "probe ranks=$ranks queues=${queues:-?} ERROR: $(tail -n 1 "$out/probe.tmp")")
    echo "$line"
    summary+=("$line")
}
for q in 1 4 7 8 9 32; do probe "$q" 8; done
probe 8 7
probe "" 16

stress() {
    local runs=$1 worlds=$2
    IRIS_TEST_BACKENDS=cuda OUT=/tmp/ccl-stress-$worlds bash scripts/ccl-stress.sh -n "$runs" -w "$worlds" \
        --bin "$bundle/test-iris-ccl" >/dev/null 2>&1
    cp "/tmp/ccl-stress-$worlds/ccl-stress.txt" "$out/ccl-stress-$worlds.txt"
    cat "$out/ccl-stress-$worlds.txt"
    summary+=("ccl x$runs at $worlds ranks: $(tail -n 1 "$out/ccl-stress-$worlds.txt")")
}
stress "$runs8" 8
stress "$runs16" 16
rm -f "$out/probe.tmp"

echo ""
echo "== residency summary"
printf '%s\n' "${summary[@]}"
