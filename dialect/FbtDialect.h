//===- FbtDialect.h - the fbt dialect ---------------------------*- C++ -*-===//
#ifndef FBT_DIALECT_FBTDIALECT_H
#define FBT_DIALECT_FBTDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Dialect.h"

#include "dialect/FbtOpsDialect.h.inc"

#endif // FBT_DIALECT_FBTDIALECT_H
