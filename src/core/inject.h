// Fault injection: flips chosen bits of a chosen output or input element of a chosen case, on a chosen
// unit, at a chosen iteration. It exists to prove detection end to end; every output of a run that
// injects says so.
//
// Grammar (--inject, repeatable):  key=value[,key=value...]
//   case=ID            the case (required)
//   target=output|input                         (default output)
//   tensor=NAME        input tensor, e.g. a, b, q, k, v, x, w, logits (required with target=input)
//   element=N          logical element index, row-major in the output or input tensor (required)
//   bit=N | mask=0xHEX the bit (0..31) or the xor mask to apply (exactly one of them)
//   unit=N             the logical CPU that computes with the fault (default: whichever computes it);
//                      on a GPU, the SM: every tile that SM computes gets the flip at the element's offset
//   device=N           on a GPU (--backend cuda), the device (default: the first selected)
//   iteration=N        the iteration at which it happens (default 0)
// Inside a training-step replay (train_step_f32 cases, CPUs): the flip hits one submodule's output as the
// step computes it, so everything after it computes on the corrupted value (as on a faulty unit):
//   submodule=NAME     <module>.<pass> of the replay, e.g. layer0.mlp.down.backward (docs/families.md)
//   step=S             the training step (default 0); microbatch=M (default 0); output=K (default 0)
//   element=N, bit=N   the element of that output tensor and the bit to flip
#pragma once

#include <cstdint>
#include <string>

#include "device_info.h"
#include "patterns.h"

namespace sdc {

struct Injection {
  std::string spec;  // as given on the command line
  std::string case_id;
  bool input = false;
  std::string tensor;
  size_t tensor_index = 0;
  uint64_t element = 0;
  uint32_t mask = 0;
  int unit = -1;    // logical CPU (or SM on a GPU), -1: any
  int device = -1;  // GPU index, -1: not given
  int iteration = 0;
  std::string submodule;  // a replay fault when not empty
  int64_t step = 0;
  int microbatch = 0;
  bool microbatch_given = false;
  int output = 0;
  bool hang = false;   // hidden drill for the watchdog (action=hang): the unit never finishes
  bool crash = false;  // hidden drill for crash supervision (action=crash, CPUs): the unit takes a SIGSEGV
  // What happened.
  bool fired = false;
  int fired_unit = -1;
  uint64_t fired_tile = 0;  // output injections: the tile that was corrupted
};

// Syntax only; returns "" or what is wrong.
std::string parse_injection(const std::string& text, Injection& inj);
// Against the battery and the selected CPUs, or with gpus the selected GPUs (then unit is an SM and
// device defaults to the first GPU); returns "" or what is wrong.
std::string check_injection(Injection& inj, const Battery& battery, const std::vector<int>& cpus,
                            const std::vector<DeviceInfo>* gpus = nullptr);

}  // namespace sdc
