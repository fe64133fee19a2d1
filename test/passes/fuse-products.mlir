// RUN: fbt-opt %s --fbt-fuse-products | FileCheck %s
// RUN: fbt-opt %s --fbt-fuse-products --fbt-to-kernels | FileCheck %s --check-prefix=KERNEL
// RUN: not fbt-opt %s --fbt-fuse-products --fbt-to-kernels=target=gpu 2>&1 | FileCheck %s --check-prefix=GPU

// Products of one input by weights of one form become one call, where the
// first of them was (q and k here: int8 with scales, their scales after
// the weights). A product of another input (o) or another form (the bf16
// one) is left alone, and so is one whose activations differ.
// CHECK-LABEL: func.func @decode
// CHECK: %[[QK:.*]]:2 = fbt.quantized_matmuls %arg0, [%arg2, %arg4], [%arg3, %arg5] : (tensor<1x64xf32>, tensor<64x64xi8>, tensor<32x64xi8>, tensor<64x2xf16>, tensor<32x2xf16>) -> (tensor<1x64xf32>, tensor<1x32xf32>)
// CHECK: fbt.quantized_matmul %arg0, %arg6 : (tensor<1x64xf32>, tensor<48x64xbf16>)
// CHECK: fbt.quantized_matmul %arg1, %arg2, %arg3 :
// CHECK: fbt.quantized_matmul %arg0, %arg2, %arg3 {int8_activations} :
// CHECK: return %[[QK]]#0, %[[QK]]#1,
// The CPU's kernel: the input, the weights, their scales, the results.
// KERNEL: fbt.call_kernel @k0_quantized_matmuls(%arg0, %arg2, %arg4, %arg3, %arg5)
// KERNEL: func.func @k0_quantized_matmuls(%arg0: memref<64xf32> {llvm.noalias}, %arg1: memref<4096xi8> {llvm.noalias}, %arg2: memref<2048xi8> {llvm.noalias}, %arg3: memref<128xf16> {llvm.noalias}, %arg4: memref<64xf16> {llvm.noalias}, %arg5: memref<64xf32> {llvm.noalias}, %arg6: memref<32xf32> {llvm.noalias})
// GPU: 'fbt.quantized_matmuls' op is for the CPU target (fbt-fuse-products)
func.func @decode(%x: tensor<1x64xf32>, %y: tensor<1x64xf32>, %wq: tensor<64x64xi8>, %sq: tensor<64x2xf16>,
                  %wk: tensor<32x64xi8>, %sk: tensor<32x2xf16>, %wb: tensor<48x64xbf16>)
    -> (tensor<1x64xf32>, tensor<1x32xf32>, tensor<1x48xf32>, tensor<1x64xf32>, tensor<1x64xf32>) attributes {fbt.step = "decode"} {
  %q = fbt.quantized_matmul %x, %wq, %sq : (tensor<1x64xf32>, tensor<64x64xi8>, tensor<64x2xf16>) -> tensor<1x64xf32>
  %b = fbt.quantized_matmul %x, %wb : (tensor<1x64xf32>, tensor<48x64xbf16>) -> tensor<1x48xf32>
  %o = fbt.quantized_matmul %y, %wq, %sq : (tensor<1x64xf32>, tensor<64x64xi8>, tensor<64x2xf16>) -> tensor<1x64xf32>
  %k = fbt.quantized_matmul %x, %wk, %sk : (tensor<1x64xf32>, tensor<32x64xi8>, tensor<32x2xf16>) -> tensor<1x32xf32>
  %a = fbt.quantized_matmul %x, %wq, %sq {int8_activations} : (tensor<1x64xf32>, tensor<64x64xi8>, tensor<64x2xf16>) -> tensor<1x64xf32>
  return %q, %k, %b, %o, %a : tensor<1x64xf32>, tensor<1x32xf32>, tensor<1x48xf32>, tensor<1x64xf32>, tensor<1x64xf32>
}
