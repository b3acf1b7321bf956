// The one answer to "can this case run here": every place that decides whether a variant runs a
// problem (the runner's rows, its input and reference caching, the Google Benchmark front end)
// asks skip_reason, so a case is SKIPPED for the same reason wherever it is met.
#pragma once
#include <optional>
#include <string>

#include "harness/gpu_runtime.h"
#include "harness/problem.h"
#include "harness/variant.h"

// Why variant v cannot run problem p on this machine (`gpu`: query_gpu()), or nullopt: a backward
// pass for a variant without one (VariantInfo::has_backward), a CUDA
// variant without a CUDA device, a front-end problem for a variant that takes q, k, v, g, beta (or
// the other way round), attention on a configuration other than the plain GDN one, the variant's
// own limits (VariantInfo::unsupported); a packed batch for attention or a front end. A forced plan that cannot run p is decided later, by the
// plan table (harness/plans.h), since it needs the device's facts.
std::optional<std::string> skip_reason(const VariantInfo& v, const Problem& p, const GpuInfo& gpu);
