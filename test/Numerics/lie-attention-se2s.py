# RUN: %python %s | FileCheck %s
# CHECK: == lie_attention fused vs -O0: SE2s
# CHECK: all {{[0-9]+}} checks passed
"""Fused lie_attention (-O2) against the -O0 oracle over the declared SE2s,
and at L = 17 the f64 outputs against the independent NumPy reference
(SciPy's logm per pair, in the declared basis), 1e-12.

a scaled and sheared basis of se(2): SE(2)'s closed-form log per pair
(not block-isotropic), mapped through T⁺.
Lengths, adversarial tokens (θ → 0, θ → π) and tolerances as in
test/lib/attention_suite.py.
"""
from attention_suite import run_group

report, _, _ = run_group("SE2s", reference_lengths=(17,))
report.finish()
