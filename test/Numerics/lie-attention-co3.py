# RUN: %python %s | FileCheck %s
# CHECK: == lie_attention fused vs -O0: CO3
# CHECK: all {{[0-9]+}} checks passed
"""Fused lie_attention (-O2) against the -O0 oracle over the declared CO3,
and at L = 17 the f64 outputs against the independent NumPy reference
(SciPy's logm per pair, in the declared basis), 1e-12.

a subalgebra of sim(3): Sim(3)'s factored pair form on diag(g, 1).
Lengths, adversarial tokens (θ → 0, θ → π) and tolerances as in
test/lib/attention_suite.py.
"""
from attention_suite import run_group

report, _, _ = run_group("CO3", reference_lengths=(17,))
report.finish()
