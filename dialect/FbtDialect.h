//===- FbtDialect.h - the fbt dialect ---------------------------*- C++ -*-===//
#ifndef FBT_DIALECT_FBTDIALECT_H
#define FBT_DIALECT_FBTDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dialect/FbtOpsDialect.h.inc"

#endif // FBT_DIALECT_FBTDIALECT_H
