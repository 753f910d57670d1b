"""Merges one benchmark run into one JSON file and one table.

    python3 benches/merge.py --iris iris.json --cuda cuda.jsonl --triton triton.jsonl \
        --launch launch.txt --compile benches/results/compile_here.txt --machine machine.txt \
        --out bench.json --table table.txt

Inputs (any may be missing; what is missing shows as "-"):
  --iris     the JSON the iris bench (benches/gpu_bench/) wrote
  --iris-cached  the same bench's module loads with the driver's JIT cache warm
  --cuda     JSON lines of benches/reference/bandwidth.cu and pingpong.cu (built with nvcc in the same run)
  --triton   JSON lines of benches/reference/triton_bench.py (Triton and PyTorch)
  --launch   the output of iris-host's test cuda_world::typed_launch_overhead
  --compile  the output of iris-device's bench compile_time, run on the build machine
  --machine  free text: GPU, driver, nvcc, CPU
Ratios are ours over the reference in bandwidth (higher is better for us) and the
reference over ours in time for latency and compile (again higher is better for us).
"""

import argparse
import json
import os
import re
import sys

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30
# "No slower than" a peer: within this fraction, the run-to-run spread of medians.
TIE = 0.02


def read_json(path):
    if not path or not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def read_lines(path):
    out = []
    if not path or not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:
                    pass
    return out


def read_text(path):
    if not path or not os.path.exists(path):
        return ""
    with open(path, errors="replace") as f:
        return f.read()


def human(b):
    for unit, name in ((GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")):
        if b >= unit and b % unit == 0:
            return f"{b // unit} {name}"
    return f"{b} B"


def fmt(x, spec=".1f"):
    return "-" if x is None else format(x, spec)


def parse_launch(text):
    """Median and p90 host microseconds per launch, by the test's row names."""
    rows = {}
    for line in text.splitlines():
        m = re.match(r"\s*(.+?)\s+median\s+([-+\d.]+)\s*us(?:\s+p90\s+([\d.]+)\s*us)?", line)
        if m:
            rows[m.group(1).strip()] = {"median_us": float(m.group(2)),
                                        "p90_us": float(m.group(3)) if m.group(3) else None}
    passed = "test result: ok" in text
    return {"rows": rows, "test_passed": passed}


def parse_compile(text):
    """iris-device's compile_time table: per kernel and target, the median total (ms)."""
    out = {"targets": [], "kernels": {}, "first_ms": None, "first_kernel": None, "first_target": None}
    m = re.search(r"first compilation in the process \((\S+) for (\S+)\): ([\d.]+) ms", text)
    if m:
        out["first_kernel"], out["first_target"], out["first_ms"] = m.group(1), m.group(2), float(m.group(3))
    for line in text.splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) < 3:
            continue
        if cells[0] == "kernel":
            out["targets"] = cells[1:]
            continue
        if out["targets"] and re.match(r"^[A-Za-z_]\w*$", cells[0]):
            totals = []
            for c in cells[1:]:
                n = re.match(r"([\d.]+)", c)
                totals.append(float(n.group(1)) if n else None)
            if len(totals) == len(out["targets"]) and all(t is not None for t in totals):
                out["kernels"][cells[0]] = dict(zip(out["targets"], totals))
    return out


def main():
    ap = argparse.ArgumentParser()
    for name in ("iris", "iris-cached", "cuda", "triton", "launch", "compile", "machine", "out", "table"):
        ap.add_argument("--" + name)
    args = ap.parse_args()

    iris = read_json(args.iris) or {"rows": []}
    refs = read_lines(args.cuda) + read_lines(args.triton)
    launch = parse_launch(read_text(args.launch))
    compile_here = parse_compile(read_text(args.compile))
    machine = read_text(args.machine).strip()
    rows = iris.get("rows", [])

    def ref(kind, name):
        for r in refs:
            if r.get("ref") == kind and r.get("name") == name:
                return r
        return None

    def ours(case, kernel=None, **kw):
        for r in rows:
            if r["case"] == case and (kernel is None or r["kernel"].startswith(kernel)) and all(
                    r.get(k) == v for k, v in kw.items()):
                return r
        return None

    goals = []
    lines = []
    out = lines.append

    def goal(name, value, target, met, why=""):
        # A "no slower than" goal missed by less than TIE is reported as such, not as met.
        status = "met" if met and not why else ("within 2%" if met else "NOT MET")
        goals.append({"goal": name, "value": value, "target": target, "met": bool(met) and not why,
                      "status": status, "note": why})

    dev = iris.get("device", {})
    out(f"== device: {dev.get('name', '?')} ({dev.get('backend', '?')}, {dev.get('multiprocessors', '?')} SMs); "
        f"grid-stride kernels: {iris.get('config', {}).get('block', '?')} threads x "
        f"{iris.get('config', {}).get('blocks_per_sm', '?')} blocks per SM")

    # ---- ceilings
    memset = ours("ceiling", "runtime memset")
    memcpy = ours("ceiling", "runtime memcpy_dtod")
    memset_gbps = memset["gbps"] if memset else None
    memcpy_gbps = memcpy["gbps"] if memcpy else None
    out("")
    size = human(memset["size_bytes"]) if memset else "?"
    out(f"== ceilings, {size} (GB/s, bytes read + written)")
    out(f"{'what':<44} {'GB/s':>9} {'of runtime':>11}")
    ceiling_rows = [(f"iris runtime: {r['kernel']}", r["gbps"], r.get("ratio")) for r in rows if r["case"] == "ceiling"]
    for kind, name, label, base in (("cuda", "memset", "CUDA C++: cudaMemsetAsync", memset_gbps),
                                    ("cuda", "memcpy_dtod", "CUDA C++: cudaMemcpyAsync D2D", memcpy_gbps),
                                    ("torch", "fill_", "PyTorch: Tensor.fill_", memset_gbps),
                                    ("torch", "copy_", "PyTorch: Tensor.copy_", memcpy_gbps)):
        r = ref(kind, name)
        if r:
            ceiling_rows.append((label, r["gbps"], r["gbps"] / base if base else None))
    for label, g, ratio in ceiling_rows:
        out(f"{label:<44} {g:>9.1f} {fmt(ratio, '.3f'):>11}")

    # ---- two-rank bandwidth: each case in two shapes (grid-stride, chunked), ours and nvcc's
    out("")
    out(f"== two ranks on one GPU, {size}: ours vs the ceiling, nvcc and Triton (GB/s); "
        "gs = grid-stride over 8 blocks/SM, ch = chunked, one block per 4 x 256 vectors (Triton's shape)")
    out(f"{'case':<6} {'ours gs':>8} {'ours ch':>8} {'ceiling':>20} {'best/ceil':>9} {'nvcc gs':>8} {'nvcc ch':>8} "
        f"{'best/nvcc':>9} {'triton':>8} {'best/tri':>8}  ok")
    two_rank = []
    for case, kname, ceiling_name, cgbps in (("store", "store_v4", "memset", memset_gbps),
                                             ("load", "load_v4", "memcpy_dtod", memcpy_gbps),
                                             ("copy", "copy_v4", "memcpy_dtod", memcpy_gbps)):
        gs = next((r for r in rows if r["case"] == case and r["kernel"].startswith(kname + " ")), None)
        ch = next((r for r in rows if r["case"] == case and r["kernel"].startswith(kname + "c ")), None)
        if not gs and not ch:
            continue
        nv_gs, nv_ch, tr = ref("cuda", kname), ref("cuda", kname + "c"), ref("triton", kname)
        ours_best = max(r["gbps"] for r in (gs, ch) if r)
        nv_best = max([r["gbps"] for r in (nv_gs, nv_ch) if r] or [0]) or None
        entry = {
            "case": case, "ceiling": ceiling_name, "ceiling_gbps": cgbps,
            "ours_gbps": ours_best,
            "ours_grid_stride_gbps": gs["gbps"] if gs else None, "ours_chunked_gbps": ch["gbps"] if ch else None,
            "nvcc_gbps": nv_best,
            "nvcc_grid_stride_gbps": nv_gs["gbps"] if nv_gs else None,
            "nvcc_chunked_gbps": nv_ch["gbps"] if nv_ch else None,
            "triton_gbps": tr["gbps"] if tr else None,
            "ratio_ceiling": ours_best / cgbps if cgbps else None,
            "ratio_nvcc": ours_best / nv_best if nv_best else None,
            "ratio_nvcc_same_shape": {
                "grid_stride": gs["gbps"] / nv_gs["gbps"] if gs and nv_gs else None,
                "chunked": ch["gbps"] / nv_ch["gbps"] if ch and nv_ch else None},
            "ratio_triton": ours_best / tr["gbps"] if tr else None,
            "triton_vector_ops": tr.get("vector_ops") if tr else None,
            "correct": all(r["correct"] for r in (gs, ch, nv_gs, nv_ch, tr) if r),
        }
        two_rank.append(entry)
        out(f"{case:<6} {fmt(entry['ours_grid_stride_gbps']):>8} {fmt(entry['ours_chunked_gbps']):>8} "
            f"{ceiling_name + ' ' + fmt(cgbps):>20} {fmt(entry['ratio_ceiling'], '.3f'):>9} "
            f"{fmt(entry['nvcc_grid_stride_gbps']):>8} {fmt(entry['nvcc_chunked_gbps']):>8} "
            f"{fmt(entry['ratio_nvcc'], '.3f'):>9} {fmt(entry['triton_gbps']):>8} "
            f"{fmt(entry['ratio_triton'], '.3f'):>8}  {'yes' if entry['correct'] else 'NO'}")
        if entry["ratio_ceiling"] is not None:
            goal(f"{case}: >= 0.90 of {ceiling_name}", entry["ratio_ceiling"], 0.90, entry["ratio_ceiling"] >= 0.90)
        if case in ("store", "load"):
            for peer in ("nvcc", "triton"):
                v = entry[f"ratio_{peer}"]
                if v is not None:
                    goal(f"{case}: no slower than {peer} (best shape each)", v, 1.0, v >= 1.0 - TIE,
                         f"{(1.0 - v) * 100:.1f}% slower, within the 2% run-to-run spread"
                         if 1.0 - TIE <= v < 1.0 else "")

    # ---- all-gather
    out("")
    out("== all-gather, ranks as threads on one GPU: aggregate GB/s = all ranks' bytes (read input once, "
        "write it to every rank) / time; bound = those bytes / copy bandwidth; ratio = bound / time")
    out(f"{'ranks':>5} {'size/rank':>10} {'bound us':>10} {'v4 gs us':>10} {'ratio':>6} {'v4 ch us':>10} {'ratio':>6} "
        f"{'scalar us':>10} {'ratio':>6} {'best GB/s':>9}  ok")
    gather = []
    keys = [(r["ranks"], r["size_bytes"]) for r in rows if r["case"] == "all_gather" and r["kernel"] == "all_gather"]
    for ranks, size_b in keys:
        by = {k: next((x for x in rows if x["case"] == "all_gather" and x["kernel"] == k and x["ranks"] == ranks
                       and x["size_bytes"] == size_b), None) for k in ("all_gather_v4", "all_gather_v4c", "all_gather")}
        present = [r for r in by.values() if r]
        best = max(present, key=lambda r: r["ratio"])
        entry = {"ranks": ranks, "size_bytes": size_b, "bytes_moved": best["bytes_moved"],
                 "bound_us": best["bound_ms"] * 1e3, "ceiling_gbps": best["ceiling_gbps"],
                 "best_kernel": best["kernel"], "best_gbps": best["gbps"], "best_ratio": best["ratio"],
                 "correct": all(r["correct"] for r in present)}
        for k, label in (("all_gather_v4", "v4"), ("all_gather_v4c", "v4c"), ("all_gather", "scalar")):
            r = by[k]
            entry[f"{label}_us"] = r["ms"] * 1e3 if r else None
            entry[f"{label}_gbps"] = r["gbps"] if r else None
            entry[f"{label}_ratio"] = r["ratio"] if r else None
            entry[f"{label}_launches"] = r["launches"] if r else None
        gather.append(entry)
        out(f"{ranks:>5} {human(size_b):>10} {entry['bound_us']:>10.1f} {fmt(entry['v4_us']):>10} "
            f"{fmt(entry['v4_ratio'], '.3f'):>6} {fmt(entry['v4c_us']):>10} {fmt(entry['v4c_ratio'], '.3f'):>6} "
            f"{fmt(entry['scalar_us']):>10} {fmt(entry['scalar_ratio'], '.3f'):>6} {best['gbps']:>9.1f}  "
            f"{'yes' if entry['correct'] else 'NO'}")
        if size_b >= 256 * MIB:
            goal(f"all-gather {ranks} ranks {human(size_b)}: >= 0.85 of the bound ({best['kernel']})",
                 best["ratio"], 0.85, best["ratio"] >= 0.85)

    # ---- ping-pong
    out("")
    out("== ping-pong, two ranks (threads, own streams) on one GPU, one thread each: round trip (us), "
        "from the difference of a long and a short run")
    ping = {}
    for kname, label in (("ping_pong", "release/acquire, system scope"),
                         ("ping_pong_device", "release/acquire, device scope"),
                         ("ping_pong_volatile", "volatile poll, fence before the store")):
        pp = next((r for r in rows if r["case"] == "ping_pong" and r["kernel"].startswith(kname + " ")), None)
        nv = ref("cuda", kname)
        if not pp and not nv:
            continue
        ours_us = pp.get("us_per_round_trip") if pp else None
        nv_us = nv["us_per_round_trip"] if nv else None
        ping[kname] = {"what": label, "ours_us": ours_us, "nvcc_us": nv_us,
                       "ours_us_long_only": pp.get("us_per_round_trip_long_only") if pp else None,
                       "nvcc_us_long_only": nv.get("us_per_round_trip_long_only") if nv else None,
                       "ratio_nvcc": nv_us / ours_us if nv_us and ours_us else None,
                       "correct": (pp is None or pp["correct"]) and (nv is None or nv["correct"])}
        out(f"{label:<40} ours {fmt(ours_us, '.3f'):>7} us   nvcc {fmt(nv_us, '.3f'):>7} us   "
            f"nvcc/ours {fmt(ping[kname]['ratio_nvcc'], '.3f'):>6}   ok {'yes' if ping[kname]['correct'] else 'NO'}")
        if kname == "ping_pong" and ours_us and nv_us:
            goal("ping-pong (system scope): within 10% of nvcc", ours_us / nv_us, 1.10, ours_us <= 1.10 * nv_us)

    # ---- compile + load vs Triton's first call
    out("")
    out("== cold start (ms): compile for all six targets on the build machine + module load on the GPU "
        "(PTX JIT, driver cache off) vs Triton's first call (fresh cache)")
    out(f"{'kernel':<11} {'compile 6':>9} {'NVIDIA 2':>8} {'LLVM init':>9} {'load':>7} {'load $':>7} "
        f"{'ours':>7} {'triton':>7} {'tri/ours':>8} {'tri/(NV+load)':>13} {'tri/load':>8}")
    cold = []
    kernels = compile_here["kernels"]
    init_ms = None
    if compile_here["first_ms"] is not None and compile_here["first_kernel"] in kernels:
        k = kernels[compile_here["first_kernel"]].get(compile_here["first_target"])
        if k is not None:
            init_ms = max(0.0, compile_here["first_ms"] - k)
    cached_rows = (read_json(args.iris_cached) or {}).get("rows", [])
    for ours_name, compile_name in (("store_v4", "vector_put"), ("all_gather", "all_gather")):
        ml = next((r for r in rows if r["case"] == "module_load" and r["kernel"] == ours_name), None)
        mlc = next((r for r in cached_rows if r["case"] == "module_load" and r["kernel"] == ours_name), None)
        tr = ref("triton", f"compile:{ours_name}")
        per_target = kernels.get(compile_name)
        compile_all = sum(per_target.values()) if per_target else None
        compile_nv = sum(v for t, v in per_target.items() if t.startswith("sm_")) if per_target else None
        load = ml["ms"] if ml else None
        load_cached = mlc["ms"] if mlc else None
        total = total_nv = None
        if compile_all is not None and load is not None:
            total = compile_all + (init_ms or 0.0) + load
            total_nv = compile_nv + (init_ms or 0.0) + load
        tri = tr["compile_ms"] if tr else None
        entry = {"kernel": ours_name, "compiled_as": compile_name, "compile_all_targets_ms": compile_all,
                 "compile_nvidia_ms": compile_nv, "llvm_init_ms": init_ms, "module_load_ms": load,
                 "module_load_cached_ms": load_cached, "ours_total_ms": total, "ours_nvidia_total_ms": total_nv,
                 "triton_first_call_ms": tri,
                 "ratio_triton": tri / total if tri and total else None,
                 "ratio_triton_nvidia_only": tri / total_nv if tri and total_nv else None,
                 "ratio_triton_runtime": tri / load if tri and load else None}
        cold.append(entry)
        out(f"{ours_name:<11} {fmt(compile_all):>9} {fmt(compile_nv):>8} {fmt(init_ms):>9} {fmt(load, '.2f'):>7} "
            f"{fmt(load_cached, '.2f'):>7} {fmt(total):>7} {fmt(tri):>7} {fmt(entry['ratio_triton'], '.2f'):>8} "
            f"{fmt(entry['ratio_triton_nvidia_only'], '.2f'):>13} {fmt(entry['ratio_triton_runtime'], '.1f'):>8}")
        if entry["ratio_triton"] is not None:
            goal(f"cold start {ours_name}: 10x faster than Triton's first call", entry["ratio_triton"], 10.0,
                 entry["ratio_triton"] >= 10.0)
    warm = ref("triton", "compile:runtime_warmup")
    if warm:
        out(f"(load $ = module load with the driver's JIT cache warm; Triton's own runtime warm-up, excluded above: "
            f"first call of an unrelated kernel {warm['compile_ms']:.0f} ms)")

    # ---- launch overhead
    out("")
    out("== launch overhead, host time per call (iris-host test cuda_world::typed_launch_overhead)")
    for name, v in launch["rows"].items():
        out(f"{name:<44} median {v['median_us']:.3f} us" + (f"  p90 {v['p90_us']:.3f} us" if v["p90_us"] else ""))
    if not launch["rows"]:
        out("(no numbers: the test did not run or printed nothing)")
    typed = next((v for k, v in launch["rows"].items() if k.startswith("typed launch")), None)
    raw = next((v for k, v in launch["rows"].items() if k.startswith("raw")), None)
    if typed and raw:
        goal("launch: typed launch within 1 us of raw cuLaunchKernel", typed["median_us"] - raw["median_us"], 1.0,
             typed["median_us"] - raw["median_us"] < 1.0)

    # ---- goals
    out("")
    out("== goals")
    for g in goals:
        v = g["value"]
        out(f"{g['status']:<10} {g['goal']:<62} {v:.3f} (target {g['target']})"
            + (f"  [{g['note']}]" if g["note"] else ""))
    all_ok = all(r.get("correct", True) for r in rows) and all(
        r.get("correct", True) for r in refs if "correct" in r)
    out(f"all results checked correct: {'yes' if all_ok else 'NO'}")
    for e in iris.get("errors", []):
        out(f"FAILED in the iris bench: {e}")

    merged = {"machine": machine, "device": dev, "config": iris.get("config"), "iris_rows": rows,
              "references": refs, "two_rank": two_rank, "all_gather": gather, "ping_pong": ping,
              "cold_start": cold, "compile_here": compile_here, "launch": launch, "goals": goals,
              "errors": iris.get("errors", []),
              "all_correct": all_ok}
    text = "\n".join(lines) + "\n"
    if args.out:
        with open(args.out, "w") as f:
            json.dump(merged, f, indent=1)
    if args.table:
        with open(args.table, "w") as f:
            f.write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
