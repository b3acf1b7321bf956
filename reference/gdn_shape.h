// Shapes shared by the reference, the kernels and the harness (layout of docs/DESIGN.md section 1).
#pragma once
#include <cstdint>

struct GdnShape {
  int64_t B = 1;   // batch
  int64_t T = 1;   // tokens
  int64_t H = 1;   // q/k heads
  int64_t HV = 1;  // value heads, a multiple of H (grouped value heads)
  int64_t K = 64;  // key head dim
  int64_t V = 64;  // value head dim

  int64_t qk_elems() const { return B * T * H * K; }      // q, k: [B, T, H, K]
  int64_t v_elems() const { return B * T * HV * V; }      // v, o: [B, T, HV, V]
  int64_t gate_elems() const { return B * T * HV; }       // g, beta: [B, T, HV]
  int64_t state_elems() const { return B * HV * K * V; }  // h0, hT: [B, HV, K, V]
  int64_t group() const { return HV / H; }                // value heads per q/k head
};
