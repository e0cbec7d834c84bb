#define CATCH_CONFIG_MAIN
#include "tests/unit/catch.h"
