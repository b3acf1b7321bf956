#!/usr/bin/env python3
"""FLA's and FlashQLA's GDN forwards judged in-process by gdnbench.verify on a GPU machine: every
problem of a suite that each takes, on the device, with the harness's verdict, one CSV per peer.

    PYTHONPATH=/tmp/site python3 scripts/verify_peers.py --suite gate --out OUTDIR [--select-max-tokens N]

The peers are called as scripts/ext_runner.py calls them (its gdn_function: FLA with
FLA_FLASH_QLA=0, FlashQLA only at K = V = 128 in 16-bit): q, k, v in the problem's dtype on the
device, g (log decay) and beta float32, states [N, HV, K, V] float32, cu_seqlens for a packed batch
(int64 for FLA, int32 for FlashQLA). A problem a peer does not take is SKIPPED with the reason.
Prints one line per peer: PASS / FAIL / SKIPPED counts and the worst o against its floor.
"""
import argparse
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _here)  # ext_runner.py
sys.path.insert(0, os.path.join(os.path.dirname(_here), "build", "python"))

import gdnbench  # noqa: E402
from ext_runner import Unsupported as PeerUnsupported, gdn_function  # noqa: E402

PEERS = ("ext:fla_chunk", "ext:flashqla")


def peer_forward(variant):
    import torch

    names = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}

    def forward(q, k, v, g, beta, *, scale, initial_state, cu_seqlens):
        manifest = {"K": q.shape[-1], "V": v.shape[-1], "dtype": names[q.dtype]}
        try:
            fn = gdn_function(variant, manifest)
        except PeerUnsupported as e:
            raise gdnbench.Unsupported(str(e))
        extra = {}
        if cu_seqlens is not None:
            extra["cu_seqlens"] = cu_seqlens.to(torch.int32 if variant == "ext:flashqla" else torch.long)
        o, final = fn(q, k, v, g=g, beta=beta, scale=scale, initial_state=initial_state, output_final_state=True,
                      **extra)
        torch.cuda.synchronize()
        return o, final

    return forward


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", default="gate")
    ap.add_argument("--out", required=True, help="a folder for verify_<peer>.csv")
    ap.add_argument("--peers", default=",".join(PEERS))
    ap.add_argument("--select-max-tokens", type=int, default=0, help="only problems of at most B T tokens (0: all)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    select = (lambda p: p.B * p.T <= args.select_max_tokens) if args.select_max_tokens else None
    for variant in args.peers.split(","):
        rows = gdnbench.verify(peer_forward(variant), suite=args.suite, tensors="torch", device="cuda",
                               variant=variant, select=select,
                               csv=os.path.join(args.out, f"verify_{variant.split(':')[1]}.csv"))
        count = {s: sum(r.status == s for r in rows) for s in ("PASS", "FAIL", "SKIPPED")}
        judged = [r for r in rows if r.o_err_vs_floor is not None]
        worst = max(judged, key=lambda r: r.o_err_vs_floor, default=None)
        print(f"{variant}: {count['PASS']} PASS, {count['FAIL']} FAIL, {count['SKIPPED']} SKIPPED; worst o "
              + (f"{worst.o_err_vs_floor:.2f}x its floor" if worst else "-"))


if __name__ == "__main__":
    main()
