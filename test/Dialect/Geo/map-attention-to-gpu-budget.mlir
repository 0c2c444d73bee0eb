// RUN: torsor-opt %s --geo-map-attention-to-gpu="key-tile=512 score-chunk=16" --verify-diagnostics
// The key tile must fit the shared-memory budget (48 KiB by default):
// 512 keys × (64 + 9) f32 = 149504 bytes.
func.func @too_big(%q: tensor<?x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x64xf32>, %init: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{GPU attention key tile needs 149504 bytes of shared memory (BK = 512 keys of 9 features and 64 values), over the budget of 49152; use a smaller key tile}}
  %o = geo.flash_lie_attention %q, %k, %v, %c0, %init {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0]>} : (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x64xf32>, index, tensor<?x64xf32>) -> tensor<?x64xf32>
  return %o : tensor<?x64xf32>
}
