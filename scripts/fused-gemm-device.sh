#!/usr/bin/env bash
# The fused GEMMs on the GPU machine in one call: tests/fused.rs RUNS times in a row, then
# the `ccl_ops` bench's GEMM part (`--only gemm`: the all-gather GEMM read in place and
# copied ahead, the reductions, each against the unfused iris sequence, the GEMM alone
# and between two barriers) at 4 ranks as threads, and at one rank per GPU when the
# machine has 2 or more (rank r on GPU r % count: on a 4-GPU machine the 4 ranks are on
# separate GPUs, over NVLink); there also PyTorch's fused GEMMs (symmetric memory) and
# NCCL's unfused way (benches/reference/fused_gemm_torch.py under torchrun). A table
# last. What docs/performance.md's fused-GEMM sections record.
#
# Usage (GPU machine, repository root):
#   [CARVEOUTS="default max"] bash scripts/fused-gemm-device.sh [-n RUNS]
# CARVEOUTS: the bench once for each IRIS_SHARED_CARVEOUT value listed (`default`: unset,
# the driver's choice; the default list), to compare them in one call.
#
# The bundle, made here:
#   scripts/device-bundle.sh --release bench:ccl_ops test:fused
# and carried (.device-bundle in the call's carry). OUT, when set, gets the logs and the
# table (fused-gemm.txt).
set -uo pipefail

# shellcheck source=lib/device-checks.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/device-checks.sh"
checks_begin "${BASH_SOURCE[0]}" fused-gemm "$@"

gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
echo "== $gpus GPU(s); bundle: $(sed -n 2p "$bundle/MANIFEST" 2>/dev/null)" | tee -a "$table"
tests="$bundle/test-iris-fused"
[[ -x $tests ]] && repeat test-iris-fused "$runs" 600 "$tests" --test-threads=1
bench="$bundle/bench-iris-ccl_ops"
[[ -x $bench ]] || { echo "fused-gemm-device: no ccl_ops bench in $bundle" >&2; exit 2; }
ranks=(4)
((gpus >= 2 && gpus != 4)) && ranks+=("$gpus")
for carveout in ${CARVEOUTS:-default}; do
    for r in "${ranks[@]}"; do
        log="$logdir/fused-gemm-ccl_ops-$r-$carveout.log"
        if [[ $carveout == default ]]; then
            timeout 600 env -u IRIS_SHARED_CARVEOUT "$bench" --bench --ranks "$r" --iters 20 \
                --only gemm >"$log" 2>&1
        else
            timeout 600 env IRIS_SHARED_CARVEOUT="$carveout" "$bench" --bench --ranks "$r" \
                --iters 20 --only gemm >"$log" 2>&1
        fi
        echo "ccl_ops --only gemm, $r ranks on $gpus GPU(s), carveout $carveout: rc=$?" |
            tee -a "$table"
        grep -A 60 '^case' "$log" >>"$table"
    done
done

# PyTorch's fused GEMMs (symmetric memory) and NCCL's unfused way: one GPU a process.
if ((gpus >= 2)) && command -v torchrun >/dev/null; then
    log="$logdir/fused-gemm-torch.log"
    timeout 600 torchrun --nproc-per-node "$gpus" "$root/benches/reference/fused_gemm_torch.py" \
        --iters 20 >"$log" 2>&1
    echo "fused_gemm_torch.py, $gpus ranks on $gpus GPUs: rc=$?" | tee -a "$table"
    grep -A 20 '^case' "$log" >>"$table"
fi

echo
echo "== fused GEMMs =="
cat "$table"
