//===- LieEnums.td - Lie dialect enums ---------------------*- tablegen -*-===//
//
// Which lie op a lie.pullback differentiates. An enum rather than a string,
// so a misspelt kind is a parse error and every switch over it is checked
// for completeness by the compiler.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_LIE_ENUMS
#define TORSOR_LIE_ENUMS

include "mlir/IR/EnumAttr.td"

def Lie_PullbackKind : I32EnumAttr<"PullbackKind",
    "the lie op a pullback differentiates", [
      I32EnumAttrCase<"Compose", 0, "compose">,               // (a, b) → a·b
      I32EnumAttrCase<"Inverse", 1, "inverse">,               // g → g⁻¹
      I32EnumAttrCase<"Log", 2, "log">,                       // g → log g
      I32EnumAttrCase<"Exp", 3, "exp">,                       // v → exp v
      I32EnumAttrCase<"Act", 4, "act">,                       // (g, p) → g·p
      I32EnumAttrCase<"Dist2", 5, "dist2">,                   // (a, b) → ‖log(a⁻¹b)‖²_λ
      I32EnumAttrCase<"QueryFeatures", 6, "query_features">,  // g → query pair features
      I32EnumAttrCase<"KeyFeatures", 7, "key_features">,      // g → key pair features
      // Not an op: ambient cotangent Ḡ at g → left-trivialised η (k).
      I32EnumAttrCase<"LeftTrivialize", 8, "left_trivialize">
    ]> {
  let cppNamespace = "::torsor::lie";
}

#endif // TORSOR_LIE_ENUMS
