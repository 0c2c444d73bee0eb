// RUN: torsor-opt %s --torsor-select-strategy="vector-bits=512 compute=bf16 amx=true avx512bf16=true" | FileCheck %s --check-prefix=AMX
// RUN: torsor-opt %s --torsor-select-strategy="vector-bits=512 compute=bf16 avx512bf16=true" | FileCheck %s --check-prefix=DOT
// RUN: torsor-opt %s --torsor-select-strategy="vector-bits=256 compute=bf16 avx512bf16=true" | FileCheck %s --check-prefix=FMA
// RUN: torsor-opt %s --torsor-select-strategy="vector-bits=512 compute=f32 amx=true" | FileCheck %s --check-prefix=F32
// RUN: not torsor-opt %s --torsor-select-strategy="vector-bits=512 compute=f16" 2>&1 | FileCheck %s --check-prefix=BAD

// compute=bf16 gives each function's dense strategy its bf16 products:
// the unit picked from the CPU's features (AMX first, then AVX512-BF16 on
// 512-bit vectors, else f32 FMAs on rounded operands) and the AMX tile
// shape. f32 adds nothing: its strategy is the one from before there was
// a choice.

// AMX: #strategy.dense<vector_bits = 512, {{.*}}row_task_rows = 16, bf16 = <unit = amx, tile_rows = 16, tile_cols = 16, tile_depth = 32, block_rows = 2, block_cols = 2>, pack_panels = true>
// DOT: bf16 = <unit = avx512bf16,
// FMA: bf16 = <unit = fma,
// F32: #strategy.dense<vector_bits = 512, {{.*}}row_task_rows = 16, pack_panels = true>}
// F32-NOT: bf16
// BAD: unknown compute 'f16' (expected f32 or bf16)
module {
  func.func @f() { return }
}
