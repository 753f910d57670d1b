#!/usr/bin/env bash
# One device call: the fused GEMMs' rows of the ccl_ops bench (4 ranks as threads, 1024
# rows a rank, 4096 x 4096) for two bundles, .device-bundle-base and .device-bundle,
# alternating, per call and queued, in short lines (case, ms, ratio); then the new
# bundle's tests/fused.rs TESTS times.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
short() {
    awk '/x of|GEMM alone|between two/ {
        split($0, f, "[");
        name = f[1]; gsub(/ bf16|4096x4096x4096 |1024x4096x4096 /, "", name); gsub(/  +/, " ", name);
        split(f[2], v, " ");
        r = ""; if (match($0, /[0-9.]+x of/)) r = substr($0, RSTART, RLENGTH - 3);
        printf "  %-66s %7s %6s\n", substr(name, 1, 66), v[2], r }'
}
for r in $(seq 1 "${ROUNDS:-1}"); do
    for b in base new; do
        dir=.device-bundle; [[ $b == base ]] && dir=.device-bundle-base
        for q in "" --queued; do
            echo "== round $r, $b ${q:-per-call}"
            timeout 200 "$dir/bench-iris-ccl_ops" --bench --only gemm --gemm "${GEMM:-1024x4096x4096}" --iters 10 $q 2>/dev/null | short
        done
    done
done
pass=0; fail=0
for i in $(seq 1 "${TESTS:-2}"); do
    if timeout 300 .device-bundle/test-iris-fused --test-threads=1 >/tmp/fused.$i 2>&1; then pass=$((pass+1)); else fail=$((fail+1)); grep -E "panicked|FAILED|failed" /tmp/fused.$i | head -10; fi
done
echo "tests/fused.rs: $pass passed, $fail failed"
