#!/usr/bin/env bash
# A probe for why the sum beside the GEMM lost (docs/performance.md, "The sum beside the
# GEMM"): does a block that takes 192 KiB of shared memory, as the wgmma GEMMs' do, start
# on a multiprocessor that holds a spinning 256-thread block of another kernel on the
# rank's sync stream? The probe is coresidency.patch (examples/coresidency.rs, kept out of
# the library); each line it prints gives the time of the 192 KiB kernel beside G spinning
# blocks and the two times it would take if the blocks share multiprocessors or not.
# coresidency_regs.cu (CUDA C++, built by nvcc where the run is) asks the same of blocks
# that also take 8 to ~200 registers a thread, with the largest carveout.
#
# Usage:
#   here: scripts/experiments/coresidency.sh build   (HEAD with the patch, the example,
#         into .device-bundle-probe; about 2 minutes on 2 cores)
#   on the GPU machine, carrying .device-bundle-probe:
#     [SPINS=0,8,32,128] bash scripts/experiments/coresidency.sh run
#   (IRIS_BACKEND=cpu checks it here.)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
# shellcheck source=../lib/experiments.sh
source "$root/scripts/lib/experiments.sh"

build() {
    patched_bundle "$root" "$root/scripts/experiments/coresidency.patch" .device-bundle-probe \
        example:coresidency
}

run() {
    experiment_run_begin coresidency
    for carveout in "" max; do
        echo "IRIS_SHARED_CARVEOUT=${carveout:-unset}" | tee -a "$table"
        IRIS_SHARED_CARVEOUT=$carveout timeout 120 .device-bundle-probe/example-iris-coresidency \
            "${SPINS:-0,8,32,128}" 2>&1 | tee -a "$table" || echo "rc=$?" | tee -a "$table"
    done
    # The same question for a block that also takes ~170 registers a thread, as the GEMMs'
    # do: coresidency_regs.cu, nvcc-compiled (skipped where nvcc is missing).
    if command -v nvcc >/dev/null; then
        nvcc -O3 -arch=sm_90a -Xptxas -v -o /tmp/coresidency_regs \
            scripts/experiments/coresidency_regs.cu 2>&1 | grep -E "Used|error" | tee -a "$table"
        timeout 120 /tmp/coresidency_regs 2>&1 | tee -a "$table" || echo "rc=$?" | tee -a "$table"
    else
        echo "coresidency_regs: skipped, no nvcc on this machine" | tee -a "$table"
    fi
    echo "--- table"
    cat "$table"
}

experiment_main "$@"
