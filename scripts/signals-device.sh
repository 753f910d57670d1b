#!/usr/bin/env bash
# The checks of user waits on the GPU machine, in one call: the signal operations, host
# calls that never wait for a peer's kernel, a failed world that ends, each run many times
# in a row (a flaky result is a failed result), then the latency of put_signal /
# signal_wait_until against hand-written flags and nvcc's reference, and what a local
# buffer costs to make and drop. Prints a table last.
#
# Usage (GPU machine, repository root): bash scripts/signals-device.sh [-n RUNS]
#
# Needs in .device-bundle/ (scripts/device-bundle.sh, here):
#   test:host_calls test:world_abort test:message_passing (test:ccl test:graphs if there),
#   and (--release) example:message_passing bench:alloc_cost (example:gemm if there: the
#   start-up cost of preloading every kernel unit; bench:waiters if there: a GEMM beside
#   waiting blocks)
# Compiles benches/reference/pingpong.cu with nvcc when nvcc is there. OUT, when set, gets
# the logs (signals-*.log) and the table (signals.txt).
set -uo pipefail

# shellcheck source=lib/device-checks.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/device-checks.sh"
checks_begin "${BASH_SOURCE[0]}" signals "$@"

t="$bundle/test-iris"
repeat "host_calls (2 ranks)" "$runs" 120 "$t-host_calls" --test-threads=1 --nocapture
grep -h -A20 'host APIs called' "$logdir"/signals-host_calls*-1.log 2>/dev/null | head -n 20
repeat "message_passing rounds 2,4,8,16 ranks" "$runs" 120 env IRIS_TEST_RANKS=2,4,8,16 \
    "$t-message_passing" --exact rounds_that_allocate_and_free_while_peers_wait_neither_hang_nor_lose --test-threads=1 --nocapture
repeat "message_passing signalled 10k round trips" 5 120 \
    "$t-message_passing" --exact ten_thousand_signalled_round_trips_lose_and_reorder_nothing --test-threads=1 --nocapture
repeat "world_abort (panic; spinning kernel)" 5 120 "$t-world_abort" --test-threads=1 --nocapture
grep -h -E 'panic to|forever-spinning' "$logdir"/signals-world_abort*-1.log 2>/dev/null
[[ -x $bundle/test-iris-ccl ]] && repeat "ccl whole binary (1,2,4,8 ranks)" "$runs" 300 "$bundle/test-iris-ccl" --test-threads=1
[[ -x $bundle/test-iris-graphs ]] && repeat "graphs" 1 120 "$bundle/test-iris-graphs" --test-threads=1
grep -h 'world started' "$logdir"/signals-host_calls*-1.log 2>/dev/null

echo "== ping-pong latency (one round trip, one thread a side, ranks as threads of one process)"
# A warm-up run (clocks, JIT cache), then three measured runs.
timeout 100 "$bundle/example-iris-message_passing" --elems 1 --rounds 5000 >/dev/null 2>&1
for run in 1 2 3; do
    timeout 200 "$bundle/example-iris-message_passing" --elems 1,16,256 --rounds 20000 2>&1 |
        tee -a "$logdir/signals-pingpong.log" | tail -n 7 | sed "s/^/run $run: /"
done
if command -v nvcc >/dev/null; then
    nvcc -O3 -arch=sm_90 -o /tmp/pingpong "$root/benches/reference/pingpong.cu" 2>&1 | tail -n 3
    timeout 60 /tmp/pingpong 2>&1 | grep '^{' | tee "$logdir/signals-pingpong-cuda.log"
fi
echo "== make and drop a local buffer"
timeout 200 "$bundle/bench-iris-alloc_cost" --bench --iters 500 2>&1 | tee "$logdir/signals-alloc.log" | tail -n 4
if [[ -x $bundle/bench-iris-waiters ]]; then
    echo "== a GEMM beside blocks waiting for a signal (iris's wait; one reading the abort flag at every poll)"
    timeout 200 "$bundle/bench-iris-waiters" --bench --iters 5 2>&1 | tee "$logdir/signals-waiters.log" |
        tail -n 4 | tee -a "$table"
fi
if [[ -x $bundle/example-iris-gemm ]]; then
    echo "== start-up cost of preloading every kernel unit (gemm example, one kernel, JIT cache off)"
    for preload in 1 0; do
        t0=$(date +%s%N)
        CUDA_CACHE_DISABLE=1 IRIS_PRELOAD=$preload timeout 300 "$bundle/example-iris-gemm" \
            --kernel tiles_128 --size 512 --iters 1 >"$logdir/signals-preload-$preload.log" 2>&1
        rc=$?
        t1=$(date +%s%N)
        printf 'IRIS_PRELOAD=%s: whole run %d ms (rc %d)\n' "$preload" $(((t1 - t0) / 1000000)) "$rc" | tee -a "$table"
    done
fi
echo "== summary"
cat "$table"
