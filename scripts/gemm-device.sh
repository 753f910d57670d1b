#!/usr/bin/env bash
# The matrix-unit numbers of docs/performance.md, on the GPU machine, in one call: the GEMM
# example at each size, GEMM + all-scatter (warpgroup_256) at each rank count, the torch references
# (benches/reference/gemm_reference.py), Triton's GEMM built with `mma.sync` and with `wgmma`
# (benches/reference/gemm_triton_reference.py: a mature compiler's number for each instruction),
# `staged_128`'s algorithm in CUDA C++ built by nvcc (benches/reference/gemm_mma_reference.cu),
# and the SASS instruction mix of the shared-memory kernels
# (ptxas of the PTX the compiler emitted, one file per kernel unit, bundled as
# gemm*.ARCH.s by:
#   IRIS_DUMP=/tmp/d IRIS_TARGETS=nvidia cargo build --release --example gemm
#   cp /tmp/d/kernels.sm_90.s .device-bundle/gemm.sm_90.s
#   cp /tmp/d/staged_kernels.sm_90.s .device-bundle/gemm-staged.sm_90.s
#   cp /tmp/d/warpgroup_kernels.sm_90a.s .device-bundle/gemm.sm_90a.s).
#
# Usage: bash scripts/gemm-device.sh [SIZES] [RANKS]   (defaults: "4096 8192" and "2 4")
# Writes gemm.txt (and sass.txt) to $OUT when set; prints a short table last.
set -uo pipefail
bundle=${IRIS_BUNDLE_DIR:-.device-bundle}
sizes=${1:-4096 8192}
ranks=${2:-2 4}
out=${OUT:-/tmp}
log=$out/gemm.txt
: >"$log"
for s in $sizes; do
    "$bundle/example-iris-gemm" --size "$s" --iters 5 2>&1 | tee -a "$log"
done
for r in $ranks; do
    "$bundle/example-iris-gemm" --size 8192 --ranks "$r" --iters 5 --kernel warpgroup_256 2>&1 | tee -a "$log"
done
python3 benches/reference/gemm_reference.py --sizes "${sizes// /,}" --ranks "${ranks// /,}" 2>&1 | tee -a "$log"
python3 benches/reference/gemm_triton_reference.py --sizes "${sizes// /,}" --mma-sync 2>&1 | tee -a "$log"
python3 benches/reference/gemm_triton_reference.py --sizes "${sizes// /,}" 2>&1 | tee -a "$log"
if command -v nvcc >/dev/null; then
    nvcc -O3 -gencode=arch=compute_90,code=sm_90 -Xptxas -v -o /tmp/gemm_mma_reference \
        benches/reference/gemm_mma_reference.cu -lcuda 2>&1 | grep -E "registers|spill" | tee -a "$log"
    /tmp/gemm_mma_reference $sizes 2>&1 | tee -a "$log"
fi
if command -v ptxas >/dev/null; then
    : >"$out/sass.txt"
    for ptx in "$bundle"/gemm*.s; do
        [[ -f $ptx ]] || continue
        arch=${ptx%.s}
        arch=${arch##*.}
        ptxas -arch="$arch" -o /tmp/gemm.cubin "$ptx" &&
            cuobjdump -sass /tmp/gemm.cubin >>"$out/sass.txt"
    done
    echo "== SASS per kernel: HMMA HGMMA LDSM LDGSTS LDS LDG" | tee -a "$log"
    awk '/Function :/ {f=$3; seen[f]=1} /HMMA/ {h[f]++} /HGMMA/ {w[f]++} /LDSM/ {m[f]++}
         /LDGSTS/ {g[f]++} /[^A-Z]LDS[. ]/ {s[f]++} /[^A-Z]LDG[. ]/ {l[f]++}
         END {for (k in seen) printf "%-28s %5d %5d %5d %5d %5d %5d\n", k, h[k], w[k], m[k], g[k], s[k], l[k]}' \
        "$out/sass.txt" | sort | tee -a "$log"
fi
echo "== summary"
grep -E "^(block_tile|pipelined|staged|tiles|warpgroup|warp_tile|mma_ceiling|triton|nvcc)|ranks,|torch.matmul" "$log"
