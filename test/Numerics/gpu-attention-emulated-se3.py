# RUN: %python %s | FileCheck %s
# CHECK: == GPU attention kernel (geo-map-attention-to-gpu, emulated on the CPU) vs -O0: SE3
# CHECK: all {{[0-9]+}} checks passed
"""The GPU attention kernel's per-thread code against the -O0 oracle, SE3.

geo-map-attention-to-gpu with cpu-emulation=1 (test/lib/gpu_attention_emulation.py)
emits the kernel's blocks as scf.parallel and its threads as loops between
the barriers; everything else (pair form, scores, online softmax, P·V,
shared-tile indexing, masks, causal skipping, rows past the end) is the
code the GPU runs. Small tiles make the suite's lengths adversarial for it:
T = 8 threads × R = 2 rows (BQ = 16 query rows per block, so 15-17 and
31-33 are BQ ± 1 and 2·BQ ± 1), BK = 8 keys per shared tile (several
barrier rounds, masked tails at every L not a multiple of 8) and S = 4 keys
per softmax step. The inputs are those of test/Numerics/lie-attention-se3.py
(same seed and lengths, adversarial tokens near θ = 0 and θ = π), with the
same tolerances: f64 1e-12 vs the f64 oracle; f32 1e-5 vs the f64 oracle on
the f32-rounded inputs (1e-4 for rows that see a key within 0.05 of π).
The 'f64/f32 -O1' rows of the report are the emulated GPU kernel.
"""
import attention_suite as A
import gpu_attention_emulation as E

report, _, _ = A.run_group(
    "SE3", opts=(E.LEVEL,), compile=E.compiler(E.pass_options(8, 2, 8, 4)),
    lengths=sorted(set(A.LENGTHS) | {12}),
    title="GPU attention kernel (geo-map-attention-to-gpu, emulated on the CPU) vs -O0: SE3")
report.finish()
