// A base header reaching up.
#include "runtime/base/Fine.h"
#include "runtime/session/Session.h"
