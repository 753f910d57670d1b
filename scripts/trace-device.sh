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
#       test:processes_e2e bench:trace_events example:all_reduce
#   scripts/device-bundle.sh --append --release -p iris-host bin:iris-trace
# OUT, when set, gets the logs (trace-*.log), the all_reduce trace (trace/) and the table
# (trace.txt).
set -uo pipefail

# shellcheck source=lib/device-checks.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/device-checks.sh"
checks_begin "${BASH_SOURCE[0]}" trace "$@"

for t in trace trace_events; do
    exe="$bundle/test-iris-$t"
    [[ -x $exe ]] && repeat "test $t" "$runs" 120 "$exe" --test-threads=1
done
exe="$bundle/test-iris-processes_e2e"
[[ -x $exe ]] && repeat "test processes_e2e (traced)" 5 120 "$exe" --test-threads=1 a_traced_world

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
