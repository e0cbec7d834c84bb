#include "src/util/strict_json.h"

#include <fmt/format.h>

#include <cstddef>
#include <iterator>
#include <set>
#include <vector>

namespace sdc {
namespace {

using json = nlohmann::json;

// A first SAX pass, which does not recurse, checks depth and member names; only a document that passes
// it is parsed into a DOM.
class StrictSax : public json::json_sax_t {
 public:
  std::string error;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return open(true); }
  bool start_array(std::size_t) override { return open(false); }
  bool end_object() override { return close(true); }
  bool end_array() override { return close(false); }
  bool key(string_t& k) override {
    if (keys_.back().insert(k).second) return true;
    error = fmt::format("member '{}' appears twice in one object", k);
    return false;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) override {
    // 406: a number beyond the range of a double (1e400)
    error =
        e.id == 406 ? "not valid JSON (a number is out of range)" : fmt::format("not valid JSON (byte {})", position);
    return false;
  }

 private:
  std::vector<bool> is_object_;              // one per open container
  std::vector<std::set<std::string>> keys_;  // one per open object
  bool open(bool object) {
    if (is_object_.size() >= MAX_JSON_DEPTH) {
      error = fmt::format("JSON nested deeper than {} levels", MAX_JSON_DEPTH);
      return false;
    }
    is_object_.push_back(object);
    if (object) keys_.emplace_back();
    return true;
  }
  bool close(bool object) {
    is_object_.pop_back();
    if (object) keys_.pop_back();
    return true;
  }
};

// The text's characters, as an iterator of this file's own type: the JSON library's lexer and parser, templates of
// the input's iterator type, are then instantiated here alone, never shared with another source's copy. The
// sanitizer build compiles this file optimized (CMakeLists.txt), and every run parses the whole pattern set: a
// shared instantiation could be any source's unoptimized copy, which made the parse most of a sanitized run's
// start-up.
class Chars {
 public:
  using iterator_category = std::forward_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;
  Chars() = default;
  explicit Chars(const char* p) : p_(p) {}
  reference operator*() const { return *p_; }
  Chars& operator++() {
    ++p_;
    return *this;
  }
  Chars operator++(int) { return Chars(p_++); }
  bool operator==(const Chars& o) const { return p_ == o.p_; }
  bool operator!=(const Chars& o) const { return p_ != o.p_; }

 private:
  const char* p_ = nullptr;
};

}  // namespace

std::string parse_strict_json(const std::string& text, json& out) {
  const Chars first(text.data()), last(text.data() + text.size());
  StrictSax sax;
  if (!json::sax_parse(first, last, &sax)) return sax.error.empty() ? "not valid JSON" : sax.error;
  try {
    out = json::parse(first, last);
  } catch (const json::exception&) {  // cannot happen after the SAX pass; fail closed all the same
    return "not valid JSON";
  }
  return "";
}

}  // namespace sdc
