// The exact sequence split on one device (--segments R): each batch row's T tokens as R segments
// on chunk boundaries, every segment run as a sequence of a packed batch of the variant itself:
//   local:    from a zero state, the segment's own final state B_r (K x V);
//   transfer: with v = 0 and the identity as initial state (V' = K), its transfer matrix A_r (K x K):
//             the state leaving the segment is A_r S + B_r for the state S entering it;
//   exchange: S_0 = h0 (or 0), S_{r+1} = A_r S_r + B_r, in float32 (segment_entry_states);
//   seeded:   every segment again from its true entering state S_r: o, and hT from the last one.
// The same algebra as wy_ut's two-level scan one level up, and what a context-parallel run does
// across devices, where the exchange is the only step that crosses them (there an NCCL exchange
// would take the place of segment_entry_states' loop). Here the exchange runs
// on the host between the passes, and each launch creates its seeded pass: a correctness path,
// whose rows `run` does not time.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/inputs.h"
#include "harness/problem.h"
#include "harness/variant.h"

// The most segments a problem may ask for.
constexpr int64_t kMaxSegments = 64;

// Token offsets of the segments of one batch row of T tokens: R segments of ceil(N / R) chunks of
// `chunk` tokens each (N = ceil(T / chunk)), the last shorter; segments left empty (R > N, or
// ceil(N / R) R - N >= ceil(N / R)) are dropped, as the two-level scan drops its empty groups.
// Returns the segments + 1 offsets, 0 first and T last.
std::vector<int64_t> segment_offsets(int64_t T, int64_t segments, int64_t chunk);

// The exchange: for each of `rows` batch rows and HV heads, the states entering its n segments,
// S_0 = h0 (nullptr: zero) and S_{r+1} = A_r S_r + B_r, float32 sums over K in index order.
// A: [rows n, HV, K, K]; B: [rows n, HV, K, V]; h0: [rows, HV, K, V]; returns [rows n, HV, K, V]
// and, in final ([rows, HV, K, V]), the state leaving each row's last segment.
std::vector<float> segment_entry_states(int64_t rows, int64_t n, int64_t HV, int64_t K, int64_t V,
                                        const float* A, const float* B, const float* h0,
                                        std::vector<float>* final = nullptr);

// Why v cannot run p with p.segments > 1 (a packed, front-end or backward problem, attention, or a
// transfer pass the variant cannot take: V' = K), or nullopt.
std::optional<std::string> segments_unsupported(const VariantInfo& v, const Problem& p);

// The R-segment run of v on p (p.segments > 1, segments_unsupported empty): three packed runs of v
// and the host exchange between them. o and hT in p's layouts.
std::unique_ptr<VariantRun> create_segmented_run(const VariantInfo& v, const Problem& p, const HostInputs& in,
                                                 const RunContext& ctx);
