// The JSON report (docs/report.schema.json): render_json, declared in report.h. The text report is report.cpp's.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "src/report/drain_reason.h"
#include "src/report/report.h"
#include "src/report/report_gpu.h"
#include "src/report/report_host.h"
#include "src/report/unit_json.h"
#include "src/util/iso_time.h"

namespace sdc {

namespace {

// The JSON of one device of the report.
nlohmann::json device_json(const DeviceInfo& d) {
  return {{"index", d.index},
          {"kind", d.emulated ? "emulated" : "cuda"},
          {"name", d.name},
          {"uuid", d.uuid},
          {"pci_bus_id", d.pci_bus_id},
          {"compute_capability", fmt::format("{}.{}", d.cc_major, d.cc_minor)},
          {"architecture", d.architecture()},
          {"sm_count", d.sm_count},
          {"memory_bytes", d.memory_bytes},
          {"driver", d.driver},
          {"driver_cuda", d.driver_cuda},
          {"runtime", d.runtime},
          {"ecc", d.ecc}};
}

}  // namespace

namespace {

nlohmann::json retest_json(const UnitRetest& u) {
  using json = nlohmann::json;
  json sib = json::array();
  for (const SiblingRetest& x : u.siblings)
    sib.push_back({{"unit", unit_json(x.unit < 0 ? UnitName::of_gpu(u.device) : UnitName::of_cpu(x.unit))},
                   {"relation", x.relation},
                   {"runs", x.runs},
                   {"failed", x.failed}});
  const int dep = u.input_dependent();
  const json compared = u.fresh_on_host          ? json{{"kind", "host"}}
                        : u.fresh_reference >= 0 ? unit_json(UnitName::of_cpu(u.fresh_reference))
                                                 : json();
  return {{"unit", unit_json(u.device >= 0 ? UnitName::of_sm(u.device, u.unit) : UnitName::of_cpu(u.unit))},
          {"classification", u.classification()},
          {"rate", u.rate()},
          {"tiles", u.tiles},
          {"same_seed", {{"runs", u.same_seed_runs}, {"failed", u.same_seed_failed}, {"same_bits", u.same_bits}}},
          {"fresh_seeds", {{"runs", u.fresh_seed_runs}, {"failed", u.fresh_seed_failed}, {"compared_with", compared}}},
          {"input_dependent", dep < 0 ? json() : json(dep == 1)},
          {"siblings", sib},
          {"complete", u.complete}};
}

// Flips by field (a floating-point format's sign, exponent, mantissa; an int32 has no fields) and per position.
nlohmann::json bit_flips_json(const Signature& g) {
  nlohmann::json j = {{"format", format_name(g.format())}, {"zero_to_one", g.rises()}, {"one_to_zero", g.falls()}};
  if (g.format() != WordFormat::int32) {
    j["sign"] = g.flips(BitField::sign);
    j["exponent"] = g.flips(BitField::exponent);
    j["mantissa"] = g.flips(BitField::mantissa);
  }
  return j;
}

nlohmann::json signature_json(const Signature& g, const std::string& family, nlohmann::json unit) {
  using json = nlohmann::json;
  json ulps = json::array();
  const auto& buckets = g.ulp_buckets();
  for (int k = 0; k < Signature::ULP_BUCKETS; ++k) {
    if (!buckets[k]) continue;
    const uint64_t from = k == 0 ? 0 : uint64_t{1} << (k - 1);
    const uint64_t to = k == 0 ? 0 : from + (from - 1);  // 2^k - 1 without overflowing at k = 64
    ulps.push_back({{"from", from}, {"to", to}, {"elements", buckets[k]}});
  }
  json clusters = json::object();
  const auto by_cluster = g.tiles_by_cluster();
  for (int c = 0; c < CLUSTERS; ++c) clusters[cluster_name(static_cast<Cluster>(c))] = by_cluster[c];
  const StuckAt st = g.stuck_at();
  return {{"unit", std::move(unit)},
          {"signature", g.text(family)},
          {"elements", g.elements()},
          {"bit_flips", bit_flips_json(g)},
          {"directions", {{"zero_to_one", g.rises_total()}, {"one_to_zero", g.falls_total()}}},
          {"ulps", ulps},
          {"tiles",
           {{"count", g.tiles()},
            {"min_elements", g.min_elements_per_tile()},
            {"max_elements", g.max_elements_per_tile()}}},
          {"cluster", cluster_name(g.cluster())},
          {"cluster_tiles", clusters},
          {"stuck_at", st ? json{{"bit", st.bit}, {"value", st.value}} : json(nullptr)}};
}

}  // namespace

std::string render_json(const RunResult& r, const HostInfo& host) {
  using json = nlohmann::json;
  json j;
  j["schema_version"] = REPORT_SCHEMA_VERSION;
  j["tool"] = {{"name", "sdcscreen"}, {"version", tool_version()}, {"git", tool_git()}};
  j["command_line"] = r.argv;
  j["reproduce"] = r.reproduce;
  j["reproduce_left_out"] = r.reproduce_left_out;
  j["host"] = {{"hostname", host.hostname},
               {"os", host.os},
               {"kernel", host.kernel},
               {"cpu", host.cpu_model},
               {"cpus_online", host.cpus_online}};
  // identity and telemetry: null only in a result that never read them (not a run's).
  j["host"]["identity"] = r.host.identity_read ? host_identity_json(r.host.identity) : json(nullptr);
  j["host"]["telemetry"] = r.host.before.taken ? host_telemetry_json(r.host) : json(nullptr);
  j["backend"] = r.backend;
  if (!r.backend_reason.empty()) j["backend_reason"] = r.backend_reason;
  j["devices"] = json::array();
  if (r.backend == "cpu") j["devices"].push_back({{"index", 0}, {"kind", "cpu"}, {"name", host.cpu_model}});
  for (size_t i = 0; i < r.devices.size(); ++i) {
    json d = device_json(r.devices[i]);
    d["telemetry"] = gpu_telemetry_json(r.nvml, static_cast<int>(i));  // null: NVML not looked for
    j["devices"].push_back(d);
  }
  j["nvml"] = nvml_json(r.nvml);
  j["max_temperature_c"] = r.max_temperature_c > 0 ? json(r.max_temperature_c) : json(nullptr);
  j["profile"] = r.profile;
  j["seed"] = r.seed;
  j["seed_text"] = std::to_string(r.seed);  // exact in every JSON tool (a double holds 53 bits)
  j["time_budget_s"] = r.time_budget_s;
  j["patterns"] = r.patterns_dir;
  j["fault_injection"] = !r.injections.empty();
  j["weakened_by"] = json::array();
  for (const Weakening& w : r.weakened_by)
    j["weakened_by"].push_back({{"name", w.name}, {"value", w.value}, {"effect", w.effect}});
  j["timing"] = {
      {"start", iso_time(r.start_unix)}, {"end", iso_time(r.end_unix)}, {"duration_s", r.end_unix - r.start_unix}};
  j["units"] = json::array();
  for (const UnitResult& u : r.units)
    if (u.is_sm())
      j["units"].push_back({{"kind", "sm"},
                            {"gpu", r.devices[static_cast<size_t>(u.device)].index},
                            {"sm", u.sm},
                            {"tiles", u.tiles},
                            {"failed_tiles", u.failed_tiles},
                            {"result", unit_result(u)}});
    else
      j["units"].push_back({{"kind", "cpu"},
                            {"cpu", u.cpu.cpu},
                            {"core", u.cpu.core},
                            {"package", u.cpu.package},
                            {"tiles", u.tiles},
                            {"failed_tiles", u.failed_tiles},
                            {"result", unit_result(u)}});
  j["tests"] = json::array();
  std::map<std::string, size_t> counts;
  for (const TestResult& t : r.tests) {
    ++counts[result_name(t)];
    json jt = {{"id", t.id},
               {"family", t.family},
               {"mode", t.mode},
               {"distribution", t.distribution},
               {"device", t.device},
               {"result", result_name(t)},
               {"iterations", t.iterations_done},
               {"iterations_planned", t.iterations_planned},
               {"tiles", t.tiles},
               {"duration_s", t.duration_s},
               {"gflops", t.gflops},
               {"failed_tiles", t.failed_tiles},
               {"miscompared_elements", t.miscompared_elements},
               {"units_failed", t.units_failed},
               {"notes", t.notes}};
    jt["time_to_fail_s"] = t.time_to_fail_s >= 0 ? json(t.time_to_fail_s) : json(nullptr);
    jt["judged_by"] = t.judged_by.empty() ? json(nullptr) : json(t.judged_by);
    jt["library"] = t.library.empty() ? json(nullptr) : json(t.library);
    jt["algorithm"] = t.algorithm.empty() ? json(nullptr) : json(t.algorithm);
    if (!t.reason.empty()) jt["reason"] = t.reason;
    auto test_unit_json = [&](int unit) {  // an SM, the whole GPU (-1: its kernels span it), or a CPU
      if (t.device_index < 0 && unit < 0) return json{{"kind", "cpu"}, {"cpu", unit}};  // no CPU named
      return unit_json(t.device_index >= 0 ? UnitName::of_sm(r.devices[static_cast<size_t>(t.device_index)].index, unit)
                                           : UnitName::of_cpu(unit));
    };
    jt["miscompares"] = json::array();
    for (const Miscompare& m : t.miscompares) {
      jt["miscompares"].push_back({{"iteration", m.iteration},
                                   {"tile", m.tile},
                                   {"unit", test_unit_json(m.unit)},
                                   {"element", m.element},
                                   {"element_name", m.element_name},
                                   {"expected", hex32(m.expected)},
                                   {"actual", hex32(m.actual)},
                                   {"xor_mask", hex32(m.expected ^ m.actual)},
                                   {"ulps", m.ulps}});
      if (m.lane >= 0) {
        jt["miscompares"].back()["warp"] = m.warp;
        jt["miscompares"].back()["lane"] = m.lane;
      }
      if (m.int32)
        jt["miscompares"].back()["int32"] = {{"expected", static_cast<int32_t>(m.expected)},
                                             {"actual", static_cast<int32_t>(m.actual)},
                                             {"difference", int32_difference(m.expected, m.actual)}};
      if (m.binary64)
        jt["miscompares"].back()["value64"] = {{"expected", hex64_bits(m.expected64)},
                                               {"actual", hex64_bits(m.actual64)},
                                               {"xor_mask", hex64_bits(m.expected64 ^ m.actual64)},
                                               {"ulps", m.ulps64}};
    }
    if (is_replay_family(t.family)) {  // the paper's metrics by name and value, every one (replay_text's)
      jt["replay_metrics"] = json::array();
      const auto number = [](float v) { return std::isfinite(v) ? json(static_cast<double>(v)) : json(nullptr); };
      for (const ReplayMetric& m : t.replay_metrics)
        jt["replay_metrics"].push_back({{"unit", test_unit_json(m.unit)},
                                        {"iteration", m.iteration},
                                        {"tile", m.tile},
                                        {"level", m.level},
                                        {"site", m.site},
                                        {"metric", m.metric},
                                        {"value", number(m.value)},
                                        {"reference", number(m.reference)}});
      jt["replay_failure_modes"] = json::array();
      for (const ReplayFailureMode& m : t.replay_failure_modes)
        jt["replay_failure_modes"].push_back(
            {{"unit", test_unit_json(m.unit)}, {"iteration", m.iteration}, {"tile", m.tile}, {"failure_mode", m.mode}});
    }
    // No signature where flipped bits say nothing about the hardware (a replay's digests and metrics, the memory
    // test's record): fleets and 'sdcscreen diff' would group and compare noise (report.h, has_bit_signature).
    jt["signatures"] = json::array();
    for (const UnitSignature& u : t.signatures)
      if (!u.signature.empty() && has_bit_signature(t.family))
        jt["signatures"].push_back(signature_json(u.signature, t.family, test_unit_json(u.unit)));
    // Every differing element and failing tile per iteration, over the units (the signatures count them all,
    // listed or not): when in the run the fault showed, and whether it stayed.
    std::map<int, std::pair<uint64_t, uint64_t>> by_iteration;  // iteration -> elements, tiles
    for (const UnitSignature& u : t.signatures)
      for (const Signature::IterationCount& n : u.signature.by_iteration()) {
        by_iteration[n.iteration].first += n.elements;
        by_iteration[n.iteration].second += n.tiles;
      }
    jt["failures_by_iteration"] = json::array();
    for (const auto& [iteration, n] : by_iteration)
      jt["failures_by_iteration"].push_back({{"iteration", iteration}, {"elements", n.first}, {"tiles", n.second}});
    // Every failing tile with element values, once (the miscompares list a few elements of a few tiles): the
    // HTML report's tile map draws them all.
    std::set<uint64_t> failed_tile_ids;
    for (const UnitSignature& u : t.signatures)
      for (const uint64_t tile : u.signature.tile_ids()) failed_tile_ids.insert(tile);
    jt["failed_tile_ids"] = failed_tile_ids;
    if (!t.unit_speed.empty()) {  // each unit's share of the test and its achieved rate
      jt["unit_throughput"] = json::array();
      for (const UnitSpeed& u : t.unit_speed)
        jt["unit_throughput"].push_back(
            {{"cpu", u.unit},
             {"tiles", u.tiles},
             {"busy_s", u.busy_s},
             {"gflops", u.busy_s > 0 && t.tiles > 0 && t.iterations_done > 0
                            ? t.gflops * t.duration_s * static_cast<double>(u.tiles) /
                                  (static_cast<double>(t.tiles) * t.iterations_done) / u.busy_s
                            : 0.0}});
    }
    if (t.tile_grid.rows > 0)
      jt["tile_grid"] = {{"rows", t.tile_grid.rows}, {"cols", t.tile_grid.cols}, {"axes", t.tile_grid.axes}};
    if (!t.retests.empty()) {
      jt["retest"] = json::array();
      for (const UnitRetest& u : t.retests) jt["retest"].push_back(retest_json(u));
    }
    if (!t.tile_digests.empty()) {
      jt["tile_digests"] = json::array();
      for (const uint64_t d : t.tile_digests) jt["tile_digests"].push_back(fmt::format("{:016x}", d));
      jt["digest_iteration"] = t.digest_iteration;
    }
    j["tests"].push_back(jt);
  }
  j["injections"] = json::array();
  for (const Injection& i : r.injections) {
    json ji = {{"spec", i.spec},
               {"case", i.case_id},
               {"target", i.input ? "input" : i.memory ? "memory" : "output"},
               {"element", i.element},
               {"mask", hex32(i.mask)},
               {"fault", fault_kind_name(i)},
               {"count", i.count},
               {"stride", i.stride},
               {"iteration", i.iteration},
               {"persist", persist_name(i)},
               {"fired", i.fired}};
    if (i.input) ji["tensor"] = i.tensor;
    if (i.memory) ji["pass"] = i.pass;  // the pass's name, completed when checked (Problem::check_memory_fault)
    ji["unit"] = i.unit >= 0 ? json(i.unit) : json(nullptr);
    ji["device"] = i.device >= 0 ? json(i.device) : json(nullptr);
    ji["fired_unit"] = i.fired && i.fired_unit >= 0 ? json(i.fired_unit) : json(nullptr);
    j["injections"].push_back(ji);
  }
  j["retest_on_failure"] = r.retest;
  j["throughput"] = {{"floor", r.throughput_floor},
                     {"fail_slow", r.fail_slow},
                     {"probe",
                      {{"ran", r.probe.not_run.empty() && !r.probe.seconds.empty()},
                       {"not_run", r.probe.not_run.empty() ? json(nullptr) : json(r.probe.not_run)},
                       {"work", r.probe.work},
                       {"reps", r.probe.reps},
                       {"target_s", r.probe.target_s},
                       {"rounds", r.probe.seconds.size()},
                       {"units", r.probe.units},
                       {"seconds", r.probe.seconds}}},
                     {"units", json::array()}};
  for (const UnitThroughput& u : r.throughput)
    j["throughput"]["units"].push_back({{"unit", u.unit},
                                        {"rate", u.rate},
                                        {"relative", u.relative},
                                        {"low", u.low},
                                        {"high", u.high},
                                        {"rounds", u.rounds},
                                        {"below_floor", u.below_floor},
                                        {"failed", u.failed},
                                        {"slow", u.slow}});
  j["errors"] = r.errors;
  j["summary"] = {{"tests", r.tests.size()}};
  for (const char* name : RESULT_NAMES) j["summary"][name] = counts[name];
  j["interrupted_by_signal"] = r.interrupted_by ? json(r.interrupted_by) : json(nullptr);
  j["exit"] = {{"code", r.exit_code()}, {"verdict", r.exit_word()}};
  const std::string drain = drain_reason(j);  // from the JSON, as 'sdcscreen reason' reads a report
  j["drain_reason"] = drain.empty() ? json(nullptr) : json(drain);
  // Command-line arguments need not be UTF-8: replace what is not, never fail to write the report.
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}
}  // namespace sdc
