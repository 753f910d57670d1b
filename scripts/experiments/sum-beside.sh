#!/usr/bin/env bash
# A timing experiment on the fused reductions (`matmul_reduce_scatter`,
# `matmul_all_reduce` into owners, Bᵀ) where every rank shares one device: with
# `IRIS_EXP=1024` and a sync stream a rank (`--sync-stream on`), each rank's sum of its
# parts runs beside its scatter GEMM, on the sync stream (`sum_beside`: a few blocks, each
# waiting for one tile's flags from every rank, then adding it), instead of after a
# trailing barrier; the GEMM takes the owners' rows by turns so that every owner's tiles
# complete through the launch. `IRIS_SUM_BLOCKS` sets the sum's blocks a rank.
#
# The code is sum-beside.patch (the `sum_beside` kernel and the flags in `scatter_wide`,
# src/ccl/matmul.rs, gemm_kernels/warpgroup.rs, communicator.rs); it stays out of the
# library: on an H100 and an H200 it measured 2.5x to 137x of the unfused way, against
# 0.93x for HEAD (docs/performance.md, "The sum beside the GEMM"), all of it the waits'
# reads of the host's abort flag at every poll; reading it once a millisecond (as the
# library's waits now do) it measured 1.01-1.09x ("Waits that read the abort flag at
# every poll"). `IRIS_SUM_SKIP` (bits: 1 no wait, 2 no sums, 4 polls check the timer
# only, 16 and the broken word, 32 and the abort flag, 8 sleep 8 µs, 64 the abort flag
# at every poll) takes parts out for timing. Its CPU check: the patch applied,
# `IRIS_EXP=1024 cargo test --all-features --test fused` (9 of 9; the sync-stream test
# runs the sum beside at 2 and 4 ranks, and fails with the sum's wait taken out).
#
# Usage:
#   here: scripts/experiments/sum-beside.sh build   (HEAD's bench into .device-bundle-h0;
#         HEAD with the patch, its bench and tests/fused.rs, into .device-bundle-sb;
#         release, about 5 minutes on 2 cores)
#   on the GPU machine, carrying .device-bundle-sb and .device-bundle-h0:
#     [ROUNDS=3] [BLOCKS="32 16 64"] [TEST_RUNS=3] [GEMM=1024x4096x4096] bash scripts/experiments/sum-beside.sh run
#   One line a bench run: the reduce-scatter and all-reduce GEMMs into owners (ms and
#   the ratio against the unfused sequence of the same run) and the GEMM alone; with
#   IRIS_BACKEND=cpu it checks itself here. The last variant runs the first of BLOCKS with
#   IRIS_SHARED_CARVEOUT=max.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
# shellcheck source=../lib/experiments.sh
source "$root/scripts/lib/experiments.sh"

build() {
    experiment_bundles "$root/scripts/experiments/sum-beside.patch" .device-bundle-sb \
        bench:ccl_ops test:fused
}

run() {
    experiment_run_begin sum-beside
    local out=$logdir start=$SECONDS
    repeat "tests/fused.rs sync stream, sum beside" "${TEST_RUNS:-3}" 200 \
        env IRIS_EXP=1024 .device-bundle-sb/test-iris-fused --test-threads=1 \
        fused_matmuls_with_a_sync_stream_match_the_host
    local variants=()
    [[ -x .device-bundle-h0/bench-iris-ccl_ops ]] && variants+=(h0:0:off:0:)
    variants+=(sb:0:off:0:)
    for b in ${BLOCKS:-32 16 64}; do variants+=("sb:1024:on:$b:"); done
    # The sum's blocks ask for the GEMM's shared-memory split (IRIS_SHARED_CARVEOUT).
    variants+=("sb:1024:on:${BLOCKS%% *}:max")
    for ((round = 1; round <= ${ROUNDS:-3}; round++)); do
        for v in "${variants[@]}"; do
            ((SECONDS - start > ${BUDGET_S:-480})) && { echo "stopped: time budget"; break 2; }
            IFS=: read -r bundle mode sync blocks carveout <<<"$v"
            local log="$out/$bundle-$mode-$blocks-$carveout-$round.log"
            IRIS_SHARED_CARVEOUT=$carveout IRIS_EXP=$mode IRIS_SUM_BLOCKS=$blocks timeout 120 ".device-bundle-$bundle/bench-iris-ccl_ops" --bench \
                --ranks 4 --iters "${ITERS:-20}" --only gemm --gemm "${GEMM:-1024x4096x4096}" \
                --sync-stream "$sync" >"$log" 2>&1 || echo "$v round $round: rc=$?"
            printf '%-16s r%s  %s\n' "$v" "$round" "$(experiment_summary "$log")" | tee -a "$table"
        done
    done
    echo "--- table"
    cat "$table"
}

experiment_main "$@"
