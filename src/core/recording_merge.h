// Consensus over recordings (`sdcscreen consensus`): which recorded digests become a golden.
//
// Rules, in order:
// - entries are grouped by their full RecordingKey only: architectures, library versions, algorithms and
//   case fingerprints are never mixed;
// - devices are counted by uuid: one device recorded twice counts once; a device whose recordings of a
//   key differ is unstable (suspect hardware): reported, and not counted;
// - the stable devices are grouped by identical tile digests; a group that is a strict majority of them
//   gives the golden, and every other stable device is a dissenter (suspect hardware);
// - a tie between the largest groups, or a largest group that is not a majority, gives no golden;
// - a golden from a single device is provisional.
// Keys whose recordings have different tile counts are not comparable at all: that is bad data
// (PatternError), not a vote.
#pragma once

#include <string>
#include <vector>

#include "src/core/recording.h"

namespace sdc {

enum class ConsensusVerdict { accepted, tie, no_majority };
const char* consensus_verdict_name(ConsensusVerdict v);

struct KeyConsensus {
  RecordingKey key;
  ConsensusVerdict verdict = ConsensusVerdict::no_majority;
  size_t devices = 0;                          // stable devices that recorded the key
  std::vector<std::vector<DeviceRef>> groups;  // stable devices by identical digests, largest group first
  std::vector<DeviceRef> unstable;
  AcceptedRecording accepted;  // the golden, its voters and dissenters when verdict is accepted
};

struct ConsensusResult {
  std::vector<KeyConsensus> keys;  // in key order
  // Devices (by uuid) that dissented from a majority or were unstable on some key.
  std::vector<DeviceRef> suspects() const;
  // 0 every key accepted, 1 a suspect device (takes precedence), 2 a key without a golden.
  int exit_code() const;
  std::vector<AcceptedRecording> accepted_recordings() const;
};

ConsensusResult merge_recordings(const std::vector<Recording>& recordings);

// For people: per key the verdict, voters, dissenters and unstable devices; a summary; "exit: WORD".
std::string render_consensus(const ConsensusResult& r);

}  // namespace sdc
