#!/usr/bin/env bash
# Runs the collectives' test suite (tests/ccl.rs) many times at chosen world sizes and
# prints a table: each run's result and time, the longest device-barrier wait any rank saw
# (per backend), and the first failure's message; then the counts. A flaky result is a
# failed result: use it to prove a change to the barrier or the launch shapes.
#
# Usage: scripts/ccl-stress.sh [-n RUNS] [-w WORLDS] [--bin PATH] [-- TEST-ARGS...]
#
#   -n RUNS     how many times (default 10)
#   -w WORLDS   comma-separated world sizes, as IRIS_TEST_WORLDS (default 8)
#   --bin PATH  the ccl test binary (default: built here with `cargo test --release`;
#               on the GPU machine: .device-bundle/test-iris-ccl from scripts/device-bundle.sh)
#   TEST-ARGS   passed to the test binary (default: --test-threads=1)
#
# Environment: IRIS_TEST_BACKENDS (say `cuda`) keeps only those backends; IRIS_BACKEND etc.
# pass through to the tests; OUT, when set, gets the logs
# (ccl-stress-RUN.log) and the table (ccl-stress.txt).
#
# Example (GPU machine): bash scripts/ccl-stress.sh -n 30 -w 8 --bin .device-bundle/test-iris-ccl
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
runs=10
worlds=8
bin=""
test_args=(--test-threads=1)
while (($#)); do
    case "$1" in
    -n) runs=$2; shift ;;
    -w) worlds=$2; shift ;;
    --bin) bin=$2; shift ;;
    --) shift; test_args=("$@"); break ;;
    -h | --help) sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "ccl-stress: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done

if [[ -z $bin ]]; then
    command -v jq >/dev/null || { echo "ccl-stress: needs jq, or --bin" >&2; exit 2; }
    bin=$(cd "$root" && cargo test --release --no-run --test ccl --message-format=json-render-diagnostics |
        jq -r 'select(.reason == "compiler-artifact" and .executable != null and .target.name == "ccl") | .executable' | tail -n 1)
fi
[[ -x $bin ]] || { echo "ccl-stress: no test binary at '$bin'" >&2; exit 2; }

logdir=${OUT:-$(mktemp -d)}
mkdir -p "$logdir"

# The longest "longest barrier wait D" over the lines of one backend, in milliseconds.
longest_ms() {
    local backend=$1 log=$2
    grep -o ": $backend at [0-9]* ranks in [^,]*, longest barrier wait [0-9.]*[a-zµ]*" "$log" |
        sed 's/.*longest barrier wait //' |
        awk '
            { v = $0; unit = v; sub(/^[0-9.]+/, "", unit); sub(/[a-zµ]+$/, "", v)
              ms = v * (unit == "s" ? 1000 : unit == "ms" ? 1 : unit == "µs" || unit == "us" ? 0.001 : 0.000001)
              if (ms > max) max = ms }
            END { if (NR) printf "%.3f", max; else printf "-" }'
}

rows=()
passes=0
failures=0
slowest_gpu=-
slowest_cpu=-
for ((run = 1; run <= runs; run++)); do
    log="$logdir/ccl-stress-$run.log"
    start=$(date +%s.%N)
    IRIS_TEST_WORLDS=$worlds timeout --kill-after=10 600 "$bin" "${test_args[@]}" --nocapture >"$log" 2>&1 </dev/null
    rc=$?
    secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    if ((rc == 0)); then
        verdict=pass
        passes=$((passes + 1))
    else
        verdict=FAIL
        failures=$((failures + 1))
    fi
    gpu=$(longest_ms cuda "$log")
    [[ $gpu == - ]] && gpu=$(longest_ms hip "$log")
    cpu=$(longest_ms cpu "$log")
    [[ $gpu != - ]] && slowest_gpu=$(awk -v a="$slowest_gpu" -v b="$gpu" 'BEGIN { print (a == "-" || b + 0 > a + 0 ? b : a) }')
    [[ $cpu != - ]] && slowest_cpu=$(awk -v a="$slowest_cpu" -v b="$cpu" 'BEGIN { print (a == "-" || b + 0 > a + 0 ? b : a) }')
    why=""
    [[ $verdict == FAIL ]] && why=$(grep -m1 -E "panicked at|rank [0-9]+ (failed|stopped)|did not arrive|timed out" "$log" | cut -c1-160)
    rows+=("$(printf '%4d  %-5s %7ss  %12s  %12s  %s' "$run" "$verdict" "$secs" "$gpu" "$cpu" "$why")")
    echo "ccl-stress: run $run/$runs: $verdict (${secs}s)" >&2
done

table() {
    echo "== tests/ccl.rs x $runs at IRIS_TEST_WORLDS=$worlds (${IRIS_BACKEND:-backends found}); logs in $logdir"
    printf '%4s  %-5s %8s  %12s  %12s  %s\n' run result time "gpu wait ms" "cpu wait ms" "first failure"
    printf '%s\n' "${rows[@]}"
    echo "passed $passes, failed $failures; longest barrier wait: gpu ${slowest_gpu} ms, cpu ${slowest_cpu} ms"
}
table | tee "$logdir/ccl-stress.txt"
((failures == 0))
