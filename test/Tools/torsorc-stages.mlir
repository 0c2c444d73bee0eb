// RUN: torsorc %s --emit=mlir | FileCheck %s --check-prefix=MLIR
// RUN: torsorc %s --emit=opt | FileCheck %s --check-prefix=OPT
// RUN: torsorc %s --emit=llvm --mcpu=generic | FileCheck %s --check-prefix=LLVM
// RUN: torsorc %s --emit=llvm --mcpu=x86-64-v4 | FileCheck %s --check-prefix=AVX512
// RUN: torsorc %s -o %t.so && llvm-nm -D --defined-only %t.so | FileCheck %s --check-prefix=SO

// --emit=mlir prints the input as parsed.
// MLIR: lie.inverse
// MLIR: lie.inverse

// --emit=opt runs Torsor's simplifications: inverse(inverse(g)) is gone.
// OPT-LABEL: func.func @roundtrip
//   OPT-NOT:   lie.inverse
//       OPT:   lie.log

// LLVM IR carries a target triple and data layout (or LLVM won't
// vectorize), and the CPU the user asked for.
// LLVM: target datalayout =
// LLVM: target triple = "x86_64
// LLVM: define {{.*}}@_mlir_ciface_roundtrip
// LLVM: "target-cpu"="x86-64"
// AVX512: "target-cpu"="x86-64-v4"

// The shared library exports the C interface.
// SO: T _mlir_ciface_roundtrip

func.func @roundtrip(%g: memref<?x2x2xf64>, %out: memref<?x1xf64>) attributes {llvm.emit_c_interface} {
  %t = bufferization.to_tensor %g restrict : memref<?x2x2xf64> to tensor<?x2x2xf64>
  %a = lie.inverse %t {group = #lie.group<so2>} : tensor<?x2x2xf64>
  %b = lie.inverse %a {group = #lie.group<so2>} : tensor<?x2x2xf64>
  %w = lie.log %b {group = #lie.group<so2>} : tensor<?x2x2xf64> -> tensor<?x1xf64>
  bufferization.materialize_in_destination %w in restrict writable %out : (tensor<?x1xf64>, memref<?x1xf64>) -> ()
  return
}
