#!/usr/bin/python3
# Summary of run 83's block timelines (docs/experiments/decode-trace.patch writes them: kernel 0 =
# the vector front end, 1 = the state kernel; start, after griddepcontrol.wait, end in ns of
# %globaltimer, and the SM). Times in us from the first block's start.
#   docs/device-calls/trace_summary.py reports/results/h200/run83/trace_*.csv.gz
import csv, gzip, statistics as st, sys


def summary(path):
    rows = list(csv.DictReader(gzip.open(path, "rt") if path.endswith(".gz") else open(path)))
    t0 = min(int(r["start"]) for r in rows)
    us = lambda r, k: (int(r[k]) - t0) / 1000.0
    fe = [r for r in rows if r["kernel"] == "0"]
    sk = [r for r in rows if r["kernel"] == "1"]
    start = [us(r, "start") for r in sk]
    life = [us(r, "end") - us(r, "start") for r in sk]
    order = sorted(range(len(sk)), key=lambda i: start[i])
    ends = sorted(us(r, "end") for r in sk)
    mid = len(order) // 2
    return {
        "fe_end": max(us(r, "end") for r in fe),
        "fe_block_life": st.median(us(r, "end") - us(r, "start") for r in fe),
        "state_first_start": min(start),
        "state_first_wait": min(us(r, "wait") for r in sk),
        "state_last_start": max(start),
        "state_end": ends[-1],
        "end_50pct": ends[len(ends) // 2],
        "end_90pct": ends[int(len(ends) * 0.9)],
        "life_middle_200": st.median(life[i] for i in order[mid - 100:mid + 100]),
        "life_last_200": st.median(life[i] for i in order[-200:]),
    }


for path in sys.argv[1:]:
    print(path, " ".join(f"{k}={v:.2f}" for k, v in summary(path).items()))
