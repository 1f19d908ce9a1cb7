#!/usr/bin/env python3
"""A/B of two bench_decode binaries in one run (docs/roofline.md): the binaries alternate, ROUNDS times,
so both see the same drift of this shared machine; per case it prints the best tok/s of each, the
per-round ratios (their spread says how much the figures can be trusted), the roofline counters and
attention's share (ms_attention, GB/s_attention) of the best runs, and the load average during the runs; then
each best run's in-process bandwidth probe and the GB/s (ms) of its matmul phases (bench_decode's split).

  load-tests/ab_decode.py 3 's110m/int8(/kv_f16)?/streams:(1|16|64)' OLD/bench_decode NEW/bench_decode

Copy a binary aside first if its build directory may be rebuilt during the run. The s110m checkpoint
is $PAGEDSERVE_S110M, as for bench_decode.
"""
import collections
import json
import os
import subprocess
import sys


def run_cases(binary, case_filter):
    """tok/s and counters of every case of one bench_decode run, by case name."""
    out = subprocess.run([binary, "--benchmark_filter=" + case_filter, "--benchmark_min_time=1",
                          "--benchmark_format=json"], capture_output=True, text=True, check=True).stdout
    # spdlog's lines (model loading) share stdout with the JSON.
    out = "\n".join(line for line in out.splitlines() if not line.startswith("[20"))
    benchmarks = json.loads(out[out.index("{"):])["benchmarks"]
    return {b["name"].split("/min_time")[0]: b for b in benchmarks}


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    rounds, case_filter, old, new = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    best = collections.defaultdict(dict)  # case -> {"old"/"new": benchmark of the best tok/s}
    ratios = collections.defaultdict(list)  # case -> new / old tok/s, one per round
    loads = []
    for r in range(rounds):
        this_round = {}
        for side, binary in (("old", old), ("new", new)):
            loads.append(os.getloadavg()[0])
            this_round[side] = run_cases(binary, case_filter)
            for case, b in this_round[side].items():
                if side not in best[case] or b["tok/s"] > best[case][side]["tok/s"]:
                    best[case][side] = b
            print(f"round {r + 1}/{rounds} {side} done", file=sys.stderr)
        for case in this_round["old"].keys() & this_round["new"].keys():
            ratios[case].append(this_round["new"][case]["tok/s"] / this_round["old"][case]["tok/s"])
    print(f"load average (1 min) during the runs: {min(loads):.1f} .. {max(loads):.1f}")
    print(f"{'case':36} {'old tok/s':>9} {'new tok/s':>9} {'old roof':>8} {'new roof':>8} {'new bound':>9} "
          f"{'old ms_att':>10} {'new ms_att':>10} {'old GB/s_att':>12} {'new GB/s_att':>12}  new/old per round")
    for case, sides in best.items():
        o, n = sides.get("old"), sides.get("new")
        if not o or not n:
            continue
        per_round = " ".join(f"{x:.2f}" for x in ratios[case])
        nan = float("nan")
        print(f"{case:36} {o['tok/s']:9.1f} {n['tok/s']:9.1f} {o['roofline']:8.3f} {n['roofline']:8.3f} "
              f"{n.get('bound', nan):9.3f} {o.get('ms_attention', nan):10.2f} {n.get('ms_attention', nan):10.2f} "
              f"{o.get('GB/s_attention', nan):12.1f} {n.get('GB/s_attention', nan):12.1f}  {per_round}")
    # The split of the best runs: each matmul phase's GB/s (ms) and the in-process bandwidth probe.
    for case, sides in best.items():
        for side in ("old", "new"):
            b = sides.get(side)
            if not b or "bw_GB/s" not in b:
                continue
            phases = " ".join(f"{p} {b['GB/s_' + p]:.1f} ({b['ms_' + p]:.3f})" for p in
                              ("qkv", "wo", "ffn_up", "ffn_down", "classifier") if "GB/s_" + p in b)
            print(f"  {case} {side}: probe {b['bw_GB/s']:.1f} GB/s, ratio {b.get('ratio', float('nan')):.3f}; {phases}")


if __name__ == "__main__":
    main()
