#!/usr/bin/env bash
# The performance benchmark on the GPU machine, in one call: builds the CUDA C++ references
# with nvcc, runs the iris bench (benches/gpu_bench/, from the bundle folder), the CUDA C++,
# Triton and PyTorch references and the launch-overhead test, disassembles the hot loops,
# and merges everything into one JSON file and one table, printed last.
#
# Build the bundle here first (benches use the bench profile):
#   scripts/device-bundle.sh bench:gpu_bench --release -p iris-host test:cuda_world
# then run this there with the bundle folder carried:
#   bash scripts/bench-device.sh
#
# Writes under $OUT (else target/bench-out): bench.json (everything), table.txt (the table),
# bench.log (every program's output), sass.txt (SASS of the hot loops, ours and nvcc's).
# Environment: BENCH_BYTES (default 1 GiB) for the two-rank cases of the references;
# IRIS_BUNDLE_DIR, the folder holding bench-iris-gpu_bench and test-iris-host-cuda_world,
# relative to the repository root (default .device-bundle, as for device-bundle.sh; any
# ignored folder that the call carries will do; BENCH_BUNDLE is accepted too).
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
out=${OUT:-$root/target/bench-out}
mkdir -p "$out"
work=$(mktemp -d /tmp/bench-work.XXXXXX)
log="$out/bench.log"
: >"$log"
bytes=${BENCH_BYTES:-1073741824}
bundle="$root/${BENCH_BUNDLE:-${IRIS_BUNDLE_DIR:-.device-bundle}}"
bench_bin="$bundle/bench-iris-gpu_bench"
launch_bin="$bundle/test-iris-host-cuda_world"
export IRIS_BACKEND=${IRIS_BACKEND:-cuda}
# Code objects are PTX: without the driver's cache every module load compiles (cold).
export CUDA_CACHE_DISABLE=1
export PYTHONUNBUFFERED=1

say() { echo "$*" | tee -a "$log"; }
step() {
    local name=$1 limit=$2
    shift 2
    say ""
    say "== $name: $*"
    local t0=$SECONDS
    timeout --kill-after=10 "$limit" "$@" 2>&1 | tee -a "$log"
    local rc=${PIPESTATUS[0]}
    say "== $name: rc $rc, $((SECONDS - t0)) s"
    return "$rc"
}

{
    echo "GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader 2>&1)"
    echo "clocks now: $(nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader 2>&1)"
    echo "nvcc: $(nvcc --version 2>&1 | tail -n 2 | head -n 1)"
    echo "python: $(python3 --version 2>&1)"
    echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') ($(nproc) cores)"
    echo "kernel: $(uname -r)"
} >"$work/machine.txt" 2>&1
cat "$work/machine.txt" | tee -a "$log"

# 1. The CUDA C++ references, built in parallel.
for cu in benches/reference/bandwidth.cu benches/reference/pingpong.cu; do
    name=$(basename "$cu" .cu)
    (nvcc -O3 -arch=sm_90 -o "$work/$name" "$cu" >"$work/$name.nvcc.log" 2>&1 || echo "nvcc failed: $cu") &
done
wait
cat "$work"/*.nvcc.log >>"$log" 2>/dev/null

# 2. The iris bench (module loads first, in a fresh process).
step iris-bench 240 "$bench_bin" --bench --out "$work/iris.json"

# Module loads again with the driver's JIT cache on: the first run fills it, the second reads it.
mkdir -p "$work/nvcache"
for i in 1 2; do
    CUDA_CACHE_DISABLE=0 CUDA_CACHE_PATH="$work/nvcache" step iris-module-load-cache-$i 60 \
        "$bench_bin" --bench --only module_load --out "$work/iris-cached.json" >/dev/null
done

# 3. The CUDA C++ references.
: >"$work/cuda.jsonl"
[[ -x $work/bandwidth ]] && step cuda-bandwidth 60 "$work/bandwidth" "$bytes" | grep '^{' >>"$work/cuda.jsonl"
[[ -x $work/pingpong ]] && step cuda-pingpong 60 "$work/pingpong" | grep '^{' >>"$work/cuda.jsonl"

# 4. Triton and PyTorch.
step triton 150 python3 benches/reference/triton_bench.py "$bytes" | grep '^{' >"$work/triton.jsonl"

# 5. Launch overhead (iris-host's own test, typed launch against a raw cuLaunchKernel).
if [[ -x $launch_bin ]]; then
    IRIS_REQUIRE_GPU=1 step launch-overhead 60 "$launch_bin" --test-threads=1 --nocapture typed_launch_overhead \
        >"$work/launch.txt" 2>&1
    cat "$work/launch.txt"
fi

# 6. SASS of the hot loops: our PTX through ptxas (what the driver's JIT does at load),
#    and nvcc's binary.
{
    mkdir -p "$work/ptx"
    "$bench_bin" --dump-ptx "$work/ptx"
    for ptx in "$work"/ptx/*.ptx; do
        name=$(basename "$ptx" .ptx)
        echo "################ iris $name (ptxas -arch=sm_90 of the embedded PTX)"
        ptxas -arch=sm_90 -O3 "$ptx" -o "$work/ptx/$name.cubin" && cuobjdump --dump-sass "$work/ptx/$name.cubin" |
            grep -E 'Function|LDG|STG|LD\.|ST\.|BRA|ATOM|MEMBAR|FENCE|LOP3|IMAD|I2F|ISETP|IADD' | head -n 80
    done
    for bin in bandwidth pingpong; do
        [[ -x $work/$bin ]] || continue
        echo "################ nvcc $bin"
        cuobjdump --dump-sass "$work/$bin" |
            grep -E 'Function|LDG|STG|LD\.|ST\.|BRA|ATOM|MEMBAR|FENCE|ISETP' | head -n 120
    done
} >"$out/sass.txt" 2>&1
say ""
say "== SASS: $(grep -c 'STG.E.128' "$out/sass.txt") STG.E.128 and $(grep -c 'LDG.E.128' "$out/sass.txt") LDG.E.128 lines in sass.txt"

# 7. Merge, print the table last.
say ""
python3 benches/merge.py --iris "$work/iris.json" --iris-cached "$work/iris-cached.json" --cuda "$work/cuda.jsonl" --triton "$work/triton.jsonl" \
    --launch "$work/launch.txt" --compile benches/results/compile_here.txt --machine "$work/machine.txt" \
    --out "$out/bench.json" --table "$out/table.txt" >>"$log" 2>&1
cat "$out/table.txt"
