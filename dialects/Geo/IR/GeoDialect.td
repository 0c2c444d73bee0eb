//===- GeoDialect.td - Geometric sequence dialect definition -*- tablegen -*-===//
//
// The `geo` dialect: sequence-level ops of geometric models (Lie-algebra
// attention, Plücker coordinates, Grassmann mixing, relational attention and
// norm). Each op states a whole layer's math on tensors; the fusion passes
// and the unfused -O0 lowering (convert-geo-to-linalg) decide how it runs.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_GEO_DIALECT
#define TORSOR_GEO_DIALECT

include "mlir/IR/OpBase.td"

def Geo_Dialect : Dialect {
  let name = "geo";
  let summary = "Sequence-level geometric attention and mixing ops";
  let description = [{
    Ops take whole sequences: a token tensor has the shape
    `[batch...] x L x features`, where `L` (usually `?`) is the sequence
    length and any leading dims are batch dims. Group elements carry two more
    trailing dims (n×n homogeneous matrices, as in the `lie` dialect). Dense
    layers around these ops (projections, LayerNorm, FFN, residuals) are
    upstream linalg/arith/math, not geo ops.
  }];
  let cppNamespace = "::torsor::geo";
  // Ops carry `#lie.group<...>` attributes, so parsing geo IR needs `lie`.
  let dependentDialects = ["::torsor::lie::LieDialect"];
  // `#geo.scores<...>` (GeoAttrs.td).
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    void registerAttributes();
  }];
}

class Geo_Op<string mnemonic, list<Trait> traits = []>
    : Op<Geo_Dialect, mnemonic, traits>;

#endif // TORSOR_GEO_DIALECT
