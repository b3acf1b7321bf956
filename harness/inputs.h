// Seeded, counter-based input generation: element i of a tensor is a pure function of (seed,
// tensor, i), so values never depend on thread count or order. q, k, v are rounded to the problem
// dtype here, so the reference sees exactly what the kernels see.
#pragma once
#include <cstdint>
#include <vector>

#include "harness/problem.h"
#include "reference/gdn_reference.h"

struct HostInputs {
  std::vector<float> q, k;  // [B, T, H, K], L2-normalised per row, dtype-rounded
  std::vector<float> v;     // [B, T, HV, V], dtype-rounded
  std::vector<float> g;     // [B, T, HV] (empty when the problem has no gate)
  std::vector<float> beta;  // [B, T, HV]
  std::vector<float> h0;    // [B, HV, K, V] (empty when the problem has no h0)
};

// Standard normal and uniform (0, 1] draws for element `index` of tensor `stream`.
double counter_normal(uint64_t seed, uint32_t stream, uint64_t index);
double counter_uniform(uint64_t seed, uint32_t stream, uint64_t index);

HostInputs make_inputs(const Problem& p);

// Float64 copies of the inputs and the view the reference takes.
struct RefInputsF64 {
  std::vector<double> q, k, v, g, beta, h0;
  GdnRefInputs view() const;
};
RefInputsF64 to_f64(const HostInputs& in);
