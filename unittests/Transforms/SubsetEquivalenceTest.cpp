//===- SubsetEquivalenceTest.cpp - Cheap equality of tensor slices --------===//
//
// torsor::areEquivalentSlices decides identical and different-constant
// components itself and must still give ValueBounds' answer for the rest;
// torsor::registerAllDialects must attach its models ahead of upstream's.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/SubsetEquivalence.h"
#include "compiler/InitAll.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {

/// %a and %b are unknown indices; %c = %a + 0 equals %a but is another value;
/// %d = %a + 1 differs from %a.
constexpr const char *kValues = R"mlir(
func.func @f(%a: index, %b: index) -> (index, index) {
  %zero = arith.constant 0 : index
  %one = arith.constant 1 : index
  %c = arith.addi %a, %zero : index
  %d = arith.addi %a, %one : index
  return %c, %d : index, index
}
)mlir";

class SubsetEquivalenceTest : public ::testing::Test {
protected:
  void SetUp() override {
    DialectRegistry registry;
    torsor::registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    module = parseSourceString<ModuleOp>(kValues, &context);
    ASSERT_TRUE(module);
    auto f = cast<func::FuncOp>(module->getBody()->front());
    a = f.getArgument(0);
    b = f.getArgument(1);
    Operation *ret = f.getBody().front().getTerminator();
    c = ret->getOperand(0);
    d = ret->getOperand(1);
  }

  OpFoldResult cst(int64_t v) { return Builder(&context).getIndexAttr(v); }

  /// A 2-d slice at [x, y] of size [4, 8], unit strides.
  HyperrectangularSlice at(OpFoldResult x, OpFoldResult y) {
    return HyperrectangularSlice({x, y}, {cst(4), cst(8)}, {cst(1), cst(1)});
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  Value a, b, c, d;
};

TEST_F(SubsetEquivalenceTest, IdenticalComponentsAreEquivalent) {
  FailureOr<bool> eq =
      torsor::areEquivalentSlices(at(a, cst(0)), at(a, cst(0)));
  ASSERT_TRUE(succeeded(eq));
  EXPECT_TRUE(*eq);
}

TEST_F(SubsetEquivalenceTest, LaterDifferenceIsNotHidden) {
  // Equal offsets, then a size that differs.
  HyperrectangularSlice other({a, cst(0)}, {cst(4), cst(9)}, {cst(1), cst(1)});
  FailureOr<bool> eq = torsor::areEquivalentSlices(at(a, cst(0)), other);
  ASSERT_TRUE(succeeded(eq));
  EXPECT_FALSE(*eq);
  // A proven difference decides even next to a component nothing decides.
  eq = torsor::areEquivalentSlices(at(a, cst(0)), at(b, cst(1)));
  ASSERT_TRUE(succeeded(eq));
  EXPECT_FALSE(*eq);
}

TEST_F(SubsetEquivalenceTest, OtherComponentsGoToValueBounds) {
  // %c is %a + 0: a different value that ValueBounds proves equal.
  FailureOr<bool> eq =
      torsor::areEquivalentSlices(at(a, cst(0)), at(c, cst(0)));
  ASSERT_TRUE(succeeded(eq));
  EXPECT_TRUE(*eq);
  // %d is %a + 1: proven different.
  eq = torsor::areEquivalentSlices(at(a, cst(0)), at(d, cst(0)));
  ASSERT_TRUE(succeeded(eq));
  EXPECT_FALSE(*eq);
  // %a and %b: nothing is known, as upstream.
  EXPECT_TRUE(
      failed(torsor::areEquivalentSlices(at(a, cst(0)), at(b, cst(0)))));
}

TEST_F(SubsetEquivalenceTest, AgreesWithUpstream) {
  OpFoldResult values[] = {a, b, c, d, cst(0), cst(3)};
  for (OpFoldResult x : values) {
    for (OpFoldResult y : values) {
      FailureOr<bool> ours =
          torsor::areEquivalentSlices(at(x, cst(0)), at(y, cst(0)));
      FailureOr<bool> upstream = ValueBoundsConstraintSet::areEquivalentSlices(
          &context, at(x, cst(0)), at(y, cst(0)));
      // What a caller acts on: proven equivalent or not.
      EXPECT_EQ(succeeded(ours) && *ours, succeeded(upstream) && *upstream);
    }
  }
}

TEST_F(SubsetEquivalenceTest, TorsorModelsWin) {
  for (StringRef op : {"tensor.extract_slice", "tensor.insert_slice",
                       "tensor.parallel_insert_slice"})
    EXPECT_TRUE(torsor::hasTorsorSubsetModel(OperationName(op, &context)))
        << op.str();
}

TEST(SubsetEquivalenceOrder, UpstreamFirstKeepsUpstreamModels) {
  // The check above can fail: registered after upstream, ours are ignored.
  DialectRegistry registry;
  registerAllDialects(registry);
  torsor::registerSubsetEquivalence(registry);
  MLIRContext context(registry);
  context.getOrLoadDialect<tensor::TensorDialect>();
  EXPECT_FALSE(torsor::hasTorsorSubsetModel(
      OperationName("tensor.insert_slice", &context)));
}

} // namespace
