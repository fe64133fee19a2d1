// RUN: fbt-opt %s --fbt-gemms-to-library | FileCheck %s

// Matmul-like ops become library GEMMs over row-major views: x [R, K] = [8, 16],
// w [N, K] = [32, 16], dy [R, N] = [8, 32]. Types stay as they are.
// CHECK-LABEL: func.func @gemms
// CHECK: %[[Y:.*]] = fbt.gemm %arg0, %arg1 {k = 16 : i64, m = 8 : i64, n = 32 : i64, transpose_rhs} : (tensor<2x4x16xf32>, tensor<32x16xf32>) -> tensor<2x4x32xf32>
// CHECK: %[[DX:.*]] = fbt.gemm %arg2, %arg1 {k = 32 : i64, m = 8 : i64, n = 16 : i64} : (tensor<2x4x32xf32>, tensor<32x16xf32>) -> tensor<2x4x16xf32>
// CHECK: %[[DW:.*]] = fbt.gemm %arg2, %arg0 {k = 8 : i64, m = 32 : i64, n = 16 : i64, transpose_lhs} : (tensor<2x4x32xf32>, tensor<2x4x16xf32>) -> tensor<32x16xf32>
// lm_head against the tied embedding table [V, K] = [256, 16].
// CHECK: %[[L:.*]] = fbt.gemm %arg0, %arg3 {k = 16 : i64, m = 8 : i64, n = 256 : i64, transpose_rhs} : (tensor<2x4x16xf32>, tensor<256x16xf32>) -> tensor<2x4x256xf32>
// CHECK-NOT: fbt.matmul
// CHECK: return %[[Y]], %[[DX]], %[[DW]], %[[L]]
func.func @gemms(%x: tensor<2x4x16xf32>, %w: tensor<32x16xf32>, %dy: tensor<2x4x32xf32>,
                 %table: tensor<256x16xf32>)
    -> (tensor<2x4x32xf32>, tensor<2x4x16xf32>, tensor<32x16xf32>, tensor<2x4x256xf32>) {
  %y = fbt.matmul %x, %w : (tensor<2x4x16xf32>, tensor<32x16xf32>) -> tensor<2x4x32xf32>
  %dx = fbt.matmul_grad_input %dy, %w : (tensor<2x4x32xf32>, tensor<32x16xf32>) -> tensor<2x4x16xf32>
  %dw = fbt.matmul_grad_weight %dy, %x : (tensor<2x4x32xf32>, tensor<2x4x16xf32>) -> tensor<32x16xf32>
  %l = fbt.lm_head %x, %table : (tensor<2x4x16xf32>, tensor<256x16xf32>) -> tensor<2x4x256xf32>
  return %y, %dx, %dw, %l : tensor<2x4x32xf32>, tensor<2x4x16xf32>, tensor<32x16xf32>, tensor<2x4x256xf32>
}
