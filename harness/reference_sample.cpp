#include "harness/reference_sample.h"

#include <algorithm>
#include <cmath>

const char* ref_mode_name(RefMode m) {
  switch (m) {
    case RefMode::full: return "full";
    case RefMode::sampled: return "sampled";
    case RefMode::automatic: return "auto";
  }
  return "?";
}

std::optional<RefMode> parse_ref_mode(const std::string& s) {
  if (s == "full") return RefMode::full;
  if (s == "sampled") return RefMode::sampled;
  if (s == "auto") return RefMode::automatic;
  return std::nullopt;
}

double attention_ref_work(const Problem& p) {
  const GdnShape& s = p.shape;
  return double(s.B) * double(s.HV) * double(s.T) * (double(s.T) / 2.0 + double(p.context)) *
         double(s.K + s.V);
}

std::vector<int64_t> evenly_spaced(int64_t first, int64_t last, int64_t count) {
  std::vector<int64_t> picked;
  if (last < first || count <= 0) return picked;
  const int64_t range = last - first + 1;
  if (count >= range) {
    for (int64_t i = first; i <= last; ++i) picked.push_back(i);
    return picked;
  }
  if (count == 1) return {last};
  for (int64_t j = 0; j < count; ++j) picked.push_back(first + j * (last - first) / (count - 1));
  return picked;
}

std::vector<int64_t> attention_sample_rows(int64_t T, int64_t budget) {
  std::vector<int64_t> rows;
  if (T <= 0) return rows;
  if (budget >= T || budget <= 0) {  // no budget to speak of: every row
    rows.resize(size_t(T));
    for (int64_t t = 0; t < T; ++t) rows[size_t(t)] = t;
    return rows;
  }
  const auto add = [&](int64_t t) {
    if (t >= 0 && t < T) rows.push_back(t);
  };
  const int64_t edge = std::min(kAttentionSampleTile, budget / 4);
  for (int64_t t = 0; t < edge; ++t) add(t);
  for (int64_t t = T - edge; t < T; ++t) add(t);

  // Tile boundaries strictly inside the sequence: m = 64 k, k = 1 .. last.
  const int64_t last = (T - 1) / kAttentionSampleTile;
  const int64_t boundaries = std::min(last, (budget - 2 * edge) / 2 / 3);
  const int64_t late = boundaries / 2, spread = boundaries - late;
  const auto around = [&](int64_t k) {
    const int64_t m = k * kAttentionSampleTile;
    add(m - 1);
    add(m);
    add(m + 1);
  };
  for (int64_t k = last; k > last - late; --k) around(k);
  const int64_t rest = last - late;  // boundaries 1 .. rest not yet taken
  for (int64_t k : evenly_spaced(1, rest, spread)) around(k);

  const int64_t strided = budget - 2 * edge - 3 * boundaries;
  for (int64_t j = 0; j < strided; ++j) add((2 * j + 1) * T / (2 * strided));

  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

std::vector<int64_t> attention_ref_rows(const Problem& p, RefMode mode, int64_t budget) {
  const bool sampled = mode == RefMode::sampled ||
                       (mode == RefMode::automatic && attention_ref_work(p) >= kAttentionRefFullBudget);
  if (!sampled || p.shape.T <= budget) return {};
  return attention_sample_rows(p.shape.T, budget);
}

std::vector<int64_t> attention_grad_heads(const Problem& p, RefMode mode, int64_t max_heads) {
  const bool sampled = mode == RefMode::sampled ||
                       (mode == RefMode::automatic && attention_ref_work(p) >= kAttentionRefFullBudget);
  const int64_t heads = p.shape.B * p.shape.HV;
  if (!sampled || heads <= 2) return {};
  const double per_head = 4.0 * attention_ref_work(p) / double(heads);
  const double affordable = std::floor(kAttentionBackwardSampleBudget / std::max(per_head, 1.0));
  const int64_t count = std::max<int64_t>(2, int64_t(std::min(double(max_heads), affordable)));
  if (count >= heads) return {};
  return evenly_spaced(0, heads - 1, count);
}

double gdn_ref_work(const Problem& p) {
  const GdnShape& s = p.shape;
  return double(s.B) * double(s.HV) * double(s.T) * double(s.K) * double(s.V);
}

std::vector<int64_t> gdn_sample_heads(const GdnShape& s, int64_t max_heads, bool whole_groups) {
  const int64_t heads = s.B * s.HV;
  const double per_head = double(s.T) * double(s.K) * double(s.V);
  const double affordable = std::floor(kGdnRefFullBudget / std::max(per_head, 1.0));
  // The first and the last head even when one head alone passes the budget.
  const int64_t count = std::max<int64_t>(2, int64_t(std::min(double(max_heads), affordable)));
  if (!whole_groups || s.group() == 1) return evenly_spaced(0, heads - 1, count);
  const int64_t G = s.group();
  std::vector<int64_t> out;
  for (int64_t group : evenly_spaced(0, s.B * s.H - 1, std::max<int64_t>(2, count / G)))
    for (int64_t j = 0; j < G; ++j) out.push_back(group * G + j);  // q/k head b H + h: value heads from (b H + h) G
  return out;
}

std::vector<int64_t> gdn_ref_heads(const Problem& p, RefMode mode, int64_t max_heads) {
  // A packed batch's heads run over sequences, not batch rows: always the whole reference.
  if (p.packed()) return {};
  const bool sampled = mode == RefMode::sampled ||
                       (mode == RefMode::automatic && gdn_ref_work(p) >= kGdnRefFullBudget);
  if (!sampled) return {};
  std::vector<int64_t> heads = gdn_sample_heads(p.shape, max_heads, pass_has_backward(p.pass));
  if (int64_t(heads.size()) == p.shape.B * p.shape.HV) return {};  // every head: the full reference
  return heads;
}
