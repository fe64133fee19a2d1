// Sideways.
#include "runtime/hal/cuda/Cuda.h"
