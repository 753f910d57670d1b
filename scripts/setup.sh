#!/usr/bin/env bash
# Installs what building iris needs on a fresh Debian/Ubuntu machine: LLVM 22 (the kernel
# compiler inside the proc macro links it statically) and lld 22 (links AMD code objects
# and CPU shared objects). Safe to run again: it installs only what is missing.
#
# Running programs built with iris needs none of this: no LLVM at run time, and the GPU
# runtimes (CUDA driver, ROCm) are loaded when present.
#
# Elsewhere: install LLVM 22 with its static libraries and lld 22 yourself, and point the
# build at it with LLVM_SYS_221_PREFIX=/path/to/llvm-22 (the folder holding bin/llvm-config),
# and IRIS_LLD=/path/to/ld.lld if ld.lld is not beside it. ROCm's own LLVM works if it is
# version 22.
set -euo pipefail

PACKAGES=(llvm-22-dev lld-22 libpolly-22-dev zlib1g-dev libzstd-dev libffi-dev libxml2-dev)
PREFIX="${LLVM_SYS_221_PREFIX:-/usr/lib/llvm-22}"

have_llvm() {
    [ -x "$PREFIX/bin/llvm-config" ] && [ -x "$PREFIX/bin/ld.lld" ] \
        && "$PREFIX/bin/llvm-config" --version | grep -q '^22\.' \
        && [ -n "$(ls "$PREFIX"/lib/libLLVMCore.a 2>/dev/null)" ]
}

if ! command -v cargo >/dev/null 2>&1; then
    echo "setup: cargo not found. Install Rust first: https://rustup.rs (then run this again)." >&2
    exit 1
fi

if have_llvm; then
    echo "setup: LLVM $("$PREFIX/bin/llvm-config" --version) and ld.lld found in $PREFIX"
    exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
    cat >&2 <<MSG
setup: LLVM 22 not found in $PREFIX and this is not a Debian/Ubuntu system.
Install LLVM 22 (with static libraries) and lld 22, then build with
    LLVM_SYS_221_PREFIX=/path/to/llvm-22 cargo build
MSG
    exit 1
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO="sudo"
    else
        echo "setup: need root (or sudo) to install: ${PACKAGES[*]}" >&2
        exit 1
    fi
fi

echo "setup: installing ${PACKAGES[*]}"
$SUDO apt-get update -q
if ! apt-cache show llvm-22-dev >/dev/null 2>&1; then
    cat >&2 <<MSG
setup: this distribution's archive has no llvm-22-dev.
Add the LLVM project's apt repository for your release (see apt.llvm.org: its llvm.sh
script takes the version, 22), then run this script again; or install LLVM 22 another way
and set LLVM_SYS_221_PREFIX.
MSG
    exit 1
fi
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${PACKAGES[@]}"

if ! have_llvm; then
    echo "setup: installed, but LLVM 22 is still not usable in $PREFIX" >&2
    exit 1
fi
echo "setup: LLVM $("$PREFIX/bin/llvm-config" --version) ready in $PREFIX"
