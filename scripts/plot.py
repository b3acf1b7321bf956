#!/usr/bin/python3
# Plots from gdnbench CSVs (schema v1, reports/SCHEMA.md): time vs T with fitted slopes, speedup of
# each GDN variant over each attention baseline, o_rel_l2 vs T, and peak device memory vs T; for
# rows with a KV-cache context (decode, `--context`), one-step latency and memory vs the context L.
# Rows of external implementations (variants `ext:...`, scripts/ext_runner.py) join the same plots.
# Uses Debian's python3-matplotlib (scripts/setup.sh installs it), hence /usr/bin/python3.
#
#   scripts/plot.py reports/results/h200/fwd_bf16_B1_H32_K128.csv --outdir reports/results/h200/plots
import argparse
import csv
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator  # noqa: E402

VARYING = set()  # case fields with more than one value in the CSVs (set by main)
SHAPE = ("dtype", "B", "H", "HV", "K", "V")
SERIES = ("variant",) + SHAPE + ("chunk", "gate", "delta", "h0")  # every case field but T
NEEDED = ("schema_version", "variant", "family", "status", "T", "o_rel_l2", "time_median_ms",
          "peak_device_bytes") + SERIES


def read_rows(paths):
    rows = []
    for path in paths:
        try:
            with open(path, newline="") as f:
                reader = csv.DictReader(f)
                missing = [c for c in NEEDED if c not in (reader.fieldnames or [])]
                if missing:
                    sys.exit(f"plot.py: {path}: column '{missing[0]}' missing; not a gdnbench schema v1 CSV")
                for n, r in enumerate(reader, start=2):
                    if r["schema_version"] != "1":
                        sys.exit(f"plot.py: {path}: row {n} has schema_version '{r['schema_version']}'; this script reads 1")
                    rows.append(r)
        except OSError as e:
            sys.exit(f"plot.py: cannot read '{path}': {e.strerror}")
    return rows


def num(s):
    try:
        x = float(s)
    except (TypeError, ValueError):
        return math.nan
    return x


def series_of(rows, value, timed_only):
    """{series key: {T: value}}; the first row of a (series, T) wins, as in `gdnbench report`."""
    out = {}
    for r in rows:
        v = num(r[value])
        if (timed_only and r["status"] != "PASS") or not (v > 0) or math.isinf(v):
            continue
        out.setdefault(tuple(r[c] for c in SERIES), {}).setdefault(int(r["T"]), v)
    return out


def is_decode(r):
    """A row with a KV-cache context (`context` > 0): plotted against L, not T."""
    return num(r.get("context")) > 0


def fit_slope(ts, ys):
    """Least-squares slope of log y against log T (the fit of `gdnbench report`)."""
    lx = [math.log(t) for t in ts]
    ly = [math.log(y) for y in ys]
    n = len(lx)
    if n < 2:
        return math.nan
    mx, my = sum(lx) / n, sum(ly) / n
    sxx = sum((x - mx) ** 2 for x in lx)
    return sum((x - mx) * (y - my) for x, y in zip(lx, ly)) / sxx if sxx > 0 else math.nan


def label(key, shapes):
    """variant + dtype, plus every other case field that is not the same on every row."""
    d = dict(zip(SERIES, key))
    s = f"{d['variant']} {d['dtype']}"
    extra = [f"{c}={d[c]}" for c in SERIES[2:] if c in VARYING]
    return s + (" " + " ".join(extra) if extra else "")


def shape_title(shapes):
    if len(shapes) != 1:
        return f"{len(shapes)} shapes"
    d = dict(zip(SHAPE, next(iter(shapes))))
    return f"{d['dtype']}, B={d['B']} H={d['H']} HV={d['HV']} K={d['K']} V={d['V']}"


def style(i):
    """Distinct marker, size and line per series, so series that coincide stay visible."""
    return dict(marker="osD^v<>p"[i % 8], markersize=max(4.0, 10.0 - 1.8 * i),
                linestyle=["-", "--", "-.", ":"][i % 4], markerfacecolor="none" if i % 2 else None)


def token_axis(ax):
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(
        lambda x, _: f"{x / 1024:g}K" if x >= 1024 else f"{x:g}"))
    ax.set_xlabel("sequence length T (tokens, log scale)")
    ax.grid(True, which="major", alpha=0.4)
    ax.grid(True, which="minor", alpha=0.15)


def save(fig, outdir, name, formats):
    ax = fig.axes[0]
    n = len(ax.get_legend_handles_labels()[0])
    if n > 10:  # many series: the legend goes beside the axes, in small type
        ncol = 1 if n <= 28 else 2
        fig.set_size_inches(8 + 3.5 * ncol, max(5.5, 0.2 * n / ncol + 1.5))
        ax.legend(fontsize=7, ncol=ncol, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    for ext in formats:
        path = os.path.join(outdir, f"{name}.{ext}")
        fig.savefig(path, dpi=130, bbox_inches="tight")
        print(f"wrote {path}")
    plt.close(fig)


def plot_time(rows, shapes, outdir, formats):
    fig, ax = plt.subplots(figsize=(8, 5.5))
    for i, (key, by_t) in enumerate(sorted(series_of(rows, "time_median_ms", True).items())):
        ts = sorted(by_t)
        ys = [by_t[t] for t in ts]
        slope = fit_slope(ts, ys) if len(ts) >= 3 else math.nan
        # The upper half of the Ts, as `gdnbench report` and the claims fit it: small T is launch-bound.
        upper = ts[len(ts) // 2:] if len(ts) >= 4 else ts
        up = fit_slope(upper, [by_t[t] for t in upper]) if len(ts) >= 4 else math.nan
        fit = f" (slope {slope:.2f}" + (f", upper half {up:.2f})" if not math.isnan(up) else ")") \
            if not math.isnan(slope) else ""
        ax.plot(ts, ys, label=label(key, shapes) + fit, **style(i))
    token_axis(ax)
    ax.set_yscale("log")
    ax.set_ylabel("median time per forward (ms, log scale)")
    ax.set_title(f"Forward time vs T ({shape_title(shapes)})\n"
                 "slope: least squares of log time on log T (all Ts; upper half of the Ts)")
    ax.legend(fontsize=9)
    save(fig, outdir, "time_vs_T", formats)


def plot_speedup(rows, shapes, outdir, formats):
    family = {tuple(r[c] for c in SERIES): r["family"] for r in rows}
    series = series_of(rows, "time_median_ms", True)
    fig, ax = plt.subplots(figsize=(8, 5.5))
    drawn = 0
    for g, g_t in sorted(series.items()):
        if family[g] != "gdn":
            continue
        for a, a_t in sorted(series.items()):
            if family[a] != "attention" or g[1:7] != a[1:7]:  # same dtype, B, H, HV, K, V
                continue
            ts = sorted(set(g_t) & set(a_t))
            if not ts:
                continue
            ax.plot(ts, [a_t[t] / g_t[t] for t in ts], label=f"{label(g, shapes)} over {a[0]}",
                    **style(drawn))
            drawn += 1
    ax.axhline(1.0, color="black", linewidth=1, linestyle="--", label="equal time")
    token_axis(ax)
    ax.set_yscale("log", base=2)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}x"))
    ax.set_ylabel("speedup = attention time / GDN time (log scale)")
    ax.set_title(f"GDN speedup over attention baselines ({shape_title(shapes)})"
                 + ("" if drawn else "\nno GDN and attention series share a shape and a T"))
    ax.legend(fontsize=9)
    save(fig, outdir, "speedup_vs_T", formats)


def plot_accuracy(rows, shapes, outdir, formats):
    fig, ax = plt.subplots(figsize=(8, 5.5))
    for i, (key, by_t) in enumerate(sorted(series_of(rows, "o_rel_l2", False).items())):
        ts = sorted(by_t)
        ax.plot(ts, [by_t[t] for t in ts], label=label(key, shapes), **style(i))
    # The error of the float64 result rounded to the dtype: what an ideal kernel would show. It
    # depends on the reference, so GDN and attention each have their own.
    floor = {}
    for r in rows:
        if num(r.get("o_floor_rel_l2")) > 0:
            floor.setdefault((r["family"], r["dtype"]), {}).setdefault(int(r["T"]), num(r["o_floor_rel_l2"]))
    for i, ((family, dtype), by_t) in enumerate(sorted(floor.items())):
        ts = sorted(by_t)
        ax.plot(ts, [by_t[t] for t in ts], color="gray", linewidth=5, alpha=0.3,
                linestyle=["-", "--"][i % 2], label=f"{family} {dtype} rounding floor (o_floor_rel_l2)")
    bounds = sorted({num(r["tol_o"]) for r in rows if num(r.get("tol_o")) > 0})
    for b in bounds:
        ax.axhline(b, color="red", linewidth=1, linestyle=":", label=f"pass bound {b:g}")
    token_axis(ax)
    ax.set_yscale("log")
    ax.set_ylabel("o_rel_l2 = ||o - ref|| / ||ref|| (log scale)")
    ax.set_title(f"Output error vs T ({shape_title(shapes)})\ncoinciding series: same error, drawn with smaller markers")
    ax.legend(fontsize=9)
    save(fig, outdir, "o_rel_l2_vs_T", formats)


def plot_memory(rows, shapes, outdir, formats):
    fig, ax = plt.subplots(figsize=(8, 5.5))
    for i, (key, by_t) in enumerate(sorted(series_of(rows, "peak_device_bytes", False).items())):
        ts = sorted(by_t)
        ax.plot(ts, [by_t[t] / 2**30 for t in ts], label=label(key, shapes), **style(i))
    token_axis(ax)
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(base=10))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
    ax.set_ylabel("peak device memory (GiB, log scale)")
    ax.set_title(f"GPU memory allocated by one case vs T ({shape_title(shapes)})")
    ax.legend(fontsize=9)
    save(fig, outdir, "peak_memory_vs_T", formats)


def plot_decode(rows, outdir, formats, value, name, ylabel, title, scale=1.0):
    """One line per decode series (every case field but the context) against the context L."""
    series = {}
    for r in rows:
        v = num(r[value])
        if r["status"] != "PASS" or not (v > 0) or math.isinf(v):
            continue
        key = tuple(r[c] for c in SERIES) + (r["family"],)
        series.setdefault(key, {}).setdefault(int(num(r["context"])), v * scale)
    if not series:  # e.g. memory on the CPU backend, which records none
        print(f"{name}: no PASS row with {value}; not drawn")
        return
    fig, ax = plt.subplots(figsize=(8, 5.5))
    varying = [c for c in SERIES[1:] if len({k[SERIES.index(c)] for k in series}) > 1]
    for i, (key, by_l) in enumerate(sorted(series.items())):
        d = dict(zip(SERIES, key))
        label = f"{d['variant']} ({key[-1]}) " + " ".join(f"{c}={d[c]}" for c in varying)
        ls = sorted(by_l)
        ax.plot(ls, [by_l[x] for x in ls], label=label.strip(), **style(i))
    token_axis(ax)
    ax.set_xlabel("context L (tokens in the KV cache / summarised by the state, log scale)")
    ax.set_yscale("log")
    ax.set_ylabel(ylabel)
    shapes = {tuple(r[c] for c in SHAPE) for r in rows}
    ax.set_title(f"{title} ({shape_title(shapes)})")
    ax.legend(fontsize=9)
    save(fig, outdir, name, formats)


def main():
    p = argparse.ArgumentParser(description=__doc__ or "Plots from gdnbench CSVs (schema v1).")
    p.add_argument("csv", nargs="+", help="gdnbench CSV files (schema v1)")
    p.add_argument("--outdir", default="reports/plots", help="directory for the images (created)")
    p.add_argument("--formats", default="png,svg", help="comma-separated image formats")
    args = p.parse_args()
    rows = read_rows(args.csv)
    if not rows:
        sys.exit("plot.py: the CSVs hold no rows")
    os.makedirs(args.outdir, exist_ok=True)
    formats = [f for f in args.formats.split(",") if f]
    decode = [r for r in rows if is_decode(r)]
    rows = [r for r in rows if not is_decode(r)]
    if rows:
        shapes = {tuple(r[c] for c in SHAPE) for r in rows}
        VARYING.clear()
        VARYING.update(c for c in SERIES[1:] if len({r[c] for r in rows}) > 1)
        plot_time(rows, shapes, args.outdir, formats)
        plot_speedup(rows, shapes, args.outdir, formats)
        plot_accuracy(rows, shapes, args.outdir, formats)
        plot_memory(rows, shapes, args.outdir, formats)
    if decode:
        plot_decode(decode, args.outdir, formats, "time_median_ms", "decode_latency_vs_L",
                    "median time of one decode step (ms, log scale)", "Decode latency vs context L")
        plot_decode(decode, args.outdir, formats, "peak_device_bytes", "decode_memory_vs_L",
                    "peak device memory of one decode step (MiB, log scale)",
                    "Decode memory vs context L", scale=1.0 / 2**20)


if __name__ == "__main__":
    main()
