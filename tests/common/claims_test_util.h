// Helpers of the claims tests: the shipped claims file, and one claim's result by id.
#pragma once
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "harness/analysis/claims.h"

namespace claimstest {

inline std::vector<Claim> shipped() {
  return read_claims_file(std::string(GDNBENCH_SOURCE_DIR) + "/claims/gdn_claims.ini");
}

inline const ClaimResult& find(const std::vector<ClaimResult>& rs, const std::string& id) {
  for (const ClaimResult& r : rs)
    if (r.claim.id == id) return r;
  FAIL("no claim " << id);
  return rs.front();
}

}  // namespace claimstest
