// Helpers of the history's unit tests (test_history.cpp, test_history_identity.cpp).
#pragma once

#include <utility>
#include <vector>

#include "src/core/history.h"

namespace sdc::test {

// A history as load() gives it, holding recs in order.
inline history::History history_of(std::vector<history::Record> recs) {
  history::History h;
  h.path = "history.jsonl";
  h.records = std::move(recs);
  return h;
}

}  // namespace sdc::test
