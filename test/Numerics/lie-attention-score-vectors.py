# RUN: %python %s | FileCheck %s
# CHECK: == lie_attention fused vs -O0: SE3, two key vectors per score operation
# CHECK: all {{[0-9]+}} checks passed
"""The forward's score loop with score_vectors = 2 (issue #22) against the
-O0 oracle, on every x86 host with AVX2.

torsor-select-strategy gives one query row, and with it two machine vectors
of keys per score operation, where a row's accumulators take half the
vector registers: on AVX2, the `wide` output of
Inputs/lie-attention/se3.tsr (2 heads of 32 columns, causal). An AVX-512
host would give it 4 rows, so the models here are compiled for
--mcpu=x86-64-v3 (AVX2, FMA) whatever the host. Lengths around the 32-key
tile and the 16-key score vectors: whole tiles, the causal diagonal, the
masked tail. Tolerances as attention_suite: f64 fused vs f64 oracle 1e-12;
f32 vs the f64 oracle 1e-5 away from π, 1e-4 for rows that see a key
within 0.05 of θ = π.
"""
import attention_suite as S
from model_runner import CompiledModel
from torsor_testing import Report, cpu_flags

TITLE = "lie_attention fused vs -O0: SE3, two key vectors per score operation"
if not {"avx2", "fma"} <= cpu_flags():
    report = Report(TITLE)
    report.check("skipped: the host has no AVX2 and FMA (x86-64-v3)", 0, 0)
    report.finish()
else:
    def compile_avx2(case, opts, workdir):
        models = {}
        for dtype in ("f32", "f64"):
            for opt in opts:
                models[dtype, opt] = CompiledModel(
                    case.tsr, dtype, opt=opt, workdir=workdir,
                    extra_args=["--mcpu=x86-64-v3"], run_args=["--no-check-groups"])
        return models

    report, _, _ = S.run_group("SE3", opts=(2,), compile=compile_avx2,
                               lengths=(0, 1, 15, 16, 17, 31, 32, 33, 47, 63, 65, 97),
                               title=TITLE)
    report.finish()
