# What the GPU machine's check scripts share (sourced, not run): `checks_begin`, which
# reads their arguments and sets up their logs, and `repeat`, which runs a command many
# times in a row (a flaky result is a failed result) and writes one line of the table.

# SCRIPT NAME ARGS...: reads `-n RUNS` (default 20) and `-h` (prints SCRIPT's header);
# sets `root`, `bundle`, `runs`, `logdir` (OUT, or a new folder), `table`
# (`$logdir/NAME.txt`, emptied) and `log_prefix`; asks the tests for the CUDA GPU.
checks_begin() {
    local script=$1 name=$2
    shift 2
    root=$(cd "$(dirname "$script")/.." && pwd)
    bundle="$root/${IRIS_BUNDLE_DIR:-.device-bundle}"
    runs=20
    while (($#)); do
        case "$1" in
        -n) runs=$2; shift ;;
        -h | --help) sed -n '2,/^set -uo/p' "$script" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "$name-device: unknown argument '$1'" >&2; exit 2 ;;
        esac
        shift
    done
    logdir=${OUT:-$(mktemp -d)}
    mkdir -p "$logdir"
    table="$logdir/$name.txt"
    : >"$table"
    log_prefix=$name
    export IRIS_BACKEND=cuda IRIS_TEST_BACKENDS=cuda IRIS_REQUIRE_GPU=1 RUST_BACKTRACE=1
    nvidia-smi -L 2>/dev/null | head -n 2
}

# NAME RUNS TIMEOUT CMD...: CMD RUNS times in a row (stopping at the first failure); one
# line in the table: passed/runs, the slowest run, the first failure's first error line.
repeat() {
    local name=$1 n=$2 limit=$3
    shift 3
    local pass=0 slowest=0 first=""
    for ((i = 1; i <= n; i++)); do
        local log="$logdir/$log_prefix-${name//[^A-Za-z0-9_]/_}-$i.log" t0 t1 ms
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
