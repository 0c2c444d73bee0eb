# RUN: %python %s | FileCheck %s
# CHECK: == lie_attention fused vs -O0: SE2c
# CHECK: all {{[0-9]+}} checks passed
"""Fused lie_attention (-O2) against the -O0 oracle over the declared SE2c,
and at L = 17 the f64 outputs against the independent NumPy reference
(SciPy's logm per pair, in the declared basis), 1e-12.

a basis of se(2) whose rotation generator turns about another point and
whose translations are sheared: SE(2)'s log of a⁻¹b from its pair features
per pair, with a θ·ρ cross term after T⁺ (not block-isotropic).
Lengths, adversarial tokens (θ → 0, θ → π) and tolerances as in
test/lib/attention_suite.py.
"""
from attention_suite import run_group

report, _, _ = run_group("SE2c", reference_lengths=(17,))
report.finish()
