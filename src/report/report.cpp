// The text report (render_text) and the shell quoting of the reproduce line; the JSON report is
// report_json.cpp. The host and version facts every report carries are src/util/host_facts.h.
#include "src/report/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <map>
#include <string_view>

#include "src/core/family.h"
#include "src/core/unit_name.h"
#include "src/report/report_gpu.h"
#include "src/report/report_host.h"
#include "src/util/int_list.h"

namespace sdc {

const char* unit_result(const UnitResult& u) {
  return u.crash_signal ? "crash" : u.failed_tiles ? "fail" : u.hung ? "hung" : (u.tiles ? "pass" : "idle");
}

std::string hex32(uint32_t v) { return fmt::format("0x{:08x}", v); }
std::string hex64_bits(uint64_t v) { return fmt::format("0x{:016x}", v); }

namespace {

// The counts behind a unit's signature string, for people.
std::string signature_detail(const Signature& g) {
  std::string s =
      fmt::format("{} element(s) in {} tile(s), {}", g.elements(), g.tiles(),
                  g.min_elements_per_tile() == g.max_elements_per_tile()
                      ? fmt::format("{} per tile", g.max_elements_per_tile())
                      : fmt::format("{} to {} per tile", g.min_elements_per_tile(), g.max_elements_per_tile()));
  if (g.format() == WordFormat::int32)
    s += fmt::format("; int32 bit flips: 0->1 {}, 1->0 {}", g.rises_total(), g.falls_total());
  else
    s += fmt::format("; {} flips: sign {}, exponent {}, mantissa {}; 0->1 {}, 1->0 {}", format_name(g.format()),
                     g.flips(BitField::sign), g.flips(BitField::exponent), g.flips(BitField::mantissa), g.rises_total(),
                     g.falls_total());
  if (const StuckAt st = g.stuck_at())
    s += fmt::format("; stuck-at-{} bit {} ({})", st.value, st.bit, bit_label(st.bit, g.format()));
  return s;
}

}  // namespace

bool is_replay_family(const std::string& family) {
  const Family* f = find_family(family);
  return f && f->replay;
}

bool has_bit_signature(const std::string& family) {
  const Family* f = find_family(family);
  return !f || (!f->replay && !f->record_outputs);
}

std::string replay_metric_name(const ReplayMetric& m) { return fmt::format("L{} {} {}", m.level, m.site, m.metric); }

std::string replay_site(const std::string& element_name) {
  std::string s = element_name;
  if (const size_t colon = s.find(": "); s.rfind("replica ", 0) == 0 && colon != std::string::npos)
    s = s.substr(colon + 2);
  if (s.size() < 3 || s[0] != 'L' || (s[1] != '1' && s[1] != '2' && s[1] != '3') || s[2] != ' ') return "";
  std::vector<std::string> words;
  for (size_t i = 0; i < s.size();) {
    const size_t j = std::min(s.find(' ', i), s.size());
    words.push_back(s.substr(i, j - i));
    i = j + 1;
  }
  // L1 <submodule> [mb M] out K digest.x; L2 grad|param <tensor> <part>; L3 step S <part> | L3 final <what>
  const size_t keep = s[1] == '1' ? 2 : 3;
  std::string out;
  for (size_t i = 0; i < words.size() && i < keep; ++i) out += (i ? " " : "") + words[i];
  return out;
}

namespace {

// A failing unit's retest, for people: its classification, what it rests on, and its neighbours.
std::string retest_text(const UnitRetest& u) {
  const char* cls = u.classification();
  const std::string who = unit_text(u.device >= 0 ? UnitName::of_sm(u.device, u.unit) : UnitName::of_cpu(u.unit));
  std::string s =
      fmt::format("  retest on {} ({} failing tile(s), {} run(s) each way): {}", who, u.tiles, u.same_seed_runs, cls);
  if (u.same_seed_runs > 0) {
    if (std::string(cls) == "intermittent") s += fmt::format(", rate {:.2f}", u.rate());
    s += fmt::format(" ({} of {} failed again, {} with the same bits)", u.same_seed_failed, u.same_seed_runs,
                     u.same_bits);
  }
  const int dep = u.input_dependent();
  if (u.fresh_seed_runs > 0)
    s += fmt::format("; fresh seeds: {} of {} failed against {}{}", u.fresh_seed_failed, u.fresh_seed_runs,
                     u.fresh_on_host ? std::string("the host CPU") : unit_text(UnitName::of_cpu(u.fresh_reference)),
                     dep == 1   ? ": input-dependent"
                     : dep == 0 ? ": not input-dependent"
                                : "");
  else if (u.fresh_reference < 0 && !u.fresh_on_host && u.complete)
    s += u.device >= 0 ? "; fresh seeds not run (no room on the GPU for a second copy, or --max-memory)"
                       : "; fresh seeds not run (no unit that passed to compare with, or --max-memory)";
  if (!u.complete) s += "; cut short (a stop, the time budget or the watchdog)";
  s += "\n";
  for (const SiblingRetest& x : u.siblings)
    s += x.unit < 0 ? fmt::format("    neighbours ({}): {} of {} runs failed\n", x.relation, x.failed, x.runs)
                    : fmt::format("    neighbour {} ({}): {} of {} failed\n", unit_text(UnitName::of_cpu(x.unit)),
                                  x.relation, x.failed, x.runs);
  return s;
}

// Where a miscompare's unit is, in words: a logical CPU with its core and package, or an SM of a GPU.
std::string unit_where(const RunResult& r, const TestResult& t, int unit) {
  if (t.device_index >= 0) {
    const int gpu = r.devices[static_cast<size_t>(t.device_index)].index;
    return unit >= 0 ? unit_text(UnitName::of_sm(gpu, unit))
                     : unit_text(UnitName::of_gpu(gpu)) + " (its kernels span the GPU)";
  }
  for (const UnitResult& u : r.units)
    if (!u.is_sm() && u.cpu.cpu == unit)
      return fmt::format("{} (core {}, package {})", unit_text(UnitName::of_cpu(unit)), u.cpu.core, u.cpu.package);
  return unit_text(UnitName::of_cpu(unit));
}

// The replay's failing sites per unit, in the order listed (L1's first is the first faulty submodule: the
// slots are in execution order), then every one of its metrics by name and value (a per-step series
// summarized), and its trajectory's failure mode, for people.
std::string replay_text(const RunResult& r, const TestResult& t) {
  std::map<int, std::vector<std::string>> sites;
  for (const Miscompare& m : t.miscompares) {
    const std::string site = replay_site(m.element_name);
    auto& v = sites[m.unit];
    if (!site.empty() && std::find(v.begin(), v.end(), site) == v.end()) v.push_back(site);
  }
  for (const ReplayMetric& m : t.replay_metrics) sites[m.unit];  // a unit past the listing's cap
  std::string s;
  for (const auto& [unit, v] : sites) {
    std::string list;
    for (const auto& x : v) list += (list.empty() ? "" : ", ") + x;
    if (!v.empty())
      s += fmt::format("  replay on {}: first {}; listed: {}{}\n", unit_where(r, t, unit), v.front(), list,
                       t.miscompared_elements > t.miscompares.size() ? " (and more not listed)" : "");
    for (const ReplayMetric& m : t.replay_metrics)
      if (m.unit == unit) {
        s += fmt::format("  replay metrics on {} (iteration {}, {}):\n", unit_where(r, t, unit), m.iteration,
                         "replica " + std::to_string(m.tile));
        s += replay_metric_lines(t, unit);
        break;
      }
  }
  return s + "  (the replay's slots are digests and metrics: their flipped bits say nothing about the hardware)\n";
}

// A listed miscompare that is one of the replay's metrics, which replay_text gives by value.
bool is_listed_metric(const TestResult& t, const Miscompare& m) {
  return std::any_of(t.replay_metrics.begin(), t.replay_metrics.end(), [&m](const ReplayMetric& x) {
    const std::string name = replay_metric_name(x);
    return x.unit == m.unit && x.iteration == m.iteration && x.tile == m.tile && m.element_name.size() >= name.size() &&
           m.element_name.compare(m.element_name.size() - name.size(), name.size(), name) == 0;
  });
}

std::string device_line(const DeviceInfo& d) {
  return fmt::format("{}  {}  {}  pci {}  cc {}.{}  {} SMs  {} MiB  ECC {}  driver {} (CUDA {})  runtime {}",
                     unit_text(UnitName::of_gpu(d.index)), d.name, d.uuid, d.pci_bus_id, d.cc_major, d.cc_minor,
                     d.sm_count, d.memory_bytes >> 20, d.ecc, d.driver, d.driver_cuda, d.runtime);
}

// The differing elements the text report lists per failing test (the JSON report has every one it recorded):
// the signature and the retest say more than a long list of elements.
constexpr size_t FOLD_ELEMENTS = 4;

// The device a test ran on, for people: "cpu" (the CPU backend's pool), or "gpu 0".
std::string device_text(const RunResult& r, const TestResult& t) {
  if (t.device_index < 0 || static_cast<size_t>(t.device_index) >= r.devices.size()) return t.device;
  return unit_text(UnitName::of_gpu(r.devices[static_cast<size_t>(t.device_index)].index));
}

// Above this many units (CPUs of the node, SMs of one GPU) the text report folds the passing ones into
// ranges: a table of hundreds of passing rows hides the one that matters.
constexpr size_t FOLD_UNITS = 16;

std::string cpu_row(const UnitResult& u) {
  return fmt::format("{:>5} {:>5} {:>7} {:>10} {:>8}  {}\n", u.cpu.cpu, u.cpu.core, u.cpu.package, u.tiles,
                     u.failed_tiles, u.failed_tiles ? "FAIL" : unit_result(u));
}

// The units section of the text report: every CPU (on a big node, the passing ones as ranges and every
// other one on its own line), or per GPU a summary and the SMs that failed.
std::string units_text(const RunResult& r) {
  std::string s;
  if (r.units.empty()) return s;
  if (!r.units.front().is_sm()) {
    const std::string header =
        fmt::format("{:>5} {:>5} {:>7} {:>10} {:>8}  {}\n", "cpu", "core", "package", "tiles", "failed", "result");
    if (r.units.size() <= FOLD_UNITS) {
      s += "\n" + header;
      for (const UnitResult& u : r.units) s += cpu_row(u);
      return s;
    }
    uint64_t tiles = 0, failed = 0;
    std::vector<int> passing;
    std::string others;
    for (const UnitResult& u : r.units) {
      tiles += u.tiles;
      failed += u.failed_tiles;
      if (std::string_view(unit_result(u)) == "pass")
        passing.push_back(u.cpu.cpu);
      else
        others += cpu_row(u);
    }
    std::sort(passing.begin(), passing.end());
    const size_t not_passing = r.units.size() - passing.size();
    s += fmt::format("\n{} cpus computed {} tiles, {} failed: {} pass{}{}\n", r.units.size(), tiles, failed,
                     passing.size(), passing.empty() ? "" : " (cpu " + format_cpu_list(passing) + ")",
                     not_passing ? fmt::format(", {} not passing:", not_passing) : "");
    if (not_passing) s += header + others;
    return s;
  }
  s += "\n";
  for (size_t d = 0; d < r.devices.size(); ++d) {
    uint64_t tiles = 0, failed = 0;
    int used = 0;
    size_t sms = 0;
    std::string failing;
    std::vector<int> passing, idle;
    for (const UnitResult& u : r.units) {
      if (u.device != static_cast<int>(d)) continue;
      ++sms;
      tiles += u.tiles;
      failed += u.failed_tiles;
      used += u.tiles > 0;
      if (u.failed_tiles)
        failing += fmt::format("  {}: {} of {} tiles failed\n", unit_text(UnitName::of_sm(r.devices[d].index, u.sm)),
                               u.failed_tiles, u.tiles);
      else
        (u.tiles ? passing : idle).push_back(u.sm);
    }
    // Tiles of kernels that do not say which SM computed them are the whole GPU's, not any SM's.
    uint64_t whole = 0, whole_failed = 0;
    for (const TestResult& t : r.tests)
      if (t.device_index == static_cast<int>(d) && t.tiles_without_sm) {
        whole += t.tiles * static_cast<uint64_t>(t.iterations_done);
        whole_failed += t.failed_tiles;
      }
    const std::string spanning =
        whole ? fmt::format("; {} tiles ({} failed) by kernels that span the GPU", whole, whole_failed) : "";
    s += fmt::format("{}: {} SMs computed {} tiles, {} failed{}{}\n", unit_text(UnitName::of_gpu(r.devices[d].index)),
                     used, tiles, failed, spanning, failed ? " -- failing SMs:" : "");
    s += failing;
    // A big GPU also says which SMs passed and which computed nothing, as ranges of SM ids.
    if (sms > FOLD_UNITS) {
      std::sort(passing.begin(), passing.end());
      std::sort(idle.begin(), idle.end());
      if (!passing.empty()) s += fmt::format("  {} pass: sm {}\n", passing.size(), format_cpu_list(passing));
      if (!idle.empty()) s += fmt::format("  {} idle: sm {}\n", idle.size(), format_cpu_list(idle));
    }
  }
  return s;
}

}  // namespace

std::string shell_join(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    if (!out.empty()) out += ' ';
    const bool plain =
        !a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") ==
                          std::string::npos;
    if (plain) {
      out += a;
    } else {
      out += '\'';
      for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
      out += '\'';
    }
  }
  return out;
}

namespace {

// Skipped cases that share why they cannot run here.
struct NotApplicable {
  std::string kind, why;  // "GPU-only " or empty; "not applicable ..."
  size_t cases = 0;
  std::vector<std::string> families;  // in report order
};

// "18 GPU-only cases not applicable on the cpu backend (families a, b, c, 6 more)".
std::string not_applicable_line(const NotApplicable& g) {
  constexpr size_t NAMED = 3;
  std::string families;
  for (size_t i = 0; i < g.families.size() && i < NAMED; ++i) families += (i ? ", " : "") + g.families[i];
  if (g.families.size() > NAMED) families += fmt::format(", {} more", g.families.size() - NAMED);
  return fmt::format("{} {}case{} {} (famil{} {})\n", g.cases, g.kind, g.cases == 1 ? "" : "s", g.why,
                     g.families.size() == 1 ? "y" : "ies", families);
}

}  // namespace

std::string render_text(const RunResult& r, const HostInfo& host) {
  std::string s;
  s += fmt::format("sdcscreen {} ({})  profile {}  backend {}  seed {}\n", tool_version(), tool_git(), r.profile,
                   r.backend, r.seed);
  if (!r.backend_reason.empty()) s += fmt::format("backend: {}\n", r.backend_reason);
  if (r.backend == "cuda") {
    s += fmt::format("host {}  {}\n", host.hostname, host.cpu_model);
    for (const DeviceInfo& d : r.devices) s += device_line(d) + "\n";
  } else {
    std::vector<int> cpus;
    for (const UnitResult& u : r.units) cpus.push_back(u.cpu.cpu);
    s += fmt::format("host {}  cpus {} ({})  {}\n", host.hostname, format_cpu_list(cpus), cpus.size(), host.cpu_model);
  }
  if (r.host.identity_read) s += host_identity_text(r.host.identity);
  s += host_telemetry_text(r.host);
  s += gpu_telemetry_text(r.nvml, r.max_temperature_c);
  if (!r.injections.empty())
    s += fmt::format("FAULT INJECTION RUN: {} injected fault(s); failures below are injected, not hardware\n",
                     r.injections.size());
  for (const Weakening& w : r.weakened_by)
    s += fmt::format("WEAKENED VERDICT: {}{}: {}\n", w.name, w.value.empty() ? "" : "=" + w.value, w.effect);
  for (const std::string& e : r.errors) s += fmt::format("error: {}\n", e);
  // Cases that cannot run on this backend or device are one line per reason, not a row each: on a CPU-only
  // node they would bury the rows that ran. Every other skip keeps its row, since something did not run.
  std::vector<const TestResult*> shown;
  std::vector<NotApplicable> grouped;
  for (const TestResult& t : r.tests) {
    if (t.verdict != Verdict::skip || !t.not_applicable) {
      shown.push_back(&t);
      continue;
    }
    const bool gpu_only = t.device_index < 0 && t.reason.find("runs on GPUs only") != std::string::npos;
    const std::string kind = gpu_only ? "GPU-only " : "";
    const std::string why = gpu_only ? fmt::format("not applicable on the {} backend", r.backend)
                            : t.reason.rfind("not applicable", 0) == 0 ? t.reason
                                                                       : "not applicable: " + t.reason;
    auto g = std::find_if(grouped.begin(), grouped.end(),
                          [&](const NotApplicable& n) { return n.kind == kind && n.why == why; });
    if (g == grouped.end()) g = grouped.insert(grouped.end(), NotApplicable{kind, why, 0, {}});
    ++g->cases;
    if (std::find(g->families.begin(), g->families.end(), t.family) == g->families.end())
      g->families.push_back(t.family);
  }
  // Columns as wide as their longest entry, so that long case ids and modes do not push a row out of line.
  auto mode_of = [](const TestResult& t) {  // a recorded case judged by consensus shows both
    return t.judged_by.empty() || t.judged_by == t.mode ? t.mode : t.mode + ">" + t.judged_by;
  };
  size_t id_w = 4, device_w = 7, mode_w = 13;
  for (const TestResult* t : shown) {
    id_w = std::max(id_w, t->id.size());
    device_w = std::max(device_w, device_text(r, *t).size());
    mode_w = std::max(mode_w, mode_of(*t).size());
  }
  s += fmt::format("\n{:<{}} {:<{}} {:<{}} {:<6} {:>6} {:>7} {:>8} {:>9}\n", "test", id_w, "device", device_w, "mode",
                   mode_w, "result", "iters", "tiles", "time_s", "GFLOP/s");
  for (const TestResult* t : shown) {
    s += fmt::format("{:<{}} {:<{}} {:<{}} {:<6} {:>6} {:>7} {:>8.2f} {:>9.1f}\n", t->id, id_w, device_text(r, *t),
                     device_w, mode_of(*t), mode_w, verdict_name(t->verdict), t->iterations_done, t->tiles,
                     t->duration_s, t->gflops);
    if (!t->reason.empty()) s += fmt::format("  {}: {}\n", verdict_name(t->verdict), t->reason);
    for (const std::string& n : t->notes) s += fmt::format("  note: {}\n", n);
  }
  for (const NotApplicable& g : grouped) s += not_applicable_line(g);
  s += units_text(r);
  bool any_fail = false;
  for (const TestResult& t : r.tests) {
    if (t.verdict != Verdict::fail) continue;
    if (!any_fail) s += "\nfailures:\n";
    any_fail = true;
    s += fmt::format("{} on {}: {} failed tile(s), {} element(s) differ, time to fail {:.3f} s\n", t.id,
                     device_text(r, t), t.failed_tiles, t.miscompared_elements, t.time_to_fail_s);
    // What the fault looks like and whether it comes back, then the first few elements as evidence.
    if (is_replay_family(t.family))
      s += replay_text(r, t);
    else if (has_bit_signature(t.family))  // the memory test's record is read in its notes instead
      for (const UnitSignature& u : t.signatures)
        if (!u.signature.empty())
          s += fmt::format("  signature on {}: {}\n    ({})\n", unit_where(r, t, u.unit), u.signature.text(t.family),
                           signature_detail(u.signature));
    for (const UnitRetest& u : t.retests) s += retest_text(u);
    // The first FOLD_ELEMENTS listed elements but the replay's metrics (given by value above): `printed` counts the
    // element lines, so the line after them counts a skipped metric among those not shown.
    size_t printed = 0;
    for (size_t k = 0; k < std::min(t.miscompares.size(), FOLD_ELEMENTS); ++k) {
      const Miscompare& m = t.miscompares[k];
      if (is_listed_metric(t, m)) continue;
      ++printed;
      const std::string where =
          unit_where(r, t, m.unit) + (m.lane >= 0 ? fmt::format(" warp {} lane {}", m.warp, m.lane) : "");
      if (m.int32) {  // an integer output: its value and difference, not fp32 ulps
        s += fmt::format(
            "  iteration {} tile {} on {}: {} (index {}) expected {} actual {} xor {} (int32 expected {} "
            "actual {} difference {:+})\n",
            m.iteration, m.tile, where, m.element_name, m.element, hex32(m.expected), hex32(m.actual),
            hex32(m.expected ^ m.actual), static_cast<int32_t>(m.expected), static_cast<int32_t>(m.actual),
            int32_difference(m.expected, m.actual));
        continue;
      }
      s += fmt::format(
          "  iteration {} tile {} on {}: {} (index {}) expected {} actual {} xor {} ulps {}{}\n", m.iteration, m.tile,
          where, m.element_name, m.element, hex32(m.expected), hex32(m.actual), hex32(m.expected ^ m.actual), m.ulps,
          m.binary64 ? fmt::format("; binary64 value expected {} actual {} xor {} ulps {}", hex64_bits(m.expected64),
                                   hex64_bits(m.actual64), hex64_bits(m.expected64 ^ m.actual64), m.ulps64)
                     : "");
    }
    if (t.miscompared_elements > printed)
      s += fmt::format("  ({} more differing element(s) not shown{})\n", t.miscompared_elements - printed,
                       t.miscompares.size() > printed
                           ? fmt::format("; the JSON report lists {} of them", t.miscompares.size() - printed)
                           : "");
  }
  s += next_steps_text(r);  // a crashed or hung unit has no failure above, but a next line
  for (const Injection& i : r.injections)
    s += fmt::format("injection {}: {}\n", i.spec,
                     !i.fired           ? std::string("DID NOT FIRE (the drill proves nothing)")
                     : r.masked(i)      ? std::string("fired, masked (no output changed: the drill proves nothing)")
                     : i.fired_unit < 0 ? std::string("fired")
                     : i.device >= 0    ? fmt::format("fired on {} (tile {})",
                                                      unit_text(UnitName::of_sm(i.device, i.fired_unit)), i.fired_tile)
                                        : fmt::format("fired on {}", unit_text(UnitName::of_cpu(i.fired_unit))));
  if (r.any_slow()) {
    s += fmt::format("slow units (probe throughput below {:.2f}x the median of their peers; not a miscompare{}):\n",
                     r.throughput_floor, r.fail_slow ? ", but --fail-slow" : "");
    for (const UnitThroughput& u : r.throughput)
      if (u.slow)
        s += fmt::format("  {} at {:.2f}x (rounds {:.2f}x to {:.2f}x, {} of {} below the floor): SLOW\n", u.unit,
                         u.relative, u.low, u.high, u.below_floor, u.rounds);
  }
  if (!r.probe.not_run.empty() && r.probe.not_run != "interrupted")
    s += fmt::format("throughput probe not run: {}\n", r.probe.not_run);
  std::map<std::string, size_t> counts;
  for (const TestResult& t : r.tests) ++counts[result_name(t)];
  if (r.interrupted_by) s += fmt::format("interrupted by signal {}: results are partial\n", r.interrupted_by);
  if (r.host.any_fatal())
    s += fmt::format("fail: uncorrected hardware error during the run ({}){}\n", host_fatal_units(r.host),
                     r.host.drill.empty() ? "" : " [telemetry drill]");
  if (r.nvml.any("failure"))
    s += fmt::format("fail: GPU hardware error during the run ({})\n", r.nvml.causes("failure"));
  if (r.nvml.any("error"))
    s += fmt::format("error: the driver stopped work of this run ({}): results cannot be trusted\n",
                     r.nvml.causes("error"));
  s += fmt::format("summary: {} tests: {} pass, {} fail, {} error, {} skip{}{}; {:.2f} s\n", r.tests.size(),
                   counts["pass"], counts["fail"], counts["error"], counts["skip"],
                   counts["crash"] ? fmt::format(", {} crash", counts["crash"]) : "",
                   counts["not_applicable"] ? fmt::format(", {} not applicable", counts["not_applicable"]) : "",
                   r.end_unix - r.start_unix);
  s += fmt::format("reproduce: {}\n", r.reproduce);
  if (!r.reproduce_left_out.empty()) {
    std::string opts;
    for (const std::string& o : r.reproduce_left_out) opts += (opts.empty() ? "" : " ") + o;
    s += fmt::format("  (outputs and state left out of it: {})\n", opts);
  }
  s += fmt::format("exit: {}\n", r.exit_word());
  return s;
}

}  // namespace sdc
