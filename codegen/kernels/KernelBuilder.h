//===- KernelBuilder.h - a small DSL for writing kernels in IR --*- C++ -*-===//
//
// Kernels are func.func ops over flat (1-D) memrefs, built from scf loops and
// arith/math ops. A kernel's top level is a sequence of grids, each an
// scf.parallel over independent iterations: the CPU target runs them as
// loops; the GPU target launches each one as its own kernel, in order
// (codegen/nvptx/GpuKernels.h), so a later grid sees everything an earlier one
// wrote. KernelBuilder keeps the generators short and readable:
//
//   kb.rows(rows, 256, [&](Value r) {
//     Value ss = kb.rowSum(cols, [&](Value c) { Value v = kb.load(x, r*cols+c); return v*v; });
//     kb.rowLoop(cols, [&](Value c) { ... });
//   });
//
// Two kinds of grid:
//   parallel(n, body)   one GPU thread per iteration (elementwise work);
//   rows(n, T, body)    one GPU block of T threads per iteration: inside it,
//                       rowLoop splits a loop across the block's threads and
//                       rowSum/rowMax are block reductions (warp shuffles,
//                       then shared memory across warps).
// On the CPU both are the same loop and the row primitives are plain loops
// and sums, so the CPU's numerics do not depend on the GPU mapping.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_CODEGEN_KERNELS_KERNELBUILDER_H
#define FBT_CODEGEN_KERNELS_KERNELBUILDER_H

#include "codegen/kernels/KernelConfig.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <functional>

namespace mlir::fbt {

class KernelBuilder {
public:
  /// Starts `name(args...)` at the builder's point, args being flat memrefs
  /// of `types`' element types and element counts. The body is open until
  /// finish().
  KernelBuilder(OpBuilder &b, Location loc, StringRef name,
                ArrayRef<Type> elementTypes, ArrayRef<int64_t> sizes,
                KernelTarget target = KernelTarget::Cpu);

  bool gpu() const { return target == KernelTarget::Gpu; }
  /// The vectors the CPU target's products are written in (AVX2's unless set).
  void setCpuVectors(CpuVectors v) { cpuVectors_ = v; }
  CpuVectors cpuVectors() const { return cpuVectors_; }

  /// The knob values to build with instead of the generators' own.
  void configure(const KernelConfig &c) { config = c; }
  /// A knob's value: the configured one, else `fallback` (the generator's
  /// choice). Recorded: finish() writes every knob asked for, with its
  /// value, as the kernel's `fbt.config`.
  int64_t knob(Knob k, int64_t fallback);
  /// Asks for Knob::Parallel where the CPU target may fork for this kernel
  /// (its buffers large enough): whether its grids share their iterations
  /// among the OpenMP threads (1) or run on the calling thread (0).
  void askParallel(int64_t fallback);
  /// The knobs asked for so far, with their values.
  const KernelConfig &knobs() const { return used; }

  func::FuncOp finish();
  Value arg(unsigned i) { return fn.getArgument(i); }

  // Constants.
  Value index(int64_t v);
  Value f32(double v);
  Value i64(int64_t v);

  // Memory (flat index). Floats are f32 in registers whatever the storage:
  // a bf16 or f16 buffer's loads widen, its stores round to nearest even.
  Value load(Value mem, Value idx);
  void store(Value v, Value mem, Value idx);
  /// kVector elements from mem[idx] as f32 lanes (CPU), widened from the
  /// buffer's bf16 or f16 where narrower.
  Value loadVector(Value mem, Value idx);
  /// A hint that mem[idx]'s cache line will be read soon (CPU: a prefetch
  /// into every level of the cache).
  void prefetch(Value mem, Value idx);

  // Loops. parallel() is the kernel's grid: independent iterations.
  void parallel(int64_t n, function_ref<void(Value)> body);
  void loop(int64_t n, function_ref<void(Value)> body);
  void loop(Value lo, Value hi, function_ref<void(Value)> body);
  void loop(Value lo, Value hi, Value step, function_ref<void(Value)> body);
  /// A grid over rows x cols elements: body(row, col). On the CPU, a parallel
  /// loop over rows with an inner loop (vectorizable); on the GPU, one thread
  /// per element, so neighbouring threads touch neighbouring addresses.
  void elements(int64_t rows, int64_t cols,
                function_ref<void(Value, Value)> body);

  // Row-cooperative grids (see the file comment). `threads` is a multiple of
  // 32, at most 1024 (a Knob::RowThreads the generator may expose). Inside rows(), every thread of the block must reach
  // each rowSum/rowMax/rowSync: keep them out of conditionals.
  void rows(int64_t n, int64_t threads, function_ref<void(Value)> body);
  void rowLoop(int64_t n, function_ref<void(Value)> body);
  Value rowSum(int64_t n, function_ref<Value(Value)> term);
  Value rowMax(int64_t n, function_ref<Value(Value)> term);
  /// Orders the block's earlier stores before its later loads (a barrier on
  /// the GPU; nothing on the CPU).
  void rowSync();
  /// Runs `then` once per row (in thread 0 on the GPU).
  void rowLeader(function_ref<void()> then);
  /// The sum over the 32 lanes of a warp, in every lane (rows() of 32
  /// threads on the GPU); the value itself on the CPU.
  Value warpSum(Value v);
  /// This thread's index within the row's block (0 on the CPU).
  Value rowThread();
  /// `n` floats of the row block's shared memory (GPU rows() only).
  Value sharedBuffer(int64_t n);
  int64_t rowThreads() const { return gpu() ? threads : 1; }
  /// `n` floats of scratch for one iteration of the current CPU grid: each
  /// thread has its own (the CPU target hoists it to the thread's frame), so
  /// its contents are undefined when an iteration starts. Asked for outside
  /// any grid, it is the calling thread's, which the grids after it share.
  Value scratch(int64_t n);
  /// The same, of `n` elements of `element`.
  Value scratch(int64_t n, Type element);

  /// mem[idx] += v, atomically on the GPU (a plain update on the CPU, whose
  /// grids run in order).
  void atomicAdd(Value v, Value mem, Value idx);
  /// Sum over [0, n) (f32), in a loop-carried accumulator.
  Value sum(int64_t n, function_ref<Value(Value)> term);
  /// acc + v as a step of a sum whose order may be changed: on the CPU, LLVM
  /// may then vectorize the loop carrying it (partial sums in vector lanes,
  /// added at the end). The order is still fixed by the compiled code, so
  /// results stay deterministic.
  Value accumulate(Value acc, Value v);
  /// A loop carrying several values: body(iv, carried) -> next values.
  SmallVector<Value> fold(Value lo, Value hi, ValueRange init,
                          function_ref<SmallVector<Value>(Value, ValueRange)> body);
  SmallVector<Value> fold(Value lo, Value hi, Value step, ValueRange init,
                          function_ref<SmallVector<Value>(Value, ValueRange)> body);
  /// sum_{c<n} a[aBase + c] * b[bBase + c] (f32 buffers). On the CPU in
  /// vectors of kVector lanes, as independent products summed as a tree,
  /// then across lanes: no chain of n dependent adds.
  Value dot(Value a, Value aBase, Value b, Value bBase, int64_t n);
  /// y[yBase + c] += alpha * x[xBase + c] for c < n, in vectors on the CPU.
  void axpy(Value alpha, Value x, Value xBase, Value y, Value yBase, int64_t n);
  /// y[yBase + c] += sum_i alphas[i] * x[xBases[i] + c], the terms added in
  /// order: y is loaded and stored once for all of them.
  void axpy(ArrayRef<Value> alphas, Value x, ArrayRef<Value> xBases, Value y,
            Value yBase, int64_t n);
  /// The CPU's vector width in f32 lanes (AVX2).
  static constexpr int64_t kVector = 8;

  /// fold() over iterations that are each vector work along a strided row
  /// (a dot product with a key): on the CPU LLVM is told not to vectorize
  /// across iterations, which would turn every row's loads into gathers.
  SmallVector<Value> foldRows(Value lo, Value hi, ValueRange init,
                              function_ref<SmallVector<Value>(Value, ValueRange)> body);
  void ifThen(Value cond, function_ref<void()> then);
  Value select(Value cond, Value a, Value b);

  // Index arithmetic.
  Value iadd(Value a, Value b);
  Value imul(Value a, Value b);
  Value iadd(Value a, int64_t b) { return iadd(a, index(b)); }
  Value imul(Value a, int64_t b) { return imul(a, index(b)); }
  Value isub(Value a, Value b);
  Value idiv(Value a, int64_t b);
  Value irem(Value a, int64_t b);
  Value icmp(arith::CmpIPredicate p, Value a, Value b);
  Value toIndex(Value intValue);
  Value toF32(Value intOrIndex);

  // Float arithmetic.
  Value add(Value a, Value b);
  Value sub(Value a, Value b);
  Value mul(Value a, Value b);
  Value div(Value a, Value b);
  Value neg(Value a);
  Value max(Value a, Value b);
  Value min(Value a, Value b);
  Value exp(Value a);
  Value log(Value a);
  Value sqrt(Value a);
  Value rsqrt(Value a);
  Value cos(Value a);
  Value sin(Value a);
  Value sigmoid(Value a);
  Value fcmp(arith::CmpFPredicate p, Value a, Value b);

  /// The counter-based uniform in [0, 1) of DESIGN.md (fbt.jitter): seed and
  /// stream are i64, counter an index.
  Value uniform(Value seed, Value stream, Value counter);

  OpBuilder &builder() { return b; }
  Location location() { return loc; }

private:
  Value mix(Value z);
  Value blockReduce(Value v, bool isMax);
  Value scratch();

  OpBuilder &b;
  Location loc;
  func::FuncOp fn;
  KernelTarget target;
  CpuVectors cpuVectors_ = CpuVectors::Avx2;
  KernelConfig config, used;
  int64_t largest = 0;    ///< elements of the largest buffer
  int gridDepth = 0;      ///< parallel() grids open around the point
  int64_t threads = 1;    ///< block size of the enclosing rows() (GPU)
  Value rowScratch;       ///< its shared-memory scratch, made on first use
  Block *rowBody = nullptr;
};

} // namespace mlir::fbt

#endif // FBT_CODEGEN_KERNELS_KERNELBUILDER_H
