// RUN: fbt-opt %s --fbt-optimizer="beta2=0.99 weight-decay=0.05 max-grad-norm=2.0 keep-gradient-step=true" | FileCheck %s

// CHECK-LABEL: func.func @step
// CHECK-SAME: %[[W:arg0]]: tensor<4x4xf32> {fbt.decay, fbt.name = "w", fbt.param}, %[[N:arg1]]: tensor<4xf32> {fbt.name = "norm", fbt.param}
// CHECK-SAME: %[[MW:arg5]]: tensor<4x4xf32> {fbt.name = "adam_m.w"}, %[[MN:arg6]]: tensor<4xf32> {fbt.name = "adam_m.norm"}, %[[VW:arg7]]: tensor<4x4xf32> {fbt.name = "adam_v.w"}, %[[VN:arg8]]: tensor<4xf32> {fbt.name = "adam_v.norm"}, %[[LR:arg9]]: tensor<f32> {fbt.name = "lr"}, %[[STEP:arg10]]: tensor<f32> {fbt.name = "step"}
// CHECK-SAME: -> (tensor<f32> {fbt.name = "loss"}, tensor<1xf32> {fbt.name = "pass_losses"}, tensor<f32> {fbt.name = "grad_norm"}, tensor<4x4xf32> {fbt.name = "w", fbt.updates = 0 : i64}, tensor<4xf32> {fbt.name = "norm", fbt.updates = 1 : i64}, tensor<4x4xf32> {fbt.name = "adam_m.w", fbt.updates = 5 : i64}
// CHECK-SAME: fbt.optimizer = "adamw"
// CHECK: %[[GN:.*]] = fbt.global_norm %arg3, %arg4 : tensor<4x4xf32>, tensor<4xf32> -> tensor<f32>
// CHECK: fbt.adamw %[[W]], %arg3, %[[MW]], %[[VW]], %[[LR]], %[[STEP]], %[[GN]] {beta1 = 9.000000e-01 : f64, beta2 = 0.98999999999999999 : f64, epsilon = 1.000000e-08 : f64, max_grad_norm = 2.000000e+00 : f64, weight_decay = 5.000000e-02 : f64}
// Norms take no weight decay.
// CHECK: fbt.adamw %[[N]], %arg4, %[[MN]], %[[VN]], %[[LR]], %[[STEP]], %[[GN]] {{{.*}} weight_decay = 0.000000e+00 : f64}
// The gradient step is kept for numerics checks.
// CHECK-LABEL: func.func @step_grads
// CHECK-SAME: fbt.step = "grads"
// CHECK-NOT: fbt.adamw
func.func @step(%w: tensor<4x4xf32> {fbt.param, fbt.decay, fbt.name = "w"}, %n: tensor<4xf32> {fbt.param, fbt.name = "norm"},
                %ids: tensor<2x4xi32> {fbt.name = "input_ids"}, %gw: tensor<4x4xf32>, %gn: tensor<4xf32>)
    -> (tensor<f32> {fbt.name = "loss"}, tensor<1xf32> {fbt.name = "pass_losses"}, tensor<4x4xf32>, tensor<4xf32>)
    attributes {fbt.step = "train", fbt.differentiated} {
  %l = arith.constant dense<1.0> : tensor<f32>
  %p = arith.constant dense<1.0> : tensor<1xf32>
  return %l, %p, %gw, %gn : tensor<f32>, tensor<1xf32>, tensor<4x4xf32>, tensor<4xf32>
}
