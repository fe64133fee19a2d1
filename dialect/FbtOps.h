//===- FbtOps.h - fbt dialect operations ------------------------*- C++ -*-===//
#ifndef FBT_DIALECT_FBTOPS_H
#define FBT_DIALECT_FBTOPS_H

#include "dialect/FbtDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialect/FbtEnums.h.inc"
#include "dialect/FbtInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dialect/FbtOps.h.inc"

#endif // FBT_DIALECT_FBTOPS_H
