// RUN: fbt-opt %s -split-input-file --fbt-to-kernels="target=gpu tune-space=default" | FileCheck %s
// RUN: fbt-opt %s -split-input-file --fbt-to-kernels="target=cpu tune-space=default" | FileCheck %s --check-prefix=CPU

// tune-space: every kernel once more per other value of the knobs its
// generator asked for, as variants the steps never call; the knobs' values
// are on each build (fbt.config). On the GPU a norm's knob is its threads
// per row block (the default: a warp per 32 channels, at most 256); on the
// CPU a large kernel's is its OpenMP grain, and a small one has none.

// CHECK-LABEL: func.func @step
// CHECK: fbt.call_kernel @k0_rmsnorm(
// CHECK: fbt.call_kernel @k1_rmsnorm(
// CHECK-NOT: call_kernel @{{.*}}__v
// CHECK: func.func @k0_rmsnorm({{.*}}) attributes {fbt.config = {row_threads = 32 : i64}, fbt.kernel}
// CHECK: fbt.threads = 32
// CHECK: func.func @k0_rmsnorm__v1({{.*}}) attributes {fbt.config = {row_threads = 128 : i64}, fbt.kernel, fbt.variant_of = @k0_rmsnorm}
// CHECK: fbt.threads = 128
// CHECK: func.func @k0_rmsnorm__v4({{.*}}) attributes {fbt.config = {row_threads = 1024 : i64}, fbt.kernel, fbt.variant_of = @k0_rmsnorm}
// CHECK: func.func @k1_rmsnorm({{.*}}) attributes {fbt.config = {row_threads = 128 : i64}, fbt.kernel}
// CHECK: func.func @k1_rmsnorm__v3({{.*}}) attributes {fbt.config = {row_threads = 1024 : i64}, fbt.kernel, fbt.variant_of = @k1_rmsnorm}
// CHECK-NOT: func.func @k1_rmsnorm__v4

// CPU-LABEL: func.func @step
// CPU: func.func @k0_rmsnorm({{.*}}) attributes {fbt.kernel}
// CPU-NOT: @k0_rmsnorm__v
// CPU: func.func @k1_rmsnorm({{.*}}) attributes {fbt.config = {grain = 0 : i64}, fbt.kernel}
// CPU: func.func @k1_rmsnorm__v1({{.*}}) attributes {fbt.config = {grain = 1 : i64}, fbt.kernel, fbt.variant_of = @k1_rmsnorm}
// CPU: func.func @k1_rmsnorm__v2({{.*}}) attributes {fbt.config = {grain = 8 : i64}, fbt.kernel, fbt.variant_of = @k1_rmsnorm}


func.func @step(%x: tensor<2x4x16xf32>, %s: tensor<16xf32>, %big: tensor<64x4x128xf32>, %t: tensor<128xf32>)
    -> (tensor<2x4x16xf32>, tensor<64x4x128xf32>) attributes {fbt.step = "eval"} {
  %n = fbt.rmsnorm %x, %s {epsilon = 1.0e-5 : f64} : (tensor<2x4x16xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
  %m = fbt.rmsnorm %big, %t {epsilon = 1.0e-5 : f64} : (tensor<64x4x128xf32>, tensor<128xf32>) -> tensor<64x4x128xf32>
  return %n, %m : tensor<2x4x16xf32>, tensor<64x4x128xf32>
}

// -----

// GPU attention's knobs are its warps (queries) per block and the rows of
// its shared-memory tiles. With heads of 128 channels, tiles of 64 rows
// would need more than 48 KiB of static shared memory per block: those
// variants are not built.
// CHECK-LABEL: func.func @grad
// CHECK: func.func @k0_attention_grad({{.*}}) attributes {fbt.config = {key_tile = 16 : i64, query_block = 4 : i64}, fbt.kernel}
// CHECK: func.func @k0_attention_grad__v1({{.*}}) attributes {fbt.config = {key_tile = 16 : i64, query_block = 2 : i64}
// CHECK: func.func @k0_attention_grad__v3({{.*}}) attributes {fbt.config = {key_tile = 32 : i64, query_block = 4 : i64}
// CHECK: func.func @k0_attention_grad__v5({{.*}}) attributes {fbt.config = {key_tile = 32 : i64, query_block = 8 : i64}
// CHECK-NOT: key_tile = 64
// CPU-LABEL: func.func @grad
// CPU: func.func @k0_attention_grad({{.*}}) attributes {fbt.config = {query_block = 4 : i64}, fbt.kernel}
// CPU: func.func @k0_attention_grad__v1({{.*}}) attributes {fbt.config = {query_block = 2 : i64}
// CPU: func.func @k0_attention_grad__v2({{.*}}) attributes {fbt.config = {query_block = 8 : i64}
func.func @grad(%d: tensor<1x8x128xf32>, %q: tensor<1x8x128xf32>, %k: tensor<1x8x128xf32>, %v: tensor<1x8x128xf32>, %o: tensor<1x8x128xf32>)
    -> (tensor<1x8x128xf32>, tensor<1x8x128xf32>, tensor<1x8x128xf32>) attributes {fbt.step = "grads"} {
  %dq, %dk, %dv = fbt.attention_grad %d, %q, %k, %v, %o {num_heads = 1 : i64} : (tensor<1x8x128xf32>, tensor<1x8x128xf32>, tensor<1x8x128xf32>, tensor<1x8x128xf32>, tensor<1x8x128xf32>) -> (tensor<1x8x128xf32>, tensor<1x8x128xf32>, tensor<1x8x128xf32>)
  return %dq, %dk, %dv : tensor<1x8x128xf32>, tensor<1x8x128xf32>, tensor<1x8x128xf32>
}

// -----

// The CPU's attention walks each key row once for a group of heads (two by
// default: g * dh contiguous channels per row instead of a strided dh); the
// group is a knob, clamped to a divisor of the heads. Its passes over the
// keys prefetch the cache rows 16 keys ahead, or as many as the knob
// prefetch_keys says (0: none). The GPU's forward has its own knobs and
// neither of these.
// CHECK-LABEL: func.func @decode
// CHECK-NOT: head_group
// CHECK-NOT: prefetch
// CPU-LABEL: func.func @decode
// CPU: func.func @k0_attention({{.*}}) attributes {fbt.config = {head_group = 2 : i64, prefetch_keys = 16 : i64}, fbt.kernel}
// CPU: memref.prefetch
// CPU: func.func @k0_attention__v1({{.*}}) attributes {fbt.config = {head_group = 1 : i64, prefetch_keys = 0 : i64}
// CPU-NOT: memref.prefetch
// CPU: func.func @k0_attention__v2({{.*}}) attributes {fbt.config = {head_group = 1 : i64, prefetch_keys = 16 : i64}
// CPU: memref.prefetch
// CPU: func.func @k0_attention__v3({{.*}}) attributes {fbt.config = {head_group = 2 : i64, prefetch_keys = 0 : i64}
// CPU: func.func @k0_attention__v4({{.*}}) attributes {fbt.config = {head_group = 8 : i64, prefetch_keys = 0 : i64}
// CPU: func.func @k0_attention__v5({{.*}}) attributes {fbt.config = {head_group = 8 : i64, prefetch_keys = 16 : i64}
func.func @decode(%q: tensor<2x1x64xf32>, %k: tensor<2x128x64xf32>, %v: tensor<2x128x64xf32>, %p: tensor<2x1xi32>)
    -> tensor<2x1x64xf32> attributes {fbt.step = "decode"} {
  %a = fbt.attention %q, %k, %v, %p {num_heads = 4 : i64} : (tensor<2x1x64xf32>, tensor<2x128x64xf32>, tensor<2x128x64xf32>, tensor<2x1xi32>) -> tensor<2x1x64xf32>
  return %a : tensor<2x1x64xf32>
}
