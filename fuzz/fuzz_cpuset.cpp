// parse_cpu_list on arbitrary text: never throws; an accepted list is sorted, unique, within
// [0, CPU_SETSIZE) and survives format_cpu_list -> parse_cpu_list. Bounded time and memory come from
// libFuzzer's -timeout and -rss_limit_mb.
#include <sched.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_common.h"
#include "src/util/int_list.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<int> cpus{-7};
  // --devices shares the grammar with another noun and limit: the same properties must hold.
  std::vector<int> gpus{-7};
  const std::string gpu_err = sdc::parse_index_list(text, "GPU", 64, gpus);
  if (gpu_err.empty() ? (gpus.empty() || gpus.back() >= 64) : gpus != std::vector<int>{-7})
    sdc_fuzz::fuzz_fail("device list '" + text + "' mishandled");
  const std::string err = sdc::parse_cpu_list(text, cpus);  // no try: any exception is a bug
  if (!err.empty()) {
    if (cpus != std::vector<int>{-7}) sdc_fuzz::fuzz_fail("refused '" + text + "' but changed the list");
    return 0;
  }
  if (cpus.empty()) sdc_fuzz::fuzz_fail("accepted '" + text + "' as an empty list");
  for (size_t i = 0; i < cpus.size(); ++i) {
    if (cpus[i] < 0 || cpus[i] >= CPU_SETSIZE) sdc_fuzz::fuzz_fail("accepted CPU " + std::to_string(cpus[i]));
    if (i && cpus[i] <= cpus[i - 1]) sdc_fuzz::fuzz_fail("list is not sorted and unique: '" + text + "'");
  }
  const std::string formatted = sdc::format_cpu_list(cpus);
  std::vector<int> again;
  if (!sdc::parse_cpu_list(formatted, again).empty() || again != cpus)
    sdc_fuzz::fuzz_fail("'" + formatted + "' (formatted from '" + text + "') does not parse back");
  return 0;
}
