// RUN: fbt-opt %s --fbt-to-kernels="target=gpu configs=k1_rmsnorm:row_threads=512" | FileCheck %s
// RUN: not fbt-opt %s --fbt-to-kernels="target=gpu tune-space=default configs=k1_rmsnorm:row_threads=512" 2>&1 | FileCheck %s --check-prefix=BOTH
// RUN: not fbt-opt %s --fbt-to-kernels="target=gpu configs=k1_rmsnorm:threads=512" 2>&1 | FileCheck %s --check-prefix=KNOB
// RUN: not fbt-opt %s --fbt-to-kernels="target=gpu configs=k7_rmsnorm:row_threads=512" 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not fbt-opt %s --fbt-to-kernels="target=cpu configs=k1_rmsnorm:row_threads=512" 2>&1 | FileCheck %s --check-prefix=OTHER

// configs (fbtc --tuned): the named kernel built as given, nothing else, and
// only if the configuration is the one such a kernel is built with: a cache
// tuned for another build of the model is refused by name.

// CHECK: func.func @k0_rmsnorm({{.*}}) attributes {fbt.config = {row_threads = 32 : i64}, fbt.kernel}
// CHECK: func.func @k1_rmsnorm({{.*}}) attributes {fbt.config = {row_threads = 512 : i64}, fbt.kernel}
// CHECK: fbt.threads = 512
// CHECK-NOT: __v

// BOTH: configs and tune-space exclude each other
// KNOB: configs: 'k1_rmsnorm:threads=512': unknown knob 'threads'
// MISSING: configs: this module has no kernel 'k7_rmsnorm' (tuned for another build of the model?)
// OTHER: configs: kernel 'k1_rmsnorm' builds as {grain=0}, not {row_threads=512}
func.func @step(%x: tensor<2x4x16xf32>, %s: tensor<16xf32>, %big: tensor<64x4x128xf32>, %t: tensor<128xf32>)
    -> (tensor<2x4x16xf32>, tensor<64x4x128xf32>) attributes {fbt.step = "eval"} {
  %n = fbt.rmsnorm %x, %s {epsilon = 1.0e-5 : f64} : (tensor<2x4x16xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
  %m = fbt.rmsnorm %big, %t {epsilon = 1.0e-5 : f64} : (tensor<64x4x128xf32>, tensor<128xf32>) -> tensor<64x4x128xf32>
  return %n, %m : tensor<2x4x16xf32>, tensor<64x4x128xf32>
}
