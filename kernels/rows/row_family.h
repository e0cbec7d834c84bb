// A row-wise family (reduce_sum, softmax, rmsnorm, cross_entropy) as its specification header describes it
// once (ROW_FAMILY), for its CPU side (row_problem.h: the registration, the shape check, the inputs and the
// output geometry) and its device side (row_device.cuh: the inputs and the launch). An input x of rows x
// cols, row-major, and optionally a further tensor w of cols elements (rmsnorm's); a tile is tile_rows
// consecutive rows, one device block; per tile its rows' outputs, row-major, then tile_extra outputs (a
// per-tile reduction) stored after all row outputs.
#pragma once

#include <cstdint>

#include "src/spec/generator.h"

namespace sdc {

// What a row family's case holds and its outputs are called, in the order a specification header writes
// them: {rows_key, cols_key, min_cols, {x's name, w's name or ""}, elementwise, tile_extra, out_name,
// extra_name}.
struct RowLayout {
  const char* rows_key;  // the case's shape keys: rows (a multiple of tile_rows) and cols
  const char* cols_key;
  int64_t min_cols;
  const char* input_names[2];  // as --inject tensor= names them; "" for no w
  bool elementwise;            // an output per element of x (softmax, rmsnorm), else one per row
  int tile_extra;              // outputs per tile after all row outputs
  const char* out_name;        // out_name[row] or out_name[row][col] in reports
  const char* extra_name;      // extra_name[i], i counting the tile outputs from the first tile's
  constexpr uint32_t tensors() const { return input_names[1][0] ? 2 : 1; }
};

// {id, tile_rows, max_cols, window, layout, description}.
struct RowFamily {
  const char* id;
  int tile_rows;
  int64_t max_cols;  // the longest row
  // The exponent window of input tensor `tensor` in distribution d (the specification's input_window).
  ExponentWindow (*window)(uint32_t tensor, Distribution d);
  RowLayout layout;
  const char* description;  // the family's one line
};

}  // namespace sdc
