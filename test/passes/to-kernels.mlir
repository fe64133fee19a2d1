// RUN: fbt-opt %s -split-input-file -verify-diagnostics --fbt-gemms-to-library --fbt-to-kernels | FileCheck %s

// GEMMs become library calls with their row-major shapes; other ops call
// generated kernels, one per distinct (op, shapes, attributes).

// CHECK-LABEL: func.func @step
// CHECK: %[[Y:.*]] = fbt.gemm %arg0, %arg1 {k = 16 : i64, m = 8 : i64, n = 32 : i64, transpose_rhs} : (tensor<2x4x16xf32>, tensor<32x16xf32>) -> tensor<2x4x32xf32>
// CHECK: %[[DX:.*]] = fbt.gemm %[[Y]], %arg1 {k = 32 : i64, m = 8 : i64, n = 16 : i64} : (tensor<2x4x32xf32>, tensor<32x16xf32>) -> tensor<2x4x16xf32>
// CHECK: %[[DW:.*]] = fbt.gemm %[[Y]], %arg0 {k = 8 : i64, m = 32 : i64, n = 16 : i64, transpose_lhs} : (tensor<2x4x32xf32>, tensor<2x4x16xf32>) -> tensor<32x16xf32>
// CHECK: %[[N1:.*]] = fbt.call_kernel @[[NORM:k[0-9]+_rmsnorm]](%[[DX]], %arg2)
// CHECK: %[[N2:.*]] = fbt.call_kernel @[[NORM]](%[[N1]], %arg2)
// CHECK: fbt.call_kernel @{{k[0-9]+_jitter}}(%[[N2]], %arg3, %{{.*}}) : (tensor<2x4x16xf32>, i64, i64) -> tensor<2x4x16xf32>
// CHECK: func.func @[[NORM]](%{{.*}}: memref<128xf32> {llvm.noalias}, %{{.*}}: memref<16xf32> {llvm.noalias}, %{{.*}}: memref<128xf32> {llvm.noalias}) attributes {fbt.kernel}
// CHECK: scf.parallel
// CHECK-NOT: func.func @{{k[0-9]+_rmsnorm}}
func.func @step(%x: tensor<2x4x16xf32>, %w: tensor<32x16xf32>, %s: tensor<16xf32>, %seed: i64)
    -> (tensor<2x4x16xf32>, tensor<32x16xf32>) attributes {fbt.step = "train"} {
  %y = fbt.matmul %x, %w : (tensor<2x4x16xf32>, tensor<32x16xf32>) -> tensor<2x4x32xf32>
  %dx = fbt.matmul_grad_input %y, %w : (tensor<2x4x32xf32>, tensor<32x16xf32>) -> tensor<2x4x16xf32>
  %dw = fbt.matmul_grad_weight %y, %x : (tensor<2x4x32xf32>, tensor<2x4x16xf32>) -> tensor<32x16xf32>
  %n1 = fbt.rmsnorm %dx, %s {epsilon = 1.0e-5 : f64} : (tensor<2x4x16xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
  %n2 = fbt.rmsnorm %n1, %s {epsilon = 1.0e-5 : f64} : (tensor<2x4x16xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
  %j = fbt.jitter %n2, %seed {epsilon = 0.02 : f64, stream = 2 : i64} : (tensor<2x4x16xf32>, i64) -> tensor<2x4x16xf32>
  return %j, %dw : tensor<2x4x16xf32>, tensor<32x16xf32>
}

// -----

func.func @composite(%e: tensor<2x4x8xf32>, %wu: tensor<8x8xf32>) -> tensor<2x4x8xf32> attributes {fbt.step = "decode"} {
  // expected-error @+1 {{'fbt.feedback' op has no kernel and no library call (fbt-to-kernels)}}
  %f = fbt.feedback add %e, %e, %wu : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  return %f : tensor<2x4x8xf32>
}

// -----

// Ops that write a result over an operand (InPlaceOpInterface) say so on
// their kernel call: AdamW's parameter and moments, a KV cache's new rows.
// CHECK-LABEL: func.func @in_place
// CHECK: fbt.call_kernel @{{k[0-9]+_adamw}}(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6) {tied = array<i64: 0, 2, 3>}
// CHECK: fbt.call_kernel @{{k[0-9]+_kv_write}}(%arg7, %arg8, %arg9) {tied = array<i64: 0>}
func.func @in_place(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>,
                    %lr: tensor<f32>, %step: tensor<f32>, %gn: tensor<f32>,
                    %cache: tensor<1x4x8xf32>, %new: tensor<1x1x8xf32>, %pos: tensor<1x1xi32>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<1x4x8xf32>) attributes {fbt.step = "train"} {
  %np, %nm, %nv = fbt.adamw %p, %g, %m, %v, %lr, %step, %gn {beta1 = 0.9 : f64, beta2 = 0.99 : f64, epsilon = 1.0e-8 : f64, max_grad_norm = 1.0 : f64, weight_decay = 0.0 : f64} : tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<f32>
  %c = fbt.kv_write %cache, %new, %pos : (tensor<1x4x8xf32>, tensor<1x1x8xf32>, tensor<1x1xi32>) -> tensor<1x4x8xf32>
  return %np, %nm, %nv, %c : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<1x4x8xf32>
}
