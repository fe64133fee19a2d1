// RUN: fbt-opt %s --fbt-to-kernels=target=gpu | FileCheck %s
// RUN: not fbt-opt %s --fbt-to-kernels=target=tpu 2>&1 | FileCheck %s --check-prefix=BAD

// With target=gpu the same kernels are mapped to GPU blocks and threads: a
// norm is a row grid (a block of 64 threads per row of 64), its mean square a
// block reduction (warp butterfly, then shared memory across the 2 warps);
// the scale gradient is zeroed in a first grid (a thread per channel), then
// each row adds its share atomically.

// CHECK-LABEL: func.func @k0_rmsnorm
// CHECK: scf.parallel
// CHECK: memref.alloca() : memref<32xf32, #gpu.address_space<workgroup>>
// CHECK: gpu.thread_id x
// CHECK: scf.for %{{.*}} = %thread_id_x to %c64{{.*}} step %c64
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK: gpu.barrier
// CHECK: gpu.barrier
// CHECK: math.rsqrt
// CHECK: } {fbt.map = "rows", fbt.threads = 64 : i64}

// CHECK-LABEL: func.func @k1_rmsnorm_grad
// CHECK: scf.parallel
// CHECK: memref.store %{{.*}}, %arg4
// CHECK-NOT: fbt.map
// CHECK: scf.reduce
// CHECK: scf.parallel
// CHECK: memref.atomic_rmw addf %{{.*}}, %arg4
// CHECK: } {fbt.map = "rows", fbt.threads = 64 : i64}

// BAD: for the --target option: Cannot find option named 'tpu'!
func.func @step(%x: tensor<2x4x64xf32>, %s: tensor<64xf32>, %dy: tensor<2x4x64xf32>)
    -> (tensor<2x4x64xf32>, tensor<2x4x64xf32>, tensor<64xf32>) attributes {fbt.step = "train"} {
  %n = fbt.rmsnorm %x, %s {epsilon = 1.0e-5 : f64} : (tensor<2x4x64xf32>, tensor<64xf32>) -> tensor<2x4x64xf32>
  %dx, %ds = fbt.rmsnorm_grad %dy, %x, %s {epsilon = 1.0e-5 : f64} : (tensor<2x4x64xf32>, tensor<2x4x64xf32>, tensor<64xf32>) -> (tensor<2x4x64xf32>, tensor<64xf32>)
  return %n, %dx, %ds : tensor<2x4x64xf32>, tensor<2x4x64xf32>, tensor<64xf32>
}
