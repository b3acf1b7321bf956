#!/usr/bin/env python3
"""Time and verify external implementations on the GPU, as rows of the gdnbench CSV schema.

Variants:
  ext:fla_chunk             fla.ops.gated_delta_rule.chunk_gated_delta_rule (FLA, Triton)
  ext:fla_fused_recurrent   fla.ops.gated_delta_rule.fused_recurrent_gated_delta_rule (FLA, Triton)
  ext:flashqla              flash_qla.chunk_gated_delta_rule (FlashQLA, TileLang; K = V = 128, 16-bit)
  ext:sdpa_flash            torch SDPA, causal, FLASH_ATTENTION backend
  ext:sdpa_cudnn            torch SDPA, causal, CUDNN_ATTENTION backend

Per shape: `gdnbench dump` writes the inputs (what the harness's own kernels see); each variant runs
on exactly those values, writes o (and hT) as .npy, and `gdnbench check` judges them against the
float64 reference with the harness's metrics and tolerance table. A variant that fails the check
is not timed (as in `gdnbench run`). Timing follows harness/cuda_runtime.cu: CUDA events on the
current stream, `--warmup` launches first, L2 flushed (a buffer of twice the L2 size written:
the harness's `--l2-flush write`, recorded in the rows) before every sample, samples until the CV is at or under `--cv-target` after `--min-samples`, or
`--max-samples`, or `--max-seconds` of sampling; median, min, p20, p80 and CV are reported.
Peak memory: torch's allocator peak over inputs, outputs and workspace of one launch.
FLA's rows are FLA's own kernels: FLA dispatches to FlashQLA when that is importable, so its children
run with FLA_FLASH_QLA=0. --graph times a replay of a CUDA graph of the launch instead (timer
`graph`): small kernels of Python libraries are otherwise timed with their launch cost.

Isolation: a sticky CUDA error (an illegal address, a trap) ruins the CUDA context of the process
that made it, so the device probe, every (variant, shape) measurement and the float64 attention
reference each run in a fresh child process (this script with --child); this process never
imports torch. A child's outcome becomes its row:
  a Python error, context intact (an unsupported shape or backend): SKIPPED, the error's first line;
  a crash before `check` judged outputs (context lost, killed by a signal, no result within
    --variant-timeout s): SKIPPED, "crashed: " and the error's first line;
  a crash after `check` passed, while timing: FAIL with the check's metrics and "PASS, then failed
    while timing: ..." (the outputs were right, yet launching the same call again faulted).
Exit status: 1 when a check failed or anything crashed, else 0.

The backward (--pass bwd or fwdbwd): the dump adds the upstream gradients dO and dhT (`gdnbench dump
--pass`), the variants that have a backward (ext:fla_chunk, ext:flashqla, ext:sdpa_flash, ext:sdpa_cudnn;
the others give SKIPPED rows "no backward pass") run through torch autograd on leaves of the dumped
inputs, and their gradients dq, dk, dv, dg, dbeta, dh0 (attention: dq, dk, dv) are judged by `gdnbench check --pass ... --dq ...` against the float64
backward. --pass bwd times the backward alone (autograd over the forward's graph, kept), as the
harness's bwd rows; --pass fwdbwd the training step, forward and backward as one region, and judges
o and hT too. The built-in tolerance table holds a tensor-core backward to the forward's contract (dq, dk, dv
at o's bound, dg, dbeta, dh0 at hT's), which FLA's and FlashQLA's backwards miss; `--tolerances
bf16_intermediates` has bounds measured on them (docs/TOLERANCES.md). A FAIL is not timed.

A packed batch (a dump of `gdnbench dump --seqlens`: B = 1, cu_seqlens.npy, h0, hT, dhT and dh0 one
state per sequence, [num_seqs, HV, K, V]) goes to FLA and FlashQLA as cu_seqlens, forward and
backward; the attention baselines give SKIPPED rows for one, as the harness's own packed rows.

Attention above --check-max-T is too long for the CPU float64 reference of `gdnbench check`; there
the float64 reference is computed on the GPU (query blocks, float64 GEMMs) by a child and handed
to `gdnbench check --ref-o`, which still applies the metrics and bounds.

  scripts/ext_runner.py --gdnbench build-gpu/gdnbench --out reports/ext.csv --T 512,1024,8192
  scripts/ext_runner.py --gdnbench build-gpu/gdnbench --pass fwdbwd --variants ext:fla_chunk,ext:flashqla --T 4096
  scripts/ext_runner.py --gdnbench build/gdnbench --self-test     # no GPU: dump/check/CSV, isolation, backward
"""
import argparse
import os
import shutil
import signal
import sys
import tempfile
import time
import traceback

from ext_common import (CsvOut, check, csv_header, dump, fail, family_of, first_line, has_backward, load_inputs,
                        num_states, pass_of, read_manifest, row_of, run_gdnbench, run_isolated, sample_until_done,
                        skipped_row, timed_row, write_json)
from ext_numpy import PER_STATE, gdn

VARIANTS = ("ext:fla_chunk", "ext:fla_fused_recurrent", "ext:flashqla", "ext:sdpa_flash", "ext:sdpa_cudnn")
# Stand-ins for the self-test (numpy, no GPU): a correct kernel, a wrong one, and each way to die.
SELF_TEST_VARIANTS = ("selftest:good", "selftest:bad", "selftest:unsupported", "selftest:segv",
                      "selftest:timing_raise", "selftest:hang")
# A packed batch's wrong answer: its tokens run as one sequence, the state carried across every boundary.
FLAT_VARIANT = "selftest:flat"
# Those with a backward (torch autograd through the peer's own backward kernels), and the stand-ins.
BACKWARD_VARIANTS = ("ext:fla_chunk", "ext:flashqla", "ext:sdpa_flash", "ext:sdpa_cudnn") + SELF_TEST_VARIANTS + \
    (FLAT_VARIANT,)


class Unsupported(Exception):
    """The variant cannot run this problem; a SKIPPED row, not a crash."""


# ---- the variants (child processes only) -------------------------------------------------------

def torch_dtype(name):
    import torch
    return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[name]


def gdn_function(variant, manifest):
    """The peer's GDN forward for `variant`; Unsupported when it is not importable or takes no such shape."""
    if variant == "ext:flashqla":
        if manifest["K"] != 128 or manifest["V"] != 128 or manifest["dtype"] not in ("bf16", "fp16"):
            raise Unsupported("FlashQLA takes K = V = 128 and bf16 or fp16 inputs only")
        try:
            from flash_qla import chunk_gated_delta_rule
        except Exception as e:  # noqa: BLE001 (any import failure makes the row SKIPPED)
            raise Unsupported(f"flash_qla not importable: {first_line(e)}")
        return chunk_gated_delta_rule
    os.environ["FLA_FLASH_QLA"] = "0"  # FLA's own kernels, not its dispatch to FlashQLA
    try:
        from fla.ops.gated_delta_rule import chunk_gated_delta_rule, fused_recurrent_gated_delta_rule
    except Exception as e:  # noqa: BLE001
        raise Unsupported(f"fla not importable: {first_line(e)}")
    return chunk_gated_delta_rule if variant == "ext:fla_chunk" else fused_recurrent_gated_delta_rule


def gdn_prepare(variant, host, manifest):
    """Device tensors and (launch, fetch); fetch() gives {"o": [B, T, HV, V], "ht": [B, HV, K, V]} in numpy.

    Arguments after q, k, v go by keyword: the two functions differ in position (chunk takes
    g, beta; fused_recurrent takes g, gk, gv, beta), and a positional beta lands in
    fused_recurrent's gk, a per-key decay it reads as [B, T, HV, K]: K times past the end of our
    [B, T, HV] tensor. Both also take **kwargs, which would swallow a renamed keyword silently,
    so the names are checked first. The call is FLA's documented one: [B, T, H, K] layout (there is
    no head-first), log-space g and post-sigmoid beta of [B, T, HV], h0 and hT float32
    [B, HV, K, V] (state_v_first off), no in-kernel l2norm (q and k are normalised in the dump).
    FlashQLA's chunk_gated_delta_rule documents the same call and layout. A packed batch (the dump's
    cu_seqlens.npy) goes as both take it: B = 1, cu_seqlens (FLA's documented LongTensor; int32 for
    FlashQLA, as FlashAttention's varlen API), h0 and hT one state per sequence [N, HV, K, V].
    """
    import torch
    fn, varlen = gdn_call(variant, host, manifest)
    dt = torch_dtype(manifest["dtype"])
    # Cast on the host (exact: the values are dt values), so no float32 copy inflates the peak.
    q, k, v = (torch.from_numpy(host[n]).to(dt).cuda() for n in ("q", "k", "v"))
    beta = torch.from_numpy(host["beta"]).cuda()  # float32, as the harness's kernels read it
    g = torch.from_numpy(host["g"]).cuda() if "g" in host else torch.zeros_like(beta)
    h0 = torch.from_numpy(host["h0"]).cuda() if "h0" in host else None
    out = {}

    def launch():
        out["o"], out["ht"] = fn(q, k, v, g=g, beta=beta, scale=manifest["scale"], initial_state=h0,
                                 output_final_state=True, **varlen)

    return launch, lambda: gdn_outputs(out, manifest)


def gdn_call(variant, host, manifest):
    """The peer's function, its keywords checked (see gdn_prepare), and the keywords of a packed batch
    ({"cu_seqlens": the offsets on the device} or {})."""
    import inspect
    import torch
    fn = gdn_function(variant, manifest)
    params = inspect.signature(fn).parameters
    packed = "cu_seqlens" in host
    needed = ("g", "beta", "scale", "initial_state", "output_final_state") + (("cu_seqlens",) if packed else ())
    missing = [n for n in needed if n not in params]
    if missing:
        raise Unsupported(f"{fn.__module__}.{fn.__name__} has no parameter {', '.join(missing)}: its API changed")
    if not packed:
        return fn, {}
    if manifest["B"] != 1:
        raise Unsupported("a packed batch needs B = 1")
    cu_dtype = torch.int32 if variant == "ext:flashqla" else torch.long
    return fn, {"cu_seqlens": torch.from_numpy(host["cu_seqlens"]).to(cu_dtype).cuda()}


def gdn_outputs(out, manifest):
    """o and hT of a peer's call as numpy float32 (an exact widening), their shapes checked (hT one
    state per sequence of a packed batch)."""
    B, T, HV, K, V = manifest["B"], manifest["T"], manifest["HV"], manifest["K"], manifest["V"]
    if tuple(out["o"].shape) != (B, T, HV, V) or tuple(out["ht"].shape) != (num_states(manifest), HV, K, V):
        raise ValueError(f"o {tuple(out['o'].shape)}, hT {tuple(out['ht'].shape)}: not the documented shapes")
    return {"o": out["o"].detach().float().cpu().numpy(), "ht": out["ht"].detach().float().contiguous().cpu().numpy()}


def training_launch(manifest, forward, backward):
    """What a backward row times: the backward alone (pass bwd: the forward runs once here and its
    graph is kept for every replay) or the training step, forward then backward (fwdbwd)."""
    if pass_of(manifest) == "bwd":
        forward()
        return lambda: backward(True)

    def step():
        forward()
        backward(False)
    return step


def gdn_train_prepare(variant, host, manifest):
    """The peer's backward through torch autograd: (launch, fetch) as gdn_prepare's. launch() runs the
    backward alone (pass bwd: the forward ran once here and its graph is kept) or the forward then the
    backward (fwdbwd); fetch() gives the gradients, and for fwdbwd o and hT too.

    The call is gdn_prepare's, on leaves that require gradients: q, k, v in the dtype, g the log decay
    itself (so dg is dL/dg of gdnbench's g; without a gate g is zeros, no leaf, and there is no dg),
    beta and h0 float32. The loss is the dump's, L = sum(dO .* o) + sum(dhT .* hT): dO cast to the
    dtype of o (exact: it holds dtype values), dhT float32 as hT, and o alone where the dump has no
    dhT. Autograd returns each gradient in its input's shape, and those are gdnbench's layouts: dq, dk
    [B, T, H, K], dv [B, T, HV, V], dg, dbeta [B, T, HV], dh0 [B, HV, K, V] (K x V, state_v_first
    off); a packed batch's h0, dhT and dh0 hold one state per sequence, [N, HV, K, V]. So the mapping
    is the widening to float32 alone; fetch checks the shapes all the same.
    """
    import torch
    fn, varlen = gdn_call(variant, host, manifest)
    dt = torch_dtype(manifest["dtype"])
    q, k, v = (torch.from_numpy(host[n]).to(dt).cuda().requires_grad_() for n in ("q", "k", "v"))
    beta = torch.from_numpy(host["beta"]).cuda().requires_grad_()
    g = torch.from_numpy(host["g"]).cuda().requires_grad_() if "g" in host else torch.zeros_like(beta).detach()
    h0 = torch.from_numpy(host["h0"]).cuda().requires_grad_() if "h0" in host else None
    leaves = {"dq": q, "dk": k, "dv": v, "dg": g if "g" in host else None, "dbeta": beta, "dh0": h0}
    leaves = {name: x for name, x in leaves.items() if x is not None}
    d_o = torch.from_numpy(host["dO"]).to(dt).cuda()
    d_ht = torch.from_numpy(host["dhT"]).cuda() if "dhT" in host else None
    out = {}

    def forward():
        out["o"], out["ht"] = fn(q, k, v, g=g, beta=beta, scale=manifest["scale"], initial_state=h0,
                                 output_final_state=True, **varlen)

    def backward(keep_graph):
        outputs, upstream = ([out["o"], out["ht"]], [d_o, d_ht]) if d_ht is not None else ([out["o"]], [d_o])
        out["grads"] = torch.autograd.grad(outputs, list(leaves.values()), upstream, retain_graph=keep_graph,
                                           allow_unused=True)

    launch = training_launch(manifest, forward, backward)

    def fetch():
        B, T, H, HV, K, V = (manifest[n] for n in ("B", "T", "H", "HV", "K", "V"))
        shapes = {"dq": (B, T, H, K), "dk": (B, T, H, K), "dv": (B, T, HV, V), "dg": (B, T, HV),
                  "dbeta": (B, T, HV), "dh0": (num_states(manifest), HV, K, V)}
        res = gdn_outputs(out, manifest) if pass_of(manifest) == "fwdbwd" else {}
        for name, x in zip(leaves, out["grads"]):
            if x is None:
                raise ValueError(f"{name}: autograd gave no gradient (the call does not read the input)")
            if tuple(x.shape) != shapes[name]:
                raise ValueError(f"{name} {tuple(x.shape)}: not the shape of its input {shapes[name]}")
            res[name] = x.float().contiguous().cpu().numpy()
        return res
    return launch, fetch


def sdpa_prepare(variant, host, manifest):
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    backend = SDPBackend.FLASH_ATTENTION if variant == "ext:sdpa_flash" else SDPBackend.CUDNN_ATTENTION
    dt = torch_dtype(manifest["dtype"])
    # [B, T, H, D] -> [B, H, T, D] once, outside the timed region (the layout SDPA takes).
    q, k, v = (torch.from_numpy(host[n]).to(dt).transpose(1, 2).contiguous().cuda() for n in ("q", "k", "v"))
    out = {}

    def launch():
        with sdpa_kernel(backend):
            out["o"] = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                                        scale=manifest["scale"])
    return launch, lambda: {"o": out["o"].transpose(1, 2).float().contiguous().cpu().numpy()}


def sdpa_train_prepare(variant, host, manifest):
    """SDPA's backward through torch autograd, as gdn_train_prepare: q, k, v leaves in the dtype, the
    loss sum(dO .* o) (attention has no state, so no dhT); launch() the backward alone (bwd, the
    forward's graph kept) or forward and backward (fwdbwd); fetch() dq, dk, dv in gdnbench's
    [B, T, H, D] layout (and o for fwdbwd)."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    backend = SDPBackend.FLASH_ATTENTION if variant == "ext:sdpa_flash" else SDPBackend.CUDNN_ATTENTION
    dt = torch_dtype(manifest["dtype"])
    q, k, v = (torch.from_numpy(host[n]).to(dt).transpose(1, 2).contiguous().cuda().requires_grad_()
               for n in ("q", "k", "v"))
    d_o = torch.from_numpy(host["dO"]).to(dt).transpose(1, 2).contiguous().cuda()
    out = {}

    def forward():
        with sdpa_kernel(backend):
            out["o"] = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                                        scale=manifest["scale"])

    def backward(keep_graph):
        with sdpa_kernel(backend):
            out["grads"] = torch.autograd.grad([out["o"]], [q, k, v], [d_o], retain_graph=keep_graph)

    launch = training_launch(manifest, forward, backward)

    def fetch():
        res = {"o": out["o"].transpose(1, 2).float().contiguous().cpu().numpy()} if pass_of(manifest) == "fwdbwd" else {}
        for name, x in zip(("dq", "dk", "dv"), out["grads"]):
            res[name] = x.transpose(1, 2).float().contiguous().cpu().numpy()
        return res
    return launch, fetch


def selftest_prepare(variant, host, manifest):
    """numpy float64 (scripts/ext_numpy.py) written as float32; selftest:bad plants a bug: the sign of o
    in the forward, dk 10% off in a backward. selftest:flat runs a packed batch as one sequence (from
    the first sequence's h0, back from the last one's dhT): its o and per-token gradients, with the
    right states (their shapes are per sequence), the state carried across every boundary."""
    import numpy as np
    if variant == "selftest:unsupported":
        raise Unsupported("stand-in for a shape the variant does not take")
    res = gdn(host, manifest, has_backward(manifest))
    if variant == FLAT_VARIANT:
        flat = {name: x for name, x in host.items() if name != "cu_seqlens"}
        flat.update({name: host[name][-1:] if name == "dhT" else host[name][:1] for name in ("h0", "dhT") if name in host})
        res.update({name: x for name, x in gdn(flat, manifest, has_backward(manifest)).items()
                    if name not in PER_STATE})
    if pass_of(manifest) == "bwd":
        res = {name: x for name, x in res.items() if name not in ("o", "ht")}
    res = {name: x.astype(np.float32) for name, x in res.items()}
    if variant == "selftest:bad":
        res.update({"dk": res["dk"] * np.float32(1.1)} if "dk" in res else {"o": -res["o"]})
    calls = [0]

    def launch():
        calls[0] += 1
        if variant == "selftest:segv":
            os.kill(os.getpid(), signal.SIGSEGV)
        if variant == "selftest:hang":
            time.sleep(3600)
        if variant == "selftest:timing_raise" and calls[0] > 1:
            raise RuntimeError("stand-in for a fault on a later launch\nsecond line, not in the CSV")
    return launch, lambda: res


def cuda_sampler(launch, graph=False):
    """One cold sample: L2 flushed, CUDA events around the launch (or its graph's replay) on the current stream."""
    import torch
    if graph:
        # Captured on a side stream, as torch requires; each replay writes the same output buffers.
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            launch()
        launch = g.replay
    flush = torch.empty(max(2 * torch.cuda.get_device_properties(0).L2_cache_size, 8 << 20),
                        dtype=torch.uint8, device="cuda")
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    i = [0]

    def sample():
        flush.fill_(i[0] & 0xFF)
        i[0] += 1
        start.record()
        launch()
        stop.record()
        stop.synchronize()
        return start.elapsed_time(stop)
    return sample


def cpu_sampler(launch):
    def sample():
        t0 = time.perf_counter()
        launch()
        return (time.perf_counter() - t0) * 1e3
    return sample


def measure(variant, args, state):
    """Runs, checks, then times one variant; `state` records each stage for the parent."""
    import numpy as np
    d = args.dump_dir
    manifest = read_manifest(d)
    host = load_inputs(d, manifest)
    gpu = not variant.startswith("selftest:")
    if gpu:
        import torch
        torch.cuda.synchronize()  # initialises the context, so the peak below is this launch's alone
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    gdn = gdn_train_prepare if has_backward(manifest) else gdn_prepare
    attention = sdpa_train_prepare if has_backward(manifest) else sdpa_prepare
    prepare = {"gdn": gdn, "attention": attention}[family_of(variant)] if gpu else selftest_prepare
    launch, fetch = prepare(variant, host, manifest)
    sync = torch.cuda.synchronize if gpu else (lambda: None)
    launch()
    sync()
    peak = torch.cuda.max_memory_allocated() - base if gpu else None
    # Each output under the name of its flag of gdnbench check: o, ht; dq, dk, dv, dg, dbeta, dh0.
    outputs = fetch()
    paths = {name: os.path.join(d, f"{name}.npy") for name in outputs}
    for name, x in outputs.items():
        np.save(paths[name], x)
    row, rc = check(args.gdnbench, d, paths, variant, family_of(variant), args.device, pass_of(manifest), args.ref_o,
                    args.tolerances)
    for p in paths.values():
        if os.path.exists(p):
            os.remove(p)
    row.update({"command": "ext_runner", "suite": "scripts/ext_runner.py"})
    state.update(stage="checked", row=row)
    write_json(args.result, state)
    if rc != 0:
        return row  # a wrong result has no speed
    for _ in range(args.warmup):
        launch()
    sync()
    sampler = cuda_sampler(launch, args.graph) if gpu else cpu_sampler(launch)
    # How it timed, as the harness's own rows say it: the memset flush only (--l2-flush write).
    how = {"timer": "graph" if args.graph else "events", "l2_flush": "write"} if gpu else {"timer": "host", "l2_flush": ""}
    return timed_row(row, sample_until_done(sampler, args), peak, **how)


def attention_ref_f64(d, block=2048):
    """Causal softmax attention in float64 on the GPU, in query blocks; saved as [B, T, H, V] <f8."""
    import numpy as np
    import torch
    manifest = read_manifest(d)
    host = load_inputs(d, manifest)
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
    np.save(os.path.join(d, "ref_o.npy"), out)


def probe():
    import torch
    if not torch.cuda.is_available():
        raise RuntimeError("no CUDA device (torch.cuda.is_available() is False)")
    return torch.cuda.get_device_name(0)


def cuda_intact():
    """False when the context is lost: a sticky error fails every later call, even a synchronize."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_initialized():
        return True
    try:
        torch.cuda.synchronize()
        torch.zeros(1, device="cuda").add_(1).item()
        return True
    except Exception:  # noqa: BLE001
        return False


def child_main(args):
    """One measurement in this process; the outcome goes to --result as JSON, stage by stage."""
    state = {"stage": "started"}
    write_json(args.result, state)
    try:
        if args.child == "probe":
            state["device"] = probe()
        elif args.child == "ref":
            attention_ref_f64(args.dump_dir)
        else:
            state["row"] = measure(args.child, args, state)
        state["stage"] = "done"
    except Unsupported as e:
        state.update(stage="done", skip=str(e))
    except BaseException as e:  # noqa: BLE001 (whatever it was, the parent gets its first line)
        traceback.print_exc()
        state.update(error=first_line(e), crashed=not cuda_intact())
    write_json(args.result, state)
    sys.stdout.flush()
    sys.stderr.flush()
    # No interpreter teardown: torch's destructors on a lost context can hang or abort.
    os._exit(3 if "error" in state else 0)


# ---- the parent: one child per measurement, rows from their outcomes ----------------------------

def run_child(args, mode, d, device, extra=()):
    """Runs `mode` (a variant, "ref" or "probe") on the dump in `d` in a child; its final state."""
    result = os.path.join(d, f"result_{mode.replace(':', '_')}.json")
    cmd = [sys.executable, os.path.abspath(__file__), "--gdnbench", args.gdnbench, "--child", mode,
           "--dump-dir", d, "--result", result, "--device", device, "--warmup", str(args.warmup),
           "--min-samples", str(args.min_samples), "--max-samples", str(args.max_samples),
           "--max-seconds", str(args.max_seconds), "--cv-target", str(args.cv_target),
           "--tolerances", args.tolerances, *(["--graph"] if args.graph else []), *extra]
    return run_isolated(cmd, result, args.variant_timeout)


def run_shape(args, d, manifest, variants, device, out):
    """Every variant on one dumped problem; returns (failed, crashed) counts."""
    failed = crashed = 0
    ref = None
    plain = manifest["gate"] and manifest["delta"] and not manifest["h0"]
    for v in variants:
        attention = family_of(v) == "attention"
        # The GPU's float64 o for long attention; check computes the gradients' reference itself (on
        # the CPU, whole heads sampled past its budget), so a backward alone takes no --ref-o.
        needs_ref = attention and pass_of(manifest) != "bwd" and manifest["T"] > args.check_max_T
        if has_backward(manifest) and v not in BACKWARD_VARIANTS:
            row, bad = skipped_row(manifest, v, device, f"no backward pass (--pass {pass_of(manifest)}: {v} runs the "
                                                        "forward only here)"), False
        elif attention and not plain:
            row, bad = skipped_row(manifest, v, device, "attention baselines run only on the plain GDN configuration"), False
        elif attention and manifest["HV"] != manifest["H"]:
            row, bad = skipped_row(manifest, v, device, "attention needs H == HV (one value head per query head)"), False
        elif attention and has_backward(manifest) and manifest["T"] > args.check_max_backward_T:
            row, bad = skipped_row(manifest, v, device, f"attention's float64 backward runs on the CPU: T above "
                                                        f"--check-max-backward-T {args.check_max_backward_T}"), False
        elif attention and manifest.get("num_seqs"):  # as the harness's own packed rows
            row, bad = skipped_row(manifest, v, device, "attention baselines do not run packed batches"), False
        else:
            if needs_ref and ref is None:  # once per shape, shared by the SDPA backends
                ref = run_child(args, "ref", d, device)
                crashed += "error" in ref
            if needs_ref and "error" in ref:
                row, bad = skipped_row(manifest, v, device, f"float64 reference failed: {ref['error']}"), False
            else:
                extra = ["--ref-o", os.path.join(d, "ref_o.npy")] if needs_ref else []
                row, bad = row_of(run_child(args, v, d, device, extra), manifest, v, device)
        failed += row["status"] == "FAIL"
        crashed += bad
        out.append(row)
        print(f"{v} T={manifest['T']}: {row['status']} {row.get('time_median_ms') or ''} {row.get('reason') or ''}",
              flush=True)
    return failed, crashed


# ---- the self-test (no GPU): dump, a numpy recurrence as the "external" kernel, check, CSV ------
# (the recurrence and its backward: scripts/ext_numpy.py)

def self_test(args):
    import csv
    binary = args.gdnbench
    with tempfile.TemporaryDirectory() as work:
        header, run_cells = csv_header(binary, work)
        shape = {"B": 2, "T": 19, "H": 2, "K": 8, "V": 8, "dtype": "bf16", "h0": "on"}
        d = os.path.join(work, "dump")
        manifest = dump(binary, shape, 5, d)
        out = CsvOut(os.path.join(work, "ext.csv"), header, run_cells)
        args.variant_timeout, args.max_samples = 6.0, 20  # the hang costs the timeout, so keep it short
        failed, crashed = run_shape(args, d, manifest, list(SELF_TEST_VARIANTS), "self-test", out)
        with open(out.path, newline="") as f:
            rows = {r["variant"]: r for r in csv.DictReader(f)}
        got = {v: (rows[v]["status"], rows[v]["reason"]) for v in SELF_TEST_VARIANTS}
        assert got["selftest:good"] == ("PASS", "") and int(rows["selftest:good"]["samples"]) >= 10, got
        assert (rows["selftest:good"]["timer"], rows["selftest:good"]["l2_flush"]) == ("host", ""), rows["selftest:good"]
        assert got["selftest:bad"][0] == "FAIL" and not rows["selftest:bad"]["samples"], got
        assert got["selftest:unsupported"] == ("SKIPPED", "stand-in for a shape the variant does not take"), got
        assert got["selftest:segv"] == ("SKIPPED", "crashed: killed by SIGSEGV"), got
        assert got["selftest:timing_raise"] == (
            "FAIL", "PASS, then failed while timing: RuntimeError: stand-in for a fault on a later launch"), got
        assert rows["selftest:timing_raise"]["o_rel_l2"], "the check's metrics are kept"
        assert got["selftest:hang"] == ("SKIPPED", "crashed: no result after 6 s, killed"), got
        assert (failed, crashed) == (2, 3), (failed, crashed)
        assert "torch" not in sys.modules, "the parent must not import torch"
        assert len(CsvOut(out.path, header, run_cells).rows) == len(SELF_TEST_VARIANTS)  # reopens and keeps them
        assert all(r["tolerances"] == "builtin" and r["schema_version"] == run_cells["schema_version"]
                   for r in rows.values()), "every row, SKIPPED ones too, names its profile"
        # Grouped heads (--HV): the dump has HV value heads, and the stand-in passes on them.
        d = os.path.join(work, "dump_grouped")
        manifest = dump(binary, dict(shape, B=1, HV=4), 5, d)
        assert (manifest["H"], manifest["HV"]) == (2, 4), manifest
        assert run_shape(args, d, manifest, ["selftest:good"], "self-test", out) == (0, 0)
        bwd_csv = backward_self_test(args, work, shape, header, run_cells)
        packed_csv = packed_self_test(args, work, header, run_cells)
        run_gdnbench(binary, ["report", out.path, bwd_csv, packed_csv, "--out", os.path.join(work, "r.md")])
    print("ext_runner self-test: dump, child PASS/FAIL, unsupported, SIGSEGV, fault while timing, "
          "hang, CSV, report; backward (bwd, fwdbwd, dht off): gradients PASS/FAIL, no backward, SIGSEGV; "
          "packed batch (fwd, bwd, fwdbwd): per-sequence PASS, flat and planted FAIL: ok")


def backward_self_test(args, work, shape, header, run_cells):
    """The backward's plumbing: dO/dhT dumped, numpy gradients in gdnbench's layouts judged by check."""
    import csv
    bwd_variants = ["selftest:good", "selftest:bad", "selftest:unsupported", "selftest:segv",
                    "selftest:timing_raise", "ext:sdpa_flash", "ext:fla_fused_recurrent"]
    out = CsvOut(os.path.join(work, "ext_bwd.csv"), header, run_cells)
    totals = []
    for pass_, dht, variants in (("bwd", "on", bwd_variants), ("fwdbwd", "off", ["selftest:good", "selftest:bad"])):
        d = os.path.join(work, f"dump_{pass_}")
        manifest = dump(args.gdnbench, shape, 6, d, pass_, dht)
        assert os.path.exists(os.path.join(d, "dO.npy")) and os.path.exists(os.path.join(d, "dhT.npy")) == (dht == "on")
        totals.append(run_shape(args, d, manifest, variants, "self-test", out))
    with open(out.path, newline="") as f:
        rows = {(r["pass"], r["variant"]): r for r in csv.DictReader(f)}
    good, bad = rows[("bwd", "selftest:good")], rows[("bwd", "selftest:bad")]
    assert (good["status"], good["reason"], good["dht"]) == ("PASS", "", "on"), good
    assert all(good[f"{n}_rel_l2"] for n in ("dq", "dk", "dv", "dg", "dbeta", "dh0")), "every gradient judged"
    assert not good["o_rel_l2"] and int(good["samples"]) >= 10, "bwd judges and times the backward alone"
    assert bad["status"] == "FAIL" and "dk rel_l2" in bad["reason"] and "dq rel_l2" not in bad["reason"], bad
    assert not bad["samples"], "a wrong gradient has no speed"
    assert rows[("bwd", "selftest:unsupported")]["status"] == "SKIPPED"
    segv = rows[("bwd", "selftest:segv")]
    assert (segv["status"], segv["reason"], segv["pass"]) == ("SKIPPED", "crashed: killed by SIGSEGV", "bwd"), segv
    raised = rows[("bwd", "selftest:timing_raise")]
    assert raised["status"] == "FAIL" and raised["reason"].startswith("PASS, then failed while timing"), raised
    assert raised["dq_rel_l2"], "the check's gradient metrics are kept"
    assert rows[("bwd", "ext:fla_fused_recurrent")]["reason"].startswith("no backward pass (--pass bwd")
    assert rows[("bwd", "ext:sdpa_flash")]["reason"].startswith("attention baselines run only on the plain")
    both, both_bad = rows[("fwdbwd", "selftest:good")], rows[("fwdbwd", "selftest:bad")]
    assert (both["status"], both["dht"]) == ("PASS", "off") and both["o_rel_l2"] and both["dq_rel_l2"], both
    assert both_bad["status"] == "FAIL" and "dk rel_l2" in both_bad["reason"], both_bad
    assert totals == [(2, 2), (1, 0)], totals  # (failed, crashed): bad and timing_raise; segv and timing_raise
    return out.path


def packed_self_test(args, work, header, run_cells):
    """A packed batch: cu_seqlens in the dump, the stand-in run sequence by sequence from each state of
    h0 (and, backward, of dhT), judged by check against the packed float64 reference and gradients
    (h0, hT, dhT, dh0 one state per sequence); the same tokens run as one sequence (the state and
    its gradient carried across the boundaries) must fail it, forward and backward."""
    import csv
    packed = {"B": 1, "seqlens": "1,7,16,9", "H": 2, "K": 8, "V": 8, "dtype": "bf16"}
    out = CsvOut(os.path.join(work, "ext_packed.csv"), header, run_cells)
    totals = []
    for pass_, dht, h0, variants in (
            ("fwd", "on", "on", ["selftest:good", FLAT_VARIANT, "selftest:unsupported"]),
            ("fwd", "on", "off", ["selftest:good", FLAT_VARIANT, "ext:sdpa_flash"]),
            ("bwd", "on", "on", ["selftest:good", "selftest:bad", FLAT_VARIANT]),
            ("fwdbwd", "off", "on", ["selftest:good", FLAT_VARIANT])):
        d = os.path.join(work, f"dump_packed_{pass_}_h0{h0}")
        manifest = dump(args.gdnbench, dict(packed, h0=h0), 7, d, pass_, dht)
        assert manifest["num_seqs"] == 4 and manifest["cu_seqlens_list"] == [0, 1, 8, 24, 33], manifest
        totals.append(run_shape(args, d, manifest, variants, "self-test", out))
    with open(out.path, newline="") as f:
        rows = {(r["pass"], r["h0"], r["variant"]): r for r in csv.DictReader(f)}
    assert all(r["seqlens"] == "1+7+16+9" for r in rows.values()), "every row, SKIPPED ones too, names the lengths"
    for h0 in ("on", "off"):
        good, flat = rows[("fwd", h0, "selftest:good")], rows[("fwd", h0, FLAT_VARIANT)]
        assert (good["status"], good["reason"]) == ("PASS", "") and int(good["samples"]) >= 10, good
        assert flat["status"] == "FAIL" and "o rel_l2" in flat["reason"] and not flat["samples"], flat
    assert rows[("fwd", "on", "selftest:unsupported")]["status"] == "SKIPPED"
    sdpa = rows[("fwd", "off", "ext:sdpa_flash")]
    assert (sdpa["status"], sdpa["reason"]) == ("SKIPPED", "attention baselines do not run packed batches"), sdpa
    good, bad, flat = (rows[("bwd", "on", v)] for v in ("selftest:good", "selftest:bad", FLAT_VARIANT))
    assert (good["status"], good["reason"], good["dht"]) == ("PASS", "", "on"), good
    assert all(good[f"{n}_rel_l2"] for n in ("dq", "dk", "dv", "dg", "dbeta", "dh0")), "every gradient judged"
    assert bad["status"] == "FAIL" and "dk rel_l2" in bad["reason"] and "dq rel_l2" not in bad["reason"], bad
    assert flat["status"] == "FAIL" and "dk rel_l2" in flat["reason"] and not flat["samples"], flat
    both, both_flat = rows[("fwdbwd", "on", "selftest:good")], rows[("fwdbwd", "on", FLAT_VARIANT)]
    assert (both["status"], both["dht"]) == ("PASS", "off") and both["o_rel_l2"] and both["dh0_rel_l2"], both
    assert both_flat["status"] == "FAIL", both_flat
    assert totals == [(1, 0), (1, 0), (2, 0), (1, 0)], totals  # (failed, crashed): flat, and bad
    return out.path


# ---- main --------------------------------------------------------------------------------------

def int_list(text):
    try:
        xs = [int(x) for x in text.split(",") if x]
    except ValueError:
        fail(f"'{text}' is not a comma-separated list of integers")
    if not xs or any(x <= 0 for x in xs):
        fail(f"'{text}': positive integers expected")
    return xs


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gdnbench", default="build/gdnbench", help="the gdnbench binary (dump, check)")
    p.add_argument("--out", default="reports/ext.csv", help="CSV to append the rows to (gdnbench schema)")
    p.add_argument("--workdir", default=None, help="where the dumps go (default: a temporary directory)")
    p.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, of: " + ", ".join(VARIANTS))
    p.add_argument("--T", default="512,1024,2048,4096,8192,16384,32768,65536,131072", help="sequence lengths")
    p.add_argument("--seqlens", action="append", default=[], metavar="SPEC",
                   help="a packed batch (gdnbench's --seqlens: '1,63,64', '1024*16', 'random:16:1-2047'), B = 1, "
                        "passed to the peers as cu_seqlens; repeat for several; replaces --T and --B")
    p.add_argument("--B", default="1")
    p.add_argument("--H", default="32")
    p.add_argument("--HV", default=None, help="value heads (grouped: a multiple of H); default H")
    p.add_argument("--K", default="128")
    p.add_argument("--V", default="128")
    p.add_argument("--dtype", default="bf16", choices=("bf16", "fp16", "fp32"))
    p.add_argument("--h0", default="off", choices=("on", "off"))
    p.add_argument("--pass", dest="pass_", default="fwd", choices=("fwd", "bwd", "fwdbwd"),
                   help="the forward; the backward alone (gradients judged, the backward timed); or the training "
                        "step (o, hT and gradients judged, forward and backward timed as one region)")
    p.add_argument("--dht", default="on", choices=("on", "off"),
                   help="backward passes: the loss reads hT too (off: dL/dhT = 0), as gdnbench --dht")
    p.add_argument("--seed", type=int, default=None, help="input seed (default: drawn, recorded in the rows)")
    p.add_argument("--check-max-T", type=int, default=8192,
                   help="attention above this T: float64 reference on the GPU, judged by gdnbench check --ref-o")
    p.add_argument("--check-max-backward-T", type=int, default=16384,
                   help="attention backward rows above this T are SKIPPED: check's float64 attention backward "
                        "runs on the CPU (two whole heads at least, O(T^2 D) each)")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--graph", action="store_true", help="time replays of a CUDA graph of each launch (timer graph)")
    p.add_argument("--min-samples", type=int, default=10)
    p.add_argument("--max-samples", type=int, default=200)
    p.add_argument("--max-seconds", type=float, default=2.0)
    p.add_argument("--cv-target", type=float, default=0.02)
    p.add_argument("--variant-timeout", type=float, default=300.0,
                   help="seconds one child (a variant on a shape, or a reference) may take before it is killed")
    p.add_argument("--tolerances", default="builtin",
                   help="the tolerance profile gdnbench check judges by (gdnbench check --help): builtin, a file "
                        "or a name in tolerances/")
    p.add_argument("--self-test", action="store_true", help="test the non-GPU path (dump, check, CSV) and exit")
    # Internal: one measurement in a fresh process (see "Isolation" above).
    for name in ("--child", "--dump-dir", "--result", "--ref-o"):
        p.add_argument(name, default=None, help=argparse.SUPPRESS)
    p.add_argument("--device", default="", help=argparse.SUPPRESS)
    return p.parse_args()


def main():
    args = parse_args()
    if args.child:
        child_main(args)
    if not (os.path.isfile(args.gdnbench) and os.access(args.gdnbench, os.X_OK)):
        fail(f"--gdnbench: no executable '{args.gdnbench}' (build first)")
    args.gdnbench = os.path.abspath(args.gdnbench)
    if args.self_test:
        self_test(args)
        return
    if args.HV is not None and (not args.HV.isdigit() or int(args.HV) == 0 or
                                any(int(args.HV) % h for h in int_list(args.H))):
        fail(f"--HV {args.HV}: a positive multiple of every --H")
    variants = [v for v in args.variants.split(",") if v]
    for v in variants:
        if v not in VARIANTS:
            fail(f"--variants: unknown '{v}' (use {', '.join(VARIANTS)})")
    if args.min_samples < 1 or args.max_samples < args.min_samples or args.warmup < 0:
        fail("timing: need warmup >= 0 and 1 <= min-samples <= max-samples")
    if args.graph and args.pass_ != "fwd":
        fail("--graph: backward passes are timed with events (autograd is not captured in a CUDA graph here)")
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(8), "little") >> 1
    work = args.workdir or tempfile.mkdtemp(prefix="gdnbench_ext_")
    os.makedirs(work, exist_ok=True)
    state = run_child(args, "probe", work, "")
    if "error" in state:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
        fail(f"device probe: {state['error']}; --self-test checks the rest here")
    device = state["device"]
    header, run_cells = csv_header(args.gdnbench, work, args.tolerances)
    out = CsvOut(args.out, header, run_cells)
    failed = crashed = 0
    # A packed batch is B = 1 with its lengths in place of T; each spec is one shape.
    batches = [(1, None, spec) for spec in args.seqlens] or \
        [(B, T, None) for B in int_list(args.B) for T in int_list(args.T)]
    for H in int_list(args.H):
        for n, (B, T, spec) in enumerate(batches):
            shape = {"B": B, "H": H, "HV": int(args.HV) if args.HV else None, "K": int_list(args.K)[0],
                     "V": int_list(args.V)[0], "dtype": args.dtype, "h0": args.h0}
            shape.update({"seqlens": spec} if spec else {"T": T})
            d = os.path.join(work, f"packed{n}_H{H}" if spec else f"B{B}_T{T}_H{H}")
            manifest = dump(args.gdnbench, shape, seed, d, args.pass_, args.dht)
            f, c = run_shape(args, d, manifest, variants, device, out)
            failed, crashed = failed + f, crashed + c
            if not args.workdir:  # the long shapes' dumps and references take gigabytes
                shutil.rmtree(d, ignore_errors=True)
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)
    print(f"wrote {args.out}: {failed} check(s) failed, {crashed} crash(es)")
    sys.exit(1 if failed or crashed else 0)


if __name__ == "__main__":
    main()
