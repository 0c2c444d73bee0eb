# RUN: %python %s | FileCheck %s
# CHECK: == GPU attention kernel (geo-map-attention-to-gpu, emulated on the CPU) vs -O0: SE3
# CHECK: all {{[0-9]+}} checks passed
"""The GPU attention kernel's per-thread code against the -O0 oracle, SE3.

geo-map-attention-to-gpu with cpu-emulation=1 runs the kernel's blocks as
scf.parallel and its threads as loops between the barriers; everything else
(pair form, scores, online softmax, P·V, shared-tile indexing, masks, causal
skipping, rows past the end) is the code the GPU runs. The tile sizes, the
inputs (those of test/Numerics/lie-attention-se3.py) and the tolerances are
shared with the other groups' suites: test/lib/gpu_attention_emulation.py,
run_suite.
"""
import gpu_attention_emulation as E

E.run_suite("SE3")
