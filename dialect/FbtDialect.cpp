//===- FbtDialect.cpp - the fbt dialect ---------------------------------===//
#include "dialect/FbtDialect.h"
#include "dialect/FbtOps.h"

using namespace mlir;
using namespace mlir::fbt;

#include "dialect/FbtOpsDialect.cpp.inc"

void FbtDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialect/FbtOps.cpp.inc"
      >();
}
