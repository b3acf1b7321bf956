// Inputs of a front-end problem (Problem::frontend, `--frontend on`): the raw projections and
// front-end parameters a GDN layer feeds its kernel (docs/DESIGN.md section 1, "Fused front end"),
// instead of ready-made q, k, v, g, beta. Layouts of reference/frontend_reference.h.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "harness/problem.h"
#include "reference/gdn_reference.h"

template <typename E>
struct FrontEndTensors {
  std::vector<E> x_q, x_k;        // [B, T, H*K] raw q, k projections (dtype)
  std::vector<E> x_v;             // [B, T, HV*V] (dtype)
  std::vector<E> a, b;            // [B, T, HV] gate and beta projections (dtype)
  std::vector<E> A_log, dt_bias;  // [HV] float32
  std::vector<E> w_q, w_k, w_v;   // conv weights [channels, 4] (dtype)
  std::vector<E> bias_q, bias_k, bias_v;     // conv bias [channels] (dtype)
  std::vector<E> cache_q, cache_k, cache_v;  // initial conv caches [B, channels, 3] (dtype);
                                             // empty when h0 is off (a fresh sequence)
  bool empty() const { return x_q.empty(); }
};
using FrontEndHost = FrontEndTensors<float>;
using FrontEndF64 = FrontEndTensors<double>;

// Counter-based like make_inputs (its seed, streams of its own): x ~ N(0, 1); conv weights
// N(0, 1) / 2 (the scale of PyTorch's conv1d init, fan-in 4); bias N(0, 1) / 10; a, b ~ N(0, 1);
// A_log = log U[1, 16]; dt_bias = softplus^-1(dt), log dt ~ U[log 1e-3, log 0.1] (Mamba's init);
// caches N(0, 1) when h0 is on (the problem continues a sequence). Rounded to p.dtype except
// A_log and dt_bias.
FrontEndHost make_frontend_inputs(const Problem& p);
FrontEndF64 frontend_to_f64(const FrontEndHost& in);
const char* frontend_distributions();

// The float64 answer of a front-end problem: reference/frontend_reference.h's front end, then
// the recurrence. o and hT as for a plain problem; conv_cache the final q, k, v caches
// concatenated in that order ([B, H*K, 3], [B, H*K, 3], [B, HV*V, 3]). `heads` (flat b HV + hv,
// sorted; empty: every head) limits the recurrence, as GdnRefOptions::heads does. The front end
// is per head too, but it costs ~1/K of the recurrence (a width-4 conv per channel against K V
// state updates per token and head), so it always runs in full and the conv caches stay complete.
GdnRefOutputs frontend_reference_for(const Problem& p, const FrontEndF64& in,
                                     const std::vector<double>& h0, int threads,
                                     const std::vector<int64_t>& heads = {});

// Elements of the concatenated final conv caches.
int64_t frontend_conv_cache_elems(const GdnShape& s);

// Minimum bytes of a front-end problem: projections, a, b, conv weights and biases read once, o
// written once, conv caches read (h0 on) and written, the state read (h0 on) and written at
// state_bytes per element (4: float32, 2: a bf16 state).
double frontend_min_bytes(const Problem& p, int state_bytes);
double frontend_min_bytes_f32_state(const Problem& p);
double frontend_min_bytes_bf16_state(const Problem& p);

// The SKIPPED reason when a variant's input kind and the problem's differ: a variant that takes
// raw projections (true) on a plain problem, or one that takes q, k, v, g, beta on a front-end one.
std::string frontend_mismatch_reason(bool variant_takes_frontend);
