#!/usr/bin/env bash
# One device call comparing two bundles of the ccl_ops bench (.device-bundle-base: the
# split barrier's one-thread kernels; .device-bundle: the barrier inside the own rows'
# launch), alternating, then the new bundle's fused tests and a loop of small fused
# GEMMs (the own rows first at 4 and 8 ranks) counting hangs.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
rounds=${ROUNDS:-2}
for r in $(seq 1 "$rounds"); do
    for b in base new; do
        dir=.device-bundle; [[ $b == base ]] && dir=.device-bundle-base
        echo "== round $r, $b"
        IRIS_BUNDLE_DIR=$dir bash scripts/fused-ratios.sh -n 1 | tail -3
    done
done
pass=0; fail=0
for i in $(seq 1 "${TESTS:-3}"); do
    if timeout 300 .device-bundle/test-iris-fused --test-threads=1 >/tmp/fused.$i 2>&1; then pass=$((pass+1)); else fail=$((fail+1)); tail -20 /tmp/fused.$i; fi
done
echo "tests/fused.rs: $pass passed, $fail failed"
ok=0; bad=0
for ranks in 4 8; do
    for i in $(seq 1 "${LOOPS:-10}"); do
        if timeout 120 .device-bundle/bench-iris-ccl_ops --bench --only gemm --ranks $ranks --gemm 1024x2048x1024,512x4096x512 --iters 3 >/tmp/loop.$ranks.$i 2>&1; then ok=$((ok+1)); else bad=$((bad+1)); echo "loop $ranks ranks run $i failed:"; tail -5 /tmp/loop.$ranks.$i; fi
    done
done
echo "small fused GEMMs at 4 and 8 ranks: $ok ran, $bad failed or hung"
