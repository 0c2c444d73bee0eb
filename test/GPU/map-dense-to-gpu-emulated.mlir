// The shared-memory tiled dense kernel's per-thread code, run on the CPU
// (torsor-map-dense-to-gpu cpu-emulation=1: blocks and threads as host loops,
// each thread staging whole tiles), against an independent float64 triple
// loop. Sizes are adversarial for the 64 × 64 × 16 tiles with 4 × 4 per
// thread: ragged in every dim, one element, exact multiples, K = 0 (the
// output keeps its initial values), M = 0 (nothing to launch), and a batched
// `x Wᵀ` generic. The output starts from a non-zero bias (accumulation onto
// it is linalg's semantics). Each entry returns 1 when the norm-wise
// relative error is ≤ 1e-5 (f32 inputs, f32 accumulation over K ≤ 100).
// RUN: torsor-opt %s --torsor-map-dense-to-gpu=cpu-emulation=1 --convert-linalg-to-loops --lower-affine --convert-scf-to-cf --convert-to-llvm --reconcile-unrealized-casts > %t.ll.mlir
// RUN: mlir-runner %t.ll.mlir -e ragged -entry-point-result=i32 | FileCheck %s
// RUN: mlir-runner %t.ll.mlir -e one -entry-point-result=i32 | FileCheck %s
// RUN: mlir-runner %t.ll.mlir -e exact -entry-point-result=i32 | FileCheck %s
// RUN: mlir-runner %t.ll.mlir -e two_tiles_deep -entry-point-result=i32 | FileCheck %s
// RUN: mlir-runner %t.ll.mlir -e empty_depth -entry-point-result=i32 | FileCheck %s
// RUN: mlir-runner %t.ll.mlir -e empty_rows -entry-point-result=i32 | FileCheck %s
// RUN: mlir-runner %t.ll.mlir -e batched_transposed -entry-point-result=i32 | FileCheck %s
// The emulation really replaced every contraction:
// RUN: torsor-opt %s --torsor-map-dense-to-gpu=cpu-emulation=1 | FileCheck %s --check-prefix=IR
// IR-NOT: linalg.matmul
// IR-NOT: linalg.generic
// CHECK: {{^}}1{{$}}

#x = affine_map<(b, m, n, k) -> (b, m, k)>
#w = affine_map<(b, m, n, k) -> (n, k)>
#y = affine_map<(b, m, n, k) -> (b, m, n)>

// A deterministic, sign-changing value at (i, j) with seed s.
func.func @val(%i: index, %j: index, %s: f64) -> f64 {
  %ii = arith.index_cast %i : index to i64
  %jj = arith.index_cast %j : index to i64
  %fi = arith.sitofp %ii : i64 to f64
  %fj = arith.sitofp %jj : i64 to f64
  %a = arith.mulf %fi, %s : f64
  %c = arith.constant 0.71 : f64
  %b = arith.mulf %fj, %c : f64
  %t = arith.addf %a, %b : f64
  %r = math.sin %t : f64
  return %r : f64
}

// 1 when ‖got − ref‖ ≤ 1e-5 ‖ref‖ (compared as f64 sums of squares).
func.func @verdict(%num: f64, %den: f64) -> i32 {
  %tol = arith.constant 1.0e-10 : f64
  %lim = arith.mulf %den, %tol : f64
  %ok = arith.cmpf ole, %num, %lim : f64
  %r = arith.extui %ok : i1 to i32
  return %r : i32
}

func.func @check_matmul(%m: index, %n: index, %k: index) -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %s1 = arith.constant 0.37 : f64
  %s2 = arith.constant -0.53 : f64
  %s3 = arith.constant 0.19 : f64
  %z = arith.constant 0.0 : f64
  %a = memref.alloc(%m, %k) : memref<?x?xf32>
  %b = memref.alloc(%k, %n) : memref<?x?xf32>
  %c = memref.alloc(%m, %n) : memref<?x?xf32>
  %ref = memref.alloc(%m, %n) : memref<?x?xf64>
  scf.for %i = %c0 to %m step %c1 {
    scf.for %j = %c0 to %k step %c1 {
      %v = func.call @val(%i, %j, %s1) : (index, index, f64) -> f64
      %f = arith.truncf %v : f64 to f32
      memref.store %f, %a[%i, %j] : memref<?x?xf32>
    }
  }
  scf.for %i = %c0 to %k step %c1 {
    scf.for %j = %c0 to %n step %c1 {
      %v = func.call @val(%i, %j, %s2) : (index, index, f64) -> f64
      %f = arith.truncf %v : f64 to f32
      memref.store %f, %b[%i, %j] : memref<?x?xf32>
    }
  }
  // Bias in both; the reference sums the f32-rounded inputs in f64.
  scf.for %i = %c0 to %m step %c1 {
    scf.for %j = %c0 to %n step %c1 {
      %v = func.call @val(%i, %j, %s3) : (index, index, f64) -> f64
      %f = arith.truncf %v : f64 to f32
      memref.store %f, %c[%i, %j] : memref<?x?xf32>
      %fe = arith.extf %f : f32 to f64
      %sum = scf.for %l = %c0 to %k step %c1 iter_args(%acc = %fe) -> f64 {
        %x = memref.load %a[%i, %l] : memref<?x?xf32>
        %y = memref.load %b[%l, %j] : memref<?x?xf32>
        %xe = arith.extf %x : f32 to f64
        %ye = arith.extf %y : f32 to f64
        %p = arith.mulf %xe, %ye : f64
        %q = arith.addf %acc, %p : f64
        scf.yield %q : f64
      }
      memref.store %sum, %ref[%i, %j] : memref<?x?xf64>
    }
  }
  linalg.matmul ins(%a, %b : memref<?x?xf32>, memref<?x?xf32>) outs(%c : memref<?x?xf32>)
  %num, %den = scf.for %i = %c0 to %m step %c1 iter_args(%n0 = %z, %d0 = %z) -> (f64, f64) {
    %n1, %d1 = scf.for %j = %c0 to %n step %c1 iter_args(%n2 = %n0, %d2 = %d0) -> (f64, f64) {
      %g = memref.load %c[%i, %j] : memref<?x?xf32>
      %ge = arith.extf %g : f32 to f64
      %r = memref.load %ref[%i, %j] : memref<?x?xf64>
      %e = arith.subf %ge, %r : f64
      %e2 = arith.mulf %e, %e : f64
      %r2 = arith.mulf %r, %r : f64
      %n3 = arith.addf %n2, %e2 : f64
      %d3 = arith.addf %d2, %r2 : f64
      scf.yield %n3, %d3 : f64, f64
    }
    scf.yield %n1, %d1 : f64, f64
  }
  memref.dealloc %a : memref<?x?xf32>
  memref.dealloc %b : memref<?x?xf32>
  memref.dealloc %c : memref<?x?xf32>
  memref.dealloc %ref : memref<?x?xf64>
  %v = func.call @verdict(%num, %den) : (f64, f64) -> i32
  return %v : i32
}

func.func @ragged() -> i32 {
  %m = arith.constant 67 : index
  %n = arith.constant 70 : index
  %k = arith.constant 33 : index
  %r = func.call @check_matmul(%m, %n, %k) : (index, index, index) -> i32
  return %r : i32
}

func.func @one() -> i32 {
  %c1 = arith.constant 1 : index
  %r = func.call @check_matmul(%c1, %c1, %c1) : (index, index, index) -> i32
  return %r : i32
}

func.func @exact() -> i32 {
  %m = arith.constant 128 : index
  %n = arith.constant 64 : index
  %k = arith.constant 16 : index
  %r = func.call @check_matmul(%m, %n, %k) : (index, index, index) -> i32
  return %r : i32
}

func.func @two_tiles_deep() -> i32 {
  %m = arith.constant 5 : index
  %n = arith.constant 130 : index
  %k = arith.constant 100 : index
  %r = func.call @check_matmul(%m, %n, %k) : (index, index, index) -> i32
  return %r : i32
}

func.func @empty_depth() -> i32 {
  %m = arith.constant 9 : index
  %n = arith.constant 65 : index
  %k = arith.constant 0 : index
  %r = func.call @check_matmul(%m, %n, %k) : (index, index, index) -> i32
  return %r : i32
}

// M = 0: nothing to compare, so the verdict is 1 only if nothing crashed
// (0 ≤ 1e-10 · 0).
func.func @empty_rows() -> i32 {
  %m = arith.constant 0 : index
  %n = arith.constant 7 : index
  %k = arith.constant 3 : index
  %r = func.call @check_matmul(%m, %n, %k) : (index, index, index) -> i32
  return %r : i32
}

// y[b, m, n] = bias + Σ_k x[b, m, k] · w[n, k], B = 3, M = 17, N = 66, K = 20.
func.func @batched_transposed() -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %nb = arith.constant 3 : index
  %m = arith.constant 17 : index
  %n = arith.constant 66 : index
  %k = arith.constant 20 : index
  %s1 = arith.constant 0.29 : f64
  %s2 = arith.constant 0.61 : f64
  %z = arith.constant 0.0 : f64
  %x = memref.alloc(%nb, %m, %k) : memref<?x?x?xf32>
  %w = memref.alloc(%n, %k) : memref<?x?xf32>
  %y = memref.alloc(%nb, %m, %n) : memref<?x?x?xf32>
  %ref = memref.alloc(%nb, %m, %n) : memref<?x?x?xf64>
  scf.for %bb = %c0 to %nb step %c1 {
    scf.for %i = %c0 to %m step %c1 {
      %row = arith.addi %i, %bb : index
      scf.for %l = %c0 to %k step %c1 {
        %v = func.call @val(%row, %l, %s1) : (index, index, f64) -> f64
        %f = arith.truncf %v : f64 to f32
        memref.store %f, %x[%bb, %i, %l] : memref<?x?x?xf32>
      }
    }
  }
  scf.for %j = %c0 to %n step %c1 {
    scf.for %l = %c0 to %k step %c1 {
      %v = func.call @val(%j, %l, %s2) : (index, index, f64) -> f64
      %f = arith.truncf %v : f64 to f32
      memref.store %f, %w[%j, %l] : memref<?x?xf32>
    }
  }
  scf.for %bb = %c0 to %nb step %c1 {
    scf.for %i = %c0 to %m step %c1 {
      scf.for %j = %c0 to %n step %c1 {
        %bias = arith.constant 0.25 : f32
        memref.store %bias, %y[%bb, %i, %j] : memref<?x?x?xf32>
        %be = arith.extf %bias : f32 to f64
        %sum = scf.for %l = %c0 to %k step %c1 iter_args(%acc = %be) -> f64 {
          %xv = memref.load %x[%bb, %i, %l] : memref<?x?x?xf32>
          %wv = memref.load %w[%j, %l] : memref<?x?xf32>
          %xe = arith.extf %xv : f32 to f64
          %we = arith.extf %wv : f32 to f64
          %p = arith.mulf %xe, %we : f64
          %q = arith.addf %acc, %p : f64
          scf.yield %q : f64
        }
        memref.store %sum, %ref[%bb, %i, %j] : memref<?x?x?xf64>
      }
    }
  }
  linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x?x?xf32>, memref<?x?xf32>) outs(%y : memref<?x?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  %num, %den = scf.for %bb = %c0 to %nb step %c1 iter_args(%n0 = %z, %d0 = %z) -> (f64, f64) {
    %n1, %d1 = scf.for %i = %c0 to %m step %c1 iter_args(%n2 = %n0, %d2 = %d0) -> (f64, f64) {
      %n3, %d3 = scf.for %j = %c0 to %n step %c1 iter_args(%n4 = %n2, %d4 = %d2) -> (f64, f64) {
        %g = memref.load %y[%bb, %i, %j] : memref<?x?x?xf32>
        %ge = arith.extf %g : f32 to f64
        %r = memref.load %ref[%bb, %i, %j] : memref<?x?x?xf64>
        %e = arith.subf %ge, %r : f64
        %e2 = arith.mulf %e, %e : f64
        %r2 = arith.mulf %r, %r : f64
        %n5 = arith.addf %n4, %e2 : f64
        %d5 = arith.addf %d4, %r2 : f64
        scf.yield %n5, %d5 : f64, f64
      }
      scf.yield %n3, %d3 : f64, f64
    }
    scf.yield %n1, %d1 : f64, f64
  }
  %v = func.call @verdict(%num, %den) : (f64, f64) -> i32
  return %v : i32
}
