// RUN: torsor-opt %s --torsor-select-strategy="vector-bits=512 compute=bf16 amx=true avx512bf16=true" | FileCheck %s --check-prefix=AMX
// RUN: torsor-opt %s --torsor-select-strategy="vector-bits=512 compute=bf16 avx512bf16=true" | FileCheck %s --check-prefix=DOT
// RUN: torsor-opt %s --torsor-select-strategy="vector-bits=256 compute=bf16 avx512bf16=true" | FileCheck %s --check-prefix=FMA
// RUN: torsor-opt %s --torsor-select-strategy="vector-bits=512 compute=f32 amx=true" | FileCheck %s --check-prefix=F32
// RUN: not torsor-opt %s --torsor-select-strategy="vector-bits=512 compute=f16" 2>&1 | FileCheck %s --check-prefix=BAD

// compute=bf16 records the precision, the unit picked from the CPU's
// features (AMX first, then AVX512-BF16 on 512-bit vectors, else f32 FMAs
// on rounded operands) and the AMX tile shape. f32 adds nothing: its
// strategy is the one from before there was a choice.

// AMX: amx_block_cols = 2 : i64, amx_block_rows = 2 : i64, amx_tile_cols = 16 : i64, amx_tile_depth = 32 : i64, amx_tile_rows = 16 : i64
// AMX-SAME: compute = "bf16"
// AMX-SAME: matmul_unit = "amx"
// DOT: matmul_unit = "avx512bf16"
// FMA: matmul_unit = "fma"
// F32-NOT: compute
// F32-NOT: matmul_unit
// F32-NOT: amx_
// BAD: unknown compute 'f16' (expected f32 or bf16)
module {
  func.func @f() { return }
}
