#!/usr/bin/env bash
# The fused GEMMs' ratios to the best unfused way, run after run, both ways of timing: the
# `ccl_ops` bench's GEMM part (`--only gemm`, 4 ranks as threads, by default 1024 rows a
# rank and 4096 x 4096: each rank's GEMM 4096 x 4096 x 4096, Bᵀ) RUNS times timed call by call (each after a host barrier) and RUNS times
# queued (`--queued`: ten calls back to back a sample), a table of one line a run last:
# the all-gather GEMM from snapshots (ms, ratio, and its bound: the GEMM alone over the
# unfused way, the ratio of a fused call that cost nothing over its GEMM), the
# reduce-scatter and all-reduce GEMMs pulled by their owners (ms and ratio), the GEMM alone
# and between two barriers, the pulled GEMM alone.
#
# Usage (GPU machine, repository root; the bundle made here with
#   scripts/device-bundle.sh --release bench:ccl_ops
# and carried):
#   [GEMM=MxNxK] bash scripts/fused-ratios.sh [-n RUNS] [-- MORE BENCH ARGUMENTS]
set -uo pipefail

runs=5
if [[ ${1:-} == -n ]]; then
    runs=$2
    shift 2
fi
[[ ${1:-} == -- ]] && shift
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bench="$root/${IRIS_BUNDLE_DIR:-.device-bundle}/bench-iris-ccl_ops"
[[ -x $bench ]] || { echo "fused-ratios: no ccl_ops bench at $bench" >&2; exit 2; }
# The rows a rank and n, k (MxNxK; the reductions' M is the world's rows).
gemm=${GEMM:-1024x4096x4096}
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)

# One bench run's line of the table, from its output on standard input.
summarize() {
    awk -v mode="$1" '
        # The row whose case starts with `op` and holds `form`.
        function row(op, form) { for (i = 1; i <= n; i++) if (index(line[i], op) == 1 && index(line[i], form)) return line[i]; return "" }
        function ms(op, form,    r) { r = row(op, form); if (r == "") return "-"; split(r, f, "]"); split(f[2], v, " "); return v[1] }
        function ratio(op, form,    r) { r = row(op, form); if (match(r, /[0-9.]+x of/)) return substr(r, RSTART, RLENGTH - 3); return "-" }
        # The ms of the way a row is compared with (the last parenthesis: "(0.894 ms)").
        function against(op, form,    r) { r = row(op, form); if (match(r, /\([0-9.]+ ms\)$/)) return substr(r, RSTART + 1, RLENGTH - 5); return "" }
        # The all-gather GEMM'"'"'s best ratio: the GEMM alone over the unfused way.
        function bound(    g, u) { g = ms("  the GEMM alone", "Bᵀ"); u = against("all_gather_matmul", "Bᵀ, from snapshots"); if (g == "-" || u == "") return "-"; return sprintf("%.2fx", g / u) }
        { line[++n] = $0 }
        END {
            printf "%-9s %7s %6s %6s %7s %6s %7s %6s %7s %7s %7s %7s\n", mode,
                ms("all_gather_matmul", "Bᵀ, from snapshots"), ratio("all_gather_matmul", "Bᵀ, from snapshots"), bound(),
                ms("matmul_reduce_scatter", "Bᵀ, pulled"), ratio("matmul_reduce_scatter", "Bᵀ, pulled"),
                ms("matmul_all_reduce", "Bᵀ, pulled"), ratio("matmul_all_reduce", "Bᵀ, pulled"),
                ms("  the GEMM alone", "Bᵀ"), ms("  the GEMM between two device barriers", "Bᵀ"),
                ms("  the pulled GEMM alone, into this rank", ""), ms("  the pulled GEMM alone, into every rank", "")
        }'
}

table=$(mktemp)
for mode in per-call queued; do
    flag=()
    [[ $mode == queued ]] && flag=(--queued)
    for ((r = 1; r <= runs; r++)); do
        out=$(timeout 300 "$bench" --bench --only gemm --gemm "$gemm" --iters 10 "${flag[@]}" "$@" 2>&1)
        rc=$?
        if ((rc != 0)); then
            echo "$mode    run $r failed (exit $rc):" >>"$table"
            tail -3 <<<"$out" >>"$table"
            continue
        fi
        summarize "$mode" <<<"$out" >>"$table"
    done
done
echo "fused-ratios: ${gpu:-no GPU}, 4 ranks as threads, --gemm $gemm, Bᵀ, ms (ratio to the best unfused way)"
printf "%-9s %14s %6s %14s %14s %7s %7s %15s\n" timing "AG snapshots" bound "RS pulled" "AR pulled" GEMM framed "pulled 1 / 4"
cat "$table"
rm -f "$table"
