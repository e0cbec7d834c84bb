// The host's identity and telemetry (src/host) in each output: JSON objects, the text report's identity
// block and its changes, Prometheus gauges.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "src/host/host_state.h"

namespace sdc {

nlohmann::json host_identity_json(const host::HostIdentity& id);
// null when not taken.
nlohmann::json host_snapshot_json(const host::TelemetrySnapshot& s);
nlohmann::json host_telemetry_json(const host::HostTelemetry& t);
// The identity in one block, and what was not available.
std::string host_identity_text(const host::HostIdentity& id);
// Only what changed during the run or crossed a limit, and what could not be read; the drill first.
std::string host_telemetry_text(const host::HostTelemetry& t);
std::string host_prometheus(const host::HostTelemetry& t);
// "mc0 uncorrected (EDAC)", "cpu3 machine check": the units an uncorrected error names, for one line.
std::string host_fatal_units(const host::HostTelemetry& t);

}  // namespace sdc
