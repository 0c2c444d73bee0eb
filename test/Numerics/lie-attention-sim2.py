# RUN: %python %s | FileCheck %s
# CHECK: == lie_attention fused vs -O0: Sim2
# CHECK: all {{[0-9]+}} checks passed
"""Fused lie_attention (-O2) against the -O0 oracle over Sim2 (issue #16).

Inputs/lie-attention/sim2.tsr (outputs plain, causal, multi, wide) compiled
at -O0 and -O2 in f32 and f64, run for L in 0, 1, 2, 15-17, 31-33, 63-65,
97, 257, 300 with a batch of 2 and adversarial tokens mixed in (near θ = 0
and θ = π where the group rotates).
Tolerances (norm-wise, per output row and head; test/lib/attention_suite.py):
f64 fused vs f64 oracle 1e-12; f32 fused and f32 oracle vs the f64 oracle on
the same f32-rounded inputs 1e-5 away from π, 1e-4 for rows that see a key
within 0.05 of θ = π.

Declared, not nilpotent: the generic model (scaling and squaring).
Tolerances × κ = min(100, max(1, 0.3/(π − θ))) (ill-conditioned log near a
half turn), and the NaN policy: a half turn relative to the identity has no
real log, and exactly the rows that see that pair must be NaN, fused and
oracle.
"""
from attention_suite import run_group

report, _, _ = run_group("Sim2")
report.finish()
