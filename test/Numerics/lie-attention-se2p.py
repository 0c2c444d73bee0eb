# RUN: %python %s | FileCheck %s
# CHECK: == lie_attention fused vs -O0: SE2p
# CHECK: all {{[0-9]+}} checks passed
"""Fused lie_attention (-O2) against the -O0 oracle over the declared SE2p,
and at L = 17 the f64 outputs against the independent NumPy reference
(SciPy's logm per pair, in the declared basis), 1e-12.

a permuted basis of se(2): SE(2)'s factored pair form, block norms as is.
Lengths, adversarial tokens (θ → 0, θ → π) and tolerances as in
test/lib/attention_suite.py.
"""
from attention_suite import run_group

report, _, _ = run_group("SE2p", reference_lengths=(17,))
report.finish()
