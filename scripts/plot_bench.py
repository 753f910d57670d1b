#!/usr/bin/env python3
"""SVG plots of one benchmark run (the bench.json that scripts/bench-device.sh writes).

    python3 scripts/plot_bench.py docs/perf/bench.json [docs/perf]
    python3 scripts/plot_bench.py --autotune autotune.json [docs/perf]

Writes, with no plotting library (hand-written SVG):
  autotune.svg            (from `cargo bench --bench autotune -- --json FILE`) the tuned and
                          the fixed all-reduce and all-gather: bandwidth against the size
  all_gather_<ranks>.svg  aggregate bandwidth against the message size per rank, the
                          16-byte and the scalar kernel, with the copy-bandwidth ceiling
  two_rank.svg            the 1 GiB two-rank cases: ours, nvcc, Triton and the ceiling
"""

import json
import math
import os
import sys

W, H = 720, 440
L, R, T, B = 80, 230, 50, 60  # margins
COLORS = {"ours": "#1f77b4", "chunked": "#9467bd", "scalar": "#ff7f0e", "nvcc": "#2ca02c", "triton": "#d62728",
          "ceiling": "#555555"}


def esc(s):
    return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def human(b):
    for unit, name in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if b >= unit:
            return f"{b / unit:g} {name}"
    return f"{b} B"


def svg_open(title):
    return [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
            f'font-family="sans-serif" font-size="12">',
            f'<rect width="{W}" height="{H}" fill="white"/>',
            f'<text x="{W / 2}" y="24" text-anchor="middle" font-size="15">{esc(title)}</text>']


def legend(items, x, y):
    out = []
    for i, (name, color, dash) in enumerate(items):
        yy = y + 20 * i
        out.append(f'<line x1="{x}" y1="{yy}" x2="{x + 24}" y2="{yy}" stroke="{color}" stroke-width="2.5"'
                   + (f' stroke-dasharray="{dash}"' if dash else "") + "/>")
        out.append(f'<text x="{x + 30}" y="{yy + 4}">{esc(name)}</text>')
    return out


def all_gather_svg(rows, ranks, ceiling_gbps):
    rows = sorted((r for r in rows if r["ranks"] == ranks), key=lambda r: r["size_bytes"])
    if not rows:
        return None
    xs = [math.log2(r["size_bytes"]) for r in rows]
    x0, x1 = min(xs), max(xs)
    x1 = x1 if x1 > x0 else x0 + 1
    ymax = max([ceiling_gbps or 0] + [r.get(k) or 0 for r in rows for k in ("v4_gbps", "v4c_gbps", "scalar_gbps")])
    ymax *= 1.1
    pw, ph = W - L - R, H - T - B

    def px(x):
        return L + (x - x0) / (x1 - x0) * pw

    def py(y):
        return T + ph - y / ymax * ph

    out = svg_open(f"all-gather, {ranks} ranks on one GPU: aggregate bandwidth")
    out.append(f'<rect x="{L}" y="{T}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>')
    step = 10 ** math.floor(math.log10(ymax / 5)) if ymax > 0 else 1
    step *= 2 if ymax / step > 10 else 1
    y = 0.0
    while y <= ymax:
        out.append(f'<line x1="{L}" y1="{py(y):.1f}" x2="{L + pw}" y2="{py(y):.1f}" stroke="#eee"/>')
        out.append(f'<text x="{L - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{y:g}</text>')
        y += step
    for r, x in zip(rows, xs):
        out.append(f'<text x="{px(x):.1f}" y="{T + ph + 18}" text-anchor="middle">{esc(human(r["size_bytes"]))}</text>')
    out.append(f'<text x="{L + pw / 2}" y="{H - 18}" text-anchor="middle">message size per rank</text>')
    out.append(f'<text x="18" y="{T + ph / 2}" text-anchor="middle" transform="rotate(-90 18 {T + ph / 2})">'
               "GB/s (all ranks' bytes read + written)</text>")
    if ceiling_gbps:
        out.append(f'<line x1="{L}" y1="{py(ceiling_gbps):.1f}" x2="{L + pw}" y2="{py(ceiling_gbps):.1f}" '
                   f'stroke="{COLORS["ceiling"]}" stroke-width="1.5" stroke-dasharray="6 4"/>')
    for key, color, dash in (("v4_gbps", COLORS["ours"], None), ("v4c_gbps", COLORS["chunked"], "2 2"),
                             ("scalar_gbps", COLORS["scalar"], "5 3")):
        pts = [(px(x), py(r[key])) for r, x in zip(rows, xs) if r.get(key) is not None]
        if pts:
            out.append(f'<polyline fill="none" stroke="{color}" stroke-width="2.5"'
                       + (f' stroke-dasharray="{dash}"' if dash else "")
                       + ' points="' + " ".join(f"{a:.1f},{b:.1f}" for a, b in pts) + '"/>')
            out += [f'<circle cx="{a:.1f}" cy="{b:.1f}" r="3" fill="{color}"/>' for a, b in pts]
    out += legend([("all_gather_v4 (16-byte, grid-stride)", COLORS["ours"], None),
                   ("all_gather_v4c (16-byte, chunked)", COLORS["chunked"], "2 2"),
                   ("all_gather (example, scalar)", COLORS["scalar"], "5 3"),
                   (f"copy ceiling {ceiling_gbps:.0f} GB/s" if ceiling_gbps else "copy ceiling",
                    COLORS["ceiling"], "6 4")], L + pw + 14, T + 20)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def two_rank_svg(entries):
    if not entries:
        return None
    # Ours and nvcc's: the better of the grid-stride and the chunked shape.
    groups = [(e["case"], [("ours", e["ours_gbps"]), ("nvcc", e["nvcc_gbps"]), ("triton", e["triton_gbps"]),
                           ("ceiling", e["ceiling_gbps"])]) for e in entries]
    ymax = max(v for _, bars in groups for _, v in bars if v) * 1.15
    pw, ph = W - L - R, H - T - B
    out = svg_open("two ranks on one GPU, 1 GiB: bandwidth against the ceiling and peers")
    out.append(f'<rect x="{L}" y="{T}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>')

    def py(y):
        return T + ph - y / ymax * ph

    step = 500 if ymax > 2000 else 100
    y = 0
    while y <= ymax:
        out.append(f'<line x1="{L}" y1="{py(y):.1f}" x2="{L + pw}" y2="{py(y):.1f}" stroke="#eee"/>')
        out.append(f'<text x="{L - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{y}</text>')
        y += step
    gw = pw / len(groups)
    bw = gw / 6
    for g, (case, bars) in enumerate(groups):
        gx = L + g * gw + bw
        for b, (name, v) in enumerate(bars):
            if v is None:
                continue
            x = gx + b * bw
            out.append(f'<rect x="{x:.1f}" y="{py(v):.1f}" width="{bw * 0.9:.1f}" height="{T + ph - py(v):.1f}" '
                       f'fill="{COLORS[name]}"/>')
            out.append(f'<text x="{x + bw * 0.45:.1f}" y="{py(v) - 4:.1f}" text-anchor="middle" font-size="10">'
                       f"{v:.0f}</text>")
        ceiling = next(e for e in entries if e["case"] == case)["ceiling"]
        out.append(f'<text x="{gx + 2 * bw:.1f}" y="{T + ph + 18}" text-anchor="middle">{esc(case)} '
                   f"(vs {esc(ceiling)})</text>")
    out.append(f'<text x="18" y="{T + ph / 2}" text-anchor="middle" transform="rotate(-90 18 {T + ph / 2})">'
               "GB/s (bytes read + written)</text>")
    out += legend([(n, COLORS[n], None) for n in ("ours", "nvcc", "triton", "ceiling")], L + pw + 14, T + 20)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def autotune_svg(data):
    rows = data.get("rows", [])
    if not rows:
        return None
    sizes = sorted({r["bytes"] for r in rows})
    xs = {b: math.log2(b) for b in sizes}
    x0, x1 = min(xs.values()), max(xs.values())
    x1 = x1 if x1 > x0 else x0 + 1

    def gbps(r, key):
        return r["bytes"] / r[key] / 1e6

    ymax = max(gbps(r, k) for r in rows for k in ("fixed_ms", "tuned_ms")) * 1.1
    pw, ph = W - L - R, H - T - B

    def px(x):
        return L + (x - x0) / (x1 - x0) * pw

    def py(y):
        return T + ph - y / ymax * ph

    out = svg_open(f"autotuned against fixed collectives, {data.get('ranks')} ranks on one GPU")
    out.append(f'<rect x="{L}" y="{T}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>')
    step = 10 ** math.floor(math.log10(ymax / 5)) if ymax > 0 else 1
    step *= 2 if ymax / step > 10 else 1
    y = 0.0
    while y <= ymax:
        out.append(f'<line x1="{L}" y1="{py(y):.1f}" x2="{L + pw}" y2="{py(y):.1f}" stroke="#eee"/>')
        out.append(f'<text x="{L - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{y:g}</text>')
        y += step
    for b in sizes:
        out.append(f'<text x="{px(xs[b]):.1f}" y="{T + ph + 18}" text-anchor="middle">{esc(human(b))}</text>')
    out.append(f'<text x="{L + pw / 2}" y="{H - 18}" text-anchor="middle">message size per rank</text>')
    out.append(f'<text x="18" y="{T + ph / 2}" text-anchor="middle" transform="rotate(-90 18 {T + ph / 2})">'
               "GB/s (a rank's bytes / time)</text>")
    lines = [("all_reduce", "tuned_ms", COLORS["ours"], None), ("all_reduce", "fixed_ms", COLORS["ours"], "5 3"),
             ("all_gather", "tuned_ms", COLORS["nvcc"], None), ("all_gather", "fixed_ms", COLORS["nvcc"], "5 3")]
    for coll, key, color, dash in lines:
        pts = [(px(xs[r["bytes"]]), py(gbps(r, key))) for r in sorted(rows, key=lambda r: r["bytes"])
               if r["collective"] == coll]
        if pts:
            out.append(f'<polyline fill="none" stroke="{color}" stroke-width="2.5"'
                       + (f' stroke-dasharray="{dash}"' if dash else "")
                       + ' points="' + " ".join(f"{a:.1f},{b:.1f}" for a, b in pts) + '"/>')
            out += [f'<circle cx="{a:.1f}" cy="{b:.1f}" r="3" fill="{color}"/>' for a, b in pts]
    out += legend([(f"{c} {'tuned' if k == 'tuned_ms' else 'fixed'}", color, dash) for c, k, color, dash in lines],
                  L + pw + 14, T + 20)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    if sys.argv[1] == "--autotune":
        with open(sys.argv[2]) as f:
            data = json.load(f)
        outdir = sys.argv[3] if len(sys.argv) > 3 else os.path.join("docs", "perf")
        os.makedirs(outdir, exist_ok=True)
        path = os.path.join(outdir, "autotune.svg")
        svg = autotune_svg(data)
        if svg:
            with open(path, "w") as f:
                f.write(svg)
            print(path)
        return
    with open(sys.argv[1]) as f:
        data = json.load(f)
    outdir = sys.argv[2] if len(sys.argv) > 2 else os.path.join("docs", "perf")
    os.makedirs(outdir, exist_ok=True)
    gather = data.get("all_gather", [])
    ceiling = gather[0]["ceiling_gbps"] if gather else None
    written = []
    for ranks in sorted({r["ranks"] for r in gather}):
        svg = all_gather_svg(gather, ranks, ceiling)
        if svg:
            path = os.path.join(outdir, f"all_gather_{ranks}.svg")
            with open(path, "w") as f:
                f.write(svg)
            written.append(path)
    svg = two_rank_svg(data.get("two_rank", []))
    if svg:
        path = os.path.join(outdir, "two_rank.svg")
        with open(path, "w") as f:
            f.write(svg)
        written.append(path)
    print("\n".join(written))


if __name__ == "__main__":
    main()
