#!/usr/bin/env bash
# Runs the README's two quick-start commands as a newcomer would: in a minimal Debian 12
# root (debootstrap minbase plus what rustup itself needs: gcc, libc6-dev, make, git, curl,
# ca-certificates), with this machine's Rust toolchain mounted read-only, an empty cargo
# home, and a fresh clone of this repository's HEAD (committed work only). Prints each
# command's result and time, and the total. Needs root (debootstrap, mounts, chroot) and the
# network to Debian's archive, crates.io and PyPI. Certificates this machine's
# administrator added (/usr/local/share/ca-certificates, say a proxy's) are trusted in the
# root too, as on any machine of the same network; nothing else of this machine is.
#
# Usage: sudo scripts/fresh-check.sh [--llvm 19|22] [--cache DIR] [--recreate] [--keep]
#
#   --llvm 22     (the default) the root's apt sources are an installed Debian 12's, whose
#                 security archive has LLVM 22: setup.sh installs 22
#   --llvm 19     the root's sources lack the security archive, so Debian main's LLVM 19
#                 is the newest there: setup.sh installs 19 (no gfx950)
#   --cache DIR   where the minimal root is kept between runs (default
#                 /var/tmp/iris-fresh-check); each run starts from a pristine copy of it
#                 (an overlay), so nothing of one run reaches the next
#   --recreate    build the cached root again with debootstrap
#   --keep        leave this run's root mounted-free but on disk (its path is printed)
#
# The commands are read from the README's "Quick start" block, so the check runs exactly
# what the README says. Exit status: 0 when both pass.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=/var/tmp/iris-fresh-check
recreate=0
keep=0
llvm=22
while (($#)); do
    case "$1" in
    --llvm) llvm=$2; shift ;;
    --cache) cache=$2; shift ;;
    --recreate) recreate=1 ;;
    --keep) keep=1 ;;
    -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "fresh-check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done

say() { echo "fresh-check: $*" >&2; }
die() { say "$*"; exit 1; }
[[ $llvm == 19 || $llvm == 22 ]] || die "--llvm takes 19 or 22"

[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, mount, chroot): run it with sudo"
command -v rustc >/dev/null || die "no Rust toolchain here to mount into the root"
sysroot=$(readlink -f "$(rustc --print sysroot)")
[ -x "$sysroot/bin/cargo" ] || die "the toolchain at $sysroot has no cargo"

# The README's quick-start commands: the lines of the first ```sh block after the heading.
mapfile -t commands < <(awk '/^## Quick start/ { q = 1 } q && /^```sh/ { b = 1; next } b && /^```/ { exit } b && NF { print }' "$repo/README.md")
((${#commands[@]} == 2)) || die "expected two commands in the README's Quick start block, found ${#commands[@]}"

base="$cache/debian12"
if ((recreate)) || [ ! -f "$base/.complete" ]; then
    command -v debootstrap >/dev/null || {
        say "installing debootstrap"
        apt-get install -y -q debootstrap >/dev/null
    }
    rm -rf "$base"
    mkdir -p "$cache"
    say "building a minimal Debian 12 root in $base (debootstrap minbase)"
    debootstrap --variant=minbase --include=gcc,libc6-dev,make,git,curl,ca-certificates \
        bookworm "$base" http://deb.debian.org/debian >"$cache/debootstrap.log" 2>&1 ||
        die "debootstrap failed; see $cache/debootstrap.log"
    # The apt sources of an installed Debian 12 (debootstrap writes only the main suite).
    cat >"$base/etc/apt/sources.list" <<'LIST'
deb http://deb.debian.org/debian bookworm main
deb http://deb.debian.org/debian bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
LIST
    touch "$base/.complete"
fi

run_dir=$(mktemp -d "$cache/run.XXXXXX")
root="$run_dir/root"
mkdir -p "$root" "$run_dir/upper" "$run_dir/work"
mounts=()
cleanup() {
    local i
    for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
        umount -l "${mounts[$i]}" 2>/dev/null || true
    done
    if ((keep)); then
        say "kept this run's files in $run_dir"
    else
        rm -rf "$run_dir"
    fi
}
trap cleanup EXIT

# A pristine copy of the base: an overlay where the kernel has it, else a full copy.
if mount -t overlay overlay -o "lowerdir=$base,upperdir=$run_dir/upper,workdir=$run_dir/work" "$root" 2>/dev/null; then
    mounts+=("$root")
else
    say "no overlay mount here; copying the base root"
    cp -a "$base/." "$root/"
fi
for fs in proc sys dev; do
    mount --rbind "/$fs" "$root/$fs"
    mount --make-rslave "$root/$fs"
    mounts+=("$root/$fs")
done
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
if [ "$llvm" = 19 ]; then
    # Debian main only (with its updates): LLVM 19 is the newest LLVM apt can install.
    cat >"$root/etc/apt/sources.list" <<'LIST'
deb http://deb.debian.org/debian bookworm main
deb http://deb.debian.org/debian bookworm-updates main
LIST
fi
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    mkdir -p "$root/usr/local/share/ca-certificates"
    cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
    chroot "$root" update-ca-certificates >/dev/null 2>&1 || say "update-ca-certificates failed in the root"
fi
mkdir -p "$root$sysroot"
mount --bind "$sysroot" "$root$sysroot"
mount -o remount,bind,ro "$root$sysroot"
mounts+=("$root$sysroot")

checkout=/home/newcomer/iris
git clone --quiet --no-hardlinks "$repo" "$root$checkout"
head=$(git -C "$root$checkout" rev-parse --short HEAD)
say "root $root; toolchain $sysroot (read-only); clone of $head at $checkout; empty cargo home"

results=()
failed=0
total_start=$(date +%s)
for cmd in "${commands[@]}"; do
    say "running: $cmd"
    start=$(date +%s)
    set +e
    chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
        PATH="$sysroot/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
        CARGO_HOME=/root/.cargo \
        bash -c "cd $checkout && $cmd" 2>&1 | tee "$run_dir/command-$((${#results[@]} + 1)).log" | sed 's/^/  | /' >&2
    rc=${PIPESTATUS[0]}
    set -e
    secs=$(($(date +%s) - start))
    verdict=pass
    ((rc == 0)) || { verdict="FAIL (exit $rc)"; failed=$((failed + 1)); }
    results+=("$(printf '%-14s %5ds  %s' "$verdict" "$secs" "$cmd")")
    ((rc == 0)) || break
done
total=$(($(date +%s) - total_start))

# setup.sh's last word on the LLVM it uses: "setup: LLVM 19.1.7 (/usr/lib/llvm-19/...)".
chosen=$(grep -ho 'setup: LLVM [0-9][0-9.]*' "$run_dir"/command-*.log 2>/dev/null | sed 's/^setup: //' | tail -1)
echo ""
echo "== fresh Debian 12 root (--llvm $llvm: setup chose ${chosen:-no LLVM}), clone of $head, $(nproc) cores"
[[ ${chosen:-} == "LLVM $llvm."* ]] || { say "expected LLVM $llvm, setup chose ${chosen:-none}"; failed=$((failed + 1)); }
printf '%s\n' "${results[@]}"
echo "total: ${total}s ($((total / 60)) min $((total % 60)) s)"
((failed == 0))
