"""What scripts/ext_runner.py needs that neither touches a GPU nor imports torch: gdnbench's dump,
check and CSV header, the CSV rows and their writer, and the sampling policy of the harness.

The runner's parent process imports only this module, so a CUDA fault in a measurement (which
lives in a child process) can never poison the process that writes the CSV.
"""
import csv
import json
import math
import os
import signal
import subprocess
import sys
import time


def fail(msg):
    sys.exit(f"ext_runner: {msg}")


def first_line(exc):
    """`Type: message` cut to its first line: what a CSV reason can hold."""
    text = f"{type(exc).__name__}: {exc}".strip()
    return text.splitlines()[0] if text else type(exc).__name__


def write_json(path, obj):
    """Atomic, so a child killed mid-write leaves the previous stage readable, never half a file."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f)
    os.replace(tmp, path)


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


# ---- gdnbench: dump, check, the CSV header ------------------------------------------------------

def run_gdnbench(binary, args, ok=(0,)):
    p = subprocess.run([binary] + args, capture_output=True, text=True)
    if p.returncode not in ok:
        fail(f"{binary} {' '.join(args)}: exit {p.returncode}: {(p.stderr or p.stdout).strip()}")
    return p


# The cells every row of one gdnbench and tolerance profile shares (CsvOut fills them where a row has none).
RUN_CELLS = ("schema_version", "tolerances", "tolerances_hash")


def csv_header(binary, workdir, tolerances="builtin"):
    """The column list of this gdnbench (its schema, whatever columns it has grown) and the RUN_CELLS of
    its rows under `tolerances`, from a one-row verify."""
    path = os.path.join(workdir, "header.csv")
    run_gdnbench(binary, ["verify", "--variants", "cpu_recurrent", "--T", "1", "--H", "1", "--K", "8",
                          "--V", "8", "--seed", "1", "--no-progress", "--tolerances", tolerances, "--out", path],
                 ok=(0, 1))
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        row = next(reader)
        return reader.fieldnames, {c: row[c] for c in RUN_CELLS}


def dump(binary, shape, seed, outdir, pass_="fwd", dht="on"):
    """One problem's dump; a packed batch when shape has "seqlens" (gdnbench's --seqlens: B = 1, T the
    total). A backward pass (`pass_` bwd or fwdbwd) also dumps the upstream gradients dO and (dht on) dhT."""
    size = ["--seqlens", shape["seqlens"]] if shape.get("seqlens") else ["--B", str(shape["B"]), "--T", str(shape["T"])]
    heads = ["--H", str(shape["H"])] + (["--HV", str(shape["HV"])] if shape.get("HV") else [])
    args = ["dump", *size, *heads,
            "--K", str(shape["K"]), "--V", str(shape["V"]), "--dtypes", shape["dtype"],
            "--h0", shape["h0"], "--pass", pass_, "--dht", dht, "--seed", str(seed), "--out", outdir]
    run_gdnbench(binary, args)
    return read_manifest(outdir)


def read_manifest(outdir):
    m = read_json(os.path.join(outdir, "manifest.json"))
    if not m or m.get("format") != "gdnbench-dump" or m.get("version") != 1:
        fail(f"{outdir}/manifest.json: not a gdnbench-dump version 1 manifest")
    if "cu_seqlens" in m.get("files", {}):  # a packed batch: its offsets, for the rows' seqlens column
        m["cu_seqlens_list"] = read_npy_i4(os.path.join(outdir, m["files"]["cu_seqlens"]))
    return m


def read_npy_i4(path):
    """The integers of a 1-D <i4 .npy (numpy-free: the parent process imports no numpy)."""
    import ast
    import struct
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        fail(f"{path}: not a .npy file")
    header_len = struct.unpack("<H", data[8:10])[0]
    header = ast.literal_eval(data[10:10 + header_len].decode("latin1"))
    if header.get("descr") != "<i4" or len(header.get("shape", ())) != 1:
        fail(f"{path}: not a 1-D <i4 array")
    n = header["shape"][0]
    return list(struct.unpack(f"<{n}i", data[10 + header_len:10 + header_len + 4 * n]))


def num_states(manifest):
    """How many states h0, hT, dhT and dh0 hold: one per sequence of a packed batch, else B."""
    return manifest.get("num_seqs") or manifest["B"]


def load_inputs(outdir, manifest):
    """The dumped tensors as float32 numpy arrays (values exact in the manifest's dtype), and a packed
    batch's cu_seqlens as int32."""
    import numpy as np
    return {name: np.load(os.path.join(outdir, fname)) for name, fname in manifest["files"].items()}


def check(binary, outdir, outputs, variant, family, device, pass_="fwd", ref_o=None, tolerances="builtin"):
    """gdnbench check's verdict as the row it appends (a dict of the CSV schema) and its exit code.
    `outputs`: check's flag names (o, ht; dq, dk, dv, dg, dbeta, dh0) to the .npy files that hold them."""
    tmp = os.path.join(outdir, f"check_{variant.replace(':', '_')}.csv")
    if os.path.exists(tmp):
        os.remove(tmp)
    args = ["check", outdir, "--pass", pass_, "--variant-name", variant, "--family", family,
            "--precision", precision_of(variant), "--device", device, "--tolerances", tolerances, "--csv", tmp]
    for name, path in outputs.items():
        args += [f"--{name}", path]
    if ref_o:
        args += ["--ref-o", ref_o]
    p = run_gdnbench(binary, args, ok=(0, 1))
    print(p.stdout.strip().splitlines()[0], flush=True)
    with open(tmp, newline="") as f:
        rows = list(csv.DictReader(f))
    return rows[-1], p.returncode


def seqlens_text(cu):
    """A packed batch's lengths as the CSV's seqlens column writes them ("1+63+64*3"); "" unpacked."""
    if not cu:
        return ""
    lengths = [b - a for a, b in zip(cu, cu[1:])]
    parts, n = [], 0
    while n < len(lengths):
        run = 1
        while n + run < len(lengths) and lengths[n + run] == lengths[n]:
            run += 1
        parts.append(f"{lengths[n]}*{run}" if run > 1 else str(lengths[n]))
        n += run
    return "+".join(parts)


def family_of(variant):
    return "attention" if variant.startswith("ext:sdpa") else "gdn"


def precision_of(variant):
    """The row of the tolerance table a variant is judged by: the peers' kernels are tensor-core ones;
    the self-test's numpy stand-ins compute in float64 and write float32 (fp32_math, which alone has
    gradient bounds built in)."""
    return "fp32_math" if variant.startswith("selftest:") else "tensor_core"


def skipped_row(manifest, variant, device, reason, status="SKIPPED"):
    """A row with the problem's columns and no measurement; CsvOut fills the other columns."""
    return {"device": device, "command": "ext_runner", "suite": "scripts/ext_runner.py",
            "seed": str(manifest["seed"]), "variant": variant, "family": family_of(variant), "backend": "ext",
            "precision": precision_of(variant), "dtype": manifest["dtype"], "B": manifest["B"], "T": manifest["T"],
            "H": manifest["H"], "HV": manifest["HV"], "K": manifest["K"], "V": manifest["V"],
            "seqlens": seqlens_text(manifest.get("cu_seqlens_list")), "chunk": "64", "gate": "on" if manifest["gate"] else "off",
            "delta": "on" if manifest["delta"] else "off", "h0": "on" if manifest["h0"] else "off",
            "pass": pass_of(manifest), "dht": ("on" if manifest["dht"] else "off") if has_backward(manifest) else "",
            "status": status, "reason": reason}


def pass_of(manifest):
    return manifest.get("pass", "fwd")  # manifests of gdnbench before backward dumps have none


def has_backward(manifest):
    return pass_of(manifest) != "fwd"


# ---- the parent's side of a child process (scripts/ext_runner.py --child) ------------------------

def run_isolated(cmd, result, timeout):
    """Runs cmd, which writes its state as JSON to `result` stage by stage ("done" when it finished;
    "error" and "crashed" when it raised). Fills those two in when it died: a signal, a timeout, an
    exit without a result. Prints its output; the tail of its stderr when it failed."""
    if os.path.exists(result):
        os.remove(result)
    # A session of its own, so a timeout kills the child and whatever it started (gdnbench check).
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    timed_out = False
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        timed_out = True
    if out:
        print(out, end="", flush=True)
    state = read_json(result) or {"stage": "none"}
    if p.returncode == 0 and "error" not in state and state.get("stage") == "done":
        return state
    lines = [x for x in err.strip().splitlines() if x.strip()]
    for x in lines[-12:]:
        print(f"  | {x}", flush=True)
    if "error" not in state:
        if timed_out:
            why = f"no result after {timeout:g} s, killed"
        elif p.returncode < 0:
            why = f"killed by {signal.Signals(-p.returncode).name}"
        else:
            why = f"exit {p.returncode} without a result" + (f" ({lines[-1].strip()})" if lines else "")
        state.update(error=why, crashed=True)
    return state


def row_of(state, manifest, variant, device):
    """The CSV row of a child's outcome and whether it crashed (see "Isolation" in ext_runner.py)."""
    if "error" not in state:
        if "skip" in state:
            return skipped_row(manifest, variant, device, state["skip"]), False
        return state["row"], False
    if state.get("stage") == "checked":
        row = state["row"]
        if row["status"] == "PASS":
            row.update(status="FAIL", reason=f"PASS, then failed while timing: {state['error']}")
        return row, True
    crashed = state.get("crashed", True)
    return skipped_row(manifest, variant, device, ("crashed: " if crashed else "") + state["error"]), crashed


class CsvOut:
    """Appends rows in the schema's column order; rewritten whole after each row (like CsvWriter)."""

    def __init__(self, path, header, run_cells):
        self.path, self.header, self.run_cells, self.rows = path, header, run_cells, []
        if os.path.exists(path):
            with open(path, newline="") as f:
                reader = csv.DictReader(f)
                if reader.fieldnames != header:
                    fail(f"{path}: another header than this gdnbench writes; choose another --out")
                self.rows = list(reader)
        for n, r in enumerate(self.rows, 1):  # one CSV, one contract, as gdnbench --resume keeps it
            if any(r[c] != run_cells[c] for c in RUN_CELLS):
                fail(f"{path}: row {n} was judged by tolerances {r['tolerances']} {r['tolerances_hash']}, this run by "
                     f"{run_cells['tolerances']} {run_cells['tolerances_hash']}; choose another --out")

    def append(self, row):
        self.rows.append({c: row.get(c) or self.run_cells.get(c, "") for c in self.header})
        tmp = self.path + ".tmp"
        with open(tmp, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=self.header, lineterminator="\n")
            w.writeheader()
            w.writerows(self.rows)
        os.replace(tmp, self.path)


# ---- sampling (the policy of harness/timing.cpp and harness/cuda_runtime.cu) --------------------

def quantile(sorted_x, q):
    pos = q * (len(sorted_x) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(sorted_x) - 1)
    return sorted_x[lo] + (sorted_x[hi] - sorted_x[lo]) * (pos - lo)


def summarize(samples):
    s = sorted(samples)
    n = len(s)
    mean = sum(s) / n
    var = sum((x - mean) ** 2 for x in s) / (n - 1) if n > 1 else 0.0
    return {"samples": n, "median": quantile(s, 0.5), "min": s[0], "p20": quantile(s, 0.2),
            "p80": quantile(s, 0.8), "cv": math.sqrt(var) / mean if mean > 0 else 0.0}


def sampling_done(samples, elapsed_s, cfg):
    n = len(samples)
    if n >= cfg.max_samples:
        return True
    if n < cfg.min_samples:
        return False
    if elapsed_s >= cfg.max_seconds:
        return True
    return summarize(samples)["cv"] <= cfg.cv_target


def sample_until_done(sample_ms, cfg):
    """Calls sample_ms() (one timed launch, in ms) until the policy stops; the summary."""
    samples, t0 = [], time.monotonic()
    while True:
        samples.append(sample_ms())
        if sampling_done(samples, time.monotonic() - t0, cfg):
            return summarize(samples)


def timed_row(row, t, peak, timer, l2_flush):
    flops, min_bytes = float(row["flops"]), float(row["min_bytes"])
    row.update({"timer": timer, "l2_flush": l2_flush,
                "samples": str(t["samples"]), "time_median_ms": f"{t['median']:.6g}",
                "time_min_ms": f"{t['min']:.6g}", "time_p20_ms": f"{t['p20']:.6g}",
                "time_p80_ms": f"{t['p80']:.6g}", "time_cv": f"{t['cv']:.6g}",
                "tflops": f"{flops / (t['median'] * 1e9):.6g}", "gbps": f"{min_bytes / (t['median'] * 1e6):.6g}",
                "peak_device_bytes": "" if peak is None else str(peak)})
    return row
