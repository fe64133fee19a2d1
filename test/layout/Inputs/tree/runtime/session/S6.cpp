#include "runtime/hal/Fine.h"
