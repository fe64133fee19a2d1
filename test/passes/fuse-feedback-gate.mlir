// RUN: fbt-opt %s -split-input-file --fbt-fuse-feedback-gate | FileCheck %s

// The gate, the select and the first norm become one epilogue of two GEMMs.

// CHECK-LABEL: func.func @fused
// CHECK-SAME: (%[[E:.*]]: tensor<2x4x8xf32>, %[[S:.*]]: tensor<2x4x8xf32>, %[[WU:.*]]: tensor<8x8xf32>, %[[WG:.*]]: tensor<8x8xf32>, %[[M:.*]]: tensor<2x4xf32>, %[[W:.*]]: tensor<8xf32>)
// CHECK-NEXT: %[[V:.*]] = fbt.matmul %[[S]], %[[WU]]
// CHECK-NEXT: %[[G:.*]] = fbt.matmul %[[E]], %[[WG]]
// CHECK-NEXT: %[[U:.*]], %[[N:.*]] = fbt.gated_input_norm %[[V]], %[[G]], %[[E]], %[[M]], %[[W]] {epsilon = 1.000000e-05 : f64}
// CHECK-NOT: fbt.feedback
// CHECK-NOT: fbt.where
// CHECK-NEXT: return %[[U]], %[[N]]
func.func @fused(%e: tensor<2x4x8xf32>, %s: tensor<2x4x8xf32>, %wu: tensor<8x8xf32>, %wg: tensor<8x8xf32>,
                 %m: tensor<2x4xf32>, %w: tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %f = fbt.feedback glu %e, %s, %wu, %wg : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %u = fbt.where %m, %f, %e : (tensor<2x4xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %n = fbt.rmsnorm %u, %w {epsilon = 1.0e-5 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  return %u, %n : tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// -----

// Other fusions, and a select that is not followed by a norm, stay as they are.

// CHECK-LABEL: func.func @not_glu
// CHECK: fbt.feedback add
// CHECK: fbt.where
// CHECK-NOT: fbt.gated_input_norm
func.func @not_glu(%e: tensor<2x4x8xf32>, %s: tensor<2x4x8xf32>, %wu: tensor<8x8xf32>,
                   %m: tensor<2x4xf32>, %w: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %f = fbt.feedback add %e, %s, %wu : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %u = fbt.where %m, %f, %e : (tensor<2x4xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %n = fbt.rmsnorm %u, %w {epsilon = 1.0e-5 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  return %n : tensor<2x4x8xf32>
}

// CHECK-LABEL: func.func @no_norm
// CHECK: fbt.feedback glu
// CHECK-NOT: fbt.gated_input_norm
func.func @no_norm(%e: tensor<2x4x8xf32>, %s: tensor<2x4x8xf32>, %wu: tensor<8x8xf32>, %wg: tensor<8x8xf32>,
                   %m: tensor<2x4xf32>) -> tensor<2x4x8xf32> {
  %f = fbt.feedback glu %e, %s, %wu, %wg : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %u = fbt.where %m, %f, %e : (tensor<2x4xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %u : tensor<2x4x8xf32>
}

// -----

// Its gradient rule gives the fused backward: the input's two uses arrive
// together and the GEMMs' gradients follow.

// RUN: fbt-opt %s -split-input-file --fbt-fuse-feedback-gate --fbt-autodiff | FileCheck %s --check-prefix=GRAD
// CHECK-LABEL: func.func @train
// GRAD-LABEL: func.func @train
// GRAD: %[[DV:.*]], %[[DG:.*]], %[[DE:.*]], %[[DW:.*]] = fbt.gated_input_norm_grad
// GRAD-DAG: fbt.matmul_grad_weight %[[DV]], %arg1 : {{.*}} -> tensor<8x8xf32>
// GRAD-DAG: fbt.matmul_grad_weight %[[DG]], %arg0 : {{.*}} -> tensor<8x8xf32>
func.func @train(%e: tensor<2x4x8xf32>, %s: tensor<2x4x8xf32>, %wu: tensor<8x8xf32> {fbt.param}, %wg: tensor<8x8xf32> {fbt.param},
                 %m: tensor<2x4xf32>, %w: tensor<8xf32> {fbt.param}, %tgt: tensor<2x4xi32>) -> tensor<f32> attributes {fbt.step = "train"} {
  %f = fbt.feedback glu %e, %s, %wu, %wg : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %u = fbt.where %m, %f, %e : (tensor<2x4xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %n = fbt.rmsnorm %u, %w {epsilon = 1.0e-5 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %r = fbt.residual %u, %n {scale = 0.5 : f64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %l = fbt.ntp_loss %r, %tgt : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %l : tensor<f32>
}
