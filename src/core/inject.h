// Fault injection: flips chosen bits of a chosen output or input element of a chosen case, on a chosen
// unit, at a chosen iteration. It exists to prove detection end to end; every output of a run that
// injects says so.
//
// Grammar (--inject, repeatable):  key=value[,key=value...]
//   case=ID            the case (required)
//   target=output|input|memory                  (default output; memory: the memory test's region, below)
//   tensor=NAME        input tensor, e.g. a, b, q, k, v, x, w, logits (required with target=input)
//   element=N          logical element index, row-major in the output or input tensor (required)
//   bit=N | mask=0xHEX the bit (0..31) or the mask of the bits (exactly one of them; a mask of several bits
//                      is a multi-bit fault)
//   stuck=0|1          the mask's bits are stuck at 0 / at 1 (read as that value whatever was computed),
//                      instead of flipped; a word whose bits already hold it is unchanged
//   count=N            the fault hits N words (1..1024, default 1), `stride` apart from the element's: on
//   stride=S           an output, tile offsets (a tile's words in their storage order, the order a kernel
//                      writes them: count=32 from an offset that is a multiple of 32 is a warp-aligned
//                      cluster), which must stay inside the element's tile; on an input, elements of the
//                      tensor (default stride 1)
//   unit=N             the logical CPU that computes with the fault (default: whichever computes it);
//                      on a GPU, the SM: every tile that SM computes gets the flip at the element's offset
//   device=N           on a GPU (--backend cuda), the device (default: the first selected)
//   iteration=N        the iteration at which it happens (default 0)
//   persist=P          how the fault repeats, for the retest of a failure (--retest-on-failure; CPUs, and on a
//                      GPU an output drill on an SM):
//                        once     at iteration N only, never again (default): a retest does not reproduce it
//                        always   every computation of the case by its unit from iteration N on, every
//                                 retest too, whatever the inputs: a stuck fault (needs unit=)
//                        input    as always, but only on the case's own inputs: a retest with fresh seeds
//                                 passes (an input-dependent fault; needs unit=)
//                        1/K      the first computation from iteration N on and every K-th after it, retests
//                                 included (K 2..1000): an intermittent fault (needs unit=)
// Inside a training-step replay (the cases of a family with Family::replay, CPUs and GPUs; on a GPU it hits
// replica 0, and takes device=, not unit=): the flip hits one submodule's output as the
// step computes it, so everything after it computes on the corrupted value (as on a faulty unit):
//   submodule=NAME     <module>.<pass> of the replay, e.g. layer0.mlp.down.backward (docs/families.md)
//   step=S             the training step (default 0); microbatch=M (default 0); output=K (default 0)
//   element=N, bit=N   the element of that output tensor and the bit to flip (or mask=, count=, stride=)
//   rate=K             a permanently faulty datapath instead of one flip: the 1st, (K+1)th, (2K+1)th ...
//                      execution of that output in each run of the replay (its L1 run, its L2 run, level 3's
//                      steps, each counted from zero; micro-batches and steps in execution order; K=1 every
//                      one); not with step= or microbatch=
// In the memory test's region (target=memory, memtest_u32 cases, CPUs and GPUs; on a GPU device=, not unit=): the
// fault hits words of the region between the sweep that writes what a pass reads and that pass's read, as a
// faulty memory cell would:
//   element=N          the word's index in the region (its byte offset / 4); with count= and stride=, words
//   pass=NAME          the pass that reads it (default the first, walking_ones; kernels/memtest_u32/memtest_u32.h)
//   bit=N | mask=0xHEX, stuck=0|1   as above
#pragma once

#include <cstdint>
#include <string>

#include "src/core/device_info.h"
#include "src/core/patterns.h"
#include "src/spec/fault.h"

namespace sdc {

constexpr uint64_t MAX_REPLAY_RATE = 1000000;  // rate=K's bound (a replay checks K against its own executions)

struct Injection {
  std::string spec;  // as given on the command line
  std::string case_id;
  bool input = false;
  std::string tensor;
  size_t tensor_index = 0;
  uint64_t element = 0;
  uint32_t mask = 0;
  uint32_t kind = FAULT_FLIP;  // stuck=: FAULT_STUCK_AT_0 / _1
  uint32_t count = 1, stride = 1;
  WordFault word() const { return WordFault{mask, kind, count, stride}; }
  int unit = -1;    // logical CPU (or SM on a GPU), -1: any
  int device = -1;  // GPU index, -1: not given
  int iteration = 0;
  std::string submodule;  // a replay fault when not empty
  bool memory = false;    // target=memory: in the memory test's region
  std::string pass;       // pass= as given (target=memory)
  int memory_pass = 0;    // its index (Problem::check_memory_fault)
  int64_t step = 0;
  int microbatch = 0;
  bool microbatch_given = false;
  int output = 0;
  int64_t rate = 0;    // rate=: 0 once (at step, microbatch); K every K-th execution of the output
  bool hang = false;   // hidden drill for the watchdog (action=hang): the unit never finishes
  bool crash = false;  // hidden drill for crash supervision (action=crash, CPUs): the unit takes a SIGSEGV
  // persist=: 0 once; 1 always; K >= 2 every K-th computation. input_only: not on fresh seeds (persist=input).
  int persist_every = 0;
  bool input_only = false;
  int computations = 0;  // the computations of its case by its unit so far that it could fire in (persist=)
  // What happened.
  bool fired = false;
  int fired_unit = -1;
  uint64_t fired_tile = 0;  // output injections: the tile that was corrupted
};

// Whether the fault fires in the next computation of its case by its unit: iteration `iteration` of the
// run (retest < 0), or a retest (iteration ignored) with the case's own inputs (fresh_inputs false) or a
// fresh seed's. Counts the computation when it is one the fault can fire in.
bool fires_now(Injection& inj, int iteration, bool retest, bool fresh_inputs);

// persist= as given: once, always, input or 1/K.
std::string persist_name(const Injection& inj);
// The fault's kind as reports name it: flip, stuck-at-0 or stuck-at-1.
const char* fault_kind_name(const Injection& inj);

// Syntax only; returns "" or what is wrong.
std::string parse_injection(const std::string& text, Injection& inj);
// Against the battery and the selected CPUs, or with gpus the selected GPUs (then unit is an SM and
// device defaults to the first GPU); returns "" or what is wrong.
std::string check_injection(Injection& inj, const Battery& battery, const std::vector<int>& cpus,
                            const std::vector<DeviceInfo>* gpus = nullptr);

}  // namespace sdc
