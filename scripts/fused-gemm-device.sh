#!/usr/bin/env bash
# The fused GEMMs on the GPU machine in one call: tests/fused.rs and tests/sync_stream.rs
# RUNS times in a row each, then the `ccl_ops` bench's GEMM part (`--only gemm`: the
# all-gather GEMM read in place, from snapshots and copied ahead, the reductions, each
# against the unfused iris sequence, the GEMM alone and between two barriers) at 4 ranks
# as threads, and at one rank per GPU when the machine has 2 or more (rank r on GPU
# r % count: on a 4-GPU machine the 4 ranks are on separate GPUs, over NVLink); there
# also PyTorch's fused GEMMs (symmetric memory) and NCCL's unfused way
# (benches/reference/fused_gemm_torch.py under torchrun). A table last. What
# docs/performance.md's fused-GEMM sections record.
#
# Usage (GPU machine, repository root):
#   [VARIANTS="default,off max,off default,on max,on"] bash scripts/fused-gemm-device.sh [-n RUNS]
# VARIANTS: the bench at 4 ranks once for each CARVEOUT,SYNC listed, to compare them in
# one call: CARVEOUT an IRIS_SHARED_CARVEOUT value (`default`: unset, the driver's
# choice), SYNC `on` for a sync stream a rank (`--sync-stream on`). Default: default,off.
# ROUNDS (default 1): the variants that many times over, in turn (the spread between
# rounds is the noise). BASELINE: another bundle folder (an older commit's `ccl_ops`),
# whose bench runs once a round beside the variants (as `baseline`). TRACE (a list of
# `on`/`off`): the all-gather GEMM traced (IRIS_TRACE, 4096 x 4096 x 4096 a rank with
# Bᵀ) once for each sync-stream setting listed, each rank's kernels' median times in the
# table (scripts/lib/kernel_timeline.py; the trace itself is not kept). TRACE_OPS: the
# calls whose timelines the table gets (default all_gather_matmul; matmul_reduce_scatter,
# matmul_all_reduce, reduce_scatter, ...). A bundle built with `--features trace-events`
# adds the kernels' own events (`trace_event`) to the timelines; IRIS_TRACE_EVENTS=32768
# keeps them for a whole run (a block keeps its latest 256 by default).
#
# The bundle, made here:
#   scripts/device-bundle.sh --release bench:ccl_ops test:fused test:sync_stream
# and carried (.device-bundle in the call's carry). OUT, when set, gets the logs and the
# table (fused-gemm.txt).
set -uo pipefail

# shellcheck source=lib/device-checks.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/device-checks.sh"
checks_begin "${BASH_SOURCE[0]}" fused-gemm "$@"

gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
echo "== $gpus GPU(s); bundle: $(sed -n 2p "$bundle/MANIFEST" 2>/dev/null)" | tee -a "$table"
# Keeps the last log of NAME's runs (the failure, if one failed): a call brings back a
# limited number of files.
keep_last_log() {
    local logs
    mapfile -t logs < <(ls -v "$logdir/$log_prefix-$1-"*.log 2>/dev/null)
    ((${#logs[@]} > 1)) && rm -f "${logs[@]:0:${#logs[@]}-1}"
}
tests="$bundle/test-iris-fused"
[[ -x $tests ]] && repeat test-iris-fused "$runs" 600 "$tests" --test-threads=1
keep_last_log test_iris_fused
sync_tests="$bundle/test-iris-sync_stream"
[[ -x $sync_tests ]] && repeat test-iris-sync_stream "$runs" 120 "$sync_tests" --test-threads=1
keep_last_log test_iris_sync_stream
bench="$bundle/bench-iris-ccl_ops"
[[ -x $bench ]] || { echo "fused-gemm-device: no ccl_ops bench in $bundle" >&2; exit 2; }
ranks=(4)
((gpus >= 2 && gpus != 4)) && ranks+=("$gpus")
# BENCH's ccl_ops --only gemm at RANKS with carveout CARVEOUT and sync streams SYNC
# (on/off), logged as NAME.
gemm_bench() {
    local bench=$1 name=$2 r=$3 carveout=$4 sync=$5
    local log="$logdir/fused-gemm-ccl_ops-$r-${name//[^A-Za-z0-9_-]/_}.log" env=(env -u IRIS_SHARED_CARVEOUT)
    [[ $carveout != default ]] && env=(env IRIS_SHARED_CARVEOUT="$carveout")
    timeout 600 "${env[@]}" "$bench" --bench --ranks "$r" --iters 20 --only gemm \
        --sync-stream "$sync" >"$log" 2>&1
    local rc=$?
    echo "ccl_ops --only gemm, $r ranks on $gpus GPU(s), $name: rc=$rc" | tee -a "$table"
    grep -A 60 '^case' "$log" >>"$table"
    # The table has its rows: keep the log only of a run that failed.
    ((rc == 0)) && rm -f "$log"
}
for ((round = 1; round <= ${ROUNDS:-1}; round++)); do
    for variant in ${VARIANTS:-default,off}; do
        gemm_bench "$bench" "round $round, carveout ${variant%,*}, sync stream ${variant#*,}" \
            4 "${variant%,*}" "${variant#*,}"
    done
    if [[ -n ${BASELINE:-} ]]; then
        gemm_bench "$root/$BASELINE/bench-iris-ccl_ops" \
            "round $round, baseline $(sed -n 2p "$root/$BASELINE/MANIFEST" | grep -o 'from [^,]*')" \
            4 default off
    fi
done
for sync in ${TRACE:-}; do
    trace="$logdir/trace-$sync"
    IRIS_TRACE="$trace" timeout 300 "$bench" --bench --ranks 4 --iters 20 --only gemm \
        --gemm 1024x4096x4096 --sync-stream "$sync" >"$trace.log" 2>&1
    echo "traced, sync stream $sync: rc=$?" | tee -a "$table"
    kept=0
    for op in ${TRACE_OPS:-all_gather_matmul}; do
        python3 "$root/scripts/lib/kernel_timeline.py" "$trace/trace.json" "$op" \
            >>"$table" 2>&1 || kept=1
    done
    ((kept)) || rm -rf "$trace" "$trace.log"
done
for r in "${ranks[@]:1}"; do
    gemm_bench "$bench" "one rank a GPU" "$r" default off
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
