// RUN: fbt-opt %s --fbt-decompose | FileCheck %s
// Composite feedback ops become GEMMs and elementwise epilogues.

// CHECK-LABEL: func.func @glu
// CHECK: %[[V:.*]] = fbt.matmul %arg1, %arg2
// CHECK: %[[G:.*]] = fbt.matmul %arg0, %arg3
// CHECK: fbt.glu_gate %[[V]], %[[G]]
// CHECK: %[[GV:.*]], %[[GG:.*]] = fbt.glu_gate_grad %arg4, %{{.*}}, %{{.*}}
// CHECK-DAG: fbt.matmul_grad_input %[[GG]], %arg3
// CHECK-DAG: fbt.matmul_grad_input %[[GV]], %arg2
// CHECK-DAG: fbt.matmul_grad_weight %[[GV]], %arg1
// CHECK-DAG: fbt.matmul_grad_weight %[[GG]], %arg0
// CHECK-NOT: fbt.feedback
func.func @glu(%e: tensor<2x4x8xf32>, %s: tensor<2x4x8xf32>, %wu: tensor<8x8xf32>, %wg: tensor<8x8xf32>, %dy: tensor<2x4x8xf32>)
    -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) {
  %f = fbt.feedback glu %e, %s, %wu, %wg : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %de, %ds, %dw:2 = fbt.feedback_grad glu %dy, %e, %s, %wu, %wg : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>)
  return %f, %de, %ds, %dw#0, %dw#1 : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
}

// CHECK-LABEL: func.func @add
// CHECK: %[[V:.*]] = fbt.matmul %arg1, %arg2
// CHECK: fbt.add %arg0, %[[V]]
// CHECK: fbt.matmul_grad_input %arg3, %arg2
// CHECK: fbt.matmul_grad_weight %arg3, %arg1
// CHECK: return {{.*}}, %arg3,
func.func @add(%e: tensor<2x4x8xf32>, %s: tensor<2x4x8xf32>, %wu: tensor<8x8xf32>, %dy: tensor<2x4x8xf32>)
    -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8x8xf32>) {
  %f = fbt.feedback add %e, %s, %wu : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %de, %ds, %dw = fbt.feedback_grad add %dy, %e, %s, %wu : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8x8xf32>)
  return %f, %de, %ds, %dw : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8x8xf32>
}

// CHECK-LABEL: func.func @concat
// CHECK: %[[C:.*]] = fbt.concat %arg0, %arg1 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x16xf32>
// CHECK: fbt.matmul %[[C]], %arg2 : (tensor<2x4x16xf32>, tensor<8x16xf32>) -> tensor<2x4x8xf32>
// CHECK: %[[DC:.*]] = fbt.matmul_grad_input %arg3, %arg2 : {{.*}} -> tensor<2x4x16xf32>
// CHECK: fbt.split %[[DC]]
func.func @concat(%e: tensor<2x4x8xf32>, %s: tensor<2x4x8xf32>, %w: tensor<8x16xf32>, %dy: tensor<2x4x8xf32>)
    -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8x16xf32>) {
  %f = fbt.feedback concat %e, %s, %w : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x8xf32>
  %de, %ds, %dw = fbt.feedback_grad concat %dy, %e, %s, %w : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8x16xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8x16xf32>)
  return %f, %de, %ds, %dw : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8x16xf32>
}
