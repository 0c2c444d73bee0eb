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

Declared by generators and recognised as sim(2) (GroupStructure.h): the
pair form is the sim2 closed form (complex z = e^{σ+iθ}, ρ = t/φ(w)), well
conditioned next to a half turn like SE(2)'s, so no κ allowance; a half
turn has the logs σ ± iπ with one dist2. At L = 17 the f64 outputs also
against the independent NumPy reference (1e-12).
"""
from attention_suite import run_group

report, _, _ = run_group("Sim2", reference_lengths=(17,))
report.finish()
