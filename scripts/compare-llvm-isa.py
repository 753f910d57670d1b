#!/usr/bin/env python3
"""Compares the assembly two LLVM versions emitted for the same kernel units: two
IRIS_DUMP folders (each `<unit>.<target>.s`), one row per file both have: kernels, the
instruction count of each and the change, and the mnemonics only one of them uses.

    IRIS_DUMP=/tmp/dump22 cargo build -p iris --all-features            # after touch src/lib.rs
    IRIS_LLVM_CONFIG=/usr/bin/llvm-config-19 IRIS_DUMP=/tmp/dump19 \\
        CARGO_TARGET_DIR=target/llvm19 cargo build -p iris --all-features
    scripts/compare-llvm-isa.py /tmp/dump22 /tmp/dump19 [UNIT...]

Prints a Markdown table. Instructions are counted per mnemonic with modifiers (PTX
`ld.global.nc.v4.u32`, AMD `v_mfma_f32_16x16x16_bf16`); directives, labels and comments
are not instructions.
"""

import collections
import pathlib
import re
import sys


def kind(target):
    if target.startswith("gfx"):
        return "amd"
    if target.startswith("sm_"):
        return "ptx"
    return "cpu"


def kernels(text, k):
    """Names of the kernels (PTX entries; AMD and CPU: global functions)."""
    if k == "ptx":
        return re.findall(r"^\.visible \.entry (\w+)", text, re.M)
    if k == "amd":
        return re.findall(r"^\s*\.amdhsa_kernel (\w+)", text, re.M)
    return re.findall(r"^\s*\.globl\s+(\w+)", text, re.M)


def mnemonics(text, k):
    counts = collections.Counter()
    for line in text.splitlines():
        s = line.strip()
        if not s or s[0] in ".;#/{}$)(" or s.endswith(":") or s.startswith("//"):
            continue
        s = re.sub(r"^@!?%p\d+\s+", "", s)
        token = s.split()[0].rstrip(";,")
        if k == "ptx" and not re.match(r"^[a-z][a-z0-9_]*(\.[a-z0-9_:]+)*$", token):
            continue
        if k == "amd" and not re.match(r"^[a-z][a-z0-9_]*$", token):
            continue
        if k == "cpu" and not re.match(r"^[a-z][a-z0-9]*$", token):
            continue
        counts[token] += 1
    return counts


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    a, b = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    units = set(sys.argv[3:])
    print(f"| unit.target | kernels | instructions {a.name} -> {b.name} | only in {a.name} | only in {b.name} |")
    print("|---|---|---|---|---|")
    for fa in sorted(a.glob("*.s")):
        fb = b / fa.name
        if not fb.exists() or (units and fa.name.split(".")[0] not in units):
            continue
        target = fa.name.split(".", 1)[1][: -len(".s")]
        k = kind(target)
        ta, tb = fa.read_text(errors="replace"), fb.read_text(errors="replace")
        ka, kb = kernels(ta, k), kernels(tb, k)
        ma, mb = mnemonics(ta, k), mnemonics(tb, k)
        na, nb = sum(ma.values()), sum(mb.values())
        change = f"{(nb - na) / na * 100:+.1f} %" if na else "n/a"
        only = lambda x, y: ", ".join(f"{m} ({x[m]})" for m in sorted(set(x) - set(y))[:6]) or "-"
        kern = f"{len(ka)}" if sorted(ka) == sorted(kb) else f"{len(ka)} / {len(kb)} (differ)"
        print(f"| {fa.name[:-2]} | {kern} | {na} -> {nb} ({change}) | {only(ma, mb)} | {only(mb, ma)} |")


if __name__ == "__main__":
    main()
