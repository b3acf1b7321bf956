// Which part of a case's float64 reference the host computes. The full causal attention
// reference costs O(B HV T (T + context) K): about a minute at B=1 H=32 D=128 T=8192 on 16 cores
// and hours at T=64K. The GDN reference is linear in T but sequential over it in every (b, hv)
// head, O(B HV T K V): minutes at the 2^31-element shapes of suites/large.ini. Above a work budget
// the runner computes a fixed sample instead, query rows per (b, h) for attention, whole (b, hv)
// heads for GDN, and compares the outputs there only (docs/TOLERANCES.md, "Sampled attention
// verification", "Sampled GDN verification"); the checks that need no reference still cover
// every element.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/problem.h"

// --attention-ref and --gdn-ref: full (the whole reference), sampled (attention_sample_rows,
// gdn_sample_heads), automatic (full while the reference's work is under the family's budget,
// kAttentionRefFullBudget or kGdnRefFullBudget, sampled from it on).
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
// every integer of the range when count exceeds it. The spread tile edges of the attention sample
// and the heads of the GDN sample.
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

// GDN: the float64 recurrence runs every (b, hv) head over all T tokens, K V multiply-adds per
// token for each of S^T k, k u^T and S^T q. The work is counted in state elements updated,
// B HV T K V. The budget, 2^32, is ~15 s of the reference on the 2 cores of the CI machine class
// (1.2e8 to 1.6e8 state elements a second per core, measured at T=4096 K=V=128) and ~2 s on the
// 16 cores of the GPU machine. It keeps every gate case full (the largest, T=65536 K=V=128 with
// one head, is 2^30) and the default suite (2^27 at most); the scaling suite (B=1 H=32
// K=V=128) is sampled from T=8192 on, suites/large.ini (1.4e11) always.
constexpr double kGdnRefFullBudget = 4294967296.0;
// Heads of a sampled GDN reference, at most: 16 heads take no longer than one on the GPU
// machine's 16 cores (the reference runs heads in parallel and each head is sequential in T).
constexpr int64_t kGdnSampleHeads = 16;

// Attention's backward: the float64 gradients cost ~4x the forward's work per head, and dk, dv of
// a key sum over every later query row, so a sample is of whole heads (b, h): under `sampled`, or
// `automatic` past the forward's budget (attention_ref_work >= kAttentionRefFullBudget), the first
// and the last head and heads spread between them, as many as keep 4 x the sample's work under
// kAttentionBackwardSampleBudget, at most `max_heads`. Empty: every head.
constexpr double kAttentionBackwardSampleBudget = 68719476736.0;  // 2^36: ~9 s on 16 cores
std::vector<int64_t> attention_grad_heads(const Problem& p, RefMode mode, int64_t max_heads = 16);

double gdn_ref_work(const Problem& p);

// The (b, hv) heads of a sampled GDN reference, as flat indices b HV + hv, sorted and distinct:
// the first (0) and the last (B HV - 1, the highest memory offsets of o and hT, where a 32-bit
// index wraps first) always, and heads spread evenly between them, as many as keep the sample's
// work B' T K V under kGdnRefFullBudget, at most `max_heads`. Every head when that is all of them.
// It depends on the shape and max_heads only (never on the seed). With whole_groups, the sample
// is of q/k heads (b, h) instead, as many as there would be value heads divided by HV / H (at least
// 2, the first and the last), each with every value head of its group: a gradient reference's
// sample, since dq and dk of a q/k head sum over its group.
std::vector<int64_t> gdn_sample_heads(const GdnShape& s, int64_t max_heads = kGdnSampleHeads,
                                      bool whole_groups = false);

// The heads the GDN reference of `p` covers under `mode`: empty means every head (the full
// reference). A pass with the backward samples whole groups (gdn_sample_heads), and its forward
// and gradient references cover the same heads.
std::vector<int64_t> gdn_ref_heads(const Problem& p, RefMode mode, int64_t max_heads = kGdnSampleHeads);
