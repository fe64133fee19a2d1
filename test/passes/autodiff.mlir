// RUN: fbt-opt %s -split-input-file -verify-diagnostics --fbt-autodiff | FileCheck %s

// The tied table gets both contributions (embedding and LM head) summed into
// one gradient; every parameter gets exactly one, appended in order.

// CHECK-LABEL: func.func @tied
// CHECK-SAME: -> (tensor<f32> {fbt.name = "loss"}, tensor<32x16xf32> {fbt.name = "grad.E"}, tensor<16x16xf32> {fbt.name = "grad.W"}, tensor<16xf32> {fbt.name = "grad.norm"})
// CHECK-SAME: fbt.differentiated
// CHECK: %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[DLOGITS:.*]] = fbt.ntp_loss_grad %[[ONE]], %[[LOGITS:.*]], %arg3
// CHECK: %[[DN:.*]] = fbt.matmul_grad_input %[[DLOGITS]], %arg0
// CHECK: %[[DE_HEAD:.*]] = fbt.matmul_grad_weight %[[DLOGITS]], %{{.*}} : (tensor<2x4x32xf32>, tensor<2x4x16xf32>) -> tensor<32x16xf32>
// CHECK: %[[DH:.*]], %[[DSCALE:.*]] = fbt.rmsnorm_grad %[[DN]]
// CHECK: %[[DX:.*]] = fbt.matmul_grad_input %[[DH]], %arg1
// CHECK: %[[DW:.*]] = fbt.matmul_grad_weight %[[DH]]
// CHECK: %[[DE_EMB:.*]] = fbt.embedding_grad %[[DX]], %arg2 : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<32x16xf32>
// CHECK: %[[DE:.*]] = fbt.add %[[DE_HEAD]], %[[DE_EMB]] : tensor<32x16xf32>
// CHECK: return %{{.*}}, %[[DE]], %[[DW]], %[[DSCALE]]
func.func @tied(%E: tensor<32x16xf32> {fbt.param, fbt.name = "E"}, %W: tensor<16x16xf32> {fbt.param, fbt.name = "W"},
                %ids: tensor<2x4xi32>, %tgt: tensor<2x4xi32>, %norm: tensor<16xf32> {fbt.param, fbt.name = "norm"})
    -> (tensor<f32> {fbt.name = "loss"}) attributes {fbt.step = "train"} {
  %e = fbt.embedding %E, %ids : (tensor<32x16xf32>, tensor<2x4xi32>) -> tensor<2x4x16xf32>
  %h = fbt.matmul %e, %W : (tensor<2x4x16xf32>, tensor<16x16xf32>) -> tensor<2x4x16xf32>
  %n = fbt.rmsnorm %h, %norm {epsilon = 1.0e-5 : f64} : (tensor<2x4x16xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
  %l = fbt.lm_head %n, %E : (tensor<2x4x16xf32>, tensor<32x16xf32>) -> tensor<2x4x32xf32>
  %loss = fbt.ntp_loss %l, %tgt : (tensor<2x4x32xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Two passes: the second pass's gradient flows back through the carried
// state (shift_left of the state gradient) into the first pass, and W's two
// uses are summed. A parameter the loss never reaches gets zeros.

// CHECK-LABEL: func.func @two_passes
// CHECK: fbt.combine_losses
// CHECK: %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[HALF:.*]] = fbt.scale %[[ONE]] {factor = 5.000000e-01 : f64} : tensor<f32>
// CHECK: fbt.ntp_loss_grad %[[HALF]]
// CHECK: %[[DW2:.*]] = fbt.matmul_grad_weight
// CHECK: %[[DE2:.*]], %[[DS:.*]], %[[DWU:.*]] = fbt.feedback_grad add
// CHECK: %[[DH1_FB:.*]] = fbt.shift_left %[[DS]]
// CHECK: %[[DH1_L1:.*]] = fbt.ntp_loss_grad %[[ONE]]
// CHECK: %[[DH1:.*]] = fbt.add %[[DH1_FB]], %[[DH1_L1]]
// CHECK: %[[DW1:.*]] = fbt.matmul_grad_weight %[[DH1]], %arg0
// CHECK: %[[DW:.*]] = fbt.add %[[DW2]], %[[DW1]] : tensor<16x16xf32>
// CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
// CHECK: return %{{.*}}, %{{.*}}, %[[DW]], %[[DWU]], %[[ZERO]]
func.func @two_passes(%e: tensor<2x4x16xf32>, %W: tensor<16x16xf32> {fbt.param}, %WU: tensor<16x16xf32> {fbt.param},
                      %unused: tensor<16x16xf32> {fbt.param}, %tgt: tensor<2x4xi32>)
    -> (tensor<f32>, tensor<2xf32>) attributes {fbt.step = "train"} {
  %h1 = fbt.matmul %e, %W : (tensor<2x4x16xf32>, tensor<16x16xf32>) -> tensor<2x4x16xf32>
  %l1 = fbt.ntp_loss %h1, %tgt : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  %s = fbt.shift_right %h1 : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %u = fbt.feedback add %e, %s, %WU : (tensor<2x4x16xf32>, tensor<2x4x16xf32>, tensor<16x16xf32>) -> tensor<2x4x16xf32>
  %h2 = fbt.matmul %u, %W : (tensor<2x4x16xf32>, tensor<16x16xf32>) -> tensor<2x4x16xf32>
  %l2 = fbt.ntp_loss %h2, %tgt : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  %loss, %per = fbt.combine_losses %l1, %l2 {weights = array<f64: 1.0, 0.5>} : tensor<f32>, tensor<f32> -> tensor<f32>, tensor<2xf32>
  return %loss, %per : tensor<f32>, tensor<2xf32>
}

// -----

// detach_state: no gradient crosses the stop.

// CHECK-LABEL: func.func @detached
// CHECK-NOT: fbt.shift_left
// CHECK: return
func.func @detached(%e: tensor<2x4x16xf32>, %W: tensor<16x16xf32> {fbt.param}, %tgt: tensor<2x4xi32>)
    -> tensor<f32> attributes {fbt.step = "train"} {
  %h1 = fbt.matmul %e, %W : (tensor<2x4x16xf32>, tensor<16x16xf32>) -> tensor<2x4x16xf32>
  %s = fbt.shift_right %h1 : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %d = fbt.stop_gradient %s : tensor<2x4x16xf32>
  %h2 = fbt.matmul %d, %W : (tensor<2x4x16xf32>, tensor<16x16xf32>) -> tensor<2x4x16xf32>
  %l2 = fbt.ntp_loss %h2, %tgt : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %l2 : tensor<f32>
}

// -----

func.func @no_rule(%c: tensor<2x8x16xf32> {fbt.param}, %u: tensor<2x4x16xf32>, %tgt: tensor<2x8xi32>)
    -> tensor<f32> attributes {fbt.step = "train"} {
  // expected-error @+1 {{'fbt.kv_write' op is on the gradient path of the loss and has no gradient rule (fbt-autodiff)}}
  %w = fbt.kv_write %c, %u : (tensor<2x8x16xf32>, tensor<2x4x16xf32>) -> tensor<2x8x16xf32>
  %l = fbt.ntp_loss %w, %tgt : (tensor<2x8x16xf32>, tensor<2x8xi32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{'func.func' op still holds fbt.multipass: run fbt-expand-multipass before fbt-autodiff}}
func.func @unexpanded(%e: tensor<2x8x16xf32>, %tgt: tensor<2x8xi32>) -> (tensor<f32>, tensor<1xf32>) attributes {fbt.step = "train"} {
  %loss, %per = fbt.multipass %e : tensor<2x8x16xf32> attributes {num_passes = 1 : i64, aux_loss_weight = 1.0 : f64} body {
  ^bb0(%u: tensor<2x8x16xf32>):
    %l = fbt.ntp_loss %u, %tgt : (tensor<2x8x16xf32>, tensor<2x8xi32>) -> tensor<f32>
    fbt.yield %u, %l : tensor<2x8x16xf32>, tensor<f32>
  } feedback {
  ^bb0(%plain: tensor<2x8x16xf32>, %s: tensor<2x8x16xf32>):
    fbt.yield %plain : tensor<2x8x16xf32>
  } -> tensor<f32>, tensor<1xf32>
  return %loss, %per : tensor<f32>, tensor<1xf32>
}

// -----

// expected-error @+1 {{'func.func' op a training step must return its scalar loss first}}
func.func @no_loss(%e: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> attributes {fbt.step = "train"} {
  return %e : tensor<2x8x16xf32>
}
