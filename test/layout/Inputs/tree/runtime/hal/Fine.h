// Fine: down.
#include "runtime/format/Fmt.h"
#include "runtime/base/Fine.h"
