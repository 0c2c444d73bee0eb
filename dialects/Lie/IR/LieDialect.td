//===- LieDialect.td - Lie group dialect definition --------*- tablegen -*-===//
//
// The `lie` dialect: matrix Lie group elements and their algebra.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_LIE_DIALECT
#define TORSOR_LIE_DIALECT

include "mlir/IR/OpBase.td"

def Lie_Dialect : Dialect {
  let name = "lie";
  let summary = "Matrix Lie groups: elements, algebra coordinates, exp/log";
  let description = [{
    Group elements are homogeneous n×n matrices stored in the last two
    dimensions of a tensor; every leading dimension is a batch dimension.
    Algebra elements are coordinate vectors in the last dimension, in the
    orthonormal basis fixed by the group's model (see GroupModel.h).
    Which group an op works in is the `#lie.group<...>` attribute; all
    group-specific math lives behind the group model interface.
  }];
  let cppNamespace = "::torsor::lie";
  let useDefaultAttributePrinterParser = 1;
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect"
  ];
  let extraClassDeclaration = [{
    void registerAttributes();
  }];
}

class Lie_Op<string mnemonic, list<Trait> traits = []>
    : Op<Lie_Dialect, mnemonic, traits>;

#endif // TORSOR_LIE_DIALECT
