// RUN: fbt-opt %s --fbt-data-parallel | FileCheck %s
// RUN: fbt-opt %s --fbt-data-parallel="min-bucket-bytes=1000000" | FileCheck %s --check-prefix=MERGED
// RUN: fbt-opt %s --fbt-data-parallel="zero=1" | FileCheck %s --check-prefix=ZERO

// The losses are reduced right where they are defined; the gradients in the
// order the backward makes them, one bucket per layer (layer 1's first),
// each right after its last gradient; the global norm and AdamW read the
// reduced gradients, and the step returns the reduced losses.
// CHECK-LABEL: func.func @step
// CHECK: %[[L:.*]] = fbt.add %arg8, %arg8
// CHECK-NEXT: %[[RL:.*]]:2 = fbt.all_reduce mean %[[L]], %arg9 {bucket = 0 : i64, names = ["loss", "pass_losses"]}
// CHECK-NEXT: %[[G1A:.*]] = fbt.add %arg2, %arg2
// CHECK-NEXT: %[[G1M:.*]] = fbt.add %arg3, %arg3
// CHECK-NEXT: %[[R1:.*]]:2 = fbt.all_reduce mean %[[G1A]], %[[G1M]] {bucket = 1 : i64, names = ["grad.model.layers.1.attn.weight", "grad.model.layers.1.mlp.weight"]}
// CHECK-NEXT: %[[G0:.*]] = fbt.add %arg1, %arg1
// CHECK-NEXT: %[[R0:.*]] = fbt.all_reduce mean %[[G0]] {bucket = 2 : i64, names = ["grad.model.layers.0.mlp.weight"]}
// CHECK-NEXT: %[[GE:.*]] = fbt.add %arg0, %arg0
// CHECK-NEXT: %[[RE:.*]] = fbt.all_reduce mean %[[GE]] {bucket = 3 : i64, names = ["grad.model.embed_tokens.weight"]}
// CHECK-NEXT: %[[N:.*]] = fbt.global_norm %[[RE]], %[[R0]], %[[R1]]#0, %[[R1]]#1
// CHECK-NEXT: fbt.adamw %arg0, %[[RE]],
// CHECK-NEXT: fbt.adamw %arg1, %[[R0]],
// CHECK-NEXT: fbt.adamw %arg2, %[[R1]]#0,
// CHECK-NEXT: fbt.adamw %arg3, %[[R1]]#1,
// CHECK-NEXT: return %[[RL]]#0, %[[RL]]#1, %[[N]]

// With a minimum size, neighbouring layers share a bucket.
// MERGED-LABEL: func.func @step
// MERGED: fbt.all_reduce {{.*}} {bucket = 0 : i64
// MERGED: fbt.all_reduce mean {{.*}} {bucket = 1 : i64, names = ["grad.model.layers.1.attn.weight", "grad.model.layers.1.mlp.weight", "grad.model.layers.0.mlp.weight", "grad.model.embed_tokens.weight"]}
// MERGED-NOT: fbt.all_reduce

// ZeRO-1: the same buckets reduce-scattered onto each parameter's owner;
// each rank sums the squares of the gradients it owns (links marked with
// their parameter), one scalar all-reduce and a square root make the norm;
// AdamW runs on the owner, and each bucket's parameters are all-gathered
// after its last AdamW, the step returning the gathered values.
// ZERO-LABEL: func.func @step
// ZERO: %[[RL:.*]]:2 = fbt.all_reduce mean {{.*}} {bucket = 0 : i64, names = ["loss", "pass_losses"]}
// ZERO: %[[R1:.*]]:2 = fbt.reduce_scatter mean {{.*}} {bucket = 1 : i64, names = ["grad.model.layers.1.attn.weight", "grad.model.layers.1.mlp.weight"], shards = ["model.layers.1.attn.weight", "model.layers.1.mlp.weight"]}
// ZERO: %[[R0:.*]] = fbt.reduce_scatter mean {{.*}} {bucket = 2 : i64, names = ["grad.model.layers.0.mlp.weight"], shards = ["model.layers.0.mlp.weight"]}
// ZERO: %[[RE:.*]] = fbt.reduce_scatter {{.*}} {bucket = 3 : i64
// ZERO: %[[Z:.*]] = arith.constant dense<0.0{{.*}}> : tensor<f32>
// ZERO-NEXT: %[[S0:.*]] = fbt.accumulate_squares %[[RE]], %[[Z]] {fbt.shard = "model.embed_tokens.weight"}
// ZERO-NEXT: %[[S1:.*]] = fbt.accumulate_squares %[[R0]], %[[S0]] {fbt.shard = "model.layers.0.mlp.weight"}
// ZERO-NEXT: %[[S2:.*]] = fbt.accumulate_squares %[[R1]]#0, %[[S1]] {fbt.shard = "model.layers.1.attn.weight"}
// ZERO-NEXT: %[[S3:.*]] = fbt.accumulate_squares %[[R1]]#1, %[[S2]] {fbt.shard = "model.layers.1.mlp.weight"}
// ZERO-NEXT: %[[T:.*]] = fbt.all_reduce sum %[[S3]] {bucket = 4 : i64, names = [""]}
// ZERO-NEXT: %[[N:.*]] = fbt.sqrt %[[T]]
// ZERO-NEXT: %[[PE:.*]], %{{.*}}, %{{.*}} = fbt.adamw %arg0, %[[RE]], {{.*}}, %[[N]] {{{.*}}fbt.shard = "model.embed_tokens.weight"
// ZERO-NEXT: %[[GE:.*]] = fbt.all_gather %[[PE]] {bucket = 7 : i64, names = ["model.embed_tokens.weight"], shards = ["model.embed_tokens.weight"]}
// ZERO-NEXT: %[[P0:.*]], %{{.*}}, %{{.*}} = fbt.adamw %arg1, %[[R0]], {{.*}}fbt.shard = "model.layers.0.mlp.weight"
// ZERO-NEXT: %[[G0:.*]] = fbt.all_gather %[[P0]] {bucket = 6 : i64
// ZERO-NEXT: %[[PA:.*]], %{{.*}}, %{{.*}} = fbt.adamw %arg2, %[[R1]]#0, {{.*}}fbt.shard = "model.layers.1.attn.weight"
// ZERO-NEXT: %[[PM:.*]], %{{.*}}, %{{.*}} = fbt.adamw %arg3, %[[R1]]#1, {{.*}}fbt.shard = "model.layers.1.mlp.weight"
// ZERO-NEXT: %[[G1:.*]]:2 = fbt.all_gather %[[PA]], %[[PM]] {bucket = 5 : i64
// ZERO-NEXT: return %[[RL]]#0, %[[RL]]#1, %[[N]], %[[GE]], %[[G0]], %[[G1]]#0, %[[G1]]#1
// ZERO-NOT: fbt.global_norm

// A step without an optimizer (the gradient-only step) is left alone.
// CHECK-LABEL: func.func @step_grads
// CHECK-NOT: fbt.all_reduce
// CHECK: return
func.func @step(%e: tensor<8x4xf32> {fbt.name = "model.embed_tokens.weight", fbt.param},
                %w0: tensor<4x4xf32> {fbt.name = "model.layers.0.mlp.weight", fbt.param},
                %a1: tensor<4x4xf32> {fbt.name = "model.layers.1.attn.weight", fbt.param},
                %w1: tensor<4x4xf32> {fbt.name = "model.layers.1.mlp.weight", fbt.param},
                %m: tensor<4x4xf32>, %v: tensor<4x4xf32>, %lr: tensor<f32>, %t: tensor<f32>,
                %x: tensor<f32>, %p: tensor<2xf32>)
    -> (tensor<f32> {fbt.name = "loss"}, tensor<2xf32> {fbt.name = "pass_losses"}, tensor<f32> {fbt.name = "grad_norm"},
        tensor<8x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>)
    attributes {fbt.step = "train", fbt.optimizer = "adamw"} {
  %loss = fbt.add %x, %x : tensor<f32>
  %ga1 = fbt.add %a1, %a1 : tensor<4x4xf32>
  %gw1 = fbt.add %w1, %w1 : tensor<4x4xf32>
  %gw0 = fbt.add %w0, %w0 : tensor<4x4xf32>
  %ge = fbt.add %e, %e : tensor<8x4xf32>
  %n = fbt.global_norm %ge, %gw0, %ga1, %gw1 : tensor<8x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32> -> tensor<f32>
  %e2, %em, %ev = fbt.adamw %e, %ge, %e, %e, %lr, %t, %n {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-8 : f64, weight_decay = 0.0 : f64, max_grad_norm = 1.0 : f64} : tensor<8x4xf32>, tensor<f32>, tensor<f32>, tensor<f32>
  %w02, %w0m, %w0v = fbt.adamw %w0, %gw0, %m, %v, %lr, %t, %n {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-8 : f64, weight_decay = 0.0 : f64, max_grad_norm = 1.0 : f64} : tensor<4x4xf32>, tensor<f32>, tensor<f32>, tensor<f32>
  %a12, %a1m, %a1v = fbt.adamw %a1, %ga1, %m, %v, %lr, %t, %n {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-8 : f64, weight_decay = 0.0 : f64, max_grad_norm = 1.0 : f64} : tensor<4x4xf32>, tensor<f32>, tensor<f32>, tensor<f32>
  %w12, %w1m, %w1v = fbt.adamw %w1, %gw1, %m, %v, %lr, %t, %n {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-8 : f64, weight_decay = 0.0 : f64, max_grad_norm = 1.0 : f64} : tensor<4x4xf32>, tensor<f32>, tensor<f32>, tensor<f32>
  return %loss, %p, %n, %e2, %w02, %a12, %w12 : tensor<f32>, tensor<2xf32>, tensor<f32>, tensor<8x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}

func.func @step_grads(%w: tensor<4x4xf32> {fbt.name = "w", fbt.param}) -> (tensor<4x4xf32> {fbt.name = "grad.w"})
    attributes {fbt.step = "grads"} {
  %g = fbt.add %w, %w : tensor<4x4xf32>
  return %g : tensor<4x4xf32>
}
