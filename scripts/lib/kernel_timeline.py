#!/usr/bin/env python3
"""Each rank's kernels inside the calls of one traced operation (an IRIS_TRACE trace.json):
for every kernel of every rank, the median start and end over the calls, in microseconds
from the call's first kernel on any rank, and the same for the kernels' own events
(`trace_event`, a build with the `trace-events` feature; indented, as `event ID#n`, with
the median of the events' values). Then the same rows over the ranks, call by call: the
medians of each call's first start and last end over the ranks (a per-rank median hides
which rank is last in a call: the last end of a barrier is the one that counts). What
docs/performance.md's timelines are. A block keeps its latest IRIS_TRACE_EVENTS events
(default 256): raise it to keep the events of calls early in a long run.

Usage: kernel_timeline.py TRACE.json [CALL_NAME_PART] (default: all_gather_matmul)
"""
import collections
import json
import statistics
import sys


def main():
    trace = json.load(open(sys.argv[1]))
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    want = sys.argv[2] if len(sys.argv) > 2 else "all_gather_matmul"
    calls = collections.defaultdict(list)  # rank -> [(start, end)]
    kernels = collections.defaultdict(list)  # rank -> [(start, end, name)]
    marks = collections.defaultdict(list)  # rank -> [(ts, name)]: the kernels' own events
    for e in events:
        if e.get("ph") not in ("X", "i"):
            continue
        start = float(e["ts"])
        end = start + float(e.get("dur", 0))
        if e.get("cat") == "call" and e.get("tid") == 1 and want in e["name"]:
            calls[e["pid"]].append((start, end))
        elif e.get("cat") == "kernel":
            kernels[e["pid"]].append((start, end, e["name"]))
        elif e.get("cat") == "event":
            marks[e["pid"]].append((start, e["name"], e.get("args", {}).get("value", 0)))
    ranks = sorted(calls)
    if not ranks:
        sys.exit(f"kernel_timeline: no call named like {want!r} in {sys.argv[1]}")
    # Calls by their kernels (one bench runs several forms of a call): a timeline each.
    forms = collections.defaultdict(lambda: (collections.defaultdict(list), [], collections.defaultdict(list)))
    for i in range(min(len(calls[r]) for r in ranks)):
        t0 = min(calls[r][i][0] for r in ranks)
        inside = {}
        for r in ranks:
            s, e = calls[r][i]
            inside[r] = sorted((*k, None) for k in kernels[r] if k[0] >= s - 1 and k[1] <= e + 1)
            inside[r] += sorted((t, t, f"  {n}", v) for t, n, v in marks[r] if s - 1 <= t <= e + 1)
        form = tuple(sorted({k[2] for ks in inside.values() for k in ks if not k[2].startswith(" ")}))
        rows, totals, over_ranks = forms[form]
        totals.append(max(calls[r][i][1] for r in ranks) - t0)
        this_call = collections.defaultdict(list)  # name#n -> [(start, end)] over the ranks
        for r in ranks:
            seen = collections.Counter()
            for ks, ke, name, value in inside[r]:
                seen[name] += 1
                rows[(r, f"{name}#{seen[name]}")].append((ks - t0, ke - t0, value))
                this_call[f"{name}#{seen[name]}"].append((ks - t0, ke - t0))
        for name, spans in this_call.items():
            if len(spans) == len(ranks):
                over_ranks[name].append((min(x[0] for x in spans), max(x[1] for x in spans)))
    for form, (rows, totals, over_ranks) in forms.items():
        print(f"{want} ({', '.join(form)}): ranks {ranks}, {len(totals)} calls, "
              f"call median {statistics.median(totals):.1f} us")
        by_start = sorted(rows.items(), key=lambda kv: (kv[0][0], statistics.median(x[0] for x in kv[1])))
        for (r, name), v in by_start:
            start = statistics.median(x[0] for x in v)
            end = statistics.median(x[1] for x in v)
            values = [x[2] for x in v if x[2] is not None]
            value = f"  value {statistics.median(values):g}" if values else ""
            print(f"  rank {r} {name[:36]:<36} {start:9.1f} - {end:9.1f}{value}")
        print("  over the ranks, call by call (medians of the first start and the last end):")
        by_first = sorted(over_ranks.items(), key=lambda kv: statistics.median(x[0] for x in kv[1]))
        for name, v in by_first:
            first = statistics.median(x[0] for x in v)
            last = statistics.median(x[1] for x in v)
            print(f"  all    {name[:36]:<36} {first:9.1f} - {last:9.1f}")

if __name__ == "__main__":
    main()
