#!/usr/bin/python3
# Plots from gdnbench CSVs (schema v1, reports/SCHEMA.md): time vs T with fitted slopes, speedup of
# each GDN variant over each attention baseline, o_rel_l2 vs T, and peak device memory vs T; for
# rows with a KV-cache context (decode, `--context`), one-step latency and memory vs the context L;
# for a batch sweep (one T, several B: e.g. fused_decode's step over B), time and bandwidth vs B.
# Rows of external implementations (variants `ext:...`, scripts/ext_runner.py) join the same plots.
# `--anchors FILE` adds forward times measured outside the harness (the rows with what=fwd of an
# anchors CSV: impl, B, H, D, T, ms) to the time plot as hollow markers on dotted lines, and its
# attention anchors (sdpa_*) to the speedup plot as baselines. The time plot also draws the floor
# max(FLOPs / GEMM rate, bytes / copy bandwidth) of the CSVs' rows under the series.
# Bad input (a CSV or anchors file that does not parse as described) is one line on stderr, exit 2.
# Uses Debian's python3-matplotlib (scripts/setup.sh installs it), hence /usr/bin/python3.
#
#   scripts/plot.py reports/results/h200/run62/fwd_bf16_B1_H32_K128_v7.csv --outdir /tmp/plots
import argparse
import csv
import math
import os
import re
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
ANCHOR_NEEDED = ("what", "impl", "B", "H", "D", "T", "ms")
ANCHOR_NAMES = {"fla_chunk": "FLA chunk", "fla_fused_recurrent": "FLA fused_recurrent",
                "sdpa_flash": "SDPA flash", "sdpa_cudnn": "SDPA cuDNN"}
DTYPES = {"bf16": "bf16", "bfloat16": "bf16", "fp16": "fp16", "float16": "fp16", "f16": "fp16",
          "fp32": "fp32", "float32": "fp32", "f32": "fp32"}


def die(message):
    """Bad input: one line on stderr and exit 2, as gdnbench does for a usage error."""
    print(f"plot.py: {message}", file=sys.stderr)
    sys.exit(2)


def read_rows(paths):
    rows = []
    for path in paths:
        try:
            with open(path, newline="") as f:
                reader = csv.DictReader(f)
                missing = [c for c in NEEDED if c not in (reader.fieldnames or [])]
                if missing:
                    die(f"{path}: column '{missing[0]}' missing; not a gdnbench schema v1 CSV")
                for n, r in enumerate(reader, start=2):
                    if r["schema_version"] not in ("1", "2", "3", "4", "5"):
                        die(f"{path}: row {n} has schema_version '{r['schema_version']}'; this script reads 1 to 5")
                    # The plots are of the forward of one sequence against T; backward rows (v4's pass
                    # column) and packed batches (v5's seqlens: T is a total of several) are left out.
                    if r.get("pass", "fwd") in ("", "fwd") and not r.get("seqlens"):
                        rows.append(r)
        except OSError as e:
            die(f"cannot read '{path}': {e.strerror}")
    return rows


def read_anchors(path):
    """The what=fwd rows of an anchors file as dicts (impl, dtype, B, H, D, T, ms), with the checks
    of `gdnbench report --anchors`: the figures sit beside measured ones, so nothing is guessed."""
    where = f"--anchors {path}"
    try:
        with open(path, newline="") as f:
            lines = list(csv.reader(f, strict=True))
    except OSError as e:
        die(f"--anchors: cannot read '{path}': {e.strerror}")
    except csv.Error as e:
        die(f"{where}: {e}")
    if not lines:
        die(f"{where}: empty file, no CSV header")
    header = lines[0]
    for c in ANCHOR_NEEDED:
        if c not in header:
            die(f"{where}: column '{c}' missing; an anchors file has what, impl, B, H, D, T, ms")
    out, seen = [], {}
    for n, fields in enumerate(lines[1:], start=2):
        if len(fields) != len(header):
            die(f"{where}: row {n} has {len(fields)} fields, the header {len(header)}")
        d = dict(zip(header, fields))
        if d["what"] != "fwd":
            continue
        a = {"impl": d["impl"]}
        if not a["impl"]:
            die(f"{where}: row {n} (what=fwd) has no impl")
        for c in ("B", "H", "D", "T"):
            if not re.fullmatch(r"[0-9]+", d[c]) or int(d[c]) <= 0:
                die(f"{where}: row {n} (what=fwd, {a['impl']}): {c} '{d[c]}' is not a positive integer")
            a[c] = int(d[c])
        ms = num(d["ms"])
        if not (ms > 0) or math.isinf(ms):
            die(f"{where}: row {n} (what=fwd, {a['impl']}): ms '{d['ms']}' is not a positive number")
        a["ms"] = ms
        dtype = d.get("dtype", "")
        if dtype and dtype not in DTYPES:
            die(f"{where}: row {n}: dtype '{dtype}' unknown (bf16, fp16, fp32)")
        a["dtype"] = DTYPES[dtype] if dtype else "bf16"  # the anchors' README: bf16 unless a column says otherwise
        key = (a["impl"], a["dtype"], a["B"], a["H"], a["D"], a["T"])
        if key in seen:
            die(f"{where}: row {n} repeats {a['impl']} at B={a['B']} H={a['H']} D={a['D']} T={a['T']} "
                f"of row {seen[key]}")
        seen[key] = n
        out.append(a)
    if not out:
        die(f"{where}: no row with what=fwd")
    return out


def anchor_family(impl):
    """The problem an anchor implementation solves, as `gdnbench report` reads the names."""
    return "gdn" if impl.startswith("fla_") else "attention" if impl.startswith("sdpa_") else ""


def anchor_shape(a):
    """The CSV shape key (dtype, B, H, HV, K, V) of an anchor: one head count, one head dim."""
    return (a["dtype"], str(a["B"]), str(a["H"]), str(a["H"]), str(a["D"]), str(a["D"]))


def floors(rows):
    """{(family, shape): {T: floor ms}} from the rows that recorded counts and ceilings: the time at
    the better of the measured GEMM rate and copy bandwidth, as `gdnbench report` computes it."""
    out = {}
    for r in rows:
        vals = [num(r.get(c)) for c in ("flops", "min_bytes", "ceiling_tflops", "ceiling_gbps")]
        if not all(v > 0 and not math.isinf(v) for v in vals):
            continue
        flops, nbytes, tflops, gbps = vals
        f = max(flops / (tflops * 1e9), nbytes / (gbps * 1e6))
        out.setdefault((r["family"], tuple(r[c] for c in SHAPE)), {}).setdefault(int(r["T"]), f)
    return out


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


def plot_time(rows, shapes, outdir, formats, anchors):
    fig, ax = plt.subplots(figsize=(8, 5.5))
    anchors = [a for a in anchors if anchor_shape(a) in shapes]
    floor = floors(rows)
    for i, ((family, shape), by_t) in enumerate(sorted(floor.items())):
        ts = sorted(by_t)
        where = "" if len(shapes) == 1 else " " + shape_title({shape})
        ax.plot(ts, [by_t[t] for t in ts], color="gray", linewidth=5, alpha=0.3,
                linestyle=["-", "--"][i % 2],
                label=f"{'GDN' if family == 'gdn' else family} floor{where} (measured ceilings):\n"
                      "max(FLOPs / GEMM rate, bytes / copy BW)")
    for i, (key, by_t) in enumerate(sorted(series_of(rows, "time_median_ms", True).items())):
        ts = sorted(by_t)
        ys = [by_t[t] for t in ts]
        slope = fit_slope(ts, ys) if len(ts) >= 3 else math.nan
        # The upper half of the Ts, as `gdnbench report` and the claims fit it: small T is launch-bound.
        upper = ts[len(ts) // 2:] if len(ts) >= 4 else ts
        up = fit_slope(upper, [by_t[t] for t in upper]) if len(ts) >= 4 else math.nan
        fit = f" (slope {slope:.2f}" + (f", upper half {up:.2f})" if not math.isnan(up) else ")") \
            if not math.isnan(slope) else ""
        st = style(i)
        if anchors:  # beside the anchors' hollow markers the harness's own series are all filled
            st["markerfacecolor"] = None
        ax.plot(ts, ys, label=label(key, shapes) + fit, **st)
    impls = list(dict.fromkeys(a["impl"] for a in anchors))
    for j, impl in enumerate(impls):
        for shape in sorted({anchor_shape(a) for a in anchors if a["impl"] == impl}):
            by_t = {a["T"]: a["ms"] for a in anchors if a["impl"] == impl and anchor_shape(a) == shape}
            ts = sorted(by_t)
            where = "" if len(shapes) == 1 else " " + shape_title({shape})
            ax.plot(ts, [by_t[t] for t in ts], marker="^v<>hH*X"[j % 8], markersize=9,
                    markerfacecolor="none", markeredgewidth=1.6, linestyle=":", linewidth=1.3,
                    label=f"{ANCHOR_NAMES.get(impl, impl)} (anchors){where}")
    token_axis(ax)
    ax.set_yscale("log")
    ax.set_ylabel("median time per forward (ms, log scale)")
    ax.set_title(f"Forward time vs T ({shape_title(shapes)})\n"
                 "slope: least squares of log time on log T (all Ts; upper half of the Ts)"
                 + ("\nhollow markers, dotted: anchors (PyTorch/FLA run, not this harness)" if anchors else ""))
    if anchors or floor:  # anchors and floors span the plot area from corner to corner: legend beside it
        ax.legend(fontsize=9, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    else:
        ax.legend(fontsize=9)
    save(fig, outdir, "time_vs_T", formats)


def plot_speedup(rows, shapes, outdir, formats, anchors):
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
    # Attention anchors as baselines too, drawn apart (dotted, hollow): their times come from
    # another timer on another run.
    baselines = {}
    for a in anchors:
        if anchor_family(a["impl"]) == "attention" and anchor_shape(a) in shapes:
            baselines.setdefault((a["impl"], anchor_shape(a)), {})[a["T"]] = a["ms"]
    from_anchors = 0
    for g, g_t in sorted(series.items()):
        if family[g] != "gdn":
            continue
        for (impl, shape), a_t in baselines.items():
            ts = sorted(set(g_t) & set(a_t))
            if g[1:7] != shape or not ts:
                continue
            ax.plot(ts, [a_t[t] / g_t[t] for t in ts],
                    label=f"{label(g, shapes)} over {ANCHOR_NAMES.get(impl, impl)} (anchors)",
                    **dict(style(drawn), linestyle=":", markerfacecolor="none", markeredgewidth=1.4))
            drawn += 1
            from_anchors += 1
    ax.axhline(1.0, color="black", linewidth=1, linestyle="--", label="equal time")
    token_axis(ax)
    ax.set_yscale("log", base=2)
    # Every power of two gets its tick (the default thins them to every other), so 1x is labelled.
    ax.yaxis.set_major_locator(LogLocator(base=2, numticks=24))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}x"))
    ax.set_ylabel("speedup = attention time / GDN time (log scale)")
    ax.set_title(f"GDN speedup over attention baselines ({shape_title(shapes)})"
                 + ("" if drawn else "\nno GDN and attention series share a shape and a T")
                 + ("\ndotted, hollow: over an anchor (PyTorch/FLA run, not this harness)" if from_anchors else ""))
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


def draw_series(rows, x_field, keys, vary, value, name, label_of, scale=1.0):
    """One line per series (the fields `keys`) of the PASS rows' `value` against `x_field`, log y;
    the legend names the fields of `vary` that differ between series. None when no row has it."""
    series = {}
    for r in rows:
        v = num(r.get(value, ""))
        if r["status"] != "PASS" or not (v > 0) or math.isinf(v):
            continue
        series.setdefault(tuple(r[c] for c in keys), {}).setdefault(int(num(r[x_field])), v * scale)
    if not series:  # e.g. memory on the CPU backend, which records none
        print(f"{name}: no PASS row with {value}; not drawn")
        return None
    fig, ax = plt.subplots(figsize=(8, 5.5))
    varying = [c for c in vary if len({k[keys.index(c)] for k in series}) > 1]
    for i, (key, by_x) in enumerate(sorted(series.items())):
        d = dict(zip(keys, key))
        xs = sorted(by_x)
        ax.plot(xs, [by_x[x] for x in xs], label=label_of(d, varying).strip(), **style(i))
    ax.set_yscale("log")
    ax.legend(fontsize=9)
    return fig, ax


def plot_decode(rows, outdir, formats, value, name, ylabel, title, scale=1.0):
    """One line per decode series (every case field but the context) against the context L."""
    drawn = draw_series(rows, "context", SERIES + ("family",), SERIES[1:], value, name,
                        lambda d, vary: f"{d['variant']} ({d['family']}) " + " ".join(f"{c}={d[c]}" for c in vary),
                        scale)
    if not drawn:
        return
    fig, ax = drawn
    token_axis(ax)
    ax.set_xlabel("context L (tokens in the KV cache / summarised by the state, log scale)")
    ax.set_ylabel(ylabel)
    shapes = {tuple(r[c] for c in SHAPE) for r in rows}
    ax.set_title(f"{title} ({shape_title(shapes)})")
    save(fig, outdir, name, formats)


def is_batch_sweep(rows):
    """One T and more than one B: plotted against B (a sweep of T = 1 decode steps over the batch)."""
    return len({r["T"] for r in rows}) == 1 and len({r["B"] for r in rows}) > 1


def plot_batch(rows, outdir, formats, value, name, ylabel, title):
    """One line per series (every case field but B) against the batch B."""
    keys = tuple(c for c in SERIES if c != "B")
    drawn = draw_series(rows, "B", keys, keys[1:], value, name,
                        lambda d, vary: d["variant"] + " " + " ".join(f"{c}={d[c]}" for c in vary))
    if not drawn:
        return
    fig, ax = drawn
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batch B (sequences, one step each; log scale)")
    ax.set_ylabel(ylabel)
    d = rows[0]
    ax.set_title(f"{title} (T={d['T']} H={d['H']} HV={d['HV']} K={d['K']} V={d['V']})")
    save(fig, outdir, name, formats)


def main():
    p = argparse.ArgumentParser(description=__doc__ or "Plots from gdnbench CSVs (schema v1).")
    p.add_argument("csv", nargs="+", help="gdnbench CSV files (schema v1)")
    p.add_argument("--outdir", default="reports/plots", help="directory for the images (created)")
    p.add_argument("--formats", default="png,svg", help="comma-separated image formats")
    p.add_argument("--anchors", help="anchors CSV (what, impl, B, H, D, T, ms): its what=fwd rows join "
                   "the time plot as hollow markers, its sdpa_* rows the speedup plot as baselines")
    args = p.parse_args()
    rows = read_rows(args.csv)
    anchors = read_anchors(args.anchors) if args.anchors else []
    if not rows:
        die("the CSVs hold no rows")
    os.makedirs(args.outdir, exist_ok=True)
    formats = [f for f in args.formats.split(",") if f]
    decode = [r for r in rows if is_decode(r)]
    rows = [r for r in rows if not is_decode(r)]
    if rows and is_batch_sweep(rows):
        plot_batch(rows, args.outdir, formats, "time_median_ms", "step_latency_vs_B",
                   "median time of one step (ms, log scale)", "Latency vs batch")
        plot_batch(rows, args.outdir, formats, "gbps", "step_bandwidth_vs_B",
                   "minimum bytes / median time (GB/s, log scale)", "Bandwidth vs batch")
    elif rows:
        shapes = {tuple(r[c] for c in SHAPE) for r in rows}
        VARYING.clear()
        VARYING.update(c for c in SERIES[1:] if len({r[c] for r in rows}) > 1)
        plot_time(rows, shapes, args.outdir, formats, anchors)
        plot_speedup(rows, shapes, args.outdir, formats, anchors)
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
