// RUN: fbt-opt %s --split-input-file --fbt-inference-weights=weights=int8 | FileCheck %s --check-prefix=INT8
// RUN: fbt-opt %s --split-input-file --fbt-inference-weights=weights=bf16 | FileCheck %s --check-prefix=BF16
// RUN: fbt-opt %s --split-input-file --fbt-inference-weights=weights=f32 | FileCheck %s --check-prefix=F32
// RUN: fbt-opt %s --split-input-file --fbt-inference-weights="weights=f32 f32-products=true" | FileCheck %s --check-prefix=F32-PRODUCTS
// RUN: not fbt-opt %s --split-input-file --fbt-inference-weights=weights=int4 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: fbt-opt %s --split-input-file --fbt-inference-weights="weights=int8 activations=int8" | FileCheck %s --check-prefix=A8
// RUN: not fbt-opt %s --split-input-file --fbt-inference-weights="weights=bf16 activations=int8" 2>&1 | FileCheck %s --check-prefix=A8-BAD

// A decode step: its products by parameter matrices read them narrow, each
// parameter's inputs added once however many GEMMs share it (W twice), named
// for the runtime (WeightNames.h); the tied table too. A parameter read only
// narrow is no longer an input (W); the table stays for its lookup (E). A
// product by an activation (A) is left alone.
// INT8-LABEL: func.func @decode
// INT8-SAME: (%arg0: tensor<256x80xf32> {fbt.name = "E", fbt.param}, %arg1: tensor<2x80xf32>,
// INT8-SAME: %arg5: tensor<32x80xi8> {fbt.name = "int8.W"}, %arg6: tensor<32x3xf16> {fbt.name = "int8_scales.W"}
// INT8-SAME: %arg7: tensor<256x80xi8> {fbt.name = "int8.E"}, %arg8: tensor<256x3xf16> {fbt.name = "int8_scales.E"}
// INT8: fbt.embedding %arg0, %arg4
// INT8: fbt.quantized_matmul %arg1, %arg5, %arg6 : (tensor<2x80xf32>, tensor<32x80xi8>, tensor<32x3xf16>) -> tensor<2x32xf32>
// INT8: fbt.quantized_matmul %arg2, %arg5, %arg6 :
// INT8: fbt.quantized_matmul %arg1, %arg7, %arg8 : (tensor<2x80xf32>, tensor<256x80xi8>, tensor<256x3xf16>) -> tensor<2x256xf32>
// INT8: fbt.gemm %arg1, %arg3
// INT8-NOT: fbt.quantized_matmul
// BF16-LABEL: func.func @decode
// BF16-SAME: %arg5: tensor<32x80xbf16> {fbt.name = "bf16.W"}, %arg6: tensor<256x80xbf16> {fbt.name = "bf16.E"}
// BF16: fbt.quantized_matmul %arg1, %arg5 : (tensor<2x80xf32>, tensor<32x80xbf16>) -> tensor<2x32xf32>
// F32-LABEL: func.func @decode
// F32-SAME: {fbt.name = "W", fbt.param}
// F32-NOT: quantized_matmul
// F32-NOT: dequantize
// f32-products (the CPU's pipeline): the few-row products read the f32
// parameter itself in the kernel; no input is added or dropped.
// F32-PRODUCTS-LABEL: func.func @decode
// F32-PRODUCTS-SAME: (%arg0: tensor<32x80xf32> {fbt.name = "W", fbt.param}, %arg1: tensor<256x80xf32> {fbt.name = "E", fbt.param}
// F32-PRODUCTS-NOT: int8
// F32-PRODUCTS: fbt.quantized_matmul %arg2, %arg0 : (tensor<2x80xf32>, tensor<32x80xf32>) -> tensor<2x32xf32>
// F32-PRODUCTS: fbt.quantized_matmul %arg3, %arg0 :
// F32-PRODUCTS: fbt.quantized_matmul %arg2, %arg1 : (tensor<2x80xf32>, tensor<256x80xf32>) -> tensor<2x256xf32>
// F32-PRODUCTS: fbt.gemm %arg2, %arg4
// F32-PRODUCTS-LABEL: func.func @prefill
// F32-PRODUCTS-NOT: dequantize
// F32-PRODUCTS: fbt.gemm %arg1, %arg0 {k = 80 : i64, m = 17 : i64
// F32-PRODUCTS: fbt.quantized_matmul %arg2, %arg0 : (tensor<16x80xf32>, tensor<32x80xf32>) -> tensor<16x32xf32>
// BAD: fbt-inference-weights: weights must be one of "f32", "bf16", "int8", not 'int4'
// With int8 activations every product multiplies in integers, the wide
// ones too: nothing is dequantized.
// A8-LABEL: func.func @decode
// A8: fbt.quantized_matmul %arg1, %arg5, %arg6 {int8_activations} :
// A8-LABEL: func.func @prefill
// A8-NOT: fbt.dequantize
// A8: fbt.quantized_matmul %arg0, %arg2, %arg3 {int8_activations} : (tensor<17x80xf32>
// A8: fbt.quantized_matmul %arg1, %arg2, %arg3 {int8_activations} :
// A8-BAD: fbt-inference-weights: activations must be "f32", or "int8" with int8 weights, not 'int8'
func.func @decode(%W: tensor<32x80xf32> {fbt.param, fbt.name = "W"},
                  %E: tensor<256x80xf32> {fbt.param, fbt.name = "E"},
                  %x: tensor<2x80xf32>, %x2: tensor<2x80xf32>, %A: tensor<32x80xf32>, %ids: tensor<2x1xi32>)
    -> (tensor<2x32xf32>, tensor<2x32xf32>, tensor<2x256xf32>, tensor<2x32xf32>, tensor<2x1x80xf32>) attributes {fbt.step = "decode"} {
  %e = fbt.embedding %E, %ids : (tensor<256x80xf32>, tensor<2x1xi32>) -> tensor<2x1x80xf32>
  %y = fbt.gemm %x, %W {k = 80 : i64, m = 2 : i64, n = 32 : i64, transpose_rhs} : (tensor<2x80xf32>, tensor<32x80xf32>) -> tensor<2x32xf32>
  %y2 = fbt.gemm %x2, %W {k = 80 : i64, m = 2 : i64, n = 32 : i64, transpose_rhs} : (tensor<2x80xf32>, tensor<32x80xf32>) -> tensor<2x32xf32>
  %l = fbt.gemm %x, %E {k = 80 : i64, m = 2 : i64, n = 256 : i64, transpose_rhs} : (tensor<2x80xf32>, tensor<256x80xf32>) -> tensor<2x256xf32>
  %a = fbt.gemm %x, %A {k = 80 : i64, m = 2 : i64, n = 32 : i64, transpose_rhs} : (tensor<2x80xf32>, tensor<32x80xf32>) -> tensor<2x32xf32>
  return %y, %y2, %l, %a, %e : tensor<2x32xf32>, tensor<2x32xf32>, tensor<2x256xf32>, tensor<2x32xf32>, tensor<2x1x80xf32>
}

// -----

// A prefill past gemv-rows (16): the weight is dequantized for the library
// GEMM; one of 16 rows stays a quantized_matmul.
// INT8-LABEL: func.func @prefill
// INT8: %[[W:.*]] = fbt.dequantize %arg2, %arg3 : (tensor<32x80xi8>, tensor<32x3xf16>) -> tensor<32x80xf32>
// INT8: fbt.gemm %arg0, %[[W]] {k = 80 : i64, m = 17 : i64, n = 32 : i64, transpose_rhs}
// INT8: fbt.quantized_matmul %arg1, %arg2, %arg3 : (tensor<16x80xf32>, tensor<32x80xi8>, tensor<32x3xf16>) -> tensor<16x32xf32>
// BF16-LABEL: func.func @prefill
// BF16: fbt.dequantize %arg2 : (tensor<32x80xbf16>) -> tensor<32x80xf32>
func.func @prefill(%W: tensor<32x80xf32> {fbt.param, fbt.name = "W"},
                   %x: tensor<17x80xf32>, %x16: tensor<16x80xf32>)
    -> (tensor<17x32xf32>, tensor<16x32xf32>) attributes {fbt.step = "prefill"} {
  %y = fbt.gemm %x, %W {k = 80 : i64, m = 17 : i64, n = 32 : i64, transpose_rhs} : (tensor<17x80xf32>, tensor<32x80xf32>) -> tensor<17x32xf32>
  %z = fbt.gemm %x16, %W {k = 80 : i64, m = 16 : i64, n = 32 : i64, transpose_rhs} : (tensor<16x80xf32>, tensor<32x80xf32>) -> tensor<16x32xf32>
  return %y, %z : tensor<17x32xf32>, tensor<16x32xf32>
}

// -----

// Training steps keep their f32 weights (AdamW updates the masters).
// INT8-LABEL: func.func @train
// INT8-SAME: {fbt.name = "W", fbt.param}
// INT8-NOT: quantized_matmul
// INT8-NOT: dequantize
// INT8-NOT: int8.W
func.func @train(%W: tensor<32x80xf32> {fbt.param, fbt.name = "W"}, %x: tensor<2x80xf32>)
    -> tensor<2x32xf32> attributes {fbt.step = "train"} {
  %y = fbt.gemm %x, %W {k = 80 : i64, m = 2 : i64, n = 32 : i64, transpose_rhs} : (tensor<2x80xf32>, tensor<32x80xf32>) -> tensor<2x32xf32>
  return %y : tensor<2x32xf32>
}

// -----

// A result that updates an input in place (a cache) keeps pointing at it
// after the parameters before it are dropped.
// INT8-LABEL: func.func @cache
// INT8-SAME: (%arg0: tensor<2x80xf32>, %arg1: tensor<4x80xf32>,
// INT8-SAME: -> (tensor<2x32xf32>, tensor<4x80xf32> {fbt.updates = 1 : i64})
func.func @cache(%W: tensor<32x80xf32> {fbt.param, fbt.name = "W"}, %x: tensor<2x80xf32>,
                 %kv: tensor<4x80xf32>)
    -> (tensor<2x32xf32>, tensor<4x80xf32> {fbt.updates = 2 : i64}) attributes {fbt.step = "decode"} {
  %y = fbt.gemm %x, %W {k = 80 : i64, m = 2 : i64, n = 32 : i64, transpose_rhs} : (tensor<2x80xf32>, tensor<32x80xf32>) -> tensor<2x32xf32>
  return %y, %kv : tensor<2x32xf32>, tensor<4x80xf32>
}
