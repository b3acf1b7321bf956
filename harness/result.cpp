#include "harness/result.h"

const char* status_name(Status s) {
  switch (s) {
    case Status::pass: return "PASS";
    case Status::fail: return "FAIL";
    case Status::skipped: return "SKIPPED";
  }
  return "?";
}
