//===- LieGeoRules.cpp - VJPs of lie ops and the Lie/Grassmann layers -----===//
//
// The rules for `lie.*`, `geo.lie_attention` and `geo.grassmann_mix`, and
// the group-input hook that turns an ambient matrix cotangent into the
// left-trivialised gradient in algebra coordinates (VJP.h). Written by the
// group-model side of the autodiff work; empty until then, so models with
// group inputs report "no gradient rule for 'lie.…'".
//
//===----------------------------------------------------------------------===//

#include "compiler/Autodiff/VJP.h"

using namespace torsor::autodiff;

void torsor::autodiff::registerLieGeoVJPRules(VJPRegistry &registry) {
  (void)registry;
}
