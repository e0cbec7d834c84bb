// Each GPU's NVML identity and telemetry (src/host/nvml.h) in each output: the JSON devices[].telemetry, the
// text report's identity block and changes, Prometheus gauges labelled by the GPU's UUID.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "src/host/gpu_telemetry.h"

namespace sdc {

// devices[].telemetry for the GPU with that device index: null when NVML was not looked for (a CPU run).
nlohmann::json gpu_telemetry_json(const host::NvmlTelemetry& t, int device);
// The report's "nvml" object: attempted, available, why, library.
nlohmann::json nvml_json(const host::NvmlTelemetry& t);
// One identity line per GPU, then only what changed or crossed a limit (events, a hot peak), and what could
// not be read.
std::string gpu_telemetry_text(const host::NvmlTelemetry& t, double max_temperature_c);
std::string gpu_prometheus(const host::NvmlTelemetry& t);

}  // namespace sdc
