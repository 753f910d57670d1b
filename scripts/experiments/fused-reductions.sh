#!/usr/bin/env bash
# A timing experiment on the fused reductions (`matmul_reduce_scatter`,
# `matmul_all_reduce` into owners, Bᵀ): a bench built from HEAD with
# fused-reductions-modes.patch applied reads IRIS_EXP, a sum of switches that each drop or
# change one part of the call's code, so that one GPU call measures every part against
# HEAD. The switches (1, 8, 128 and 256 time code whose results are wrong; 512 is
# correct):
#   1  scatter_wide: no check of the communicator's broken word at all
#   2  scatter_wide: the check as a plain load of this rank's own copy (no peer table)
#   4  sum_parts: four vectors a thread, the four loads of each part issued together
#   8  sum_parts: no check of the broken word
#   16 scatter_wide: a per-tile count after the stores (thread 0: a release fence and an
#      atomic add, device scope), what a sum beside the GEMM would need; 32 the same at
#      system scope (measured earlier at 50-60 us)
#   64 the bench: no `ccl.barrier` timing before the GEMM rows (2000 barriers that
#      b6d2b0d added at the start of every run, the only bench change in the commits
#      where the Bᵀ reductions lost their 25 us)
#   128 scatter_wide: one block in four also adds one tile's parts inside its k loop (a
#      vector a thread in each of the first 32 steps, between issuing the step's wgmma
#      and waiting for it; the parts of this rank's own copy, the sum stored into it):
#      the reduce-scatter's whole sum work done beside the matrix units, the sum pass
#      still after it, so the time it adds is what that work costs inside the GEMM;
#      256 the same with the sum stored into every rank's copy (the all-reduce's work)
#   512 the third way built (Bᵀ only; correct, for one device): `scatter_wide_sums`
#      takes the owners' rows in one order on every rank (own rows first, then the
#      peers' ascending), counts each stored tile on its owner (device scope), and a block
#      of a later step claims one complete tile of this rank's rows (in order, never
#      waiting) and adds its parts into `c` inside its k loop; after the barrier,
#      `sum_rest` adds the tiles not claimed and `reset_tiles` clears the counts
# The switches never go into the library as switches (one that skips the broken-word
# check would let a user's process write into a peer that gave up on it); what measures
# well becomes a change of its own, with its tests.
# Its results (an H100, one device): docs/performance.md, "The experiment's run"; the
# third way (512) measured slower than HEAD and stays out.
#
# Usage:
#   here (builds two bundles, the second with tests/fused.rs too, about 5 minutes on 2
#   cores):
#     scripts/experiments/fused-reductions.sh build
#   then on the GPU machine, carrying .device-bundle-h0 and .device-bundle-exp (and an
#   older commit's bundle as .device-bundle-old, if one was made, e.g. with
#   scripts/device-bundle.sh in a worktree of 5e262f6):
#     [ROUNDS=3] [TEST_RUNS=3] [MODES="0 512 16 128 256 1 64 2 4"] [BUDGET_S=480] [GEMM=1024x4096x4096] bash scripts/experiments/fused-reductions.sh run
#   The run prints one line a bench run: the reduce-scatter and all-reduce GEMMs into
#   owners (ms and the ratio against the unfused sequence of the same run) and the GEMM
#   alone, each rank 4096 x 4096 x 4096 (`--gemm 1024x4096x4096`, 4 ranks as threads;
#   GEMM and ITERS change the shape and the bench's iterations; with IRIS_BACKEND=cpu the
#   run checks itself here, on the CPU backend, which it otherwise refuses).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
# shellcheck source=../lib/experiments.sh
source "$root/scripts/lib/experiments.sh"

build() {
    experiment_bundles "$root/scripts/experiments/fused-reductions-modes.patch" .device-bundle-exp \
        bench:ccl_ops test:fused
}

run() {
    # As the other GPU check scripts (scripts/lib/device-checks.sh): on the GPU or failed
    # (IRIS_BACKEND=cpu for a check here); a failing run is a table line, not an exit.
    experiment_run_begin fused-reductions
    local out=$logdir start=$SECONDS
    local variants=()
    [[ -x .device-bundle-old/bench-iris-ccl_ops ]] && variants+=(old:0)
    variants+=(h0:0)
    for mode in ${MODES:-0 512 16 128 256 1 64 2 4}; do variants+=("exp:$mode"); done
    # Switch 512 changes what the reductions compute: its tests first (exact against the
    # host, every form), TEST_RUNS times in a row.
    if [[ -x .device-bundle-exp/test-iris-fused ]]; then
        repeat "tests/fused.rs, switch 512" "${TEST_RUNS:-3}" 300 \
            env IRIS_EXP=512 .device-bundle-exp/test-iris-fused --test-threads=1
    fi
    for ((round = 1; round <= ${ROUNDS:-3}; round++)); do
        for v in "${variants[@]}"; do
            ((SECONDS - start > ${BUDGET_S:-480})) && { echo "stopped: time budget"; return; }
            local bundle=${v%%:*} mode=${v#*:} log
            log="$out/$bundle-$mode-$round.log"
            IRIS_EXP=$mode timeout 120 ".device-bundle-$bundle/bench-iris-ccl_ops" --bench \
                --ranks 4 --iters "${ITERS:-20}" --only gemm --gemm "${GEMM:-1024x4096x4096}" >"$log" 2>&1 \
                || echo "$v round $round: rc=$?"
            printf '%-8s r%s  %s\n' "$v" "$round" "$(experiment_summary "$log")"
        done
    done
}

experiment_main "$@"
