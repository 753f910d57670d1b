#!/usr/bin/env bash
# The tracing checks on the GPU machine, in one call: the traced-world tests (launches,
# calls, and kernels' own trace_event events on their blocks' rows inside their launches)
# run many times in a row, then what an event costs (traced and untraced) and a trace of
# examples/all_reduce at 4 ranks with its summary. Prints a table last.
#
# Usage (GPU machine, repository root): bash scripts/trace-device.sh [-n RUNS]
#
# Needs in .device-bundle/, made here with
#   scripts/device-bundle.sh --release --features trace-events test:trace test:trace_events \
#       bench:trace_events example:all_reduce
#   scripts/device-bundle.sh --append --release -p iris-host bin:iris-trace
# OUT, when set, gets the logs (trace-*.log), the all_reduce trace (trace/) and the table
# (trace.txt).
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bundle="$root/${IRIS_BUNDLE_DIR:-.device-bundle}"
runs=20
while (($#)); do
    case "$1" in
    -n) runs=$2; shift ;;
    -h | --help) sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "trace-device: unknown argument '$1'" >&2; exit 2 ;;
    esac
    shift
done
logdir=${OUT:-$(mktemp -d)}
mkdir -p "$logdir"
table="$logdir/trace.txt"
: >"$table"
export IRIS_BACKEND=cuda IRIS_TEST_BACKENDS=cuda IRIS_REQUIRE_GPU=1 RUST_BACKTRACE=1
nvidia-smi -L 2>/dev/null | head -n 2

# NAME RUNS TIMEOUT CMD...: CMD RUNS times in a row (stopping at the first failure); one
# line in the table: passed/runs, the slowest run, the first failure's first error line.
repeat() {
    local name=$1 n=$2 limit=$3
    shift 3
    local pass=0 slowest=0 first=""
    for ((i = 1; i <= n; i++)); do
        local log="$logdir/trace-${name//[^A-Za-z0-9_]/_}-$i.log" t0 t1 ms
        t0=$(date +%s%N)
        timeout "$limit" "$@" >"$log" 2>&1
        local rc=$?
        t1=$(date +%s%N)
        ms=$(((t1 - t0) / 1000000))
        ((ms > slowest)) && slowest=$ms
        if ((rc == 0)); then
            pass=$((pass + 1))
        else
            first="run $i rc=$rc: $(grep -m1 -E 'panicked|error|Error' "$log" | cut -c1-300)"
            break
        fi
    done
    printf '%-44s %3d/%-3d  slowest %6d ms  %s\n' "$name" "$pass" "$n" "$slowest" "$first" | tee -a "$table"
}

for t in trace trace_events; do
    exe="$bundle/test-iris-$t"
    [[ -x $exe ]] && repeat "test $t" "$runs" 120 "$exe" --test-threads=1
done

bench="$bundle/bench-iris-trace_events"
if [[ -x $bench ]]; then
    "$bench" --bench --blocks 132 --threads 256 --rounds 64 --iters 20 >"$logdir/trace-bench.log" 2>&1
    tail -n 3 "$logdir/trace-bench.log" | tee -a "$table"
fi

example="$bundle/example-iris-all_reduce"
summary="$bundle/bin-iris-host-iris-trace"
if [[ -x $example ]]; then
    rm -rf "$logdir/trace"
    IRIS_TRACE="$logdir/trace" "$example" --ranks 4 >"$logdir/trace-all_reduce.log" 2>&1
    echo "all_reduce at 4 ranks, traced: rc=$? $(du -h "$logdir/trace/trace.json" 2>/dev/null | cut -f1)" | tee -a "$table"
    [[ -x $summary ]] && "$summary" summary "$logdir/trace/trace.json" | tee -a "$table"
fi

echo
echo "== trace checks =="
cat "$table"
