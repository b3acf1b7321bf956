// Which query rows the float64 attention reference covers. The full causal reference costs
// O(B HV T (T + context) K) on the host: about a minute at B=1 H=32 D=128 T=8192 on 16 cores and
// hours at T=64K. Above a work budget the runner computes a fixed sample of query rows per
// (b, h) instead and compares o on those rows only (docs/TOLERANCES.md, "Sampled attention
// verification"); the checks that need no reference still cover every element.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/problem.h"

// --attention-ref: full (every query row), sampled (attention_sample_rows), automatic (full while
// attention_ref_work is under kAttentionRefFullBudget, sampled above).
enum class RefMode { full, sampled, automatic };
const char* ref_mode_name(RefMode m);
std::optional<RefMode> parse_ref_mode(const std::string& s);

// Multiply-adds of the full reference, B HV T (T/2 + context) (K + V): B H T^2 D at context 0
// and K = V = D. The budget, 2^32, is B=1 H=32 D=128 T=1024, which took 4.5 s on the 2 cores
// of the CI machine class (4.3e9 multiply-adds at ~4.8e8 a second per core): `auto` keeps every
// reference under ~5 s there, and the whole CPU gate full.
constexpr double kAttentionRefFullBudget = 4294967296.0;
// Query rows per (b, h) of a sampled reference. Leaning late, it costs about as much as 300
// rows of T keys (226 at T=1K, 297 at T=64K): at B=1 H=32 D=128, T=64K 1.6e11 multiply-adds,
// about 35 s on 16 cores at the full reference's measured rate (8 s at T=16K).
constexpr int64_t kAttentionSampleRows = 512;
// The query tile the sample's boundaries are placed around: the row tile of attn_flash and
// attn_naive is 64 or a multiple of it, so multiples of 64 are every kernel's tile edges.
constexpr int64_t kAttentionSampleTile = 64;

double attention_ref_work(const Problem& p);

// `count` distinct integers spread evenly over [first, last], both ends included (count 1: last);
// every integer of the range when count exceeds it. The spread tile edges of the sample.
std::vector<int64_t> evenly_spaced(int64_t first, int64_t last, int64_t count);

// At most `budget` query rows of a sequence of T, sorted and distinct; every row when T <=
// budget. It depends on T and the budget only (never on the seed), and always holds: the first
// and the last min(64, budget/4) rows (the start and the tail tile); the rows m - 1, m, m + 1
// around the last tile boundaries m and around boundaries spread evenly over the rest (a quarter
// of the budget each, in boundaries of 3 rows); and evenly strided rows for the remainder. Late
// rows are where the causal kernels do the most work and accumulate the most error, and the rows
// that cost the reference most, so the sample leans to them deliberately.
std::vector<int64_t> attention_sample_rows(int64_t T, int64_t budget = kAttentionSampleRows);

// The query rows the reference of `p` covers under `mode`: empty means every row (the full
// reference). A T = 1 decode (KV cache of `context` tokens) is one row, always full.
std::vector<int64_t> attention_ref_rows(const Problem& p, RefMode mode,
                                        int64_t budget = kAttentionSampleRows);
