// The device side of a prepared case. A family's .cu file implements it beside the CPU reference; the
// GPU executor owns buffers, streams, digests, comparison, injection and the watchdog, so a family owns
// only its input generation and its kernels. Plain C++ (no device code, no CUDA header): the GPU executor includes
// it in every build, and a family's .cu implements it for each target (the GPU, the emulated device).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "src/spec/fault.h"
#include "src/spec/hd.h"

// A stream and an event of whichever runtime runs the case, as the CUDA runtime spells them (the same
// declarations as its driver_types.h): the CUDA runtime's own, or the emulated device's behind the same
// opaque pointers.
typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;

namespace sdc {
class Problem;     // src/core/family.h
struct Injection;  // src/core/inject.h
}  // namespace sdc

namespace sdc::cuda {

class TpExchange;  // tp_exchange.h

// A GPU's place in a tensor-parallel group for the next compute() (DeviceProblem::set_tp_link): the group's
// exchange, this GPU's rank, the number of the next message (counted over the case's computations, the same on
// every rank) and the deadline of the exchange's waits (the iteration's watchdog). `staged` keeps the host copies
// a computation sent to the device until it is done.
struct TpLink {
  TpExchange* exchange = nullptr;
  int rank = 0;
  uint64_t seq = 0;
  std::chrono::steady_clock::time_point deadline;
  std::vector<std::vector<float>> staged;
};

// Where a case's output lies in the GPU executor's output buffer. By default tile t's Problem::tile_elements()
// elements are contiguous at out + t * tile_elements, in the CPU path's offsets. A library that writes a
// plain matrix (cuBLASLt) uses the matrix layout: tile t is the block of tile_rows x tile_cols elements
// at block row t / tiles_per_row, block column t % tiles_per_row of a row-major matrix whose rows are
// `ld` elements apart; tile offset o is the block's element (o / tile_cols, o % tile_cols). Either way
// the buffer holds tile_count * tile_elements floats.
struct OutputLayout {
  uint64_t tiles_per_row = 0;  // 0: contiguous tiles
  uint32_t tile_rows = 0, tile_cols = 0;
  uint64_t ld = 0;
  SDC_HD bool matrix() const { return tiles_per_row != 0; }
  // Element `offset` of tile `tile`, as an index into the output buffer.
  SDC_HD uint64_t index(uint64_t tile, uint32_t offset, uint32_t tile_elements) const {
    if (!matrix()) return tile * tile_elements + offset;
    return ((tile / tiles_per_row) * tile_rows + offset / tile_cols) * ld + (tile % tiles_per_row) * tile_cols +
           offset % tile_cols;
  }
};

// What computed a case's output: the library (with its version) and the algorithm. A recorded golden is
// valid only for the same engine (RecordingKey), and the report names it.
struct Engine {
  std::string library;    // "sdcscreen-kernels 1" for the project's own kernels, "cublasLt 13.0.2"
  std::string algorithm;  // "mma.sync m16n8k16 64x64 tile, k in stages of 32", or cuBLASLt's pinned config
};

// The library name of the project's own kernels. Its number changes whenever one of them changes the
// order or kind of its arithmetic on a recorded family: recordings made with another number no longer apply.
inline constexpr const char* OWN_KERNELS = "sdcscreen-kernels 1";

class DeviceProblem {
 public:
  virtual ~DeviceProblem() = default;
  // Bytes of input tensor `tensor` on the device (Problem::inputs() order; fp32 tensors: 4 per element).
  virtual uint64_t input_bytes(size_t tensor) const = 0;
  // Why a GPU of this compute capability cannot run the case at all (it lacks the instructions, e.g.
  // fp8 tensor cores before 8.9), or "" when it can. Such a test is skipped as not applicable: that is
  // not a failure to run, so it does not make the run inconclusive.
  virtual std::string unsupported(int /*cc_major*/, int /*cc_minor*/) const { return ""; }
  // The output layout compute() writes (see OutputLayout).
  virtual OutputLayout output_layout() const { return {}; }
  // False when compute() cannot say which SM computed a tile (a library kernel): tile_sm is left
  // poisoned, miscompares are localized to the tile only, and SM-targeted drills are refused.
  virtual bool records_sm() const { return true; }
  // The thread of the block that stored output word `offset` of tile `tile` last (the kernel's documented
  // thread-to-element map, written beside the kernel's store): its warp in the block and its lane; false for a
  // kernel that has none (why_no_thread_map says why). A miscompare then names the warp and lane as well as the
  // SM (corruption in one lane's datapath shows as one lane's elements). The emulated device's tests check
  // every map against the stores the kernels make (tests/unit/backends/test_thread_maps.cpp).
  virtual bool thread_of(uint64_t /*tile*/, uint32_t /*offset*/, int& /*warp*/, int& /*lane*/) const { return false; }
  // Why thread_of names no thread (a library kernel, outputs that no one thread of a block owns); "" for a
  // kernel that documents its map. Every device problem without a map gives a reason (the tests list them).
  virtual std::string why_no_thread_map() const { return ""; }
  // The library and algorithm compute() uses; fixed when the object is prepared (on the current device).
  virtual Engine engine() const = 0;
  // Scratch memory the compute pass needs beyond inputs and output (0: none).
  virtual uint64_t scratch_bytes() const { return 0; }
  // Called before scratch_bytes under --max-memory with what the cap leaves for scratch: a problem whose scratch
  // is sized from the device's free memory (the memory test's region) fits it under the cap instead of failing.
  virtual void cap_scratch(uint64_t /*bytes*/) {}
  // For a problem with an in-process reference (Problem::replay, the training-step replay): the host's
  // problem, whose reference the GPU executor has computed and checked against the golden. Called once, after
  // prepare and before scratch_bytes (the reference may take device memory).
  virtual void use_reference(const Problem& /*host*/) {}
  // A computation of many thousands of launches (the training-step replay) calls `pace` every few hundred:
  // a GPU's launch queue holds about a thousand, and a launch into a full queue behind a hung kernel would
  // block the host thread past the watchdog. pace waits (until the watchdog's deadline) for the work queued
  // two calls before; false: the deadline passed, stop queueing (the GPU executor then reports the watchdog).
  // Null: no pacing (the GPU executor sets it around each compute()).
  using Pace = bool (*)(void* context);
  virtual void set_pacer(Pace /*pace*/, void* /*context*/) {}
  // A fault inside the computation (--inject submodule=: the training-step replay; target=memory: the memory
  // test's region) that the next compute() applies, or null for none; false when the problem takes no such
  // fault. replay_fault_fired: whether the last compute() applied it; replay_fault_tile: the tile it hit.
  virtual bool set_replay_fault(const Injection* /*fault*/) { return false; }
  // Tensor parallelism across GPUs (the training-step replay's level-12 tp cases): the ranks of the case's split
  // (1: none), and the group link the next compute() exchanges through (null: this GPU computes every rank).
  virtual int tp_ranks() const { return 1; }
  virtual void set_tp_link(TpLink* /*link*/) {}
  virtual bool replay_fault_fired() const { return false; }
  virtual uint64_t replay_fault_tile() const { return 0; }
  // Operations of one compute() for the watchdog's deadline (at 1e12 per second, deadline_after) and the test's
  // GFLOP/s, when they are not the host problem's tile_flops x tiles (the memory test sweeps a region larger than
  // its CPU slices: its bytes moved, so its GFLOP/s are GB/s); 0: the host problem's.
  virtual double work_ops() const { return 0; }
  // A line for the test's notes once the buffers are allocated (`scratch`: scratch_bytes() of device memory),
  // or "" (the memory test: its region's size and device address).
  virtual std::string note(const void* /*scratch*/) const { return ""; }
  // Generates input tensor `tensor` on the device: the same bits as Problem::generate_input on the host.
  virtual void generate(size_t tensor, void* dst, cudaStream_t stream) const = 0;
  // Enqueues the computation of every tile. out holds tile t's Problem::tile_elements() elements at
  // out + t * tile_elements, in the CPU path's offsets; tile_sm[t] receives the %smid of the SM that
  // computed tile t. Checks every launch (SDC_CUDA_CHECK_LAUNCH); does not synchronize.
  virtual void compute(const void* const* in, float* out, uint32_t* tile_sm, void* scratch,
                       cudaStream_t stream) const = 0;
};

// A fault applied by the digest pass (kernel parameter; a mask of 0 means none and costs one compare per
// tile): the words `word` hits from offset `offset` of tile `tile`, or of every tile that SM `sm`
// computed, take the fault (src/spec/fault.h) before they are digested, and the faulty value is stored
// back (so the report's actual value shows it).
struct DeviceFault {
  WordFault word;
  uint32_t offset = 0;
  uint64_t tile = ~0ull;
  int32_t sm = -1;
};

}  // namespace sdc::cuda
