#include "codegen/cpu/Gen.h"
