#include "src/util/say.h"

namespace sdc {

void write_text(std::FILE* f, std::string_view s) noexcept {
  if (!s.empty()) (void)std::fwrite(s.data(), 1, s.size(), f);
  (void)std::fflush(f);
  std::clearerr(f);
}

}  // namespace sdc
