// No LLVM.
#include "llvm/ADT/StringRef.h"
