// RUN: fbt-opt %s --fbt-to-kernels="target=cpu tune-space=default" | FileCheck %s
// RUN: fbt-opt %s --fbt-to-kernels="target=cpu configs=k0_quantized_matmul:parallel=0:prefetch=8192" | FileCheck %s --check-prefix=SERIAL

// A CPU product by narrow weights asks for Knob::Parallel: whether its grid
// over the weight's rows forks the OpenMP threads (1, the default, with a
// grain) or runs on the calling thread (0: no chunks, so no grain), which
// `fbt tune` measures on the machine at hand. The tuning space holds the
// serial build once per prefetch distance (to-kernels-prefetch.mlir), not
// once per grain.

// CHECK: func.func @k0_quantized_matmul({{.*}}) attributes {fbt.config = {grain = 0 : i64, parallel = 1 : i64, prefetch = 8192 : i64}, fbt.kernel}
// CHECK: func.func @k0_quantized_matmul__v1({{.*}}) attributes {fbt.config = {parallel = 0 : i64, prefetch = 0 : i64}, fbt.kernel, fbt.variant_of = @k0_quantized_matmul}
// CHECK: func.func @k0_quantized_matmul__v2({{.*}}) attributes {fbt.config = {parallel = 0 : i64, prefetch = 8192 : i64}
// CHECK: func.func @k0_quantized_matmul__v3({{.*}}) attributes {fbt.config = {grain = 0 : i64, parallel = 1 : i64, prefetch = 0 : i64}
// CHECK: func.func @k0_quantized_matmul__v4({{.*}}) attributes {fbt.config = {grain = 1 : i64, parallel = 1 : i64, prefetch = 0 : i64}
// CHECK: func.func @k0_quantized_matmul__v5({{.*}}) attributes {fbt.config = {grain = 1 : i64, parallel = 1 : i64, prefetch = 8192 : i64}
// CHECK: func.func @k0_quantized_matmul__v6({{.*}}) attributes {fbt.config = {grain = 8 : i64, parallel = 1 : i64, prefetch = 0 : i64}
// CHECK: func.func @k0_quantized_matmul__v7({{.*}}) attributes {fbt.config = {grain = 8 : i64, parallel = 1 : i64, prefetch = 8192 : i64}
// CHECK-NOT: k0_quantized_matmul__v8

// SERIAL: func.func @k0_quantized_matmul({{.*}}) attributes {fbt.config = {parallel = 0 : i64, prefetch = 8192 : i64}, fbt.kernel}

// Lowered for the CPU, the serial builds fork nowhere, the others once:
// test/codegen/parallel-forks.test (small's whole tuning space, long).
func.func @step(%x: tensor<1x320xf32>, %w: tensor<320x320xi8>, %s: tensor<320x10xf16>)
    -> tensor<1x320xf32> attributes {fbt.step = "decode"} {
  %y = fbt.quantized_matmul %x, %w, %s : (tensor<1x320xf32>, tensor<320x320xi8>, tensor<320x10xf16>) -> tensor<1x320xf32>
  return %y : tensor<1x320xf32>
}
