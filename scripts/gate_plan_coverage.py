#!/usr/bin/env python3
"""The gate's reach, measured on the machine that ran it: every (variant, stage option, dtype) that
`gdnbench list --plans` lists must appear in a PASS row of the gate's CSV (its `plan` column, one
option per stage that ran joined by '/', a detail in parentheses after them: a forward row names no
backward stage, a backward row no forward one; option names are distinct across a variant's stages,
so each names its stage). tests/kernels/test_plans.cpp proves the same from the plan functions on
the H200's facts; this checks what the launches recorded. A PASS row naming an option the list
does not have (a list of another build) fails too: it proves nothing.

    build/gdnbench list --plans > plans.txt
    build/gdnbench verify --suite gate --out gate.csv
    scripts/gate_plan_coverage.py plans.txt gate.csv      # exit 1 and the list of what no row ran
"""
import csv
import sys


def plans_table(path):
    table = {}  # variant -> list of stages, each a dict option -> set of dtypes
    stage_index = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) != 4 or parts[0] == "variant":
                continue
            variant, stage, option, dtypes = parts
            stages = table.setdefault(variant, [])
            key = (variant, stage)
            if key not in stage_index:
                stage_index[key] = len(stages)
                stages.append({})
            stages[stage_index[key]][option] = set(dtypes.split(","))
    return table


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        print("usage: gate_plan_coverage.py PLANS.txt GATE.csv", file=sys.stderr)
        return 2
    table = plans_table(argv[1])
    if not table:
        print(f"gate_plan_coverage: {argv[1]} lists no plans", file=sys.stderr)
        return 2
    stage_of = {(variant, option): i for variant, stages in table.items()
                for i, options in enumerate(stages) for option in options}
    reached = set()
    unknown = set()
    rows = failed = 0
    with open(argv[2], newline="") as f:
        for r in csv.DictReader(f):
            rows += 1
            if r["status"] == "FAIL":
                failed += 1
            if r["status"] != "PASS" or not r.get("plan"):
                continue
            for o in r["plan"].split(" (")[0].split("/"):
                stage = stage_of.get((r["variant"], o))
                if stage is None:
                    unknown.add(f"{r['variant']} {o}")
                else:
                    reached.add((r["variant"], stage, o, r["dtype"]))
    missing = []
    present = {v for (v, _, _, _) in reached}
    for variant, stages in table.items():
        if variant not in present and variant.startswith("cpu_"):
            continue  # the CPU backend runs where there is no GPU
        for i, options in enumerate(stages):
            for option, dtypes in options.items():
                for dt in sorted(dtypes):
                    if (variant, i, option, dt) not in reached:
                        missing.append(f"{variant} stage {i} {option} {dt}")
    print(f"gate_plan_coverage: {rows} rows, {failed} FAIL, {len(reached)} (variant, stage, option, dtype) reached, "
          f"{len(missing)} missing" + (f", {len(unknown)} options not in {argv[1]}" if unknown else ""))
    for m in missing:
        print("  not reached:", m)
    for u in sorted(unknown):
        print("  not in the plans list:", u)
    return 1 if missing or failed or unknown else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
