// The error of a device call, whichever runtime made it (the CUDA runtime or the emulated device): the
// failed call as written, the runtime's name and message for the error, and the source file and line. The
// GPU executor turns it into an `error` result for that device's test; the other devices go on. Plain C++:
// the GPU executor includes it without any CUDA header.
#pragma once

#include <stdexcept>
#include <string>

namespace sdc::cuda {

class CudaError : public std::runtime_error {
 public:
  // What the error means for the device: nothing more (other), its memory ran out, its context is
  // unusable (a kernel fault, a lost device): nothing more can run on that device in this process; or a
  // kernel did not end by the watchdog's deadline (hung): it may still run, and nothing of the device may
  // be freed or waited for in this process.
  enum class Kind { other, out_of_memory, context_lost, hung };
  CudaError(const std::string& what, Kind kind) : std::runtime_error(what), kind_(kind) {}
  Kind kind() const { return kind_; }
  bool out_of_memory() const { return kind_ == Kind::out_of_memory; }
  bool sticky() const { return kind_ == Kind::context_lost; }

 private:
  Kind kind_;
};

// "src/backends/cuda/x.cu" from whatever absolute path the compiler saw: reports name no build machine.
const char* source_name(const char* file);

}  // namespace sdc::cuda
