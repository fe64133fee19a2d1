#include "runtime/format/Writer.h"
#include "runtime/format/Reader.h"
