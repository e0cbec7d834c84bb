#include "src/util/say.h"

#include <fmt/format.h>

namespace sdc {

void write_text(std::FILE* f, std::string_view s) noexcept {
  if (!s.empty()) (void)std::fwrite(s.data(), 1, s.size(), f);
  (void)std::fflush(f);
  std::clearerr(f);
}

std::string visible(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const unsigned char next = i + 1 < s.size() ? static_cast<unsigned char>(s[i + 1]) : 0;
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\t')
      out += "\\t";
    else if (c < 0x20 || c == 0x7f)
      out += fmt::format("\\x{:02x}", c);
    else if (c == 0xc2 && next >= 0x80 && next <= 0x9f) {  // a C1 control character in UTF-8 (U+0080..U+009F)
      out += fmt::format("\\u{:04x}", next);
      ++i;
    } else
      out += static_cast<char>(c);
  }
  return out;
}

}  // namespace sdc
