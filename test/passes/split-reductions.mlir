// RUN: fbt-opt %s --fbt-split-reductions | FileCheck %s
// RUN: fbt-opt %s --fbt-kernel-pipeline | FileCheck %s --check-prefix=KERNELS

// The global norm over three gradients: a chain of accumulate_squares links
// in operand order, then one sqrt.
// CHECK-LABEL: func.func @norm
// CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : tensor<f32>
// CHECK: %[[A1:.*]] = fbt.accumulate_squares %arg0, %[[ZERO]]
// CHECK: %[[A2:.*]] = fbt.accumulate_squares %arg1, %[[A1]]
// CHECK: %[[A3:.*]] = fbt.accumulate_squares %arg2, %[[A2]]
// CHECK: %[[N:.*]] = fbt.sqrt %[[A3]]
// CHECK-NOT: fbt.global_norm
// CHECK: return %[[N]]
// Every link shares one kernel, whatever the arity.
// KERNELS-LABEL: func.func @norm
// KERNELS: fbt.call_kernel @[[ACC:k[0-9]+_accumulate_squares]]
// KERNELS: fbt.call_kernel @[[ACC]]
// KERNELS: fbt.call_kernel @[[ACC]]
func.func @norm(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>, %c: tensor<4x8xf32>) -> tensor<f32>
    attributes {fbt.step = "train"} {
  %n = fbt.global_norm %a, %b, %c : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32> -> tensor<f32>
  return %n : tensor<f32>
}

// The loss combination: total += w_k * loss_k in pass order, and the
// per-pass losses packed.
// CHECK-LABEL: func.func @losses
// CHECK-DAG: %[[W1:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-DAG: %[[W2:.*]] = arith.constant dense<5.000000e-01> : tensor<f32>
// CHECK-DAG: %[[Z:.*]] = arith.constant dense<0.000000e+00> : tensor<f32>
// CHECK: %[[T1:.*]] = fbt.axpy %[[Z]], %arg0, %[[W1]]
// CHECK: %[[T2:.*]] = fbt.axpy %[[T1]], %arg1, %[[W2]]
// CHECK: %[[P:.*]] = fbt.pack %arg0, %arg1
// CHECK: return %[[T2]], %[[P]]
func.func @losses(%l1: tensor<f32>, %l2: tensor<f32>) -> (tensor<f32>, tensor<2xf32>)
    attributes {fbt.step = "train"} {
  %loss, %per = fbt.combine_losses %l1, %l2 {weights = array<f64: 1.0, 0.5>} : tensor<f32>, tensor<f32> -> tensor<f32>, tensor<2xf32>
  return %loss, %per : tensor<f32>, tensor<2xf32>
}
