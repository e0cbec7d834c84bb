// How every output names a unit: a logical CPU, a GPU, or one SM of a GPU. Two spellings, defined here once:
//   for people (the text report, the HTML page, the NPD line, the drain reason, the history, the fleet view):
//     "cpu 3", "gpu 0", "gpu 0 sm 5"; an SM of the GPU the context already names: "sm 5";
//   for machines (the JSON report's unit objects and the Prometheus labels, with the same keys so that series
//   and reports join): cpu=3; gpu=0; gpu=0 sm=5. A GPU is its CUDA ordinal; its UUID travels beside it.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sdc {

struct UnitName {
  int cpu = -1;  // a logical CPU; -1 for a GPU or an SM
  int gpu = -1;  // a GPU's CUDA ordinal; -1 for a CPU, or for an SM whose GPU the context names
  int sm = -1;   // an SM of gpu; -1 for the whole GPU

  static UnitName of_cpu(int cpu) { return {cpu, -1, -1}; }
  static UnitName of_gpu(int gpu) { return {-1, gpu, -1}; }
  static UnitName of_sm(int gpu, int sm) { return {-1, gpu, sm}; }
  bool is_cpu() const { return cpu >= 0; }
  bool is_sm() const { return cpu < 0 && sm >= 0; }
  // "cpu", "gpu" or "sm": the JSON unit object's kind.
  const char* kind() const { return is_cpu() ? "cpu" : is_sm() ? "sm" : "gpu"; }
};

// For people: "cpu 3", "gpu 0", "gpu 0 sm 5", "sm 5"; with a GPU's UUID (when known), "gpu 0 sm 5 (GPU-...)".
inline std::string unit_text(const UnitName& u, const std::string& uuid = "") {
  // Built by appending: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string temporaries.
  std::string s;
  if (u.is_cpu()) return s.append("cpu ").append(std::to_string(u.cpu));
  if (u.gpu >= 0) s.append("gpu ").append(std::to_string(u.gpu));
  if (u.sm >= 0) s.append(s.empty() ? "sm " : " sm ").append(std::to_string(u.sm));
  if (!uuid.empty()) s.append(" (").append(uuid).append(")");
  return s;
}

// For machines: the keys and values that name the unit, in order ({"cpu", 3}; {"gpu", 0}; {"gpu", 0}, {"sm", 5}).
// The JSON report writes them as the unit object's members (after "kind"), Prometheus as labels.
inline std::vector<std::pair<const char*, int>> unit_keys(const UnitName& u) {
  if (u.is_cpu()) return {{"cpu", u.cpu}};
  std::vector<std::pair<const char*, int>> k;
  if (u.gpu >= 0) k.push_back({"gpu", u.gpu});
  if (u.sm >= 0) k.push_back({"sm", u.sm});
  return k;
}

// The Prometheus labels of a unit: cpu="3"; gpu="0",uuid="GPU-..."; gpu="0",uuid="GPU-...",sm="5" (the UUID,
// when known, follows the GPU: a fleet query follows the part when CUDA renumbers it).
inline std::string unit_labels(const UnitName& u, const std::string& uuid = "") {
  std::string s;
  for (const auto& [key, value] : unit_keys(u)) {
    if (!s.empty()) s.append(",");
    s.append(key).append("=\"").append(std::to_string(value)).append("\"");
    if (std::string_view(key) == "gpu" && !uuid.empty()) s.append(",uuid=\"").append(uuid).append("\"");
  }
  return s;
}

// A unit named for people back into its parts ("cpu 3", "gpu 0", "gpu 0 sm 5", "sm 5"); false for anything else.
inline bool parse_unit_text(const std::string& text, UnitName& out) {
  // Words in pairs, one space apart: a kind ("cpu", "gpu", "sm") and a number of at most 7 digits.
  std::vector<std::string> words;
  for (size_t i = 0; i <= text.size();) {
    const size_t end = std::min(text.find(' ', i), text.size());
    words.push_back(text.substr(i, end - i));
    i = end + 1;
  }
  if (words.size() != 2 && words.size() != 4) return false;
  std::vector<int> numbers;
  for (size_t k = 1; k < words.size(); k += 2) {
    const std::string& d = words[k];
    if (d.empty() || d.size() > 7 || d.find_first_not_of("0123456789") != std::string::npos) return false;
    numbers.push_back(std::stoi(d));
  }
  if (words.size() == 4)
    return words[0] == "gpu" && words[2] == "sm" ? (out = UnitName::of_sm(numbers[0], numbers[1]), true) : false;
  if (words[0] == "cpu") out = UnitName::of_cpu(numbers[0]);
  else if (words[0] == "gpu") out = UnitName::of_gpu(numbers[0]);
  else if (words[0] == "sm") out = UnitName{-1, -1, numbers[0]};
  else return false;
  return true;
}

}  // namespace sdc
