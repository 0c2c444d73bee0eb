# RUN: %python %s | FileCheck %s
# CHECK: == lie_attention fused vs -O0: SO3xSO2
# CHECK: all {{[0-9]+}} checks passed
"""Fused lie_attention (-O2) against the -O0 oracle over the declared SO3xSO2,
a direct sum of ideals (test/Numerics/Inputs/lie-attention/so3xso2.tsr), and at
L = 17 the f64 outputs against the independent NumPy reference (SciPy's
logm per pair, in the declared basis), 1e-12. Lengths, adversarial tokens
(θ → 0, θ → π in one factor, the other turning less) and tolerances as in
test/lib/attention_suite.py.
"""
from attention_suite import run_group

report, _, _ = run_group("SO3xSO2", reference_lengths=(17,))
report.finish()
