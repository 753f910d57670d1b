#!/usr/bin/env bash
# Build test binaries, examples and benches of the workspace here and gather them, stripped,
# in .device-bundle/ at the repository root with a MANIFEST, ready to be carried to the GPU
# machine and run there by scripts/device-run.sh.
#
# Usage: scripts/device-bundle.sh [--release|--dev] [--append] [--features LIST] [-p PACKAGE] TARGET...
#
#   TARGET        test:NAME     an integration test (PACKAGE/tests/NAME.rs)
#                 lib           the unit tests of PACKAGE's library
#                 example:NAME  an example
#                 bin:NAME      a program (not run by device-run.sh; bin:iris-run of
#                               iris-host is the launcher the process tests start)
#                 bench:NAME    a bench (run there with --bench)
#   -p PACKAGE    the package of the targets that follow (default: the root package, iris)
#   --release     build with the release profile (the default is dev; benches always use
#                 the bench profile)
#   --append      keep what .device-bundle/ already holds
#   --features L  cargo features for the targets that follow (e.g. trace-events)
#
# Example: scripts/device-bundle.sh --release -p iris-driver test:cuda_backend lib
#
# IRIS_BUNDLE_DIR names another bundle folder (default: .device-bundle).
# Cargo's own environment applies (CARGO_TARGET_DIR, CARGO_BUILD_JOBS, ...). What travels to
# the GPU machine (this bundle and the working tree together) must stay under 64 MiB.
set -euo pipefail

trap 'echo "device-bundle: failed (line $LINENO)" >&2' ERR

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bundle="$root/${IRIS_BUNDLE_DIR:-.device-bundle}"
limit_bytes=$((64 * 1024 * 1024))

die() {
    echo "device-bundle: $*" >&2
    exit 1
}

command -v jq >/dev/null || die "needs jq to read cargo's JSON messages"
command -v strip >/dev/null || die "needs strip (binutils)"

profile=dev
append=0
package=iris
features=""
targets=()
while (($#)); do
    case "$1" in
    --release) profile=release ;;
    --dev) profile=dev ;;
    --append) append=1 ;;
    --features)
        (($# >= 2)) || die "--features needs a list"
        features=$2
        shift
        ;;
    -p | --package)
        (($# >= 2)) || die "-p needs a package name"
        package=$2
        shift
        ;;
    -h | --help)
        sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
        exit 0
        ;;
    test:* | example:* | bench:* | bin:* | lib) targets+=("$package|$features|$1") ;;
    *) die "unknown argument '$1' (see --help)" ;;
    esac
    shift
done
((${#targets[@]})) || die "no targets given (see --help)"

if ((append == 0)); then
    rm -rf "$bundle"
fi
mkdir -p "$bundle"
manifest="$bundle/MANIFEST"
if [[ ! -f $manifest ]]; then
    {
        echo "# kind<TAB>name<TAB>package<TAB>file<TAB>arguments"
        echo "# built $(date -u +%Y-%m-%dT%H:%M:%SZ) from $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$root" diff --quiet HEAD 2>/dev/null || echo '+changes'), profile $profile"
    } >"$manifest"
fi

profile_flag=()
[[ $profile == release ]] && profile_flag=(--release)

# Prints the executable that cargo reports for the target, reading cargo's JSON on stdin.
pick_executable() {
    local kind=$1 name=$2
    jq -r --arg kind "$kind" --arg name "$name" '
        select(.reason == "compiler-artifact" and .executable != null)
        | select(if $kind == "lib"
                 then (any(.target.kind[]; . == "lib" or . == "rlib") and .profile.test)
                 else (.target.name == $name and any(.target.kind[]; . == $kind))
                 end)
        | .executable'
}

for entry in "${targets[@]}"; do
    pkg=${entry%%|*}
    rest=${entry#*|}
    feats=${rest%%|*}
    spec=${rest#*|}
    feature_flag=()
    [[ -n $feats ]] && feature_flag=(--features "$feats")
    kind=${spec%%:*}
    name=${spec#*:}
    [[ $spec == lib ]] && name=lib
    case "$kind" in
    test)
        cmd=(cargo test --no-run "${profile_flag[@]}" -p "$pkg" --test "$name" "${feature_flag[@]}")
        args="--test-threads=1 --nocapture"
        ;;
    lib)
        cmd=(cargo test --no-run "${profile_flag[@]}" -p "$pkg" --lib "${feature_flag[@]}")
        args="--test-threads=1"
        ;;
    example)
        cmd=(cargo build "${profile_flag[@]}" -p "$pkg" --example "$name" "${feature_flag[@]}")
        args=""
        ;;
    bin)
        cmd=(cargo build "${profile_flag[@]}" -p "$pkg" --bin "$name" "${feature_flag[@]}")
        args=""
        ;;
    bench)
        cmd=(cargo bench --no-run -p "$pkg" --bench "$name" "${feature_flag[@]}")
        args="--bench"
        ;;
    esac
    echo "device-bundle: ${cmd[*]}" >&2
    exe=$(cd "$root" && "${cmd[@]}" --message-format=json-render-diagnostics | pick_executable "$kind" "$name" | tail -n 1)
    [[ -n $exe && -f $exe ]] || die "cargo reported no executable for $kind $name of $pkg"
    file="$kind-$pkg-$name"
    cp "$exe" "$bundle/$file"
    strip --strip-debug "$bundle/$file"
    printf '%s\t%s\t%s\t%s\t%s\n' "$kind" "$name" "$pkg" "$file" "$args" >>"$manifest"
    echo "device-bundle: $file ($(du -h "$bundle/$file" | cut -f1))" >&2
done

# What travels: the bundle plus the working tree (tracked and untracked files git keeps).
bundle_bytes=$(du -sb "$bundle" | cut -f1)
if ((bundle_bytes > limit_bytes / 2)); then
    echo "device-bundle: over 32 MiB; stripping all symbols" >&2
    for f in "$bundle"/*; do
        [[ $f == "$manifest" ]] || strip --strip-all "$f"
    done
    bundle_bytes=$(du -sb "$bundle" | cut -f1)
fi
# (Files deleted from the working tree but still in the index are skipped.)
tree_bytes=$(cd "$root" && git ls-files -z --cached --others --exclude-standard |
    { xargs -0 -r stat -c %s 2>/dev/null || true; } | awk '{ s += $1 } END { print s + 0 }')
total=$((bundle_bytes + tree_bytes))
printf 'device-bundle: bundle %d KiB + working tree %d KiB = %d KiB (limit %d KiB)\n' \
    $((bundle_bytes / 1024)) $((tree_bytes / 1024)) $((total / 1024)) $((limit_bytes / 1024)) >&2
((total < limit_bytes)) || die "too large to travel: bundle fewer targets"
cat "$manifest"
