// RUN: fbt-opt %s --fbt-to-kernels="target=cpu" | FileCheck %s
// RUN: fbt-opt %s --fbt-to-kernels="target=cpu configs=k0_quantized_matmul:grain=0:parallel=1:prefetch=0" | FileCheck %s --check-prefix=NONE
// RUN: fbt-opt %s --fbt-to-kernels="target=cpu tune-space=default" | FileCheck %s --check-prefix=SPACE

// A CPU product by narrow weights prefetches each line of its weight rows
// Knob::Prefetch bytes ahead of its reads (8 KiB by default: one thread
// streaming the weights waits on memory), which `fbt tune` may turn off; a
// product by the f32 parameter leaves it to the hardware and has no knob.

// CHECK-LABEL: func.func @k0_quantized_matmul
// CHECK-SAME: fbt.config = {grain = 0 : i64, parallel = 1 : i64, prefetch = 8192 : i64}
// CHECK: memref.prefetch %{{.*}}[%{{.*}}], read, locality<3>, data : memref<102400xi8>
// CHECK-LABEL: func.func @k1_quantized_matmul
// CHECK-SAME: fbt.config = {grain = 0 : i64, parallel = 1 : i64}
// CHECK-NOT: memref.prefetch
// CHECK: return

// NONE-LABEL: func.func @k0_quantized_matmul
// NONE-SAME: prefetch = 0 : i64
// NONE-NOT: memref.prefetch
// NONE: return

// SPACE-DAG: @k0_quantized_matmul__v{{[0-9]+}}({{.*}}) attributes {fbt.config = {grain = 0 : i64, parallel = 1 : i64, prefetch = 0 : i64}
// SPACE-DAG: @k0_quantized_matmul__v{{[0-9]+}}({{.*}}) attributes {fbt.config = {parallel = 0 : i64, prefetch = 0 : i64}
func.func @step(%x: tensor<1x320xf32>, %w: tensor<320x320xi8>, %s: tensor<320x10xf16>,
                %f: tensor<320x320xf32>) -> (tensor<1x320xf32>, tensor<1x320xf32>)
    attributes {fbt.step = "decode"} {
  %y = fbt.quantized_matmul %x, %w, %s : (tensor<1x320xf32>, tensor<320x320xi8>, tensor<320x10xf16>) -> tensor<1x320xf32>
  %z = fbt.quantized_matmul %x, %f : (tensor<1x320xf32>, tensor<320x320xf32>) -> tensor<1x320xf32>
  return %y, %z : tensor<1x320xf32>, tensor<1x320xf32>
}
