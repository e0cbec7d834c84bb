#include "src/core/inject.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "src/core/unit_name.h"

namespace sdc {
namespace {

bool parse_uint(const std::string& s, uint64_t max, uint64_t& v, int base = 10) {
  if (s.empty() || s.size() > 20) return false;
  const char* digits = base == 16 ? "0123456789abcdefABCDEF" : "0123456789";
  if (s.find_first_not_of(digits) != std::string::npos) return false;  // no sign, space or prefix
  try {
    size_t used = 0;
    const unsigned long long x = std::stoull(s, &used, base);
    if (used != s.size() || x > max) return false;
    v = x;
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

std::string parse_injection(const std::string& text, Injection& inj) {
  inj = Injection{};
  inj.spec = text;
  std::set<std::string> seen;
  size_t pos = 0;
  bool has_bit = false;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    pos = comma + 1;
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) return fmt::format("'{}' is not key=value", item);
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (!seen.insert(key).second) return fmt::format("'{}' given twice", key);
    uint64_t v = 0;
    if (key == "case") {
      if (value.empty()) return "case is empty";
      inj.case_id = value;
    } else if (key == "target") {
      if (value != "output" && value != "input" && value != "memory")
        return fmt::format("target '{}' is not output, input or memory", value);
      inj.input = value == "input";
      inj.memory = value == "memory";
    } else if (key == "tensor") {
      if (value.empty()) return "tensor is empty";
      inj.tensor = value;
    } else if (key == "element") {
      if (!parse_uint(value, UINT64_MAX >> 1, v))
        return fmt::format("element '{}' is not a non-negative integer", value);
      inj.element = v;
    } else if (key == "bit") {
      if (!parse_uint(value, 31, v)) return fmt::format("bit '{}' is not in 0..31", value);
      inj.mask = 1u << v;
      has_bit = true;
    } else if (key == "mask") {
      if (value.rfind("0x", 0) != 0 || !parse_uint(value.substr(2), 0xffffffffu, v, 16) || v == 0)
        return fmt::format("mask '{}' is not a non-zero 32-bit hex value like 0x00800000", value);
      inj.mask = static_cast<uint32_t>(v);
      has_bit = true;
    } else if (key == "stuck") {
      if (value != "0" && value != "1") return fmt::format("stuck '{}' is not 0 or 1", value);
      inj.kind = value == "0" ? FAULT_STUCK_AT_0 : FAULT_STUCK_AT_1;
    } else if (key == "count") {
      if (!parse_uint(value, MAX_FAULT_COUNT, v) || v == 0)
        return fmt::format("count '{}' is not an integer in 1..{}", value, MAX_FAULT_COUNT);
      inj.count = static_cast<uint32_t>(v);
    } else if (key == "stride") {
      if (!parse_uint(value, 1u << 30, v) || v == 0)
        return fmt::format("stride '{}' is not an integer in 1..{}", value, 1u << 30);
      inj.stride = static_cast<uint32_t>(v);
    } else if (key == "unit") {
      if (!parse_uint(value, 1 << 20, v)) return fmt::format("unit '{}' is not a logical CPU number", value);
      inj.unit = static_cast<int>(v);
    } else if (key == "device") {
      if (!parse_uint(value, 1 << 16, v)) return fmt::format("device '{}' is not a GPU index", value);
      inj.device = static_cast<int>(v);
    } else if (key == "action") {  // hidden: the watchdog and crash drills, documented in docs/reliability.md
      if (value != "flip" && value != "hang" && value != "crash")
        return fmt::format("action '{}' is not flip, hang or crash", value);
      inj.hang = value == "hang";
      inj.crash = value == "crash";
    } else if (key == "iteration") {
      if (!parse_uint(value, 1000000, v)) return fmt::format("iteration '{}' is not an integer in 0..1000000", value);
      inj.iteration = static_cast<int>(v);
    } else if (key == "persist") {
      uint64_t k = 0;
      if (value == "once") {
        inj.persist_every = 0;
      } else if (value == "always" || value == "input") {
        inj.persist_every = 1;
        inj.input_only = value == "input";
      } else if (value.rfind("1/", 0) == 0 && parse_uint(value.substr(2), 1000, k) && k >= 2) {
        inj.persist_every = static_cast<int>(k);
      } else {
        return fmt::format("persist '{}' is not once, always, input or 1/K with K in 2..1000", value);
      }
    } else if (key == "pass") {
      if (value.empty()) return "pass is empty";
      inj.pass = value;
    } else if (key == "submodule") {
      if (value.empty()) return "submodule is empty";
      inj.submodule = value;
    } else if (key == "step") {
      if (!parse_uint(value, 1000000, v)) return fmt::format("step '{}' is not an integer in 0..1000000", value);
      inj.step = static_cast<int64_t>(v);
    } else if (key == "microbatch") {
      if (!parse_uint(value, 1 << 20, v)) return fmt::format("microbatch '{}' is not a non-negative integer", value);
      inj.microbatch = static_cast<int>(v);
      inj.microbatch_given = true;
    } else if (key == "output") {
      if (!parse_uint(value, 64, v)) return fmt::format("output '{}' is not an integer in 0..64", value);
      inj.output = static_cast<int>(v);
    } else if (key == "rate") {
      if (!parse_uint(value, MAX_REPLAY_RATE, v) || v == 0)
        return fmt::format("rate '{}' is not an integer in 1..{}", value, MAX_REPLAY_RATE);
      inj.rate = static_cast<int64_t>(v);
    } else {
      return fmt::format(
          "unknown key '{}' (case, target, tensor, element, bit, mask, stuck, count, stride, unit, device, iteration, "
          "persist; "
          "submodule, step, microbatch, output, rate for a training-step replay; pass for target=memory)",
          key);
    }
  }
  if (inj.case_id.empty()) return "case=ID is required";
  if (inj.hang || inj.crash) {
    if (has_bit || inj.input || inj.memory || seen.count("pass") || seen.count("element") || seen.count("persist") ||
        seen.count("stuck") || seen.count("count") || seen.count("stride") || seen.count("rate") ||
        seen.count("submodule") || seen.count("step") || seen.count("microbatch") || seen.count("output"))
      return fmt::format("action={} takes case, unit, device and iteration only", inj.hang ? "hang" : "crash");
    return "";
  }
  if (inj.persist_every > 0 && inj.unit < 0)
    return "persist= other than once needs unit=N: a fault that repeats lives in one unit";
  if (inj.submodule.empty() &&
      (seen.count("step") || seen.count("microbatch") || seen.count("output") || seen.count("rate")))
    return "step=, microbatch=, output= and rate= apply to submodule= only";
  if (seen.count("rate") && (seen.count("step") || seen.count("microbatch")))
    return "rate= hits every K-th execution of the submodule's output, over all steps and micro-batches: not with "
           "step= or microbatch=";
  if (!inj.submodule.empty() && inj.input) return "submodule= flips a submodule's output: not with target=input";
  if (!inj.submodule.empty() && seen.count("stuck"))
    return "submodule= flips bits of a submodule's output (bit=, mask=, count=, stride=): not with stuck=";
  if (seen.count("pass") && !inj.memory) return "pass= applies to target=memory only";
  if (inj.memory && !inj.submodule.empty()) return "submodule= is a replay's fault: not with target=memory";
  if (seen.count("stride") && inj.count == 1) return "stride= needs count=N with N >= 2";
  if (!seen.count("element")) return "element=N is required";
  if (!has_bit) return "bit=N or mask=0xHEX is required";
  if (seen.count("bit") && seen.count("mask")) return "give bit or mask, not both";
  if (inj.input && inj.tensor.empty()) return "target=input needs tensor=NAME";
  if (!inj.input && !inj.tensor.empty()) return "tensor= applies to target=input only";
  return "";
}

std::string persist_name(const Injection& inj) {
  if (inj.persist_every == 0) return "once";
  if (inj.persist_every == 1) return inj.input_only ? "input" : "always";
  return fmt::format("1/{}", inj.persist_every);
}

const char* fault_kind_name(const Injection& inj) {
  return inj.kind == FAULT_STUCK_AT_0 ? "stuck-at-0" : inj.kind == FAULT_STUCK_AT_1 ? "stuck-at-1" : "flip";
}

bool fires_now(Injection& inj, int iteration, bool retest, bool fresh_inputs) {
  if (inj.persist_every == 0) return !retest && iteration == inj.iteration;
  if (!retest && iteration < inj.iteration) return false;
  if (fresh_inputs && inj.input_only) return false;
  return inj.computations++ % inj.persist_every == 0;
}

std::string check_injection(Injection& inj, const Battery& battery, const std::vector<int>& cpus,
                            const std::vector<DeviceInfo>* gpus) {
  const Case* c = battery.find_case(inj.case_id);
  if (!c) return fmt::format("unknown case '{}'", inj.case_id);
  const Family& family = *find_family(c->family);
  const auto problem = family.prepare(*c);
  if (inj.memory) {
    uint64_t tile = 0;
    if (std::string e = problem->check_memory_fault(inj, tile); !e.empty()) return fmt::format("case {}: {}", c->id, e);
  } else if (!inj.submodule.empty()) {
    const ReplayProblem* replay = family.replay ? problem->replay() : nullptr;
    if (!replay)
      return fmt::format("submodule= applies to {} cases only; {} is a {} case", replay_family_ids(), c->id, c->family);
    if (std::string e = replay->check_fault(inj); !e.empty()) return fmt::format("case {}: {}", c->id, e);
  } else if (inj.input) {
    const auto tensors = problem->inputs();
    bool found = false;
    std::string names;
    for (size_t t = 0; t < tensors.size(); ++t) {
      names += (t ? ", " : "") + tensors[t].name;
      if (tensors[t].name != inj.tensor) continue;
      found = true;
      inj.tensor_index = t;
      if (inj.element >= tensors[t].elements)
        return fmt::format("element {} is outside input {} of {} ({} elements)", inj.element, inj.tensor, c->id,
                           tensors[t].elements);
      if (inj.word().last(inj.element) >= tensors[t].elements)
        return fmt::format("count={} stride={} from element {} runs past the end of input {} of {} ({} elements)",
                           inj.count, inj.stride, inj.element, inj.tensor, c->id, tensors[t].elements);
    }
    if (!found) return fmt::format("case {} has no input '{}' (it has {})", c->id, inj.tensor, names);
  } else if (inj.element >= problem->output_elements()) {
    return fmt::format("element {} is outside the output of {} ({} elements)", inj.element, c->id,
                       problem->output_elements());
  } else if (inj.count > 1) {
    uint64_t tile = 0;
    uint32_t offset = 0;
    problem->locate(inj.element, tile, offset);
    if (inj.word().last(offset) >= problem->tile_elements())
      return fmt::format(
          "count={} stride={} from element {} (offset {} of tile {}) runs past the end of its tile ({} words): "
          "an output fault's words are offsets in one tile",
          inj.count, inj.stride, inj.element, offset, tile, problem->tile_elements());
  }
  if (gpus) {
    if (inj.persist_every > 0 && (inj.input || inj.memory || !inj.submodule.empty()))
      return "persist= on a GPU repeats an output drill on an SM (target=output, unit=SM)";
    if (inj.crash) return "action=crash is a CPU drill (a GPU whose context is lost is drilled by the emulated device)";
    if (gpus->empty()) return "no GPU is selected";
    if (inj.device < 0) inj.device = gpus->front().index;
    const DeviceInfo* gpu = nullptr;
    for (const DeviceInfo& d : *gpus)
      if (d.index == inj.device) gpu = &d;
    if (!gpu) return fmt::format("device {} is not among the selected GPUs", inj.device);
    if (inj.input && inj.unit >= 0)
      return "target=input cannot be pinned to an SM: every SM of the GPU reads the same input";
    if (inj.memory && inj.unit >= 0)
      return "target=memory cannot be pinned to an SM: a pass reads the region's words on whichever SMs run it (give "
             "device=, not unit=)";
    if (!inj.submodule.empty() && inj.unit >= 0)
      return "submodule= cannot be pinned to an SM: a replay's kernels span the GPU (give device=, not unit=)";
    if (inj.unit >= gpu->sm_count)
      return fmt::format("unit={}: {} is not an SM of {} ({} SMs)", inj.unit, unit_text(UnitName{-1, -1, inj.unit}),
                         unit_text(UnitName::of_gpu(gpu->index)), gpu->sm_count);
    return "";
  }
  if (inj.device >= 0) return "device= applies to GPU runs (--backend cuda) only";
  if (inj.unit >= 0 && std::find(cpus.begin(), cpus.end(), inj.unit) == cpus.end())
    return fmt::format("unit={}: {} is not among the selected CPUs", inj.unit, unit_text(UnitName::of_cpu(inj.unit)));
  return "";
}

}  // namespace sdc
