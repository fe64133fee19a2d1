//===- PlanPropertyTest.cpp - the memory planner on random steps ----------===//
//
// Builds random straight-line steps of kernel calls (random sizes, operands,
// lifetimes, in-place ties, results returned or updating an input), plans
// each one, and runs the plan on a model of memory in which every 4-byte word
// holds the id of the value last written there. Properties:
//   - every operand, when its op runs, still holds the value it names;
//   - no result shares a word with an operand of its op, other than the
//     operand it is tied to (a kernel reads operands while writing results);
//   - the results of one op do not overlap;
//   - every output, after the step, holds the value returned there;
//   - a result returned with `fbt.updates = i` is written into input i
//     whenever the planner can prove it safe, and never otherwise.
//
//===----------------------------------------------------------------------===//

#include "codegen/plan/StepPlan.h"
#include "dialect/FbtDialect.h"
#include "dialect/FbtOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <map>
#include <random>
#include <string>

using namespace mlir;
using namespace mlir::fbt;

namespace {

struct RandomStep {
  OwningOpRef<ModuleOp> module;
  func::FuncOp step;
};

/// A random step: `inputs` arguments, then ops that each call a kernel of
/// their own on 1..3 earlier values, giving 1..2 results, sometimes tied to
/// an operand of the same type.
RandomStep randomStep(MLIRContext &ctx, std::mt19937 &rng) {
  auto pick = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  OpBuilder b(&ctx);
  Location loc = b.getUnknownLoc();
  RandomStep r;
  r.module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(r.module->getBody());

  // Few distinct sizes, so that ties (which need equal types) are common.
  auto tensorOf = [&] {
    static const int64_t sizes[] = {1, 16, 40, 64, 100};
    return RankedTensorType::get({sizes[pick(0, 4)]}, b.getF32Type());
  };
  SmallVector<Type> argTypes;
  for (int i = 0, n = pick(1, 4); i < n; ++i)
    argTypes.push_back(tensorOf());

  // The ops first (their kernels are declared after).
  struct Call {
    SmallVector<Value> operands;
    SmallVector<Type> results;
    SmallVector<int64_t> tied;
  };
  auto step = func::FuncOp::create(b, loc, "step", b.getFunctionType(argTypes, {}));
  step->setAttr("fbt.step", b.getStringAttr("train"));
  Block *body = step.addEntryBlock();
  SmallVector<Value> values(body->getArguments());
  SmallVector<std::pair<std::string, Call>> kernels;
  b.setInsertionPointToStart(body);
  for (int i = 0, n = pick(1, 24); i < n; ++i) {
    Call c;
    for (int o = 0, k = pick(1, 3); o < k; ++o)
      c.operands.push_back(values[pick(0, (int)values.size() - 1)]);
    for (int res = 0, k = pick(1, 2); res < k; ++res) {
      Type t = tensorOf();
      int64_t tie = -1;
      if (pick(0, 2) == 0) { // tie to the first operand, taking its type
        tie = 0;
        t = c.operands[0].getType();
      }
      if (llvm::is_contained(c.tied, tie))
        tie = -1; // one result per operand
      c.results.push_back(t);
      c.tied.push_back(tie);
    }
    std::string name = "k" + std::to_string(i);
    auto call = CallKernelOp::create(b, loc, c.results, name, c.operands);
    if (llvm::any_of(c.tied, [](int64_t t) { return t >= 0; }))
      call.setTied(c.tied);
    llvm::append_range(values, call.getResults());
    kernels.push_back({name, c});
  }

  // Return a random subset of the computed values; results tied to an
  // argument are returned as that argument's update.
  SmallVector<Value> returned;
  SmallVector<std::pair<unsigned, int64_t>> updates; // (result #, input #)
  for (Value v : ArrayRef<Value>(values).drop_front(argTypes.size())) {
    auto call = cast<CallKernelOp>(v.getDefiningOp());
    int64_t tie = call.getTiedOperand(cast<OpResult>(v).getResultNumber());
    auto arg = tie >= 0 ? dyn_cast<BlockArgument>(call.getInputs()[tie]) : nullptr;
    if (arg && pick(0, 1) == 0)
      updates.push_back({(unsigned)returned.size(), arg.getArgNumber()});
    else if (pick(0, 3) != 0)
      continue;
    returned.push_back(v);
  }
  if (pick(0, 3) == 0) // an argument passed through
    returned.push_back(body->getArgument(0));
  func::ReturnOp::create(b, loc, returned);
  step.setType(b.getFunctionType(argTypes, TypeRange(ValueRange(returned))));
  for (auto [j, input] : updates)
    step.setResultAttr(j, "fbt.updates", b.getI64IntegerAttr(input));

  b.setInsertionPointToEnd(r.module->getBody());
  for (auto &[name, c] : kernels) {
    SmallVector<Type> buffers;
    for (Type t : llvm::concat<Type>(ValueRange(c.operands).getTypes(), c.results))
      buffers.push_back(MemRefType::get(cast<RankedTensorType>(t).getShape(),
                                        b.getF32Type()));
    auto kernel = func::FuncOp::create(b, loc, name, b.getFunctionType(buffers, {}));
    kernel->setAttr("fbt.kernel", b.getUnitAttr());
    OpBuilder kb = OpBuilder::atBlockBegin(kernel.addEntryBlock());
    func::ReturnOp::create(kb, loc);
  }
  r.step = step;
  return r;
}

/// Memory as words tagged with value ids.
struct Memory {
  std::vector<std::vector<int64_t>> inputs, outputs;
  std::vector<int64_t> arena;

  std::vector<int64_t> &region(const BufferRef &ref) {
    switch (ref.kind) {
    case BufferRef::Kind::Input:
      return inputs[ref.index];
    case BufferRef::Kind::Output:
      return outputs[ref.index];
    default:
      return arena;
    }
  }
};

bool overlap(const BufferRef &a, const BufferRef &b) {
  if (a.kind != b.kind || (a.kind != BufferRef::Kind::Arena && a.index != b.index))
    return false;
  return a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
}

/// Checks the properties in the file comment on one random step; returns
/// the number of results written in place into inputs.
int checkStep(MLIRContext &ctx, std::mt19937 &rng, int trial) {
  RandomStep r = randomStep(ctx, rng);
  std::string where = "trial " + std::to_string(trial);
  EXPECT_TRUE(succeeded(verify(*r.module))) << where;
  FailureOr<StepPlan> plan = planStep(r.step);
  EXPECT_TRUE(succeeded(plan)) << where;
  if (failed(plan))
    return 0;

  DenseMap<Value, int64_t> id;
  for (BlockArgument a : r.step.getArguments())
    id[a] = id.size();
  Memory mem;
  for (const TensorSpec &t : plan->inputs)
    mem.inputs.push_back(std::vector<int64_t>(t.bytes / 4, -1));
  for (const TensorSpec &t : plan->outputs)
    mem.outputs.push_back(std::vector<int64_t>(t.bytes / 4, -1));
  mem.arena.assign(plan->arenaBytes / 4, -1);
  for (unsigned i = 0; i < mem.inputs.size(); ++i)
    std::fill(mem.inputs[i].begin(), mem.inputs[i].end(), id[r.step.getArgument(i)]);

  auto holds = [&](const BufferRef &ref, int64_t value) {
    std::vector<int64_t> &words = mem.region(ref);
    for (int64_t w = ref.offset / 4; w < (ref.offset + ref.bytes) / 4; ++w)
      if (w >= (int64_t)words.size() || words[w] != value)
        return false;
    return true;
  };

  size_t next = 0;
  for (Operation &op : r.step.getBody().front().without_terminator()) {
    auto call = cast<CallKernelOp>(op);
    const PlanOp &p = plan->ops[next++];
    unsigned nIn = call.getInputs().size();
    EXPECT_EQ(p.args.size(), nIn + call.getNumResults()) << where;
    for (unsigned o = 0; o < nIn; ++o)
      EXPECT_TRUE(holds(p.args[o], id[call.getInputs()[o]]))
          << where << ": " << call.getKernel().str() << " operand " << o
          << " was overwritten before its last read";
    for (unsigned res = 0; res < call.getNumResults(); ++res) {
      const BufferRef &out = p.args[nIn + res];
      int64_t tie = call.getTiedOperand(res);
      for (unsigned o = 0; o < nIn; ++o) {
        bool sameBuffer = o == tie && out.kind == p.args[o].kind &&
                          out.index == p.args[o].index &&
                          out.offset == p.args[o].offset;
        EXPECT_TRUE(sameBuffer || !overlap(out, p.args[o]))
            << where << ": " << call.getKernel().str() << " result " << res
            << " overlaps operand " << o << ", still being read";
      }
      for (unsigned other = 0; other < res; ++other)
        EXPECT_FALSE(overlap(out, p.args[nIn + other]))
            << where << ": " << call.getKernel().str() << " results overlap";
    }
    for (unsigned res = 0; res < call.getNumResults(); ++res) {
      id[call.getResult(res)] = id.size();
      const BufferRef &out = p.args[nIn + res];
      std::vector<int64_t> &words = mem.region(out);
      for (int64_t w = out.offset / 4; w < (out.offset + out.bytes) / 4; ++w)
        words[w] = id[call.getResult(res)];
    }
  }

  // Copies run after the step, from where their source is.
  auto ret = cast<func::ReturnOp>(r.step.getBody().front().getTerminator());
  std::map<int64_t, BufferRef> copied;
  for (const OutputCopy &c : plan->copies)
    copied[c.output] = c.source;
  int inPlace = 0;
  for (auto [j, v] : llvm::enumerate(ret.getOperands())) {
    const TensorSpec &info = plan->outputs[j];
    BufferRef ref{BufferRef::Kind::Output, (int64_t)j, 0, info.bytes};
    if (copied.count(j))
      ref = copied[j];
    else if (info.updates >= 0)
      ref = {BufferRef::Kind::Input, info.updates, 0, info.bytes}, ++inPlace;
    EXPECT_TRUE(holds(ref, id[v])) << where << ": output " << j
                                   << " does not hold the value returned there";
    auto upd = r.step.getResultAttrOfType<IntegerAttr>(j, "fbt.updates");
    if (info.updates >= 0)
      EXPECT_TRUE(upd && upd.getInt() == info.updates) << where;
  }
  if (testing::Test::HasFailure()) { // the counterexample, and its plan
    r.module->print(llvm::errs());
    llvm::errs() << "\n" << ::fbt::dumpJson(::fbt::toJson(*plan), 2) << "\n";
  }
  return inPlace;
}

TEST(PlanProperty, RandomStepsKeepEveryValueUntilItsLastRead) {
  MLIRContext ctx;
  ctx.loadDialect<FbtDialect, func::FuncDialect, arith::ArithDialect>();
  std::mt19937 rng(20261201);
  int inPlace = 0;
  for (int trial = 0; trial < 3000 && !testing::Test::HasFailure(); ++trial)
    inPlace += checkStep(ctx, rng, trial);
  // The generator exercises the ties: parameters updated in place.
  EXPECT_GT(inPlace, 100);
}

} // namespace
