#!/usr/bin/env bash
# The run time of one build's kernels against another's, on the GPU machine in one call:
# the same benches and tests built here with two LLVMs (say 19 and 22), each bundle's
# tests run RUNS times in a row and its `ccl_ops` bench once, older first, with a table
# last. What docs/performance.md's "Building with the LLVM the machine has" compares.
#
# Usage (GPU machine, repository root):
#   bash scripts/llvm-versions-device.sh [-n RUNS] BUNDLE_DIR...
#
# Each BUNDLE_DIR made here with, for example,
#   IRIS_LLVM_CONFIG=/usr/bin/llvm-config-19 CARGO_TARGET_DIR=/tmp/t19 \
#     IRIS_BUNDLE_DIR=.device-bundle19 scripts/device-bundle.sh --release \
#     bench:ccl_ops test:matrix
#   IRIS_BUNDLE_DIR=.device-bundle22 scripts/device-bundle.sh --release \
#     bench:ccl_ops test:matrix
# and carried (both folders in the call's carry: about 25 MiB each, so two fit in a call;
# test:fused in another call). OUT, when set, gets the logs and the
# table (llvm-versions.txt).
set -uo pipefail

dirs=()
args=()
while (($#)); do
    case "$1" in
    -n) args+=("$1" "$2"); shift ;;
    -h | --help) args+=("$1") ;;
    *) dirs+=("$1") ;;
    esac
    shift
done
# shellcheck source=lib/device-checks.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/device-checks.sh"
checks_begin "${BASH_SOURCE[0]}" llvm-versions "${args[@]}"
((${#dirs[@]})) || { echo "llvm-versions-device: name the bundle folders" >&2; exit 2; }

for dir in "${dirs[@]}"; do
    name=$(basename "$dir")
    built=$(sed -n 2p "$dir/MANIFEST" 2>/dev/null)
    echo "== $name: $built" | tee -a "$table"
    for exe in "$dir"/test-iris-*; do
        [[ -x $exe ]] || continue
        repeat "$name ${exe##*/}" "$runs" 300 "$exe" --test-threads=1
    done
    bench="$dir/bench-iris-ccl_ops"
    if [[ -x $bench ]]; then
        "$bench" --bench --ranks 4 --iters 20 >"$logdir/llvm-versions-$name-ccl_ops.log" 2>&1
        echo "$name ccl_ops rc=$?" | tee -a "$table"
        tail -n 25 "$logdir/llvm-versions-$name-ccl_ops.log" >>"$table"
    fi
done

echo
echo "== LLVM versions =="
cat "$table"
