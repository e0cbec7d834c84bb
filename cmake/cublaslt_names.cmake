# The names of cublasLt.h's tile, stages, inner-shape and cluster-shape enumerators, for the algorithm
# descriptions of src/backends/cuda/cublaslt.cpp (hundreds of tiles: written by hand they would drift
# from the header). Each entry uses the enumerator itself, so the compiler checks every value; the file
# is rewritten only when its content changes.
function(sdc_cublaslt_names header out)
  file(READ "${header}" text)
  set(content "// Generated from cublasLt.h by cmake/cublaslt_names.cmake; do not edit.\n")
  foreach(spec "TILE_NAMES|CUBLASLT_MATMUL_TILE_|[0-9]+x[0-9]+"
               "STAGES_NAMES|CUBLASLT_MATMUL_STAGES_|[0-9]+x[0-9A-Z]+"
               "INNER_SHAPE_NAMES|CUBLASLT_MATMUL_INNER_SHAPE_|MMA[0-9]+"
               "CLUSTER_NAMES|CUBLASLT_CLUSTER_SHAPE_|[0-9]+x[0-9]+x[0-9]+")
    string(REPLACE "|" ";" parts "${spec}")
    list(GET parts 0 table)
    list(GET parts 1 prefix)
    list(GET parts 2 pattern)
    string(REGEX MATCHALL "${prefix}${pattern} =" found "${text}")
    if(NOT found)
      message(FATAL_ERROR "${header}: no ${prefix}* enumerators")
    endif()
    string(APPEND content "constexpr EnumName ${table}[] = {\n")
    foreach(m IN LISTS found)
      string(REPLACE " =" "" enumerator "${m}")
      string(REPLACE "${prefix}" "" name "${enumerator}")
      string(APPEND content "    {${enumerator}, \"${name}\"},\n")
    endforeach()
    string(APPEND content "};\n")
  endforeach()
  file(CONFIGURE OUTPUT "${out}" CONTENT "${content}" @ONLY)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${header}")
endfunction()
