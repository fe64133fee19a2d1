// RUN: fbt-opt %s | fbt-opt | FileCheck %s
// RUN: fbt-opt %s --mlir-print-op-generic | fbt-opt | FileCheck %s
// Every fbt op parses, verifies, prints and parses back.

// CHECK-LABEL: func.func @embedding_and_head
func.func @embedding_and_head(%table: tensor<256x64xf32>, %ids: tensor<2x8xi32>,
                              %x: tensor<2x8x64xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x256xf32>) {
  // CHECK: fbt.embedding %{{.*}}, %{{.*}} : (tensor<256x64xf32>, tensor<2x8xi32>) -> tensor<2x8x64xf32>
  %e = fbt.embedding %table, %ids : (tensor<256x64xf32>, tensor<2x8xi32>) -> tensor<2x8x64xf32>
  // CHECK: fbt.lm_head %{{.*}}, %{{.*}} : (tensor<2x8x64xf32>, tensor<256x64xf32>) -> tensor<2x8x256xf32>
  %l = fbt.lm_head %x, %table : (tensor<2x8x64xf32>, tensor<256x64xf32>) -> tensor<2x8x256xf32>
  return %e, %l : tensor<2x8x64xf32>, tensor<2x8x256xf32>
}

// CHECK-LABEL: func.func @primitives
func.func @primitives(%x: tensor<2x8x64xf32>, %scale: tensor<64xf32>, %w: tensor<172x64xf32>,
                      %pos: tensor<2x8xi32>, %g: tensor<2x8x172xf32>) {
  // CHECK: fbt.rmsnorm %{{.*}}, %{{.*}} {epsilon = 1.000000e-05 : f64}
  %n = fbt.rmsnorm %x, %scale {epsilon = 1.0e-5 : f64} : (tensor<2x8x64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  // CHECK: fbt.normalize %{{.*}} {epsilon = 1.000000e-05 : f64} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  %u = fbt.normalize %x {epsilon = 1.0e-5 : f64} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  // CHECK: fbt.normalize_grad %{{.*}}, %{{.*}} {epsilon = 1.000000e-05 : f64}
  %du = fbt.normalize_grad %u, %x {epsilon = 1.0e-5 : f64} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  // CHECK: fbt.matmul %{{.*}}, %{{.*}} : (tensor<2x8x64xf32>, tensor<172x64xf32>) -> tensor<2x8x172xf32>
  %m = fbt.matmul %n, %w : (tensor<2x8x64xf32>, tensor<172x64xf32>) -> tensor<2x8x172xf32>
  // CHECK: fbt.rope %{{.*}} {num_heads = 4 : i64, theta = 1.000000e+04 : f64}
  %r = fbt.rope %x {num_heads = 4 : i64, theta = 10000.0 : f64} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  // CHECK: fbt.rope %{{.*}}, %{{.*}} {num_heads = 4 : i64, theta = 1.000000e+04 : f64} : (tensor<2x8x64xf32>, tensor<2x8xi32>)
  %rp = fbt.rope %x, %pos {num_heads = 4 : i64, theta = 10000.0 : f64} : (tensor<2x8x64xf32>, tensor<2x8xi32>) -> tensor<2x8x64xf32>
  // Linear RoPE scaling (factor 2); the default scale 1 is not printed.
  // CHECK: fbt.rope %{{.*}} {num_heads = 4 : i64, position_scale = 5.000000e-01 : f64, theta = 1.000000e+04 : f64}
  %rs = fbt.rope %x {num_heads = 4 : i64, theta = 10000.0 : f64, position_scale = 0.5 : f64} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  // CHECK: fbt.attention %{{.*}}, %{{.*}}, %{{.*}} {num_heads = 4 : i64}
  %a = fbt.attention %r, %r, %x {num_heads = 4 : i64} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  // CHECK: fbt.swiglu
  %s = fbt.swiglu %m, %g : (tensor<2x8x172xf32>, tensor<2x8x172xf32>) -> tensor<2x8x172xf32>
  // CHECK: fbt.residual %{{.*}}, %{{.*}} {scale = 5.000000e-01 : f64}
  %z = fbt.residual %x, %a {scale = 0.5 : f64} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  return
}

// An f16 cache: f32 updates rounded into it, f32 queries over it.
// CHECK-LABEL: func.func @kv_cache_f16
func.func @kv_cache_f16(%cache: tensor<1x16x64xf16>, %new: tensor<1x1x64xf32>, %pos: tensor<1x1xi32>) -> tensor<1x1x64xf32> {
  // CHECK: fbt.kv_write {{.*}} : (tensor<1x16x64xf16>, tensor<1x1x64xf32>, tensor<1x1xi32>) -> tensor<1x16x64xf16>
  %c = fbt.kv_write %cache, %new, %pos : (tensor<1x16x64xf16>, tensor<1x1x64xf32>, tensor<1x1xi32>) -> tensor<1x16x64xf16>
  // CHECK: fbt.attention {{.*}} : (tensor<1x1x64xf32>, tensor<1x16x64xf16>, tensor<1x16x64xf16>, tensor<1x1xi32>) -> tensor<1x1x64xf32>
  %a = fbt.attention %new, %c, %c, %pos {num_heads = 4 : i64} : (tensor<1x1x64xf32>, tensor<1x16x64xf16>, tensor<1x16x64xf16>, tensor<1x1xi32>) -> tensor<1x1x64xf32>
  return %a : tensor<1x1x64xf32>
}

// A prefill with an f16 cache attends over its keys and values as stored.
// CHECK-LABEL: func.func @prefill_f16
func.func @prefill_f16(%q: tensor<1x8x64xf32>, %k: tensor<1x8x64xf32>) -> tensor<1x8x64xf32> {
  // CHECK: fbt.convert %{{.*}} : (tensor<1x8x64xf32>) -> tensor<1x8x64xf16>
  %k16 = fbt.convert %k : (tensor<1x8x64xf32>) -> tensor<1x8x64xf16>
  // CHECK: fbt.attention {{.*}} : (tensor<1x8x64xf32>, tensor<1x8x64xf16>, tensor<1x8x64xf16>) -> tensor<1x8x64xf32>
  %a = fbt.attention %q, %k16, %k16 {num_heads = 4 : i64} : (tensor<1x8x64xf32>, tensor<1x8x64xf16>, tensor<1x8x64xf16>) -> tensor<1x8x64xf32>
  return %a : tensor<1x8x64xf32>
}

// CHECK-LABEL: func.func @kv_cache
func.func @kv_cache(%cache: tensor<2x128x64xf32>, %new: tensor<2x1x64xf32>, %pos: tensor<2x1xi32>,
                    %h: tensor<2x8x64xf32>, %last: tensor<2xi32>) -> (tensor<2x1x64xf32>, tensor<2x1x64xf32>) {
  // CHECK: fbt.kv_write %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x128x64xf32>, tensor<2x1x64xf32>, tensor<2x1xi32>) -> tensor<2x128x64xf32>
  %c = fbt.kv_write %cache, %new, %pos : (tensor<2x128x64xf32>, tensor<2x1x64xf32>, tensor<2x1xi32>) -> tensor<2x128x64xf32>
  // CHECK: fbt.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {num_heads = 4 : i64} : (tensor<2x1x64xf32>, tensor<2x128x64xf32>, tensor<2x128x64xf32>, tensor<2x1xi32>)
  %a = fbt.attention %new, %c, %c, %pos {num_heads = 4 : i64} : (tensor<2x1x64xf32>, tensor<2x128x64xf32>, tensor<2x128x64xf32>, tensor<2x1xi32>) -> tensor<2x1x64xf32>
  // CHECK: fbt.kv_write %{{.*}}, %{{.*}} : (tensor<2x128x64xf32>, tensor<2x8x64xf32>) -> tensor<2x128x64xf32>
  %pre = fbt.kv_write %cache, %h : (tensor<2x128x64xf32>, tensor<2x8x64xf32>) -> tensor<2x128x64xf32>
  // CHECK: fbt.gather_positions %{{.*}}, %{{.*}} : (tensor<2x8x64xf32>, tensor<2xi32>) -> tensor<2x1x64xf32>
  %g = fbt.gather_positions %h, %last : (tensor<2x8x64xf32>, tensor<2xi32>) -> tensor<2x1x64xf32>
  return %a, %g : tensor<2x1x64xf32>, tensor<2x1x64xf32>
}

// A mixed batch: 6 tokens of any of the cache's 2 rows, each at its position.
// CHECK-LABEL: func.func @mixed_batch
func.func @mixed_batch(%cache: tensor<2x128x64xf32>, %new: tensor<1x6x64xf32>, %pos: tensor<1x6xi32>,
                       %rows: tensor<1x6xi32>, %picks: tensor<2xi32>) -> tensor<2x1x64xf32> {
  // CHECK: fbt.kv_write %{{.*}}, %{{.*}}, %{{.*}} rows %{{.*}} : (tensor<2x128x64xf32>, tensor<1x6x64xf32>, tensor<1x6xi32>, tensor<1x6xi32>) -> tensor<2x128x64xf32>
  %c = fbt.kv_write %cache, %new, %pos rows %rows : (tensor<2x128x64xf32>, tensor<1x6x64xf32>, tensor<1x6xi32>, tensor<1x6xi32>) -> tensor<2x128x64xf32>
  // CHECK: fbt.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} rows %{{.*}} {num_heads = 4 : i64}
  %a = fbt.attention %new, %c, %c, %pos rows %rows {num_heads = 4 : i64} : (tensor<1x6x64xf32>, tensor<2x128x64xf32>, tensor<2x128x64xf32>, tensor<1x6xi32>, tensor<1x6xi32>) -> tensor<1x6x64xf32>
  // CHECK: fbt.gather_positions %{{.*}}, %{{.*}} : (tensor<1x6x64xf32>, tensor<2xi32>) -> tensor<2x1x64xf32>
  %g = fbt.gather_positions %a, %picks : (tensor<1x6x64xf32>, tensor<2xi32>) -> tensor<2x1x64xf32>
  return %g : tensor<2x1x64xf32>
}

// CHECK-LABEL: func.func @feedback_path
func.func @feedback_path(%e: tensor<2x8x64xf32>, %h: tensor<2x8x64xf32>, %wu: tensor<64x64xf32>,
                         %wg: tensor<64x64xf32>, %wc: tensor<64x128xf32>, %ids: tensor<2x8xi32>,
                         %seed: i64) -> tensor<2x8x64xf32> {
  // CHECK: fbt.shift_right %{{.*}} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  %s = fbt.shift_right %h : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  // CHECK: fbt.jitter %{{.*}}, %{{.*}} {epsilon = 2.000000e-02 : f64, stream = 1 : i64}
  %j = fbt.jitter %s, %seed {epsilon = 0.02 : f64, stream = 1 : i64} : (tensor<2x8x64xf32>, i64) -> tensor<2x8x64xf32>
  // CHECK: fbt.feedback glu %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} :
  %f = fbt.feedback glu %e, %j, %wu, %wg : (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<2x8x64xf32>
  // CHECK: fbt.feedback add
  %fa = fbt.feedback add %e, %j, %wu : (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<64x64xf32>) -> tensor<2x8x64xf32>
  // CHECK: fbt.feedback concat
  %fc = fbt.feedback concat %e, %j, %wc : (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<64x128xf32>) -> tensor<2x8x64xf32>
  // CHECK: fbt.feedback_mask %{{.*}}, %{{.*}} {bos_token_id = 0 : i64, prefix_mixin}
  %m = fbt.feedback_mask %ids, %seed {bos_token_id = 0 : i64, prefix_mixin} : (tensor<2x8xi32>, i64) -> tensor<2x8xf32>
  // CHECK: fbt.feedback_mask %{{.*}} {bos_token_id = 0 : i64} : (tensor<2x8xi32>) -> tensor<2x8xf32>
  %m0 = fbt.feedback_mask %ids {bos_token_id = 0 : i64} : (tensor<2x8xi32>) -> tensor<2x8xf32>
  // CHECK: fbt.where %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x8xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  %u = fbt.where %m, %f, %e : (tensor<2x8xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  return %u : tensor<2x8x64xf32>
}

// CHECK-LABEL: func.func @bf16_storage
func.func @bf16_storage(%x: tensor<2x8x64xbf16>, %w: tensor<64x64xbf16>) -> tensor<2x8x64xbf16> {
  // CHECK: fbt.matmul {{.*}} -> tensor<2x8x64xbf16>
  %m = fbt.matmul %x, %w : (tensor<2x8x64xbf16>, tensor<64x64xbf16>) -> tensor<2x8x64xbf16>
  return %m : tensor<2x8x64xbf16>
}

// CHECK-LABEL: func.func @objective
func.func @objective(%e: tensor<2x8x64xf32>, %table: tensor<256x64xf32>, %tgt: tensor<2x8xi32>,
                     %wu: tensor<64x64xf32>, %wg: tensor<64x64xf32>) -> (tensor<f32>, tensor<2xf32>) {
  // CHECK: fbt.multipass %{{.*}} : tensor<2x8x64xf32> attributes {aux_loss_weight = 1.000000e+00 : f64, num_passes = 2 : i64} body {
  // CHECK: ^bb0(%{{.*}}: tensor<2x8x64xf32>):
  // CHECK: fbt.ntp_loss %{{.*}}, %{{.*}} : (tensor<2x8x256xf32>, tensor<2x8xi32>) -> tensor<f32>
  // CHECK: fbt.yield %{{.*}}, %{{.*}} : tensor<2x8x64xf32>, tensor<f32>
  // CHECK: } feedback {
  // CHECK: ^bb0(%{{.*}}: tensor<2x8x64xf32>, %{{.*}}: tensor<2x8x64xf32>):
  // CHECK: fbt.yield %{{.*}} : tensor<2x8x64xf32>
  // CHECK: } -> tensor<f32>, tensor<2xf32>
  %loss, %per = fbt.multipass %e : tensor<2x8x64xf32> attributes {num_passes = 2 : i64, aux_loss_weight = 1.0 : f64} body {
  ^bb0(%u: tensor<2x8x64xf32>):
    %l = fbt.lm_head %u, %table : (tensor<2x8x64xf32>, tensor<256x64xf32>) -> tensor<2x8x256xf32>
    %ce = fbt.ntp_loss %l, %tgt : (tensor<2x8x256xf32>, tensor<2x8xi32>) -> tensor<f32>
    fbt.yield %u, %ce : tensor<2x8x64xf32>, tensor<f32>
  } feedback {
  ^bb0(%plain: tensor<2x8x64xf32>, %s: tensor<2x8x64xf32>):
    %f = fbt.feedback glu %plain, %s, %wu, %wg : (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<2x8x64xf32>
    fbt.yield %f : tensor<2x8x64xf32>
  } -> tensor<f32>, tensor<2xf32>
  return %loss, %per : tensor<f32>, tensor<2xf32>
}

// CHECK-LABEL: func.func @all_reduce
func.func @all_reduce(%g: tensor<4x4xf32>, %l: tensor<f32>) -> (tensor<4x4xf32>, tensor<f32>) {
  // CHECK: fbt.all_reduce mean %{{.*}}, %{{.*}} {bucket = 2 : i64, names = ["grad.w", "loss"]} : (tensor<4x4xf32>, tensor<f32>) -> (tensor<4x4xf32>, tensor<f32>)
  %r:2 = fbt.all_reduce mean %g, %l {bucket = 2 : i64, names = ["grad.w", "loss"]} : (tensor<4x4xf32>, tensor<f32>) -> (tensor<4x4xf32>, tensor<f32>)
  return %r#0, %r#1 : tensor<4x4xf32>, tensor<f32>
}

// CHECK-LABEL: func.func @zero
func.func @zero(%g: tensor<4x4xf32>, %acc: tensor<f32>) -> (tensor<4x4xf32>, tensor<f32>) {
  // CHECK: fbt.reduce_scatter mean %{{.*}} {bucket = 1 : i64, names = ["grad.w"], shards = ["w"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %r = fbt.reduce_scatter mean %g {bucket = 1 : i64, names = ["grad.w"], shards = ["w"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  // CHECK: fbt.accumulate_squares %{{.*}}, %{{.*}} {fbt.shard = "w"}
  %s = fbt.accumulate_squares %r, %acc {fbt.shard = "w"} : (tensor<4x4xf32>, tensor<f32>) -> tensor<f32>
  // CHECK: fbt.all_gather %{{.*}} {bucket = 2 : i64, names = ["w"], shards = ["w"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %p = fbt.all_gather %r {bucket = 2 : i64, names = ["w"], shards = ["w"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %p, %s : tensor<4x4xf32>, tensor<f32>
}
