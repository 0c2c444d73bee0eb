//===- LieCanonicalize.td - Lie algebraic rewrites ---------*- tablegen -*-===//
//
// Local algebraic identities, each written above its pattern.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_LIE_CANONICALIZE
#define TORSOR_LIE_CANONICALIZE

include "mlir/IR/PatternBase.td"
include "dialects/Lie/IR/LieOps.td"

// Both ops of a pattern must work in the same group.
def SameGroup : Constraint<CPred<"$0 == $1">, "ops in the same group">;

// inverse(inverse(x)) -> x
def InverseInverse : Pat<(Lie_InverseOp (Lie_InverseOp $x, $g1), $g2),
                         (replaceWithValue $x), [(SameGroup $g1, $g2)]>;

// exp(log(g)) -> g      (NOT the reverse: log(exp(v)) = v only inside the
//                        chart, e.g. |θ| < π; see LogOp::fold)
def ExpLog : Pat<(Lie_ExpOp (Lie_LogOp $g, $g1), $g2),
                 (replaceWithValue $g), [(SameGroup $g1, $g2)]>;

#endif // TORSOR_LIE_CANONICALIZE
