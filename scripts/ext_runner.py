#!/usr/bin/env python3
"""Time and verify external implementations on the GPU, as rows of the gdnbench CSV schema.

Variants:
  ext:fla_chunk             fla.ops.gated_delta_rule.chunk_gated_delta_rule (FLA, Triton)
  ext:fla_fused_recurrent   fla.ops.gated_delta_rule.fused_recurrent_gated_delta_rule (FLA, Triton)
  ext:sdpa_flash            torch SDPA, causal, FLASH_ATTENTION backend
  ext:sdpa_cudnn            torch SDPA, causal, CUDNN_ATTENTION backend

Per shape: `gdnbench dump` writes the inputs (what the harness's own kernels see); each variant runs
on exactly those values, writes o (and hT) as .npy, and `gdnbench check` judges them against the
float64 reference with the harness's metrics and tolerance table. A variant that fails the check
is not timed (as in `gdnbench run`). Timing follows harness/cuda_runtime.cu: CUDA events on the
current stream, `--warmup` launches first, L2 flushed (a buffer of twice the L2 size written)
before every sample, samples until the CV is at or under `--cv-target` after `--min-samples`, or
`--max-samples`, or `--max-seconds` of sampling; median, min, p20, p80 and CV are reported.
Peak memory: torch's allocator peak over inputs, outputs and workspace of one launch.

Attention above --check-max-T is too long for the CPU float64 reference of `gdnbench check`; there
the float64 reference is computed here on the GPU (query blocks, float64 GEMMs) and handed to
`gdnbench check --ref-o`, which still applies the metrics and bounds; the row's reason says so.

  scripts/ext_runner.py --gdnbench build-gpu/gdnbench --out reports/ext.csv --T 512,1024,8192
  scripts/ext_runner.py --gdnbench build/gdnbench --self-test     # no GPU: the dump/check/CSV path
"""
import argparse
import csv
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

VARIANTS = ("ext:fla_chunk", "ext:fla_fused_recurrent", "ext:sdpa_flash", "ext:sdpa_cudnn")
TIMING_COLUMNS = ("samples", "time_median_ms", "time_min_ms", "time_p20_ms", "time_p80_ms", "time_cv",
                  "tflops", "gbps", "peak_device_bytes")


def fail(msg):
    sys.exit(f"ext_runner: {msg}")


# ---- gdnbench: dump, check, the CSV header ------------------------------------------------------

def run_gdnbench(binary, args, ok=(0,)):
    p = subprocess.run([binary] + args, capture_output=True, text=True)
    if p.returncode not in ok:
        fail(f"{binary} {' '.join(args)}: exit {p.returncode}: {(p.stderr or p.stdout).strip()}")
    return p


def csv_header(binary, workdir):
    """The column list of this gdnbench (its schema, whatever columns it has grown)."""
    path = os.path.join(workdir, "header.csv")
    run_gdnbench(binary, ["verify", "--variants", "cpu_recurrent", "--T", "1", "--H", "1", "--K", "8",
                          "--V", "8", "--seed", "1", "--no-progress", "--out", path], ok=(0, 1))
    with open(path, newline="") as f:
        return next(csv.reader(f))


def dump(binary, shape, seed, outdir):
    args = ["dump", "--B", str(shape["B"]), "--T", str(shape["T"]), "--H", str(shape["H"]),
            "--K", str(shape["K"]), "--V", str(shape["V"]), "--dtypes", shape["dtype"],
            "--h0", shape["h0"], "--seed", str(seed), "--out", outdir]
    run_gdnbench(binary, args)
    return read_manifest(outdir)


def read_manifest(outdir):
    import json
    with open(os.path.join(outdir, "manifest.json")) as f:
        m = json.load(f)
    if m.get("format") != "gdnbench-dump" or m.get("version") != 1:
        fail(f"{outdir}/manifest.json: not a gdnbench-dump version 1 manifest")
    return m


def load_inputs(outdir, manifest):
    """The dumped tensors as float32 numpy arrays (values exact in the manifest's dtype)."""
    import numpy as np
    return {name: np.load(os.path.join(outdir, fname)) for name, fname in manifest["files"].items()}


def check(binary, outdir, o_path, ht_path, variant, family, device, ref_o=None):
    """gdnbench check's verdict as the row it appends (a dict of the CSV schema) and its exit code."""
    tmp = os.path.join(outdir, f"check_{variant.replace(':', '_')}.csv")
    if os.path.exists(tmp):
        os.remove(tmp)
    args = ["check", outdir, "--o", o_path, "--variant-name", variant, "--family", family,
            "--device", device, "--csv", tmp]
    if ht_path:
        args += ["--ht", ht_path]
    if ref_o:
        args += ["--ref-o", ref_o]
    p = run_gdnbench(binary, args, ok=(0, 1))
    print(p.stdout.strip().splitlines()[0])
    with open(tmp, newline="") as f:
        rows = list(csv.DictReader(f))
    return rows[-1], p.returncode


def skipped_row(header, manifest, variant, family, device, reason):
    row = {c: "" for c in header}
    row.update({"schema_version": "1", "device": device, "command": "ext_runner", "suite": "scripts/ext_runner.py",
                "seed": str(manifest["seed"]), "variant": variant, "family": family, "backend": "ext",
                "precision": "tensor_core", "dtype": manifest["dtype"], "B": manifest["B"], "T": manifest["T"],
                "H": manifest["H"], "HV": manifest["HV"], "K": manifest["K"], "V": manifest["V"],
                "chunk": "64", "gate": "on" if manifest["gate"] else "off",
                "delta": "on" if manifest["delta"] else "off", "h0": "on" if manifest["h0"] else "off",
                "status": "SKIPPED", "reason": reason})
    return row


class CsvOut:
    """Appends rows in the schema's column order; rewritten whole after each row (like CsvWriter)."""

    def __init__(self, path, header):
        self.path, self.header, self.rows = path, header, []
        if os.path.exists(path):
            with open(path, newline="") as f:
                reader = csv.DictReader(f)
                if reader.fieldnames != header:
                    fail(f"{path}: another header than this gdnbench writes; choose another --out")
                self.rows = list(reader)

    def append(self, row):
        self.rows.append({c: row.get(c, "") for c in self.header})
        tmp = self.path + ".tmp"
        with open(tmp, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=self.header, lineterminator="\n")
            w.writeheader()
            w.writerows(self.rows)
        os.replace(tmp, self.path)


# ---- timing (the policy of harness/timing.cpp and harness/cuda_runtime.cu) ----------------------

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


def time_launch(launch, cfg):
    import torch
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush = torch.empty(max(2 * l2, 8 << 20), dtype=torch.uint8, device="cuda")
    for _ in range(cfg.warmup):
        launch()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples, t0, i = [], time.monotonic(), 0
    while True:
        flush.fill_(i & 0xFF)
        start.record()
        launch()
        stop.record()
        stop.synchronize()
        samples.append(start.elapsed_time(stop))
        i += 1
        if sampling_done(samples, time.monotonic() - t0, cfg):
            return summarize(samples)


# ---- the variants ------------------------------------------------------------------------------

def torch_dtype(name):
    import torch
    return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[name]


def fla_functions():
    from fla.ops.gated_delta_rule import chunk_gated_delta_rule, fused_recurrent_gated_delta_rule
    return {"ext:fla_chunk": chunk_gated_delta_rule, "ext:fla_fused_recurrent": fused_recurrent_gated_delta_rule}


def gdn_prepare(fn, host, manifest):
    """Device tensors and a launch closure; returns (launch, outputs getter)."""
    import torch
    dt = torch_dtype(manifest["dtype"])
    # Cast on the host (exact: the values are dt values), so no float32 copy inflates the peak.
    q, k, v = (torch.from_numpy(host[n]).to(dt).cuda() for n in ("q", "k", "v"))
    beta = torch.from_numpy(host["beta"]).cuda()  # float32, as the harness's kernels read it
    g = torch.from_numpy(host["g"]).cuda() if "g" in host else torch.zeros_like(beta)
    h0 = torch.from_numpy(host["h0"]).cuda() if "h0" in host else None
    out = {}

    def launch():
        out["o"], out["ht"] = fn(q, k, v, g, beta, scale=manifest["scale"], initial_state=h0,
                                 output_final_state=True)
    return launch, out


def sdpa_prepare(backend, host, manifest):
    import torch
    dt = torch_dtype(manifest["dtype"])
    # [B, T, H, D] -> [B, H, T, D] once, outside the timed region (the layout SDPA takes).
    q, k, v = (torch.from_numpy(host[n]).to(dt).transpose(1, 2).contiguous().cuda() for n in ("q", "k", "v"))
    out = {}

    def launch():
        from torch.nn.attention import sdpa_kernel
        with sdpa_kernel(backend):
            out["o"] = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                                        scale=manifest["scale"])
    return launch, out


def attention_ref_f64(host, manifest, path, block=2048):
    """Causal softmax attention in float64 on the GPU, in query blocks; saved as [B, T, H, V] <f8."""
    import numpy as np
    import torch
    q, k, v = (torch.from_numpy(host[n]).cuda().double() for n in ("q", "k", "v"))
    B, T, H = q.shape[0], q.shape[1], q.shape[2]
    out = np.empty((B, T, H, v.shape[3]), dtype=np.float64)
    for b in range(B):
        for h in range(H):
            qh, kh, vh = q[b, :, h], k[b, :, h], v[b, :, h]
            for s in range(0, T, block):
                e = min(T, s + block)
                scores = (qh[s:e] @ kh[:e].T) * manifest["scale"]
                mask = torch.arange(e, device="cuda")[None, :] > torch.arange(s, e, device="cuda")[:, None]
                scores.masked_fill_(mask, float("-inf"))
                out[b, s:e, h] = torch.softmax(scores, dim=-1).matmul(vh[:e]).cpu().numpy()
    np.save(path, out)


def run_variant(variant, args, binary, outdir, manifest, host, header, device):
    import numpy as np
    import torch
    family = "gdn" if variant.startswith("ext:fla") else "attention"
    if family == "gdn":
        try:
            fn = fla_functions()[variant]
        except Exception as e:  # noqa: BLE001 (any import failure makes the row SKIPPED)
            return skipped_row(header, manifest, variant, family, device, f"fla not importable: {e}")
    else:
        if manifest["h0"] or not manifest["gate"] or not manifest["delta"]:
            return skipped_row(header, manifest, variant, family, device,
                               "attention baselines run only on the plain GDN configuration")
        from torch.nn.attention import SDPBackend
        backend = SDPBackend.FLASH_ATTENTION if variant == "ext:sdpa_flash" else SDPBackend.CUDNN_ATTENTION

    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    try:
        launch, out = gdn_prepare(fn, host, manifest) if family == "gdn" else sdpa_prepare(backend, host, manifest)
        launch()
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001 (an unsupported shape or backend is a SKIPPED row)
        return skipped_row(header, manifest, variant, family, device, f"{type(e).__name__}: {e}".splitlines()[0])
    peak = torch.cuda.max_memory_allocated() - base

    o_path = os.path.join(outdir, "o.npy")
    ht_path = os.path.join(outdir, "ht.npy") if family == "gdn" else None
    o = out["o"] if family == "gdn" else out["o"].transpose(1, 2)
    np.save(o_path, o.float().contiguous().cpu().numpy())  # bf16 -> float32 is exact
    if ht_path:
        np.save(ht_path, out["ht"].float().contiguous().cpu().numpy())
    ref_o = None
    if family == "attention" and manifest["T"] > args.check_max_T:
        ref_o = os.path.join(outdir, "ref_o.npy")  # kept for the other SDPA backend of this shape
        if not os.path.exists(ref_o):
            attention_ref_f64(host, manifest, ref_o)
    row, rc = check(binary, outdir, o_path, ht_path, variant, family, device, ref_o)
    for p in (o_path, ht_path):
        if p and os.path.exists(p):
            os.remove(p)
    row.update({"command": "ext_runner", "suite": "scripts/ext_runner.py"})
    if rc != 0:
        return row  # a wrong result has no speed
    t = time_launch(launch, args)
    del launch, out
    flops, min_bytes = float(row["flops"]), float(row["min_bytes"])
    row.update({"samples": str(t["samples"]), "time_median_ms": f"{t['median']:.6g}",
                "time_min_ms": f"{t['min']:.6g}", "time_p20_ms": f"{t['p20']:.6g}",
                "time_p80_ms": f"{t['p80']:.6g}", "time_cv": f"{t['cv']:.6g}",
                "tflops": f"{flops / (t['median'] * 1e9):.6g}", "gbps": f"{min_bytes / (t['median'] * 1e6):.6g}",
                "peak_device_bytes": str(peak)})
    return row


# ---- the self-test (no GPU): dump, a numpy recurrence as the "external" kernel, check, CSV ------

def numpy_gdn(host, manifest):
    import numpy as np
    q, k, v, beta = (host[n].astype(np.float64) for n in ("q", "k", "v", "beta"))
    g = host["g"].astype(np.float64) if "g" in host else np.zeros_like(beta)
    B, T, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    S = host["h0"].astype(np.float64).copy() if "h0" in host else np.zeros((B, HV, K, V))
    o = np.zeros((B, T, HV, V))
    for t in range(T):
        for hv in range(HV):
            h = hv // (HV // H)
            S[:, hv] *= np.exp(g[:, t, hv])[:, None, None]
            u = beta[:, t, hv, None] * (v[:, t, hv] - np.einsum("bkv,bk->bv", S[:, hv], k[:, t, h]))
            S[:, hv] += np.einsum("bk,bv->bkv", k[:, t, h], u)
            o[:, t, hv] = manifest["scale"] * np.einsum("bkv,bk->bv", S[:, hv], q[:, t, h])
    return o, S


def self_test(binary):
    import numpy as np
    with tempfile.TemporaryDirectory() as work:
        header = csv_header(binary, work)
        shape = {"B": 2, "T": 19, "H": 2, "K": 8, "V": 8, "dtype": "bf16", "h0": "on"}
        d = os.path.join(work, "dump")
        manifest = dump(binary, shape, 5, d)
        host = load_inputs(d, manifest)
        assert host["q"].dtype == np.float32 and host["q"].shape == (2, 19, 2, 8)
        o, S = numpy_gdn(host, manifest)
        results = {}
        for name, o_out in (("good", o), ("bad", -o)):
            np.save(os.path.join(d, "o.npy"), o_out.astype(np.float32))
            np.save(os.path.join(d, "ht.npy"), S.astype(np.float32))
            results[name] = check(binary, d, os.path.join(d, "o.npy"), os.path.join(d, "ht.npy"),
                                  f"ext:numpy_{name}", "gdn", "self-test", None)
        assert results["good"][1] == 0 and results["good"][0]["status"] == "PASS", results["good"]
        assert results["bad"][1] == 1 and results["bad"][0]["status"] == "FAIL", results["bad"]
        out = CsvOut(os.path.join(work, "ext.csv"), header)
        row = dict(results["good"][0], samples="3", time_median_ms="1.5")
        out.append(row)
        out.append(skipped_row(header, manifest, "ext:sdpa_flash", "attention", "self-test", "no GPU"))
        rows = list(csv.DictReader(open(out.path, newline="")))
        assert [r["status"] for r in rows] == ["PASS", "SKIPPED"] and rows[0]["time_median_ms"] == "1.5"
        assert CsvOut(out.path, header).rows == rows  # reopens and keeps them
        run_gdnbench(binary, ["report", out.path, "--out", os.path.join(work, "r.md")])
    print("ext_runner self-test: dump, manifest, numpy kernel PASS, corrupted FAIL, CSV, report: ok")


# ---- main --------------------------------------------------------------------------------------

def int_list(text):
    try:
        xs = [int(x) for x in text.split(",") if x]
    except ValueError:
        fail(f"'{text}' is not a comma-separated list of integers")
    if not xs or any(x <= 0 for x in xs):
        fail(f"'{text}': positive integers expected")
    return xs


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gdnbench", default="build/gdnbench", help="the gdnbench binary (dump, check)")
    p.add_argument("--out", default="reports/ext.csv", help="CSV to append the rows to (gdnbench schema)")
    p.add_argument("--workdir", default=None, help="where the dumps go (default: a temporary directory)")
    p.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, of: " + ", ".join(VARIANTS))
    p.add_argument("--T", default="512,1024,2048,4096,8192,16384,32768,65536,131072", help="sequence lengths")
    p.add_argument("--B", default="1")
    p.add_argument("--H", default="32")
    p.add_argument("--K", default="128")
    p.add_argument("--V", default="128")
    p.add_argument("--dtype", default="bf16", choices=("bf16", "fp16", "fp32"))
    p.add_argument("--h0", default="off", choices=("on", "off"))
    p.add_argument("--seed", type=int, default=None, help="input seed (default: drawn, recorded in the rows)")
    p.add_argument("--check-max-T", type=int, default=8192,
                   help="attention above this T: float64 reference on the GPU, judged by gdnbench check --ref-o")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--min-samples", type=int, default=10)
    p.add_argument("--max-samples", type=int, default=200)
    p.add_argument("--max-seconds", type=float, default=2.0)
    p.add_argument("--cv-target", type=float, default=0.02)
    p.add_argument("--self-test", action="store_true", help="test the non-GPU path (dump, check, CSV) and exit")
    args = p.parse_args()
    if not (os.path.isfile(args.gdnbench) and os.access(args.gdnbench, os.X_OK)):
        fail(f"--gdnbench: no executable '{args.gdnbench}' (build first)")
    if args.self_test:
        self_test(args.gdnbench)
        return
    variants = [v for v in args.variants.split(",") if v]
    for v in variants:
        if v not in VARIANTS:
            fail(f"--variants: unknown '{v}' (use {', '.join(VARIANTS)})")
    if args.min_samples < 1 or args.max_samples < args.min_samples or args.warmup < 0:
        fail("timing: need warmup >= 0 and 1 <= min-samples <= max-samples")
    import torch
    if not torch.cuda.is_available():
        fail("no CUDA device (torch.cuda.is_available() is False); --self-test checks the rest here")
    device = torch.cuda.get_device_name(0)
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(8), "little") >> 1
    work = args.workdir or tempfile.mkdtemp(prefix="gdnbench_ext_")
    os.makedirs(work, exist_ok=True)
    header = csv_header(args.gdnbench, work)
    out = CsvOut(args.out, header)
    failed = 0
    for B in int_list(args.B):
        for H in int_list(args.H):
            for T in int_list(args.T):
                shape = {"B": B, "T": T, "H": H, "K": int_list(args.K)[0], "V": int_list(args.V)[0],
                         "dtype": args.dtype, "h0": args.h0}
                d = os.path.join(work, f"B{B}_T{T}_H{H}")
                manifest = dump(args.gdnbench, shape, seed, d)
                host = load_inputs(d, manifest)
                for v in variants:
                    row = run_variant(v, args, args.gdnbench, d, manifest, host, header, device)
                    failed += row["status"] == "FAIL"
                    out.append(row)
                    print(f"{v} T={T}: {row['status']} {row.get('time_median_ms') or ''} {row.get('reason') or ''}",
                          flush=True)
                del host
                if not args.workdir:
                    shutil.rmtree(d, ignore_errors=True)
    print(f"wrote {args.out}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
