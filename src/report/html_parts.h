// The HTML report's pieces (src/report/html.cpp puts the page together): reading the JSON report without
// throwing, escaping, the colours, and the sections drawn in their own files (the unit heat map in
// html_units.cpp, a failing case's charts in html_case.cpp). Internal to the HTML report.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

namespace sdc::html {

using json = nlohmann::json;

// ---- reading the report: a missing key or one of another type reads as the default, never throws ----------

inline const json& field(const json& j, const char* key) {
  static const json null;
  if (!j.is_object()) return null;
  const auto it = j.find(key);
  return it != j.end() ? *it : null;
}

inline bool flag(const json& j, const char* key) {
  const json& v = field(j, key);
  return v.is_boolean() && v.get<bool>();
}

inline std::string str(const json& j, const char* key, const std::string& dflt = "") {
  const json& v = field(j, key);
  return v.is_string() ? v.get<std::string>() : dflt;
}

inline int64_t num(const json& j, const char* key, int64_t dflt = 0) {
  const json& v = field(j, key);
  if (v.is_number_integer()) return v.get<int64_t>();
  if (!v.is_number_float()) return dflt;
  const double d = v.get<double>();  // a float out of int64_t's range would be undefined to convert
  return std::isfinite(d) && std::fabs(d) < 9e18 ? static_cast<int64_t>(d) : dflt;
}

inline double real(const json& j, const char* key, double dflt = 0) {
  const json& v = field(j, key);
  return v.is_number() ? v.get<double>() : dflt;
}

inline const json& arr(const json& j, const char* key) {
  static const json empty = json::array();
  const json& v = field(j, key);
  return v.is_array() ? v : empty;
}

inline const json& obj(const json& j, const char* key) {
  static const json empty = json::object();
  const json& v = field(j, key);
  return v.is_object() ? v : empty;
}

inline std::string esc(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  return out;
}

inline std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// Any JSON value as text for a table cell: strings as they are, the rest as compact JSON.
inline std::string text_of(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "-";
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

// ---- colours: one per unit class, and the others kept apart from the failing unit's red ----------------------

inline const char* unit_colour(const std::string& cls) {
  if (cls == "fail") return "#d62728";
  if (cls == "crash") return "#1a1a1a";
  if (cls == "hung") return "#ff9f1c";
  if (cls == "pass") return "#98df8a";
  return "#e0e0e0";  // untested
}
inline constexpr const char* UNIT_CLASSES[] = {"fail", "crash", "hung", "pass", "untested"};
inline const char* unit_meaning(const std::string& cls) {
  if (cls == "fail") return "a tile it computed miscompared";
  if (cls == "crash") return "its work killed the screen";
  if (cls == "hung") return "the watchdog gave up on it";
  if (cls == "pass") return "computed tiles, none failed";
  return "computed no tile";
}
constexpr const char* SLOW_COLOUR = "#1f3f9f";  // outline of a slow unit
constexpr const char* LANE_COLOUR = "#6a3d9a";  // a lane that held failing elements (a failing SM's drill-down)
constexpr const char* TILE_COLOUR = "#8c1010";  // a failing tile of the output (not the unit red)
constexpr const char* BAR_COLOUR = "#555555";   // failures over iterations
constexpr const char* SIGN_COLOUR = "#9467bd";  // bit histogram: sign, exponent, mantissa
constexpr const char* EXP_COLOUR = "#e6850e";
constexpr const char* MANT_COLOUR = "#1f77b4";
constexpr const char* THROUGHPUT_COLOUR = "#6b8fb8";


inline std::string unit_class(const std::string& result) {
  return result == "fail" || result == "crash" || result == "hung" || result == "pass" ? result : "untested";
}

// The unit heat map: every CPU by package and core, every GPU as a grid of its SMs (html_units.cpp).
std::string units_section(const json& r);
// The units the report flags slow ("cpu 3", "gpu 1").
std::set<std::string> slow_units(const json& r);
// One failing test: its tiles over the output, its flipped bits, its failures over iterations (html_case.cpp).
std::string failing_case(const json& t);
// A failing training-step replay's level-3 trajectories (html_replay.cpp): per unit a chart of its loss beside the
// reference's and of its parameter distance per step, captioned with its failure mode; "" without a series.
std::string replay_trajectories(const json& t);

}  // namespace sdc::html
