"""gdnbench's Python module: a float32 numpy GDN passes the gate's problems through
gdnbench.verify, in every layout it offers, and copies of it with planted mistakes fail."""
import csv
import io

import numpy as np
import pytest

import gdnbench


def gdn_numpy(q, k, v, g, beta, *, scale, initial_state, cu_seqlens, mistake=None):
    """The recurrence token by token in float32: S = exp(g) (I - beta k k^T) S + beta k v^T,
    o = scale S^T q; value head hv reads query/key head hv // (HV / H)."""
    B, T, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    rep = HV // H
    o = np.zeros((B, T, HV, V), np.float32)
    spans = ([(b, 0, T) for b in range(B)] if cu_seqlens is None else
             [(0, int(cu_seqlens[i]), int(cu_seqlens[i + 1])) for i in range(len(cu_seqlens) - 1)])
    hT = np.zeros((len(spans), HV, K, V), np.float32)
    S = None
    for n, (b, t0, t1) in enumerate(spans):
        if not (mistake == "carry_state" and n > 0):  # the mistake: a sequence starts from the last one's state
            S = initial_state[n].astype(np.float32) if initial_state is not None else np.zeros((HV, K, V), np.float32)
        end = t1 if mistake != "chunk_tail" else t0 + (t1 - t0) // 64 * 64  # drops a partial last chunk
        for t in range(t0, end):
            kt = np.repeat(k[b, t], rep, axis=0)
            qt = np.repeat(q[b, t], rep, axis=0)
            decay = g[b, t - 1] if mistake == "decay_index" and t > t0 else g[b, t]
            S = S * np.exp(decay)[:, None, None]
            recalled = np.einsum("hkv,hk->hv", S, kt)
            if mistake == "beta_on_value":  # beta on v alone, the recalled value subtracted whole
                S = S + kt[:, :, None] * (beta[b, t][:, None] * v[b, t] - recalled)[:, None, :]
            else:
                S = S + beta[b, t][:, None, None] * kt[:, :, None] * (v[b, t] - recalled)[:, None, :]
            o[b, t] = scale * np.einsum("hkv,hk->hv", S, qt)
        hT[n] = S
    return o, hT


def small(p):
    """The gate's problems a Python loop over tokens takes in CI's time (about 400 of them)."""
    return p.B * p.T <= 1024 and p.K <= 128


def tails(p):
    """Of those, the ones across chunk edges: where a mistake in the token order shows first."""
    return small(p) and p.T in (63, 65, 129, 200, 300) and p.B * p.T <= 600


def run(fn, select=small, **kw):
    return gdnbench.verify(fn, suite="gate", precision="fp32_math", select=select, **kw)


def test_problems_inputs_and_reference_have_the_harness_shapes():
    ps = gdnbench.problems(T=[1, 65], K=16, V=8, H=2, HV=4, h0="on", dtypes="bf16")
    assert [p.T for p in ps] == [1, 65]
    p = ps[1]
    x = p.inputs()
    assert x["q"].shape == (1, 65, 2, 16) and x["q"].dtype == np.float32
    assert x["v"].shape == (1, 65, 4, 8) and x["beta"].shape == (1, 65, 4) and x["h0"].shape == (1, 4, 16, 8)
    ref = p.reference()
    assert ref["o"].shape == (1, 65, 4, 8) and ref["o"].dtype == np.float64 and ref["hT"].shape == (1, 4, 16, 8)
    # bf16 inputs: every value is exact in bf16 (its low 16 bits are zero)
    assert not np.any(x["q"].view(np.uint32) & 0xFFFF)


def test_the_reference_itself_passes_and_a_perturbed_one_fails():
    p = gdnbench.problems(T=200, K=32, V=16, h0="on", dtypes="fp32")[0]
    ref = p.reference()
    good = p.judge(ref["o"], ref["hT"], precision="fp32_math")
    assert good.passed and good.o_err_vs_floor <= 1.0 + 1e-9, good
    o = ref["o"].copy()
    o[0, 150, 0, :] += 1e-2 * np.abs(o).max()
    bad = p.judge(o, ref["hT"], precision="fp32_math")
    assert bad.status == "FAIL" and "o rel_l2" in bad.reason
    nan = ref["o"].copy()
    nan[0, 3, 0, 0] = np.nan
    assert not p.judge(nan, ref["hT"]).passed
    assert "hT not given" in p.judge(ref["o"]).reason


def test_a_wrong_output_shape_or_option_is_a_clear_error():
    p = gdnbench.problems(T=8, K=16, V=8)[0]
    with pytest.raises(ValueError, match="o: shape"):
        p.judge(np.zeros((1, 8, 1, 9)))
    with pytest.raises(ValueError, match="--T"):
        gdnbench.problems(T=0)
    with pytest.raises(ValueError):
        gdnbench.problems(no_such_flag=1)
    with pytest.raises(ValueError):
        gdnbench.verify(gdn_numpy, layout="tbhd")


def test_numpy_gdn_passes_the_gate_problems():
    rows = run(gdn_numpy)
    judged = [r for r in rows if r.status != "SKIPPED"]
    assert len(judged) >= 50
    failed = [r for r in judged if not r.passed]
    assert not failed, failed[:3]
    assert any("front-end" in r.reason for r in rows if r.status == "SKIPPED")


@pytest.mark.parametrize("layout,state,decay", [("bhtd", "kv", "log"), ("bthd", "vk", "alpha"), ("bhtd", "vk", "alpha")])
def test_every_layout_passes(layout, state, decay):
    def fn(q, k, v, g, beta, *, scale, initial_state, cu_seqlens):
        t = (lambda a: np.swapaxes(a, 1, 2)) if layout == "bhtd" else (lambda a: a)
        s = (lambda a: None if a is None else np.swapaxes(a, -1, -2)) if state == "vk" else (lambda a: a)
        g_log = np.log(g) if decay == "alpha" else g
        o, hT = gdn_numpy(t(q), t(k), t(v), t(g_log), t(beta), scale=scale, initial_state=s(initial_state),
                          cu_seqlens=cu_seqlens)
        return t(o), s(hT)

    rows = gdnbench.verify(fn, T=[1, 63, 65, 130], K=16, V=8, H=2, HV=4, B=2, h0=["on", "off"], dtypes="fp32",
                           layout=layout, state=state, decay=decay, precision="fp32_math")
    assert len(rows) == 8 and all(r.passed for r in rows), [r for r in rows if not r.passed][:2]


def packed(p):
    return small(p) and p.packed


@pytest.mark.parametrize("mistake,select", [("decay_index", tails), ("beta_on_value", tails), ("chunk_tail", tails),
                                            ("carry_state", packed)])
def test_planted_mistakes_fail(mistake, select):
    def fn(*args, **kw):
        return gdn_numpy(*args, mistake=mistake, **kw)

    rows = run(fn, select=select)
    assert any(r.status == "FAIL" for r in rows), mistake


def test_packed_batches_reach_fn_with_their_offsets_or_are_skipped():
    seen = []

    def fn(q, k, v, g, beta, *, scale, initial_state, cu_seqlens):
        seen.append((q.shape, None if cu_seqlens is None else list(cu_seqlens), initial_state.shape))
        return gdn_numpy(q, k, v, g, beta, scale=scale, initial_state=initial_state, cu_seqlens=cu_seqlens)

    opts = dict(seqlens="1,63,64,65,130", K=16, V=8, h0="on", dtypes="fp32", precision="fp32_math")
    rows = gdnbench.verify(fn, **opts)
    assert [r.status for r in rows] == ["PASS"]
    assert seen == [((1, 323, 4, 16), [0, 1, 64, 128, 193, 323], (5, 4, 16, 8))]  # the default suite: H = 4
    rows = gdnbench.verify(fn, varlen=False, **opts)
    assert [r.status for r in rows] == ["SKIPPED"] and "packed" in rows[0].reason


def test_a_raise_is_a_failed_row_unsupported_a_skipped_one_and_the_run_goes_on():
    def fn(q, *args, **kw):
        if q.shape[1] == 63:
            raise RuntimeError("stand-in for a kernel fault")
        if q.shape[1] == 65:
            raise gdnbench.Unsupported("stand-in for a length it does not take")
        return gdn_numpy(q, *args, **kw)

    rows = gdnbench.verify(fn, T=[63, 64, 65], K=16, V=8, dtypes="fp32", precision="fp32_math")
    assert [r.status for r in rows] == ["FAIL", "PASS", "SKIPPED"]
    assert "RuntimeError: stand-in" in rows[0].reason and rows[2].reason == "stand-in for a length it does not take"


def test_csv_has_the_harness_schema(tmp_path):
    path = tmp_path / "rows.csv"
    rows = gdnbench.verify(gdn_numpy, T=[64], K=16, V=8, dtypes="bf16", precision="fp32_math", csv=str(path))
    table = list(csv.DictReader(io.StringIO(path.read_text())))
    assert len(table) == 1 and table[0]["status"] == "PASS" and table[0]["backend"] == "python"
    assert float(table[0]["o_rel_l2"]) == pytest.approx(rows[0].o_rel_l2, rel=1e-5)


def test_a_layout_the_function_does_not_take_fails():
    rows = gdnbench.verify(gdn_numpy, T=[65], K=16, V=8, H=2, HV=4, dtypes="fp32", layout="bhtd", state="vk",
                           h0="on", precision="fp32_math")
    assert [r.status for r in rows] == ["FAIL"]


def test_the_installed_package_finds_its_own_suites(tmp_path):
    """`pip install .` installs component "python": the module and a copy of suites/, claims/
    and tolerances/ beside it, so a suite's name resolves inside the package wherever it is
    imported, not in a checkout that may be gone."""
    import os
    import subprocess
    import sys
    build = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "build")
    if not os.path.isfile(os.path.join(build, "cmake_install.cmake")):
        pytest.skip("no CMake build tree to install from")
    prefix = tmp_path / "site"
    subprocess.run(["cmake", "--install", build, "--component", "python", "--prefix", str(prefix)],
                   check=True, capture_output=True)
    probe = ("import gdnbench, os; p = gdnbench._core.find_suite('gate'); print(p); "
             "print(len(gdnbench.problems('smoke')))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=str(tmp_path), check=True, capture_output=True,
                         text=True, env={**os.environ, "PYTHONPATH": str(prefix)}).stdout.split()
    assert out[0] == str(prefix / "gdnbench" / "data" / "suites" / "gate.ini")
    assert int(out[1]) > 0
