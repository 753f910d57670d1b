#!/usr/bin/env bash
# Installs what building and testing iris needs on a fresh Debian 12 or Ubuntu 24.04 machine
# that has Rust (rustup) and nothing else, and says what it installs. Safe to run again: it
# installs only what is missing and changes nothing when everything is there.
#
# What a build needs (found by building in a minimal Debian 12 root: scripts/fresh-check.sh):
#   llvm-22-dev, libpolly-22-dev   LLVM 22 with its static libraries: the kernel compiler
#                                  inside the proc macro links them
#   zlib1g-dev libzstd-dev libffi-dev libxml2-dev
#                                  the system libraries LLVM's static libraries link against
#   liblld-22-dev                  lld's static libraries: the compiler links AMD code
#                                  objects and CPU shared objects with lld in its own process
#   lld-22                         the `ld.lld` command, used when IRIS_LLD asks for it
#   g++                            the C++ standard library (libstdc++) LLVM links against,
#                                  and the C compiler cargo links with
#   python3 python3-venv           the Python extension's tests (a venv under target/,
#                                  filled from PyPI by iris-python/scripts/ci.sh)
#
# Running programs built with iris needs none of this: no LLVM at run time, and the GPU
# runtimes (CUDA driver, ROCm) are loaded when present.
#
# Debian 12 carries LLVM 22 in its security archive (bookworm-security), which every
# installed Debian 12 has in its apt sources; a root made by debootstrap has only the main
# archive, and this script adds the security suite when llvm-22-dev is not found otherwise.
# Ubuntu 24.04's archive has no LLVM 22: the script stops and prints the two commands that
# add the LLVM project's own apt repository (apt.llvm.org), which it does not run itself.
#
# Elsewhere: install LLVM 22 and lld 22, each with its static libraries, yourself, and point
# the build at it with LLVM_SYS_221_PREFIX=/path/to/llvm-22 (the folder holding bin/llvm-config),
# and IRIS_LLD=/path/to/ld.lld if ld.lld is not beside it. ROCm's own LLVM works if it is
# version 22.
set -euo pipefail

LLVM_PACKAGES=(llvm-22-dev libpolly-22-dev liblld-22-dev lld-22 zlib1g-dev libzstd-dev libffi-dev libxml2-dev)
BUILD_PACKAGES=(g++ python3 python3-venv)
PREFIX="${LLVM_SYS_221_PREFIX:-/usr/lib/llvm-22}"

say() { echo "setup: $*"; }
die() {
    echo "setup: $*" >&2
    exit 1
}

have_llvm() {
    [ -x "$PREFIX/bin/llvm-config" ] && [ -x "$PREFIX/bin/ld.lld" ] &&
        "$PREFIX/bin/llvm-config" --version | grep -q '^22\.' &&
        [ -f "$PREFIX/lib/libLLVMCore.a" ] && [ -f "$PREFIX/lib/liblldELF.a" ] &&
        [ -f "$PREFIX/include/lld/Common/Driver.h" ]
}

# The build tools a newcomer may lack even with LLVM present (g++'s libstdc++, the venv).
have_build_tools() {
    command -v c++ >/dev/null 2>&1 && command -v python3 >/dev/null 2>&1 &&
        python3 -c 'import ensurepip, venv' >/dev/null 2>&1 &&
        echo 'int main(){}' | c++ -x c++ - -lstdc++ -o /dev/null >/dev/null 2>&1
}

if ! command -v cargo >/dev/null 2>&1; then
    die "cargo not found. Install Rust first: https://rustup.rs (then run this again)."
fi

if have_llvm && have_build_tools; then
    say "LLVM $("$PREFIX/bin/llvm-config" --version), lld (library and command), a C++ toolchain and python3 with venv found; nothing to install"
    exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
    cat >&2 <<MSG
setup: this is not a Debian/Ubuntu system; install yourself:
  - LLVM 22 and lld 22, each with its static libraries, then build with
    LLVM_SYS_221_PREFIX=/path/to/llvm-22 (found now: $(have_llvm && echo yes || echo no))
  - a C++ compiler with its standard library (g++), python3 with the venv module
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

if ! apt-cache show llvm-22-dev >/dev/null 2>&1; then
    if [ "${ID:-}" = debian ] && [ "${VERSION_CODENAME:-}" = bookworm ]; then
        list=/etc/apt/sources.list.d/debian-security-bookworm.list
        say "llvm-22-dev is in Debian 12's security archive, missing from the apt sources: adding $list"
        echo "deb http://deb.debian.org/debian-security bookworm-security main" |
            "${SUDO[@]}" tee "$list" >/dev/null
        "${SUDO[@]}" apt-get update -q
    fi
fi
if ! apt-cache show llvm-22-dev >/dev/null 2>&1; then
    codename=${VERSION_CODENAME:-$(. /etc/os-release && echo "${UBUNTU_CODENAME:-}")}
    cat >&2 <<MSG
setup: this distribution's archive ($distro) has no llvm-22-dev.
Add the LLVM project's apt repository for your release, then run this script again:

    curl -fsSL https://apt.llvm.org/llvm-snapshot.gpg.key | sudo tee /etc/apt/trusted.gpg.d/apt.llvm.org.asc
    echo "deb http://apt.llvm.org/${codename:-<codename>}/ llvm-toolchain-${codename:-<codename>}-22 main" | sudo tee /etc/apt/sources.list.d/llvm-22.list

(apt.llvm.org's llvm.sh script, with the argument 22, does the same.) Or install LLVM 22
another way and set LLVM_SYS_221_PREFIX.
MSG
    exit 1
fi

mapfile -t todo < <(missing "${LLVM_PACKAGES[@]}" "${BUILD_PACKAGES[@]}")
if [ "${#todo[@]}" -gt 0 ]; then
    say "installing ${todo[*]}"
    DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -q --no-install-recommends "${todo[@]}"
fi

have_llvm || die "installed, but LLVM 22 is still not usable in $PREFIX"
have_build_tools || die "installed, but the C++ toolchain or python3's venv is still not usable"
say "LLVM $("$PREFIX/bin/llvm-config" --version) ready in $PREFIX; g++, python3 and venv ready"
