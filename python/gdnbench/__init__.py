"""gdnbench in-process: a GDN forward written in Python (numpy, PyTorch, Triton, ...) judged by the
harness itself against its float64 reference, on the problems of its suites.

    import gdnbench
    def my_gdn(q, k, v, g, beta, *, scale, initial_state, cu_seqlens):
        ...                                  # q, k [B, T, H, K]; v [B, T, HV, V]; g, beta [B, T, HV]
        return o, final_state                # o [B, T, HV, V]; states [sequences, HV, K, V]
    assert all(r.passed or r.status == "SKIPPED" for r in gdnbench.verify(my_gdn, suite="gate"))

The problems, inputs, reference, metrics and bounds are the C++ harness's (gdnbench._core): the
same flags as `gdnbench verify` (keyword arguments: T=[1, 64], h0="on", gate_dist="zero"), the
same seeded inputs and the same verdict. Only the layouts of other libraries live here.
"""
import datetime
import os
import socket
import subprocess

import numpy as np

from ._core import Problem, UsageError, Verdict, csv_text
from . import _core

# An installed package carries its own suites, claims and tolerance profiles (data/); the build
# tree's package finds them in the source tree.
_DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
if os.path.isdir(_DATA_DIR):
    _core.set_data_dir(_DATA_DIR)

__all__ = ["Problem", "Verdict", "UsageError", "Unsupported", "problems", "verify", "command_line", "write_csv"]


class Unsupported(Exception):
    """Raised by a function given to verify() for a problem it does not take (a head dim, a dtype):
    the problem's row is SKIPPED with the message as its reason, not FAIL."""

_LAYOUTS = ("bthd", "bhtd")  # [batch, time, head, dim] (gdnbench's, FLA's) or head-first
_STATES = ("kv", "vk")       # a state of K x V (gdnbench's, FLA's) or V x K (FlashInfer's, FlashQLA's)
_DECAYS = ("log", "alpha")   # g as log decay, or alpha = exp(g)


def command_line(suite=None, **options):
    """The flags of `gdnbench verify` for a suite and keyword options: T=[1, 63] is --T 1,63,
    gate_dist="zero" is --gate-dist zero, True and False are on and off."""
    args = ["--suite", suite] if suite else []
    for name, value in options.items():
        if value is None:
            continue
        if isinstance(value, bool):
            value = "on" if value else "off"
        elif isinstance(value, (list, tuple)):
            value = ",".join(str(x) for x in value)
        args += ["--" + name.replace("_", "-"), str(value)]
    return args


def problems(suite=None, **options):
    """The distinct problems of `gdnbench verify` with these options (gdnbench.Problem: shape,
    dtype, inputs(), reference(), judge(o, hT))."""
    return _core.problems(command_line(suite, **options))


def _numpy(x):
    if hasattr(x, "detach"):  # a torch tensor, any device and float type
        x = x.detach().float().cpu().numpy()
    return np.asarray(x)


def _to_layout(a, layout):
    # [B, T, heads, ...] to head-first [B, heads, T, ...]
    return np.ascontiguousarray(np.swapaxes(a, 1, 2)) if layout == "bhtd" and a is not None else a


def _from_layout(a, layout):
    return np.swapaxes(a, 1, 2) if layout == "bhtd" else a


def _state_to(a, state):
    return np.ascontiguousarray(np.swapaxes(a, -1, -2)) if state == "vk" and a is not None else a


def _state_from(a, state):
    return np.swapaxes(a, -1, -2) if state == "vk" else a


def _torch_converter(problem, device):
    import torch  # only when asked for: numpy is the default

    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[problem.dtype]

    def convert(name, a):
        if a is None:
            return None
        t = torch.from_numpy(np.ascontiguousarray(a))  # no copy on the host
        # q, k, v in the problem's dtype (exact: the values are); g, beta and states in float32.
        return t.to(device=device, dtype=dtype if name in ("q", "k", "v") else t.dtype)

    return convert


def _call(fn, problem, layout, state, decay, tensors, device):
    x = problem.inputs()
    g = x["g"] if x["g"] is not None else np.zeros_like(x["beta"])  # no gate: the decay 1
    if decay == "alpha":
        g = np.exp(g, dtype=np.float32)
    args = {
        "q": _to_layout(x["q"], layout), "k": _to_layout(x["k"], layout), "v": _to_layout(x["v"], layout),
        "g": _to_layout(g, layout), "beta": _to_layout(x["beta"], layout),
        "initial_state": _state_to(x["h0"], state), "cu_seqlens": x["cu_seqlens"],
    }
    if tensors == "torch":
        convert = _torch_converter(problem, device)
        args = {k: convert(k, v) for k, v in args.items()}
    out = fn(args["q"], args["k"], args["v"], args["g"], args["beta"], scale=problem.scale,
             initial_state=args["initial_state"], cu_seqlens=args["cu_seqlens"])
    o, hT = (out if isinstance(out, tuple) else (out, None))
    o = _from_layout(_numpy(o), layout)
    hT = None if hT is None else _state_from(_numpy(hT), state)
    return o, hT


def verify(fn, suite=None, *, layout="bthd", state="kv", decay="log", varlen=True, tensors="numpy",
           device="cuda", precision="tensor_core", tolerances="builtin", variant="python", select=None,
           csv=None, threads=0, **options):
    """Calls fn on every problem of the suite (None: gdnbench verify's default; "gate": the gate),
    with keyword options as gdnbench verify's flags, and
    judges its outputs as `gdnbench verify` judges a variant: a list of gdnbench.Verdict (status,
    passed, reason, o_rel_l2, o_err_vs_floor, o_bound, ht_rel_l2, ht_bound).

    fn(q, k, v, g, beta, *, scale, initial_state, cu_seqlens) returns o, or (o, final_state).
    layout: "bthd" ([B, T, H, K]) or "bhtd" (head-first); state: "kv" or "vk" for initial and final
    states; decay: g as "log" decay or "alpha" = exp(g); tensors: "numpy" (float32 arrays holding
    values exact in the problem's dtype) or "torch" (the dtype's tensors on `device`).
    SKIPPED, with the reason: front-end and backward problems, problems without the delta term,
    packed batches when varlen is False, problems select(problem) is false for, and those fn raises
    gdnbench.Unsupported for. Any other raise in fn, or an output of the wrong shape, is a FAIL
    with its message.
    o is judged in the problem's dtype (a float32 o is rounded to it, as a kernel writing it rounds).
    precision: the tolerance class (tensor_core, fp32_math, ...); tolerances: builtin or a file.
    csv: a path, written with every row in gdnbench's CSV schema."""
    if layout not in _LAYOUTS or state not in _STATES or decay not in _DECAYS or tensors not in ("numpy", "torch"):
        raise ValueError(f"layout {layout!r} (bthd, bhtd), state {state!r} (kv, vk), decay {decay!r} (log, alpha), "
                         f"tensors {tensors!r} (numpy, torch): one is not known")
    _core.check_judge_options(precision, tolerances)
    verdicts = []
    for p in problems(suite, **options):
        reason = ("a front-end problem (raw projections): not a token mixer's input" if p.frontend else
                  "a backward problem: verify judges forwards" if p.pass_ != "fwd" else
                  "no delta term (gated linear attention): another recurrence" if not p.use_delta else
                  "a packed batch and varlen=False" if p.packed and not varlen else
                  "not selected by the caller" if select is not None and not select(p) else None)
        if reason:
            verdicts.append(p.skipped(variant, reason))
            continue
        try:
            o, hT = _call(fn, p, layout, state, decay, tensors, device)
        except Unsupported as e:
            verdicts.append(p.skipped(variant, str(e)))
            continue
        except Exception as e:  # a kernel that raises is a row, not the end of the run
            verdicts.append(p.failed(variant, f"raised {type(e).__name__}: {e}"))
            continue
        try:
            verdicts.append(p.judge(o, hT, precision=precision, tolerances=tolerances, variant=variant,
                                    threads=threads))
        except ValueError as e:  # outputs of the wrong shape or type
            verdicts.append(p.failed(variant, str(e)))
    if csv:
        write_csv(csv, verdicts, suite=suite or "", tolerances=tolerances)
    return verdicts


def _git_sha():
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        return subprocess.run(["git", "-C", here, "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, timeout=10).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def write_csv(path, verdicts, suite="", tolerances="builtin"):
    """The verdicts as gdnbench's CSV (the schema of `gdnbench verify --out`)."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    meta = {"run_id": f"{now}-python", "timestamp": now, "git_sha": _git_sha(), "host": socket.gethostname(),
            "suite": suite, "tolerances": tolerances}
    with open(path, "w", encoding="utf-8") as f:
        f.write(csv_text(verdicts, meta))
