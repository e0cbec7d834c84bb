#include "src/core/recording_merge.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "src/spec/digest.h"
#include "src/core/patterns.h"
#include "src/core/result.h"

namespace sdc {
namespace {

struct Observation {
  const Recording* recording;
  const RecordingEntry* entry;
};

std::string source(const Recording& r) { return r.file.empty() ? "recording of device " + r.device.uuid : r.file; }

DeviceRef ref(const RecordedDevice& d) { return {d.uuid, d.name, d.hostname}; }

std::string refs_text(const std::vector<DeviceRef>& refs) {
  std::string s;
  for (const DeviceRef& d : refs) s += fmt::format("{}{} ({}, {})", s.empty() ? "" : ", ", d.uuid, d.name, d.hostname);
  return s;
}

KeyConsensus decide(const RecordingKey& key, const std::map<std::string, std::vector<Observation>>& by_device) {
  KeyConsensus k;
  k.key = key;
  // Every recording of the key has the same tile count (checked by the caller).
  std::map<std::vector<uint64_t>, std::vector<DeviceRef>> by_digests;
  for (const auto& [uuid, obs] : by_device) {
    const DeviceRef d = ref(obs.front().recording->device);  // the first file read names the device
    const std::vector<uint64_t>& digests = obs.front().entry->tile_digests;
    const bool stable = std::all_of(obs.begin(), obs.end(),
                                    [&digests](const Observation& o) { return o.entry->tile_digests == digests; });
    if (stable)
      by_digests[digests].push_back(d);
    else
      k.unstable.push_back(d);
  }
  std::vector<const std::pair<const std::vector<uint64_t>, std::vector<DeviceRef>>*> groups;
  for (const auto& g : by_digests) {
    groups.push_back(&g);
    k.devices += g.second.size();
  }
  // Largest first; equal sizes by first uuid, so that the output does not depend on digest values.
  std::sort(groups.begin(), groups.end(), [](const auto* a, const auto* b) {
    if (a->second.size() != b->second.size()) return a->second.size() > b->second.size();
    return a->second.front().uuid < b->second.front().uuid;
  });
  for (const auto* g : groups) k.groups.push_back(g->second);
  if (groups.empty()) return k;  // only unstable devices: no majority
  if (2 * groups[0]->second.size() > k.devices) {
    k.verdict = ConsensusVerdict::accepted;
    AcceptedRecording& a = k.accepted;
    a.key = key;
    a.tile_digests = groups[0]->first;
    a.output_digest = output_digest(a.tile_digests.data(), a.tile_digests.size());
    a.voters = groups[0]->second;
    for (size_t i = 1; i < groups.size(); ++i)
      a.dissenters.insert(a.dissenters.end(), groups[i]->second.begin(), groups[i]->second.end());
    a.unstable = k.unstable;
    a.provisional = a.voters.size() < 2;
  } else if (groups.size() >= 2 && groups[0]->second.size() == groups[1]->second.size()) {
    k.verdict = ConsensusVerdict::tie;
  }
  return k;
}

}  // namespace

const char* consensus_verdict_name(ConsensusVerdict v) {
  switch (v) {
    case ConsensusVerdict::accepted: return "accepted";
    case ConsensusVerdict::tie: return "tie";
    case ConsensusVerdict::no_majority: return "no majority";
  }
  return "?";
}

ConsensusResult merge_recordings(const std::vector<Recording>& recordings) {
  // key -> device uuid -> every recording of the key by that device, in input order
  std::map<RecordingKey, std::map<std::string, std::vector<Observation>>> by_key;
  std::map<RecordingKey, Observation> first;  // for the tile-count check
  for (const Recording& r : recordings) {
    for (const RecordingEntry& e : r.entries) {
      const auto [it, is_first] = first.emplace(e.key, Observation{&r, &e});
      const Observation& f = it->second;
      if (!is_first && f.entry->tile_digests.size() != e.tile_digests.size())
        throw PatternError(fmt::format(
            "{}: {}: {} tile digests, {} has {} for the same key (recorded by different "
            "builds?)",
            source(r), e.key.str(), e.tile_digests.size(), source(*f.recording), f.entry->tile_digests.size()));
      by_key[e.key][r.device.uuid].push_back({&r, &e});
    }
  }
  ConsensusResult out;
  for (const auto& [key, by_device] : by_key) out.keys.push_back(decide(key, by_device));
  return out;
}

std::vector<DeviceRef> ConsensusResult::suspects() const {
  std::map<std::string, DeviceRef> s;
  for (const KeyConsensus& k : keys) {
    for (const DeviceRef& d : k.unstable) s.emplace(d.uuid, d);
    if (k.verdict == ConsensusVerdict::accepted)
      for (const DeviceRef& d : k.accepted.dissenters) s.emplace(d.uuid, d);
  }
  std::vector<DeviceRef> out;
  for (const auto& [uuid, d] : s) out.push_back(d);
  return out;
}

int ConsensusResult::exit_code() const {
  if (!suspects().empty()) return EXIT_FAIL;
  for (const KeyConsensus& k : keys)
    if (k.verdict != ConsensusVerdict::accepted) return EXIT_INCONCLUSIVE;
  return keys.empty() ? EXIT_INCONCLUSIVE : EXIT_PASS;  // nothing merged is never a pass
}

std::vector<AcceptedRecording> ConsensusResult::accepted_recordings() const {
  std::vector<AcceptedRecording> out;
  for (const KeyConsensus& k : keys)
    if (k.verdict == ConsensusVerdict::accepted) out.push_back(k.accepted);
  return out;
}

std::string render_consensus(const ConsensusResult& r) {
  std::string s;
  size_t accepted = 0, provisional = 0, ties = 0, none = 0;
  for (const KeyConsensus& k : r.keys) {
    if (k.verdict == ConsensusVerdict::accepted) {
      ++accepted;
      provisional += k.accepted.provisional;
      s += fmt::format("{}: accepted, {} of {} devices agree{}\n", k.key.str(), k.accepted.voters.size(), k.devices,
                       k.accepted.provisional ? " (provisional: a single device)" : "");
      s += fmt::format("  voters:     {}\n", refs_text(k.accepted.voters));
      if (!k.accepted.dissenters.empty()) s += fmt::format("  dissenters: {}\n", refs_text(k.accepted.dissenters));
    } else {
      ++(k.verdict == ConsensusVerdict::tie ? ties : none);
      s += fmt::format("{}: {}, no golden (largest group {} of {} devices)\n", k.key.str(),
                       consensus_verdict_name(k.verdict), k.groups.empty() ? 0 : k.groups.front().size(), k.devices);
      for (size_t i = 0; i < k.groups.size(); ++i)
        s += fmt::format("  result {}:   {}\n", i + 1, refs_text(k.groups[i]));
    }
    if (!k.unstable.empty())
      s += fmt::format("  unstable:   {} (recorded this key twice with different digests; not counted)\n",
                       refs_text(k.unstable));
  }
  const auto suspects = r.suspects();
  s += fmt::format("summary: {} keys: {} accepted ({} provisional), {} tie, {} no majority; suspect devices: {}\n",
                   r.keys.size(), accepted, provisional, ties, none, suspects.empty() ? "none" : refs_text(suspects));
  const int code = r.exit_code();
  s += fmt::format("exit: {}\n", code == EXIT_PASS ? "pass" : code == EXIT_FAIL ? "fail" : "error");
  return s;
}

}  // namespace sdc
