# What the experiment scripts share (sourced, not run): `patched_bundle`, which builds a
# bundle of HEAD with a patch applied, in a worktree of its own.

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
