// RUN: torsor-opt %s --torsor-select-strategy="vector-bits=512 compute=bf16 amx=true" --torsor-tile-dense | FileCheck %s --check-prefix=PACK
// RUN: torsor-opt %s --torsor-select-strategy="vector-bits=512 compute=bf16 avx512bf16=true" --torsor-tile-dense | FileCheck %s --check-prefix=PACK
// RUN: torsor-opt %s --torsor-select-strategy="vector-bits=512 compute=bf16" --torsor-tile-dense | FileCheck %s --check-prefix=ROUND
// RUN: torsor-opt %s --torsor-select-strategy="vector-bits=512" --torsor-tile-dense | FileCheck %s --check-prefix=F32

// `--compute=bf16` in torsor-tile-dense. With a bf16 unit (AMX or
// AVX512-BF16) the operands are rounded to bf16 and packed: A padded to
// [Mp, Kp] (rows to 32, depth 40 → 64) and viewed as [Mp, 32, 2], B padded
// to [64, 64] and reordered into VNNI pairs [32, 64, 2]; the product is one
// generic marked torsor.bf16_product that accumulates in f32, and its
// [L, 48] slice is the result. Without one, the operands are rounded to
// bf16 on their bits and the f32 kernel runs on them. f32 is untouched.

// PACK-LABEL: func.func @matmul
//       PACK:   arith.truncf {{.*}} : f32 to bf16
//       PACK:   tensor.pad
//       PACK:   } : tensor<?x40xbf16> to tensor<?x64xbf16>
//       PACK:   tensor.expand_shape {{.*}} into tensor<?x32x2xbf16>
//       PACK:   tensor.pad
//       PACK:   } : tensor<40x48xbf16> to tensor<64x64xbf16>
//       PACK:   linalg.generic {{.*}} outs(%{{.*}} : tensor<32x64x2xbf16>)
//       PACK:   %[[P:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<?x32x2xbf16>, tensor<32x64x2xbf16>) outs(%{{.*}} : tensor<?x64xf32>) attrs = {torsor.bf16_product}
//       PACK:     arith.extf {{.*}} : bf16 to f32
//       PACK:     arith.mulf
//       PACK:     arith.addf
//       PACK:   tensor.extract_slice %[[P]][0, 0] [%{{.*}}, 48] [1, 1] : tensor<?x64xf32> to tensor<?x48xf32>
//   PACK-NOT:   vector.fma

// ROUND-LABEL: func.func @matmul
//   ROUND-NOT:   torsor.bf16_product
//       ROUND:   arith.bitcast {{.*}} : f32 to i32
//       ROUND:   arith.andi {{.*}} %c-65536_i32
//       ROUND:   vector.fma

// F32-LABEL: func.func @matmul
//   F32-NOT:   bf16
//       F32:   vector.fma
//   F32-NOT:   bf16
func.func @matmul(%x: tensor<?x40xf32>, %w: tensor<40x48xf32>) -> tensor<?x48xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %l = tensor.dim %x, %c0 : tensor<?x40xf32>
  %init = tensor.empty(%l) : tensor<?x48xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%init : tensor<?x48xf32>) -> tensor<?x48xf32>
  %y = linalg.matmul ins(%x, %w : tensor<?x40xf32>, tensor<40x48xf32>)
                     outs(%fill : tensor<?x48xf32>) -> tensor<?x48xf32>
  return %y : tensor<?x48xf32>
}
