// Registry hooks for the CUDA variants that take a front-end problem's raw projections
// (kernels/frontend/frontend.h): unfused_conv, fused_conv and fused_decode. Compiled only when nvcc is found.
#pragma once
#include "harness/variant.h"

std::optional<std::string> unfused_conv_unsupported(const Problem& p);
std::unique_ptr<VariantRun> create_unfused_conv(const Problem&, const HostInputs&, const RunContext&);

std::optional<std::string> fused_conv_unsupported(const Problem& p);
std::unique_ptr<VariantRun> create_fused_conv(const Problem&, const HostInputs&, const RunContext&);

std::optional<std::string> fused_decode_unsupported(const Problem& p);
std::unique_ptr<VariantRun> create_fused_decode(const Problem&, const HostInputs&, const RunContext&);
std::unique_ptr<VariantRun> create_fused_decode_bf16state(const Problem&, const HostInputs&, const RunContext&);

// The pool a decode run builds: pool_slots(B) slots, sequence b at slot decode_slots(...)[b], a
// seeded shuffle so a kernel that ignores the mapping reads a poisoned slot.
int64_t decode_pool_slots(int64_t B);
std::vector<int32_t> decode_slots(int64_t B, uint64_t seed);
