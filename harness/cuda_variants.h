// Registry hooks for the CUDA variants (kernels/*.cu). Compiled only when nvcc is found.
#pragma once
#include "harness/variant.h"

std::optional<std::string> recurrent_unsupported(const Problem& p);
std::unique_ptr<VariantRun> create_recurrent(const Problem&, const HostInputs&, const RunContext&);

std::optional<std::string> chunked_unsupported(const Problem& p);
std::unique_ptr<VariantRun> create_chunked(const Problem&, const HostInputs&, const RunContext&);

std::optional<std::string> wy_ut_unsupported(const Problem& p);
std::unique_ptr<VariantRun> create_wy_ut(const Problem&, const HostInputs&, const RunContext&);

std::optional<std::string> attn_naive_unsupported(const Problem& p);
std::unique_ptr<VariantRun> create_attn_naive(const Problem&, const HostInputs&, const RunContext&);

// harness/cuda_attention_variants.cpp
std::optional<std::string> attn_flash_unsupported(const Problem& p);
std::unique_ptr<VariantRun> create_attn_flash(const Problem&, const HostInputs&, const RunContext&);

std::optional<std::string> attn_decode_unsupported(const Problem& p);
std::unique_ptr<VariantRun> create_attn_decode(const Problem&, const HostInputs&, const RunContext&);
