"""The "external kernels" of scripts/ext_runner.py --self-test: the GDN recurrence and its backward in
numpy float64, written apart from gdnbench's C++ reference so that `gdnbench check` judging them is a
test of the dump/check plumbing (layouts, files, the upstream gradients), not of one code against
itself. Inputs are the dump's tensors in gdnbench's layouts (ext_common.load_inputs); the delta term
is always on (ext_runner dumps no other problem).

Forward, per token t and value head hv (q/k head h = hv // (HV / H)), state S in K x V:
    S' = exp(g_t) S;  r = v_t - S'^T k_t;  S = S' + beta_t k_t r^T;  o_t = scale S^T q_t
Backward (docs/BACKWARD.md, "The recurrent step and its adjoint"), t from the last, dS = dhT:
    dS += scale q_t dO_t^T;  dq_t += scale S_t dO_t;  du = dS^T k_t;  dk_t += dS u
    dv_t = beta_t du;  dbeta_t = du . r;  dS -= beta_t k_t du^T;  dk_t -= beta_t S' du
    dg_t = exp(g_t) <dS, S_{t-1}>;  dS = exp(g_t) dS;  dh0 = dS after token 0
A packed batch (the dump's cu_seqlens, B = 1) runs sequence by sequence (gdn): each from its own
state of h0 and, backward, of dhT; no state and no state gradient crosses a boundary.
"""

# The tensors of a packed batch with a token axis (axis 1, B = 1) and with one state per sequence (axis 0).
PER_TOKEN = ("q", "k", "v", "g", "beta", "dO", "o", "dq", "dk", "dv", "dg", "dbeta")
PER_STATE = ("h0", "dhT", "ht", "dh0")


def sequences(host):
    """The problems `host` holds: a packed batch's sequences as problems of their own (B = 1; their
    tokens, their state of h0 and dhT), an unpacked one alone."""
    if "cu_seqlens" not in host:
        return [host]
    unknown = set(host) - set(PER_TOKEN) - set(PER_STATE) - {"cu_seqlens"}
    if unknown:
        raise ValueError(f"{', '.join(sorted(unknown))}: neither per token nor per sequence")
    cu = [int(x) for x in host["cu_seqlens"]]
    return [{name: x[:, a:b] if name in PER_TOKEN else x[n:n + 1] for name, x in host.items() if name != "cu_seqlens"}
            for n, (a, b) in enumerate(zip(cu, cu[1:]))]


def gdn(host, manifest, backward=False):
    """o and hT, and with `backward` the gradients of gdn_backward, in float64 and gdnbench's layouts;
    a packed batch's sequences run apart and joined again (tokens along T, states one per sequence)."""
    import numpy as np
    parts = []
    for one in sequences(host):
        o, states = gdn_forward(one, manifest)
        res = {"o": o, "ht": states[-1]}
        if backward:
            res.update(gdn_backward(one, manifest, states))
        parts.append(res)
    return {name: np.concatenate([r[name] for r in parts], axis=1 if name in PER_TOKEN else 0) for name in parts[0]}


def gdn_forward(host, manifest):
    """o [B, T, HV, V] and the states S_0 .. S_T, [T + 1, B, HV, K, V], in float64."""
    import numpy as np
    q, k, v, beta = (host[n].astype(np.float64) for n in ("q", "k", "v", "beta"))
    g = host["g"].astype(np.float64) if "g" in host else np.zeros_like(beta)
    B, T, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    states = np.zeros((T + 1, B, HV, K, V))
    if "h0" in host:
        states[0] = host["h0"]
    o = np.zeros((B, T, HV, V))
    for t in range(T):
        for hv in range(HV):
            h = hv // (HV // H)
            S = np.exp(g[:, t, hv])[:, None, None] * states[t][:, hv]
            u = beta[:, t, hv, None] * (v[:, t, hv] - np.einsum("bkv,bk->bv", S, k[:, t, h]))
            states[t + 1][:, hv] = S + np.einsum("bk,bv->bkv", k[:, t, h], u)
            o[:, t, hv] = manifest["scale"] * np.einsum("bkv,bk->bv", states[t + 1][:, hv], q[:, t, h])
    return o, states


def gdn_backward(host, manifest, states):
    """dL/d(each input) of L = sum(dO .* o) + sum(dhT .* hT), in float64 and the inputs' layouts:
    dq, dk [B, T, H, K] (summed over each q/k head's value heads), dv [B, T, HV, V], dg, dbeta
    [B, T, HV], dh0 [B, HV, K, V]; dg only with a gate, dh0 only with h0 (as gdnbench check takes them)."""
    import numpy as np
    q, k, v, beta = (host[n].astype(np.float64) for n in ("q", "k", "v", "beta"))
    g = host["g"].astype(np.float64) if "g" in host else np.zeros_like(beta)
    dO = host["dO"].astype(np.float64)
    B, T, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    scale = manifest["scale"]
    dS = host["dhT"].astype(np.float64).copy() if "dhT" in host else np.zeros((B, HV, K, V))
    dq, dk = np.zeros_like(q), np.zeros_like(k)
    dv, dg, dbeta = np.zeros_like(v), np.zeros_like(beta), np.zeros_like(beta)
    for t in reversed(range(T)):
        for hv in range(HV):
            h = hv // (HV // H)
            a = np.exp(g[:, t, hv])
            kt, qt, bt = k[:, t, h], q[:, t, h], beta[:, t, hv]
            S_prev, S_t = states[t][:, hv], states[t + 1][:, hv]
            Sp = a[:, None, None] * S_prev
            r = v[:, t, hv] - np.einsum("bkv,bk->bv", Sp, kt)
            u = bt[:, None] * r
            d = dS[:, hv] + scale * np.einsum("bk,bv->bkv", qt, dO[:, t, hv])
            dq[:, t, h] += scale * np.einsum("bkv,bv->bk", S_t, dO[:, t, hv])
            du = np.einsum("bkv,bk->bv", d, kt)
            dk[:, t, h] += np.einsum("bkv,bv->bk", d, u) - bt[:, None] * np.einsum("bkv,bv->bk", Sp, du)
            dv[:, t, hv] = bt[:, None] * du
            dbeta[:, t, hv] = np.sum(du * r, axis=-1)
            d = d - bt[:, None, None] * np.einsum("bk,bv->bkv", kt, du)
            dg[:, t, hv] = a * np.sum(d * S_prev, axis=(-2, -1))
            dS[:, hv] = a[:, None, None] * d
    grads = {"dq": dq, "dk": dk, "dv": dv, "dbeta": dbeta}
    if "g" in host:
        grads["dg"] = dg
    if "h0" in host:
        grads["dh0"] = dS
    return grads
