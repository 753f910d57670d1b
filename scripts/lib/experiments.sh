# What the experiment scripts (scripts/experiments/) share (sourced, not run):
# `patched_bundle`, which builds a bundle of HEAD with a patch applied, in a worktree of
# its own, and `experiment_run_begin`, which sets up a run on the GPU machine.

# ROOT PATCH BUNDLE TARGET...: HEAD with PATCH applied, in a temporary worktree, built
# with `scripts/device-bundle.sh --release TARGET...` (into ROOT/target/experiment, so the
# main build keeps its own) and gathered in ROOT/BUNDLE.
patched_bundle() {
    local root=$1 patch=$2 bundle=$3 tree
    shift 3
    tree=$(mktemp -d /tmp/iris-patched.XXXXXX)
    rm -rf "$tree"
    git -C "$root" worktree add -f --detach "$tree" HEAD >/dev/null
    git -C "$tree" apply "$patch"
    (cd "$tree" && CARGO_TARGET_DIR="$root/target/experiment" IRIS_BUNDLE_DIR="$bundle" \
        scripts/device-bundle.sh --release "$@")
    rm -rf "${root:?}/$bundle"
    mv "$tree/$bundle" "$root/"
    git -C "$root" worktree remove --force "$tree"
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
