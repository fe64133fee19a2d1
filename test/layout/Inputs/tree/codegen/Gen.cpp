#include "runtime/session/Session.h"
#include "runtime/format/Fmt.h"
