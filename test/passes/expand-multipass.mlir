// RUN: fbt-opt %s -split-input-file --fbt-expand-multipass | FileCheck %s
// RUN: fbt-opt %s -split-input-file --fbt-expand-multipass=passes=4 | FileCheck %s --check-prefix=K4
// RUN: not fbt-opt %s -split-input-file --fbt-expand-multipass=passes=-1 2>&1 | FileCheck %s --check-prefix=BADK

// K = 3: pass 1 on the plain input, passes 2 and 3 on the fused, shifted
// states of the pass before; one jitter stream per pass; the weights are the
// function's arguments in every pass.

// CHECK-LABEL: func.func @three_passes
// CHECK-SAME: (%[[E:.*]]: tensor<2x8x16xf32>, %[[W:.*]]: tensor<16x16xf32>, %[[WU:.*]]: tensor<16x16xf32>, %[[WG:.*]]: tensor<16x16xf32>, %[[SEED:.*]]: i64, %[[M:.*]]: tensor<2x8xf32>)
// CHECK-NOT: fbt.multipass
// Pass 1.
// CHECK: %[[H1:.*]] = fbt.matmul %[[E]], %[[W]]
// CHECK: %[[L1:.*]] = fbt.ntp_loss
// Pass 2.
// CHECK: %[[S2:.*]] = fbt.shift_right %[[H1]]
// CHECK: %[[J2:.*]] = fbt.jitter %[[S2]], %[[SEED]] {epsilon = 2.000000e-02 : f64, stream = 2 : i64}
// CHECK: %[[F2:.*]] = fbt.feedback glu %[[E]], %[[J2]], %[[WU]], %[[WG]]
// CHECK: %[[U2:.*]] = fbt.where %[[M]], %[[F2]], %[[E]]
// CHECK: %[[H2:.*]] = fbt.matmul %[[U2]], %[[W]]
// CHECK: %[[L2:.*]] = fbt.ntp_loss
// Pass 3.
// CHECK: %[[S3:.*]] = fbt.shift_right %[[H2]]
// CHECK: fbt.jitter %[[S3]], %[[SEED]] {epsilon = 2.000000e-02 : f64, stream = 3 : i64}
// CHECK: %[[H3:.*]] = fbt.matmul %{{.*}}, %[[W]]
// CHECK: %[[L3:.*]] = fbt.ntp_loss
// L = L_1 + 0.5 * mean(L_2, L_3)
// CHECK: %[[LOSS:.*]], %[[PER:.*]] = fbt.combine_losses %[[L1]], %[[L2]], %[[L3]] {weights = array<f64: 1.000000e+00, 2.500000e-01, 2.500000e-01>} : tensor<f32>, tensor<f32>, tensor<f32> -> tensor<f32>, tensor<3xf32>
// CHECK: return %[[LOSS]], %[[PER]] : tensor<f32>, tensor<3xf32>

// K4-LABEL: func.func @three_passes
// K4-SAME: -> (tensor<f32>, tensor<4xf32>)
// K4-SAME: fbt.passes = 4
// K4-COUNT-4: fbt.ntp_loss
// K4: fbt.combine_losses {{.*}} {weights = array<f64: 1.000000e+00, 0.16666666666666666, 0.16666666666666666, 0.16666666666666666>}

// BADK: error: fbt-expand-multipass: passes must be >= 1 (or 0 to keep each objective's own K), got -1

func.func @three_passes(%e: tensor<2x8x16xf32>, %w: tensor<16x16xf32>, %wu: tensor<16x16xf32>,
                        %wg: tensor<16x16xf32>, %seed: i64, %mask: tensor<2x8xf32>)
    -> (tensor<f32>, tensor<3xf32>) attributes {fbt.step = "train"} {
  %tgt = arith.constant dense<1> : tensor<2x8xi32>
  %loss, %per = fbt.multipass %e : tensor<2x8x16xf32> attributes {num_passes = 3 : i64, aux_loss_weight = 0.5 : f64} body {
  ^bb0(%u: tensor<2x8x16xf32>):
    %h = fbt.matmul %u, %w : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
    %l = fbt.ntp_loss %h, %tgt : (tensor<2x8x16xf32>, tensor<2x8xi32>) -> tensor<f32>
    fbt.yield %h, %l : tensor<2x8x16xf32>, tensor<f32>
  } feedback {
  ^bb0(%plain: tensor<2x8x16xf32>, %s: tensor<2x8x16xf32>):
    %j = fbt.jitter %s, %seed {epsilon = 0.02 : f64} : (tensor<2x8x16xf32>, i64) -> tensor<2x8x16xf32>
    %f = fbt.feedback glu %plain, %j, %wu, %wg : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
    %x = fbt.where %mask, %f, %plain : (tensor<2x8xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
    fbt.yield %x : tensor<2x8x16xf32>
  } -> tensor<f32>, tensor<3xf32>
  return %loss, %per : tensor<f32>, tensor<3xf32>
}

// -----

// detach_state cuts the carried state from the gradient.

// CHECK-LABEL: func.func @detached
// CHECK: %[[S:.*]] = fbt.shift_right
// CHECK-NEXT: %[[D:.*]] = fbt.stop_gradient %[[S]]
// CHECK-NEXT: fbt.feedback add %{{.*}}, %[[D]]
// CHECK: fbt.combine_losses {{.*}} {weights = array<f64: 1.000000e+00, 1.000000e+00>}
func.func @detached(%e: tensor<2x8x16xf32>, %w: tensor<16x16xf32>) -> (tensor<f32>, tensor<2xf32>) {
  %tgt = arith.constant dense<1> : tensor<2x8xi32>
  %loss, %per = fbt.multipass %e : tensor<2x8x16xf32> attributes {num_passes = 2 : i64, aux_loss_weight = 1.0 : f64, detach_state} body {
  ^bb0(%u: tensor<2x8x16xf32>):
    %l = fbt.ntp_loss %u, %tgt : (tensor<2x8x16xf32>, tensor<2x8xi32>) -> tensor<f32>
    fbt.yield %u, %l : tensor<2x8x16xf32>, tensor<f32>
  } feedback {
  ^bb0(%plain: tensor<2x8x16xf32>, %s: tensor<2x8x16xf32>):
    %f = fbt.feedback add %plain, %s, %w : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
    fbt.yield %f : tensor<2x8x16xf32>
  } -> tensor<f32>, tensor<2xf32>
  return %loss, %per : tensor<f32>, tensor<2xf32>
}

// -----

// K = 1 needs no feedback at all.

// CHECK-LABEL: func.func @single
// CHECK-NOT: fbt.shift_right
// CHECK-NOT: fbt.feedback
// CHECK: fbt.combine_losses %{{.*}} {weights = array<f64: 1.000000e+00>} : tensor<f32> -> tensor<f32>, tensor<1xf32>
func.func @single(%e: tensor<2x8x16xf32>, %w: tensor<16x16xf32>) -> (tensor<f32>, tensor<1xf32>) {
  %tgt = arith.constant dense<1> : tensor<2x8xi32>
  %loss, %per = fbt.multipass %e : tensor<2x8x16xf32> attributes {num_passes = 1 : i64, aux_loss_weight = 1.0 : f64} body {
  ^bb0(%u: tensor<2x8x16xf32>):
    %l = fbt.ntp_loss %u, %tgt : (tensor<2x8x16xf32>, tensor<2x8xi32>) -> tensor<f32>
    fbt.yield %u, %l : tensor<2x8x16xf32>, tensor<f32>
  } feedback {
  ^bb0(%plain: tensor<2x8x16xf32>, %s: tensor<2x8x16xf32>):
    %f = fbt.feedback add %plain, %s, %w : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
    fbt.yield %f : tensor<2x8x16xf32>
  } -> tensor<f32>, tensor<1xf32>
  return %loss, %per : tensor<f32>, tensor<1xf32>
}
