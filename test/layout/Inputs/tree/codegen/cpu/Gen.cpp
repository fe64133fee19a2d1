#include "runtime/session/Session.h"
#include "runtime/format/Fmt.h"
#include "codegen/kernels/K.h"
#include "codegen/nvptx/Ptx.h"
