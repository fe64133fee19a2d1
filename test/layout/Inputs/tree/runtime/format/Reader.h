#include "runtime/format/Writer.h"
