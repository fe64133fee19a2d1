// Ptx.
#include "codegen/cpu/Gen.h"
