#!/usr/bin/python3
"""One model's `modelbench tune` search log, for bench/tune.sh's report.

Usage: tune_summary.py LOG.json NAME

Prints every uniform option (its latest measurement, the one the search
judged it by, accurate or not, and how it left the search), the per-node configurations measured or skipped,
the fastest accurate uniform option, the winner (nodes kept in float,
share of FLOPs in int8) and the search's wall time.
"""

import json
import sys


def fmt(value, spec):
    return "-" if value is None else format(value, spec)


def main():
    d = json.load(open(sys.argv[1]))
    name = sys.argv[2]
    steps = d["steps"]
    print(f"\n== {name}: search {d['wall_seconds']:.1f} s, "
          f"budget 1 - cosine <= {d['max_error']:g}")
    # Each option's latest measurement: the one the search judged it by.
    last = {}
    for s in steps:
        if s["phase"] == "uniform":
            last[s["conversion"]] = s
    print("%-24s %10s %10s %9s  %s" % ("uniform option", "median ms", "cosine",
                                       "accurate", "outcome"))
    order = sorted(last.items(), key=lambda kv: (kv[1]["median_ms"] is None,
                                                 kv[1]["median_ms"] or 0))
    for conv, s in order:
        why = (last[conv]["dropped"] or "in the last round")[:70]
        print("%-24s %10s %10s %9s  %s" % (
            conv, fmt(s["median_ms"], ".2f"), fmt(s["cosine"], ".6f"),
            "yes" if s["accurate"] else "no", why))
    for s in steps:
        if s["phase"] == "mixed":
            print(f"per-node  {s['conversion']}: {len(s['kept_float'])} nodes in float "
                  f"({fmt(100 * s['int8_flops_share'] if s['int8_flops_share'] is not None else None, '.1f')}% "
                  f"of FLOPs in int8), {fmt(s['median_ms'], '.2f')} ms, cosine "
                  f"{fmt(s['cosine'], '.6f')}, {'accurate' if s['accurate'] else 'inaccurate'}")
        elif any(w in (s["dropped"] or "") for w in ("not measured", "no per-node search")):
            print(f"per-node  {s['conversion']}: {s['dropped']}")
    fu = d["fastest_uniform"]
    if fu is not None:
        s = steps[fu]
        print(f"fastest accurate uniform: {s['conversion']} {s['median_ms']:.2f} ms, "
              f"cosine {s['cosine']:.6f}")
    if d["winner"] is None:
        print("tuned: " + d["summary"])
        return
    w = steps[d["winner"]]
    share = w["int8_flops_share"]
    share = "-" if share is None else "%.1f%%" % (100 * share)
    print(f"tuned: {w['conversion']} {w['median_ms']:.2f} ms, cosine {w['cosine']:.6f}, "
          f"kept in float: {', '.join(w['kept_float']) or 'none'}, int8 share of FLOPs "
          f"{share}")
    print("       " + ("per-node precision beats every accurate uniform option"
                       if w["phase"] == "mixed" else
                       "no per-node configuration beats the fastest accurate uniform option"))


if __name__ == "__main__":
    main()
