//===- LieInterfaces.td - Lie dialect op interfaces --------*- tablegen -*-===//
//
// The element-op interface: every lie op is element-wise over its batch
// dims, and what differs between ops is only which operands it reads, how
// many trailing dims make one element, and which group-model builder makes
// one element's result. The interface states exactly that, so
// convert-lie-to-arith is one pattern over it.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_LIE_INTERFACES
#define TORSOR_LIE_INTERFACES

include "mlir/IR/OpBase.td"

def Lie_ElementOpInterface : OpInterface<"ElementOpInterface"> {
  let description = [{
    An op that is element-wise over its batch dims: iteration i reads
    element i of each of its element operands (their trailing dims form one
    element) and writes element i of its single result. The group model
    builds one element's result scalars from the operands' scalars
    (`buildElement`), so a lowering needs only a loop nest around it
    (compiler/Conversion/LieToArith).
  }];
  let cppNamespace = "::torsor::lie";
  let methods = [
    InterfaceMethod<[{
        The operands one element is built from, in order, each with the
        number of trailing dims that form one element (2 for group
        elements, 1 for vectors, 0 for scalars).
      }],
      "::llvm::SmallVector<::torsor::lie::ElementOperand>",
      "getElementOperands">,
    InterfaceMethod<[{
        How many trailing dims of the result form one element.
      }],
      "unsigned", "getResultElementRank">,
    InterfaceMethod<[{
        The result's dynamic batch sizes, for an op without element
        operands to take its batch extents from (lie.identity); empty
        otherwise.
      }],
      "::mlir::ValueRange", "getDynamicBatchSizes", (ins), [{}], [{
        return {};
      }]>,
    InterfaceMethod<[{
        Builds one element's result scalars (row-major over the result
        element) from each element operand's scalars through the group
        model. Fails when the model cannot build it as straight-line code
        where that is required (lie.pullback of a looping formula).
      }],
      "::mlir::FailureOr<::torsor::lie::Scalars>", "buildElement",
      (ins "::torsor::lie::ScalarBuilder &":$m,
           "::llvm::ArrayRef<::torsor::lie::Scalars>":$operands)>,
    InterfaceMethod<[{
        Checks, before any IR is built, that `buildElement` will succeed;
        reports the reason on the op otherwise.
      }],
      "::mlir::LogicalResult", "verifyElementLowering", (ins), [{}], [{
        return ::mlir::success();
      }]>,
  ];
}

#endif // TORSOR_LIE_INTERFACES
