#!/usr/bin/env bash
# Installs what building and testing iris needs on a fresh Debian 12 or Ubuntu 24.04 machine
# that has Rust (rustup) and nothing else, and says what it found or installs. Safe to run
# again: it installs only what is missing and changes nothing when everything is there.
#
# What a build needs (found by building in a minimal Debian 12 root: scripts/fresh-check.sh):
#   an LLVM 19, 20, 21 or 22 with its shared library (libLLVM.so.N) and its linker (ld.lld):
#       the kernel compiler inside the proc macro opens the library when it runs and links
#       code objects with ld.lld; nothing of LLVM is linked into anything
#   a C compiler (gcc)             what cargo links with
#   python3 python3-venv           the Python extension's tests (a venv under target/,
#                                  filled from PyPI by iris-python/scripts/ci.sh)
#
# Which LLVM, first found wins (the same order iris-device's build script uses):
#   1. $IRIS_LLVM_CONFIG, an llvm-config you name (only it is checked)
#   2. ROCm's, /opt/rocm/llvm, when it is 19 to 22 with a shared library
#   3. the newest installed /usr/lib/llvm-N (N = 22 down to 19) with libLLVM and ld.lld
#   4. otherwise the newest llvm-N + lld-N (22 down to 19) the apt archive has, installed:
#      Debian 12 has 22 in its security archive (in every installed Debian 12's sources)
#      and 19 in main; on Ubuntu 24.04, the newest of 19 to 22 its archive carries.
# LLVM 19 builds every target but gfx950 (AMD MI350/MI355), which needs LLVM 20, and its
# NVIDIA mma.sync GEMMs run 1.3x slower on an H200 than LLVM 22's (wgmma ones as fast;
# docs/performance.md).
#
# Running programs built with iris needs none of this: no LLVM at run time, and the GPU
# runtimes (CUDA driver, ROCm) are loaded when present.
set -euo pipefail

OLDEST=19
NEWEST=22
BUILD_PACKAGES=(gcc libc6-dev python3 python3-venv)

say() { echo "setup: $*"; }
die() {
    echo "setup: $*" >&2
    exit 1
}

# Why the LLVM of llvm-config $1 cannot be used (nothing printed: it can).
unusable() {
    local config=$1 version major libdir bindir targets
    [ -x "$config" ] || { echo "no $config"; return; }
    version=$("$config" --version 2>/dev/null) || { echo "$config does not run"; return; }
    major=${version%%.*}
    if ! [[ $major =~ ^[0-9]+$ ]] || ((major < OLDEST || major > NEWEST)); then
        echo "LLVM $version (iris needs $OLDEST to $NEWEST)"
        return
    fi
    targets=$("$config" --targets-built)
    for t in AMDGPU NVPTX; do
        [[ " $targets " == *" $t "* ]] || { echo "LLVM $version lacks the $t target"; return; }
    done
    libdir=$("$config" --libdir)
    # In its libdir, or (Debian/Ubuntu's libllvmN without llvm-N-dev) the system's folders.
    local found=0 dir
    for dir in "$libdir" "/usr/lib/$(uname -m)-linux-gnu" /usr/lib64 /usr/lib; do
        if compgen -G "$dir/libLLVM.so.$major*" >/dev/null || [ -f "$dir/libLLVM-$major.so" ]; then
            found=1
            break
        fi
    done
    [ "$found" = 1 ] || [ -f "$libdir/libLLVM.so" ] ||
        { echo "LLVM $version has no shared library in $libdir or the system's library folders"; return; }
    bindir=$("$config" --bindir)
    [ -x "$bindir/ld.lld" ] || command -v "ld.lld-$major" >/dev/null 2>&1 ||
        { echo "LLVM $version has no ld.lld (in $bindir or ld.lld-$major on PATH)"; return; }
}

# The llvm-config of the first usable LLVM in the order above, or nothing.
find_llvm() {
    if [ -n "${IRIS_LLVM_CONFIG:-}" ]; then
        [ -z "$(unusable "$IRIS_LLVM_CONFIG")" ] && echo "$IRIS_LLVM_CONFIG"
        return
    fi
    local c
    for c in /opt/rocm/llvm/bin/llvm-config $(seq -f "/usr/lib/llvm-%g/bin/llvm-config" "$NEWEST" -1 "$OLDEST"); do
        if [ -x "$c" ] && [ -z "$(unusable "$c")" ]; then
            echo "$c"
            return
        fi
    done
}

# What a usable LLVM builds, for the message.
describe() {
    local config=$1 major
    major=$("$config" --version)
    major=${major%%.*}
    if ((major >= 20)); then
        echo "LLVM $("$config" --version) ($config): every target (gfx90a, gfx942, gfx950, sm_80, sm_90, the CPU)"
    else
        echo "LLVM $("$config" --version) ($config): gfx90a, gfx942, sm_80, sm_90, the CPU; not gfx950 (needs LLVM 20); NVIDIA matrix kernels measured 1.5-2x slower than with LLVM 22 (before a fix not yet re-measured)"
    fi
}

have_build_tools() {
    command -v cc >/dev/null 2>&1 && command -v python3 >/dev/null 2>&1 &&
        python3 -c 'import ensurepip, venv' >/dev/null 2>&1
}

if ! command -v cargo >/dev/null 2>&1; then
    die "cargo not found. Install Rust first: https://rustup.rs (then run this again)."
fi

if [ -n "${IRIS_LLVM_CONFIG:-}" ] && [ -n "$(unusable "$IRIS_LLVM_CONFIG")" ]; then
    die "IRIS_LLVM_CONFIG=$IRIS_LLVM_CONFIG cannot be used: $(unusable "$IRIS_LLVM_CONFIG")"
fi

config=$(find_llvm)
if [ -n "$config" ] && have_build_tools; then
    say "$(describe "$config"); a C compiler and python3 with venv found; nothing to install"
    exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
    cat >&2 <<MSG
setup: this is not a Debian/Ubuntu system; install yourself:
  - an LLVM $OLDEST to $NEWEST with its shared library (libLLVM.so.N) and lld, and point the
    build at its llvm-config with IRIS_LLVM_CONFIG=/path/to/llvm-config if it is not in
    /usr/lib/llvm-N or /opt/rocm/llvm (found now: ${config:-none})
  - a C compiler (gcc), python3 with the venv module
MSG
    exit 1
fi

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || die "need root (or sudo) to install packages"
    SUDO=(sudo)
fi

# shellcheck disable=SC1091
. /etc/os-release
distro="${ID:-unknown} ${VERSION_ID:-}"

# Packages of a list that dpkg does not have installed.
missing() {
    local p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || echo "$p"
    done
}

say "updating the package lists ($distro)"
"${SUDO[@]}" apt-get update -q

todo=()
if [ -z "$config" ]; then
    for major in $(seq "$NEWEST" -1 "$OLDEST"); do
        if apt-cache show "llvm-$major" >/dev/null 2>&1 && apt-cache show "lld-$major" >/dev/null 2>&1; then
            say "no usable LLVM installed; installing LLVM $major from the archive (llvm-$major, lld-$major)"
            todo+=("llvm-$major" "lld-$major")
            break
        fi
    done
    if [ "${#todo[@]}" -eq 0 ]; then
        codename=${VERSION_CODENAME:-${UBUNTU_CODENAME:-}}
        cat >&2 <<MSG
setup: this distribution's archive ($distro) has no LLVM $OLDEST to $NEWEST (llvm-N with lld-N).
Add the LLVM project's apt repository for your release, then run this script again:

    curl -fsSL https://apt.llvm.org/llvm-snapshot.gpg.key | sudo tee /etc/apt/trusted.gpg.d/apt.llvm.org.asc
    echo "deb http://apt.llvm.org/${codename:-<codename>}/ llvm-toolchain-${codename:-<codename>}-$NEWEST main" | sudo tee /etc/apt/sources.list.d/llvm-$NEWEST.list

(apt.llvm.org's llvm.sh script, with the argument $NEWEST, does the same.) Or install an LLVM
$OLDEST to $NEWEST another way and set IRIS_LLVM_CONFIG to its llvm-config.
MSG
        exit 1
    fi
fi
mapfile -t -O "${#todo[@]}" todo < <(missing "${BUILD_PACKAGES[@]}")
if [ "${#todo[@]}" -gt 0 ]; then
    say "installing ${todo[*]}"
    DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -q --no-install-recommends "${todo[@]}"
fi

config=$(find_llvm)
[ -n "$config" ] || die "installed, but no usable LLVM was found (see the list at the top of this script)"
have_build_tools || die "installed, but the C compiler or python3's venv is still not usable"
say "$(describe "$config") ready; gcc, python3 and venv ready"
