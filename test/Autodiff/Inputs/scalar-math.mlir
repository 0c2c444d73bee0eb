// The arith/math rules MLIRGen does not reach from .tsr (the group math
// uses them), in one elementwise generic (test/Autodiff/gradients.py).
// Arguments stay inside each function's domain: s = tanh(x)·0.9 ∈ (−0.9,
// 0.9) for asin/acos, p = exp(y) > 0 for log/sqrt/powf. (extf/truncf are
// left out: rounding to f32 is a staircase finite differences cannot see
// through.)
func.func @ScalarMath(%x: tensor<?xf64> {torsor.dims = ["L"], torsor.kind = "input", torsor.name = "x"},
                      %y: tensor<?xf64> {torsor.dims = ["L"], torsor.kind = "param", torsor.name = "y"})
    -> (tensor<?xf64> {torsor.dims = ["L"], torsor.name = "out"}) {
  %c0 = arith.constant 0 : index
  %l = tensor.dim %x, %c0 : tensor<?xf64>
  %e = tensor.empty(%l) : tensor<?xf64>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]}
      ins(%x, %y : tensor<?xf64>, tensor<?xf64>) outs(%e : tensor<?xf64>) {
  ^bb0(%a: f64, %b: f64, %o: f64):
    %k = arith.constant 0.9 : f64
    %t = math.tanh %a : f64
    %s = arith.mulf %t, %k : f64
    %p = math.exp %b : f64
    %v1 = math.sin %a : f64
    %v2 = math.cos %b : f64
    %v3 = math.atan %a : f64
    %v4 = math.asin %s : f64
    %v5 = math.acos %s : f64
    %v6 = math.atan2 %a, %p : f64
    %v7 = math.powf %p, %s : f64
    %v8 = math.fma %a, %b, %v1 : f64
    %v9 = math.absf %a : f64
    %v10 = math.log %p : f64
    %v11 = math.log1p %p : f64
    %v12 = math.expm1 %s : f64
    %v13 = math.sqrt %p : f64
    %v14 = math.rsqrt %p : f64
    %v15 = math.erf %a : f64
    %v16 = arith.minimumf %a, %b : f64
    %v17 = arith.minnumf %a, %b : f64
    %v18 = arith.maximumf %a, %b : f64
    %cmp = arith.cmpf ogt, %a, %b : f64
    %v19 = arith.select %cmp, %v1, %v2 : f64
    %n = arith.negf %v3 : f64
    %q = arith.divf %v4, %p : f64
    %fl = math.floor %a : f64
    %u1 = arith.addf %v1, %v2 : f64
    %u2 = arith.subf %u1, %n : f64
    %u3 = arith.addf %u2, %q : f64
    %u4 = arith.mulf %u3, %v6 : f64
    %u5 = arith.addf %u4, %v7 : f64
    %u6 = arith.addf %u5, %v8 : f64
    %u7 = arith.addf %u6, %v9 : f64
    %u8 = arith.addf %u7, %v10 : f64
    %u9 = arith.addf %u8, %v11 : f64
    %u10 = arith.addf %u9, %v12 : f64
    %u11 = arith.mulf %u10, %v13 : f64
    %u12 = arith.addf %u11, %v14 : f64
    %u13 = arith.addf %u12, %v15 : f64
    %u14 = arith.addf %u13, %v16 : f64
    %u15 = arith.addf %u14, %v17 : f64
    %u16 = arith.addf %u15, %v18 : f64
    %u17 = arith.addf %u16, %v19 : f64
    %u18 = arith.addf %u17, %v5 : f64
    %u19 = arith.addf %u18, %fl : f64
    linalg.yield %u19 : f64
  } -> tensor<?xf64>
  return %r : tensor<?xf64>
}
