// Registry hooks for the CPU backend variants (kernels/cpu_*.cpp).
#pragma once
#include "harness/variant.h"

std::optional<std::string> cpu_recurrent_unsupported(const Problem& p);
std::optional<std::string> cpu_chunked_unsupported(const Problem& p);
std::unique_ptr<VariantRun> create_cpu_recurrent(const Problem&, const HostInputs&,
                                                 const RunContext&);
std::unique_ptr<VariantRun> create_cpu_chunked(const Problem&, const HostInputs&,
                                               const RunContext&);
