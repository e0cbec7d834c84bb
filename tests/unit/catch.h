// Catch2 v2 and v3 behind one include.
#pragma once
#if defined(SDC_CATCH3)
#include <catch2/catch_all.hpp>
#else
#include <catch2/catch.hpp>
#endif
