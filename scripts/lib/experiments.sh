# What the experiment scripts (scripts/experiments/) share (sourced, not run):
# `experiment_bundles`, which builds HEAD's bench and a bundle of HEAD with a patch
# applied, `experiment_run_begin`, which sets up a run on the GPU machine, and
# `experiment_summary`, one line from a bench log, and `experiment_main`, the scripts'
# `build|run` dispatch.

# ROOT PATCH BUNDLE TARGET...: HEAD with PATCH applied, in a temporary worktree, built
# with `scripts/device-bundle.sh --release TARGET...` (into ROOT/target/experiment, so the
# main build keeps its own) and gathered in ROOT/BUNDLE.
patched_bundle() {
    local root=$1 patch=$2 bundle=$3 tree
    shift 3
    tree=$(mktemp -u /tmp/iris-patched.XXXXXX)
    git -C "$root" worktree add -f --detach "$tree" HEAD >/dev/null
    git -C "$tree" apply "$patch"
    (cd "$tree" && CARGO_TARGET_DIR="$root/target/experiment" IRIS_BUNDLE_DIR="$bundle" \
        scripts/device-bundle.sh --release "$@")
    rm -rf "${root:?}/$bundle"
    mv "$tree/$bundle" "$root/"
    git -C "$root" worktree remove --force "$tree"
}

# PATCH BUNDLE TARGET...: HEAD's bench into .device-bundle-h0 (the reference), and HEAD
# with PATCH applied into BUNDLE (`patched_bundle`); needs `root`.
experiment_bundles() {
    local patch=$1 bundle=$2
    shift 2
    IRIS_BUNDLE_DIR=.device-bundle-h0 "$root/scripts/device-bundle.sh" --release bench:ccl_ops
    patched_bundle "$root" "$patch" "$bundle" "$@"
    echo "built .device-bundle-h0 (HEAD) and $bundle (HEAD + $(basename "$patch"))"
}

# NAME: a run on the GPU machine, or here with IRIS_BACKEND=cpu (as the GPU check scripts:
# scripts/lib/device-checks.sh's `repeat`, a failing run a table line, not an exit): sets
# `logdir` (OUT, or /tmp/NAME), `table` (emptied) and `log_prefix`, prints the GPU.
experiment_run_begin() {
    local name=$1
    set +e
    # shellcheck source=device-checks.sh
    source "$root/scripts/lib/device-checks.sh"
    export IRIS_BACKEND=${IRIS_BACKEND:-cuda} RUST_BACKTRACE=1
    export IRIS_TEST_BACKENDS=$IRIS_BACKEND
    [[ $IRIS_BACKEND == cpu ]] || export IRIS_REQUIRE_GPU=1
    logdir=${OUT:-/tmp/$name} table="${OUT:-/tmp/$name}/$name.txt" log_prefix=$name
    mkdir -p "$logdir"
    : >"$table"
    nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null
}

# LOG: one line from a bench log, `CASE ms ratio` for the rows the experiments compare
# (the reduce-scatter and all-reduce GEMMs into owners with Bᵀ, and the GEMM alone).
experiment_summary() {
    local log=$1
    awk '
        /\(warpgroup_256, Bᵀ(, into owners)?\)/ && /^matmul_/ || /the GEMM alone \(warpgroup_256/ {
            split($0, half, "]");
            n = split(half[2], f, " ");
            ms = f[1]; ratio = "";
            for (i = 1; i <= n; i++) if (f[i] ~ /^[0-9.]+x$/) { ratio = f[i]; break }
            name = ($0 ~ /matmul_reduce_scatter/) ? "RS" : ($0 ~ /matmul_all_reduce/) ? "AR" : "GEMM";
            printf "%s %s %s  ", name, ms, ratio
        }
        END { print "" }' "$log"
}

# ARGS: the experiment script's command line: `build` or `run` (the script's functions of
# those names).
experiment_main() {
    case ${1:-} in
        build) build ;;
        run) run ;;
        *)
            echo "usage: $0 build|run" >&2
            exit 2
            ;;
    esac
}
