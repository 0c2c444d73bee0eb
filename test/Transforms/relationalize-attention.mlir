// RUN: torsor-opt %s --geo-relationalize-attention --split-input-file --verify-diagnostics | FileCheck %s
//
// Inputs are what `torsorc --emit=mlir` gives for small standard attention
// models (d = 4, H = 2, d_h = 2).

// A 2-head block with `* 0.5`: the four projections become G_QK, G_VO.
// CHECK-LABEL: func.func @standard
//  CHECK-SAME:   (%[[X:.*]]: tensor<?x4xf32> {{.*}}torsor.name = "x"}
//  CHECK-SAME:   %[[GQK:.*]]: tensor<2x4x4xf32> {torsor.dims = [2, 4, 4], torsor.kind = "param", torsor.name = "g_qk", torsor.relational = {form = "qk", from = ["Wq", "Wk"], heads = 2 : i64}}
//  CHECK-SAME:   %[[GVO:.*]]: tensor<2x4x4xf32> {torsor.dims = [2, 4, 4], torsor.kind = "param", torsor.name = "g_vo", torsor.relational = {form = "vo", from = ["Wv", "Wo"], heads = 2 : i64}})
//   CHECK-NOT:   torsor.name = "W
//       CHECK:   %[[Y:.*]] = geo.relational_attention %[[X]], %[[GQK]], %[[GVO]] {heads = 2 : i64, scale = 5.000000e-01 : f64}
//   CHECK-NOT:   linalg.
//       CHECK:   return %[[Y]]

#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
#map2 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#map3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map4 = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @standard(%arg0: tensor<?x4xf32> {torsor.dims = ["L", 4], torsor.kind = "input", torsor.name = "x"}, %arg1: tensor<4x4xf32> {torsor.dims = [4, 4], torsor.kind = "param", torsor.name = "Wq"}, %arg2: tensor<4x4xf32> {torsor.dims = [4, 4], torsor.kind = "param", torsor.name = "Wk"}, %arg3: tensor<4x4xf32> {torsor.dims = [4, 4], torsor.kind = "param", torsor.name = "Wv"}, %arg4: tensor<4x4xf32> {torsor.dims = [4, 4], torsor.kind = "param", torsor.name = "Wo"}) -> (tensor<?x4xf32> {torsor.dims = ["L", 4], torsor.name = "y"}) {
  %c0 = arith.constant 0 : index
  %dim = tensor.dim %arg0, %c0 : tensor<?x4xf32>
  %0 = tensor.empty(%dim) : tensor<?x4xf32>
  %cst = arith.constant 0.000000e+00 : f32
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %2 = linalg.matmul ins(%arg0, %arg1 : tensor<?x4xf32>, tensor<4x4xf32>) outs(%1 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %cst_0 = arith.constant dense<2.000000e+00> : tensor<f32>
  %expanded = tensor.expand_shape %2 [[0], [1, 2]] output_shape [%dim, 2, 2] : tensor<?x4xf32> into tensor<?x2x2xf32>
  %3 = tensor.empty(%dim) : tensor<2x?x2xf32>
  %transposed = linalg.transpose ins(%expanded : tensor<?x2x2xf32>) outs(%3 : tensor<2x?x2xf32>) permutation = [1, 0, 2] 
  %4 = tensor.empty(%dim) : tensor<?x4xf32>
  %cst_1 = arith.constant 0.000000e+00 : f32
  %5 = linalg.fill ins(%cst_1 : f32) outs(%4 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %6 = linalg.matmul ins(%arg0, %arg2 : tensor<?x4xf32>, tensor<4x4xf32>) outs(%5 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %cst_2 = arith.constant dense<2.000000e+00> : tensor<f32>
  %expanded_3 = tensor.expand_shape %6 [[0], [1, 2]] output_shape [%dim, 2, 2] : tensor<?x4xf32> into tensor<?x2x2xf32>
  %7 = tensor.empty(%dim) : tensor<2x?x2xf32>
  %transposed_4 = linalg.transpose ins(%expanded_3 : tensor<?x2x2xf32>) outs(%7 : tensor<2x?x2xf32>) permutation = [1, 0, 2] 
  %8 = tensor.empty(%dim) : tensor<?x4xf32>
  %cst_5 = arith.constant 0.000000e+00 : f32
  %9 = linalg.fill ins(%cst_5 : f32) outs(%8 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %10 = linalg.matmul ins(%arg0, %arg3 : tensor<?x4xf32>, tensor<4x4xf32>) outs(%9 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %cst_6 = arith.constant dense<2.000000e+00> : tensor<f32>
  %expanded_7 = tensor.expand_shape %10 [[0], [1, 2]] output_shape [%dim, 2, 2] : tensor<?x4xf32> into tensor<?x2x2xf32>
  %11 = tensor.empty(%dim) : tensor<2x?x2xf32>
  %transposed_8 = linalg.transpose ins(%expanded_7 : tensor<?x2x2xf32>) outs(%11 : tensor<2x?x2xf32>) permutation = [1, 0, 2] 
  %12 = tensor.empty(%dim) : tensor<2x2x?xf32>
  %transposed_9 = linalg.transpose ins(%transposed_4 : tensor<2x?x2xf32>) outs(%12 : tensor<2x2x?xf32>) permutation = [0, 2, 1] 
  %13 = tensor.empty(%dim, %dim) : tensor<2x?x?xf32>
  %cst_10 = arith.constant 0.000000e+00 : f32
  %14 = linalg.fill ins(%cst_10 : f32) outs(%13 : tensor<2x?x?xf32>) -> tensor<2x?x?xf32>
  %15 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%transposed, %transposed_9 : tensor<2x?x2xf32>, tensor<2x2x?xf32>) outs(%14 : tensor<2x?x?xf32>) {
  ^bb0(%in: f32, %in_18: f32, %out: f32):
    %33 = arith.mulf %in, %in_18 : f32
    %34 = arith.addf %out, %33 : f32
    linalg.yield %34 : f32
  } -> tensor<2x?x?xf32>
  %16 = tensor.empty(%dim, %dim) : tensor<2x?x?xf32>
  %17 = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%15 : tensor<2x?x?xf32>) outs(%16 : tensor<2x?x?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %cst_18 = arith.constant 5.000000e-01 : f32
    %33 = arith.mulf %in, %cst_18 : f32
    linalg.yield %33 : f32
  } -> tensor<2x?x?xf32>
  %18 = tensor.empty(%dim, %dim) : tensor<2x?x?xf32>
  %c1 = arith.constant 1 : index
  %dim_11 = tensor.dim %17, %c1 : tensor<2x?x?xf32>
  %c2 = arith.constant 2 : index
  %dim_12 = tensor.dim %17, %c2 : tensor<2x?x?xf32>
  %19 = tensor.empty(%dim_11) : tensor<2x?xf32>
  %cst_13 = arith.constant 0xFFC00000 : f32
  %20 = linalg.fill ins(%cst_13 : f32) outs(%19 : tensor<2x?xf32>) -> tensor<2x?xf32>
  %21 = linalg.generic {indexing_maps = [#map3, #map4], iterator_types = ["parallel", "parallel", "reduction"]} ins(%17 : tensor<2x?x?xf32>) outs(%20 : tensor<2x?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %33 = arith.maxnumf %in, %out : f32
    linalg.yield %33 : f32
  } -> tensor<2x?xf32>
  %22 = linalg.generic {indexing_maps = [#map3, #map4, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%17, %21 : tensor<2x?x?xf32>, tensor<2x?xf32>) outs(%18 : tensor<2x?x?xf32>) {
  ^bb0(%in: f32, %in_18: f32, %out: f32):
    %33 = arith.subf %in, %in_18 : f32
    %34 = math.exp %33 : f32
    linalg.yield %34 : f32
  } -> tensor<2x?x?xf32>
  %cst_14 = arith.constant 0.000000e+00 : f32
  %23 = linalg.fill ins(%cst_14 : f32) outs(%19 : tensor<2x?xf32>) -> tensor<2x?xf32>
  %24 = linalg.generic {indexing_maps = [#map3, #map4], iterator_types = ["parallel", "parallel", "reduction"]} ins(%22 : tensor<2x?x?xf32>) outs(%23 : tensor<2x?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %33 = arith.addf %in, %out : f32
    linalg.yield %33 : f32
  } -> tensor<2x?xf32>
  %25 = linalg.generic {indexing_maps = [#map3, #map4, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%22, %24 : tensor<2x?x?xf32>, tensor<2x?xf32>) outs(%18 : tensor<2x?x?xf32>) {
  ^bb0(%in: f32, %in_18: f32, %out: f32):
    %33 = arith.divf %in, %in_18 : f32
    linalg.yield %33 : f32
  } -> tensor<2x?x?xf32>
  %26 = tensor.empty(%dim) : tensor<2x?x2xf32>
  %cst_15 = arith.constant 0.000000e+00 : f32
  %27 = linalg.fill ins(%cst_15 : f32) outs(%26 : tensor<2x?x2xf32>) -> tensor<2x?x2xf32>
  %28 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%25, %transposed_8 : tensor<2x?x?xf32>, tensor<2x?x2xf32>) outs(%27 : tensor<2x?x2xf32>) {
  ^bb0(%in: f32, %in_18: f32, %out: f32):
    %33 = arith.mulf %in, %in_18 : f32
    %34 = arith.addf %out, %33 : f32
    linalg.yield %34 : f32
  } -> tensor<2x?x2xf32>
  %29 = tensor.empty(%dim) : tensor<?x2x2xf32>
  %transposed_16 = linalg.transpose ins(%28 : tensor<2x?x2xf32>) outs(%29 : tensor<?x2x2xf32>) permutation = [1, 0, 2] 
  %collapsed = tensor.collapse_shape %transposed_16 [[0], [1, 2]] : tensor<?x2x2xf32> into tensor<?x4xf32>
  %30 = tensor.empty(%dim) : tensor<?x4xf32>
  %cst_17 = arith.constant 0.000000e+00 : f32
  %31 = linalg.fill ins(%cst_17 : f32) outs(%30 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %32 = linalg.matmul ins(%collapsed, %arg4 : tensor<?x4xf32>, tensor<4x4xf32>) outs(%31 : tensor<?x4xf32>) -> tensor<?x4xf32>
  return %32 : tensor<?x4xf32>
}

// -----

// `/ 4` is a scale of 0.25.
// CHECK-LABEL: func.func @divided_scale
//       CHECK:   geo.relational_attention {{.*}} {heads = 2 : i64, scale = 2.500000e-01 : f64}
//   CHECK-NOT:   linalg.generic

#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
#map2 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#map3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map4 = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @divided_scale(%arg0: tensor<?x4xf32> {torsor.dims = ["L", 4], torsor.kind = "input", torsor.name = "x"}, %arg1: tensor<4x4xf32> {torsor.dims = [4, 4], torsor.kind = "param", torsor.name = "Wq"}, %arg2: tensor<4x4xf32> {torsor.dims = [4, 4], torsor.kind = "param", torsor.name = "Wk"}, %arg3: tensor<4x4xf32> {torsor.dims = [4, 4], torsor.kind = "param", torsor.name = "Wv"}, %arg4: tensor<4x4xf32> {torsor.dims = [4, 4], torsor.kind = "param", torsor.name = "Wo"}) -> (tensor<?x4xf32> {torsor.dims = ["L", 4], torsor.name = "y"}) {
  %c0 = arith.constant 0 : index
  %dim = tensor.dim %arg0, %c0 : tensor<?x4xf32>
  %0 = tensor.empty(%dim) : tensor<?x4xf32>
  %cst = arith.constant 0.000000e+00 : f32
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %2 = linalg.matmul ins(%arg0, %arg1 : tensor<?x4xf32>, tensor<4x4xf32>) outs(%1 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %cst_0 = arith.constant dense<2.000000e+00> : tensor<f32>
  %expanded = tensor.expand_shape %2 [[0], [1, 2]] output_shape [%dim, 2, 2] : tensor<?x4xf32> into tensor<?x2x2xf32>
  %3 = tensor.empty(%dim) : tensor<2x?x2xf32>
  %transposed = linalg.transpose ins(%expanded : tensor<?x2x2xf32>) outs(%3 : tensor<2x?x2xf32>) permutation = [1, 0, 2] 
  %4 = tensor.empty(%dim) : tensor<?x4xf32>
  %cst_1 = arith.constant 0.000000e+00 : f32
  %5 = linalg.fill ins(%cst_1 : f32) outs(%4 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %6 = linalg.matmul ins(%arg0, %arg2 : tensor<?x4xf32>, tensor<4x4xf32>) outs(%5 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %cst_2 = arith.constant dense<2.000000e+00> : tensor<f32>
  %expanded_3 = tensor.expand_shape %6 [[0], [1, 2]] output_shape [%dim, 2, 2] : tensor<?x4xf32> into tensor<?x2x2xf32>
  %7 = tensor.empty(%dim) : tensor<2x?x2xf32>
  %transposed_4 = linalg.transpose ins(%expanded_3 : tensor<?x2x2xf32>) outs(%7 : tensor<2x?x2xf32>) permutation = [1, 0, 2] 
  %8 = tensor.empty(%dim) : tensor<?x4xf32>
  %cst_5 = arith.constant 0.000000e+00 : f32
  %9 = linalg.fill ins(%cst_5 : f32) outs(%8 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %10 = linalg.matmul ins(%arg0, %arg3 : tensor<?x4xf32>, tensor<4x4xf32>) outs(%9 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %cst_6 = arith.constant dense<2.000000e+00> : tensor<f32>
  %expanded_7 = tensor.expand_shape %10 [[0], [1, 2]] output_shape [%dim, 2, 2] : tensor<?x4xf32> into tensor<?x2x2xf32>
  %11 = tensor.empty(%dim) : tensor<2x?x2xf32>
  %transposed_8 = linalg.transpose ins(%expanded_7 : tensor<?x2x2xf32>) outs(%11 : tensor<2x?x2xf32>) permutation = [1, 0, 2] 
  %12 = tensor.empty(%dim) : tensor<2x2x?xf32>
  %transposed_9 = linalg.transpose ins(%transposed_4 : tensor<2x?x2xf32>) outs(%12 : tensor<2x2x?xf32>) permutation = [0, 2, 1] 
  %13 = tensor.empty(%dim, %dim) : tensor<2x?x?xf32>
  %cst_10 = arith.constant 0.000000e+00 : f32
  %14 = linalg.fill ins(%cst_10 : f32) outs(%13 : tensor<2x?x?xf32>) -> tensor<2x?x?xf32>
  %15 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%transposed, %transposed_9 : tensor<2x?x2xf32>, tensor<2x2x?xf32>) outs(%14 : tensor<2x?x?xf32>) {
  ^bb0(%in: f32, %in_18: f32, %out: f32):
    %33 = arith.mulf %in, %in_18 : f32
    %34 = arith.addf %out, %33 : f32
    linalg.yield %34 : f32
  } -> tensor<2x?x?xf32>
  %16 = tensor.empty(%dim, %dim) : tensor<2x?x?xf32>
  %17 = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%15 : tensor<2x?x?xf32>) outs(%16 : tensor<2x?x?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %cst_18 = arith.constant 4.000000e+00 : f32
    %33 = arith.divf %in, %cst_18 : f32
    linalg.yield %33 : f32
  } -> tensor<2x?x?xf32>
  %18 = tensor.empty(%dim, %dim) : tensor<2x?x?xf32>
  %c1 = arith.constant 1 : index
  %dim_11 = tensor.dim %17, %c1 : tensor<2x?x?xf32>
  %c2 = arith.constant 2 : index
  %dim_12 = tensor.dim %17, %c2 : tensor<2x?x?xf32>
  %19 = tensor.empty(%dim_11) : tensor<2x?xf32>
  %cst_13 = arith.constant 0xFFC00000 : f32
  %20 = linalg.fill ins(%cst_13 : f32) outs(%19 : tensor<2x?xf32>) -> tensor<2x?xf32>
  %21 = linalg.generic {indexing_maps = [#map3, #map4], iterator_types = ["parallel", "parallel", "reduction"]} ins(%17 : tensor<2x?x?xf32>) outs(%20 : tensor<2x?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %33 = arith.maxnumf %in, %out : f32
    linalg.yield %33 : f32
  } -> tensor<2x?xf32>
  %22 = linalg.generic {indexing_maps = [#map3, #map4, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%17, %21 : tensor<2x?x?xf32>, tensor<2x?xf32>) outs(%18 : tensor<2x?x?xf32>) {
  ^bb0(%in: f32, %in_18: f32, %out: f32):
    %33 = arith.subf %in, %in_18 : f32
    %34 = math.exp %33 : f32
    linalg.yield %34 : f32
  } -> tensor<2x?x?xf32>
  %cst_14 = arith.constant 0.000000e+00 : f32
  %23 = linalg.fill ins(%cst_14 : f32) outs(%19 : tensor<2x?xf32>) -> tensor<2x?xf32>
  %24 = linalg.generic {indexing_maps = [#map3, #map4], iterator_types = ["parallel", "parallel", "reduction"]} ins(%22 : tensor<2x?x?xf32>) outs(%23 : tensor<2x?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %33 = arith.addf %in, %out : f32
    linalg.yield %33 : f32
  } -> tensor<2x?xf32>
  %25 = linalg.generic {indexing_maps = [#map3, #map4, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%22, %24 : tensor<2x?x?xf32>, tensor<2x?xf32>) outs(%18 : tensor<2x?x?xf32>) {
  ^bb0(%in: f32, %in_18: f32, %out: f32):
    %33 = arith.divf %in, %in_18 : f32
    linalg.yield %33 : f32
  } -> tensor<2x?x?xf32>
  %26 = tensor.empty(%dim) : tensor<2x?x2xf32>
  %cst_15 = arith.constant 0.000000e+00 : f32
  %27 = linalg.fill ins(%cst_15 : f32) outs(%26 : tensor<2x?x2xf32>) -> tensor<2x?x2xf32>
  %28 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%25, %transposed_8 : tensor<2x?x?xf32>, tensor<2x?x2xf32>) outs(%27 : tensor<2x?x2xf32>) {
  ^bb0(%in: f32, %in_18: f32, %out: f32):
    %33 = arith.mulf %in, %in_18 : f32
    %34 = arith.addf %out, %33 : f32
    linalg.yield %34 : f32
  } -> tensor<2x?x2xf32>
  %29 = tensor.empty(%dim) : tensor<?x2x2xf32>
  %transposed_16 = linalg.transpose ins(%28 : tensor<2x?x2xf32>) outs(%29 : tensor<?x2x2xf32>) permutation = [1, 0, 2] 
  %collapsed = tensor.collapse_shape %transposed_16 [[0], [1, 2]] : tensor<?x2x2xf32> into tensor<?x4xf32>
  %30 = tensor.empty(%dim) : tensor<?x4xf32>
  %cst_17 = arith.constant 0.000000e+00 : f32
  %31 = linalg.fill ins(%cst_17 : f32) outs(%30 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %32 = linalg.matmul ins(%collapsed, %arg4 : tensor<?x4xf32>, tensor<4x4xf32>) outs(%31 : tensor<?x4xf32>) -> tensor<?x4xf32>
  return %32 : tensor<?x4xf32>
}

// -----

// Wq is also an output's operand: the block is converted (scale 1), Wq
// stays a param for the other use, Wk, Wv and Wo go.
// CHECK-LABEL: func.func @weight_used_elsewhere
//  CHECK-SAME:   %[[GQK:[^:]*]]: tensor<2x4x4xf32> {{.*}}torsor.name = "g_qk"
//  CHECK-SAME:   %[[WQ:[^:]*]]: tensor<4x4xf32> {{.*}}torsor.name = "Wq"}
//  CHECK-SAME:   %[[GVO:[^:]*]]: tensor<2x4x4xf32> {{.*}}torsor.name = "g_vo"
//   CHECK-NOT:   torsor.name = "Wk"
//       CHECK:   %[[Y:.*]] = geo.relational_attention %{{.*}}, %[[GQK]], %[[GVO]] {heads = 2 : i64, scale = 1.000000e+00 : f64}
//       CHECK:   %[[W:.*]] = linalg.matmul ins(%{{.*}}, %[[WQ]] :
//       CHECK:   return %[[Y]], %[[W]]

#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
#map2 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#map3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map4 = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @weight_used_elsewhere(%arg0: tensor<?x4xf32> {torsor.dims = ["L", 4], torsor.kind = "input", torsor.name = "x"}, %arg1: tensor<4x4xf32> {torsor.dims = [4, 4], torsor.kind = "param", torsor.name = "Wq"}, %arg2: tensor<4x4xf32> {torsor.dims = [4, 4], torsor.kind = "param", torsor.name = "Wk"}, %arg3: tensor<4x4xf32> {torsor.dims = [4, 4], torsor.kind = "param", torsor.name = "Wv"}, %arg4: tensor<4x4xf32> {torsor.dims = [4, 4], torsor.kind = "param", torsor.name = "Wo"}) -> (tensor<?x4xf32> {torsor.dims = ["L", 4], torsor.name = "y"}, tensor<?x4xf32> {torsor.dims = ["L", 4], torsor.name = "wq"}) {
  %c0 = arith.constant 0 : index
  %dim = tensor.dim %arg0, %c0 : tensor<?x4xf32>
  %0 = tensor.empty(%dim) : tensor<?x4xf32>
  %cst = arith.constant 0.000000e+00 : f32
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %2 = linalg.matmul ins(%arg0, %arg1 : tensor<?x4xf32>, tensor<4x4xf32>) outs(%1 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %cst_0 = arith.constant dense<2.000000e+00> : tensor<f32>
  %expanded = tensor.expand_shape %2 [[0], [1, 2]] output_shape [%dim, 2, 2] : tensor<?x4xf32> into tensor<?x2x2xf32>
  %3 = tensor.empty(%dim) : tensor<2x?x2xf32>
  %transposed = linalg.transpose ins(%expanded : tensor<?x2x2xf32>) outs(%3 : tensor<2x?x2xf32>) permutation = [1, 0, 2] 
  %4 = tensor.empty(%dim) : tensor<?x4xf32>
  %cst_1 = arith.constant 0.000000e+00 : f32
  %5 = linalg.fill ins(%cst_1 : f32) outs(%4 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %6 = linalg.matmul ins(%arg0, %arg2 : tensor<?x4xf32>, tensor<4x4xf32>) outs(%5 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %cst_2 = arith.constant dense<2.000000e+00> : tensor<f32>
  %expanded_3 = tensor.expand_shape %6 [[0], [1, 2]] output_shape [%dim, 2, 2] : tensor<?x4xf32> into tensor<?x2x2xf32>
  %7 = tensor.empty(%dim) : tensor<2x?x2xf32>
  %transposed_4 = linalg.transpose ins(%expanded_3 : tensor<?x2x2xf32>) outs(%7 : tensor<2x?x2xf32>) permutation = [1, 0, 2] 
  %8 = tensor.empty(%dim) : tensor<?x4xf32>
  %cst_5 = arith.constant 0.000000e+00 : f32
  %9 = linalg.fill ins(%cst_5 : f32) outs(%8 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %10 = linalg.matmul ins(%arg0, %arg3 : tensor<?x4xf32>, tensor<4x4xf32>) outs(%9 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %cst_6 = arith.constant dense<2.000000e+00> : tensor<f32>
  %expanded_7 = tensor.expand_shape %10 [[0], [1, 2]] output_shape [%dim, 2, 2] : tensor<?x4xf32> into tensor<?x2x2xf32>
  %11 = tensor.empty(%dim) : tensor<2x?x2xf32>
  %transposed_8 = linalg.transpose ins(%expanded_7 : tensor<?x2x2xf32>) outs(%11 : tensor<2x?x2xf32>) permutation = [1, 0, 2] 
  %12 = tensor.empty(%dim) : tensor<2x2x?xf32>
  %transposed_9 = linalg.transpose ins(%transposed_4 : tensor<2x?x2xf32>) outs(%12 : tensor<2x2x?xf32>) permutation = [0, 2, 1] 
  %13 = tensor.empty(%dim, %dim) : tensor<2x?x?xf32>
  %cst_10 = arith.constant 0.000000e+00 : f32
  %14 = linalg.fill ins(%cst_10 : f32) outs(%13 : tensor<2x?x?xf32>) -> tensor<2x?x?xf32>
  %15 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%transposed, %transposed_9 : tensor<2x?x2xf32>, tensor<2x2x?xf32>) outs(%14 : tensor<2x?x?xf32>) {
  ^bb0(%in: f32, %in_19: f32, %out: f32):
    %34 = arith.mulf %in, %in_19 : f32
    %35 = arith.addf %out, %34 : f32
    linalg.yield %35 : f32
  } -> tensor<2x?x?xf32>
  %16 = tensor.empty(%dim, %dim) : tensor<2x?x?xf32>
  %c1 = arith.constant 1 : index
  %dim_11 = tensor.dim %15, %c1 : tensor<2x?x?xf32>
  %c2 = arith.constant 2 : index
  %dim_12 = tensor.dim %15, %c2 : tensor<2x?x?xf32>
  %17 = tensor.empty(%dim_11) : tensor<2x?xf32>
  %cst_13 = arith.constant 0xFFC00000 : f32
  %18 = linalg.fill ins(%cst_13 : f32) outs(%17 : tensor<2x?xf32>) -> tensor<2x?xf32>
  %19 = linalg.generic {indexing_maps = [#map3, #map4], iterator_types = ["parallel", "parallel", "reduction"]} ins(%15 : tensor<2x?x?xf32>) outs(%18 : tensor<2x?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %34 = arith.maxnumf %in, %out : f32
    linalg.yield %34 : f32
  } -> tensor<2x?xf32>
  %20 = linalg.generic {indexing_maps = [#map3, #map4, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%15, %19 : tensor<2x?x?xf32>, tensor<2x?xf32>) outs(%16 : tensor<2x?x?xf32>) {
  ^bb0(%in: f32, %in_19: f32, %out: f32):
    %34 = arith.subf %in, %in_19 : f32
    %35 = math.exp %34 : f32
    linalg.yield %35 : f32
  } -> tensor<2x?x?xf32>
  %cst_14 = arith.constant 0.000000e+00 : f32
  %21 = linalg.fill ins(%cst_14 : f32) outs(%17 : tensor<2x?xf32>) -> tensor<2x?xf32>
  %22 = linalg.generic {indexing_maps = [#map3, #map4], iterator_types = ["parallel", "parallel", "reduction"]} ins(%20 : tensor<2x?x?xf32>) outs(%21 : tensor<2x?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %34 = arith.addf %in, %out : f32
    linalg.yield %34 : f32
  } -> tensor<2x?xf32>
  %23 = linalg.generic {indexing_maps = [#map3, #map4, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%20, %22 : tensor<2x?x?xf32>, tensor<2x?xf32>) outs(%16 : tensor<2x?x?xf32>) {
  ^bb0(%in: f32, %in_19: f32, %out: f32):
    %34 = arith.divf %in, %in_19 : f32
    linalg.yield %34 : f32
  } -> tensor<2x?x?xf32>
  %24 = tensor.empty(%dim) : tensor<2x?x2xf32>
  %cst_15 = arith.constant 0.000000e+00 : f32
  %25 = linalg.fill ins(%cst_15 : f32) outs(%24 : tensor<2x?x2xf32>) -> tensor<2x?x2xf32>
  %26 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%23, %transposed_8 : tensor<2x?x?xf32>, tensor<2x?x2xf32>) outs(%25 : tensor<2x?x2xf32>) {
  ^bb0(%in: f32, %in_19: f32, %out: f32):
    %34 = arith.mulf %in, %in_19 : f32
    %35 = arith.addf %out, %34 : f32
    linalg.yield %35 : f32
  } -> tensor<2x?x2xf32>
  %27 = tensor.empty(%dim) : tensor<?x2x2xf32>
  %transposed_16 = linalg.transpose ins(%26 : tensor<2x?x2xf32>) outs(%27 : tensor<?x2x2xf32>) permutation = [1, 0, 2] 
  %collapsed = tensor.collapse_shape %transposed_16 [[0], [1, 2]] : tensor<?x2x2xf32> into tensor<?x4xf32>
  %28 = tensor.empty(%dim) : tensor<?x4xf32>
  %cst_17 = arith.constant 0.000000e+00 : f32
  %29 = linalg.fill ins(%cst_17 : f32) outs(%28 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %30 = linalg.matmul ins(%collapsed, %arg4 : tensor<?x4xf32>, tensor<4x4xf32>) outs(%29 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %31 = tensor.empty(%dim) : tensor<?x4xf32>
  %cst_18 = arith.constant 0.000000e+00 : f32
  %32 = linalg.fill ins(%cst_18 : f32) outs(%31 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %33 = linalg.matmul ins(%arg0, %arg1 : tensor<?x4xf32>, tensor<4x4xf32>) outs(%32 : tensor<?x4xf32>) -> tensor<?x4xf32>
  return %30, %33 : tensor<?x4xf32>, tensor<?x4xf32>
}

// -----

// Keys and values read another input: not relational_attention's form.
// CHECK-LABEL: func.func @cross_attention
//   CHECK-NOT:   geo.relational_attention
//       CHECK:   torsor.name = "Wo"

#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
#map2 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#map3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map4 = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @cross_attention(%arg0: tensor<?x4xf32> {torsor.dims = ["L", 4], torsor.kind = "input", torsor.name = "x"}, %arg1: tensor<?x4xf32> {torsor.dims = ["L", 4], torsor.kind = "input", torsor.name = "m"}, %arg2: tensor<4x4xf32> {torsor.dims = [4, 4], torsor.kind = "param", torsor.name = "Wq"}, %arg3: tensor<4x4xf32> {torsor.dims = [4, 4], torsor.kind = "param", torsor.name = "Wk"}, %arg4: tensor<4x4xf32> {torsor.dims = [4, 4], torsor.kind = "param", torsor.name = "Wv"}, %arg5: tensor<4x4xf32> {torsor.dims = [4, 4], torsor.kind = "param", torsor.name = "Wo"}) -> (tensor<?x4xf32> {torsor.dims = ["L", 4], torsor.name = "y"}) {
  %c0 = arith.constant 0 : index
  %dim = tensor.dim %arg0, %c0 : tensor<?x4xf32>
  %0 = tensor.empty(%dim) : tensor<?x4xf32>
  %cst = arith.constant 0.000000e+00 : f32
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %2 = linalg.matmul ins(%arg0, %arg2 : tensor<?x4xf32>, tensor<4x4xf32>) outs(%1 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %cst_0 = arith.constant dense<2.000000e+00> : tensor<f32>
  %expanded = tensor.expand_shape %2 [[0], [1, 2]] output_shape [%dim, 2, 2] : tensor<?x4xf32> into tensor<?x2x2xf32>
  %3 = tensor.empty(%dim) : tensor<2x?x2xf32>
  %transposed = linalg.transpose ins(%expanded : tensor<?x2x2xf32>) outs(%3 : tensor<2x?x2xf32>) permutation = [1, 0, 2] 
  %4 = tensor.empty(%dim) : tensor<?x4xf32>
  %cst_1 = arith.constant 0.000000e+00 : f32
  %5 = linalg.fill ins(%cst_1 : f32) outs(%4 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %6 = linalg.matmul ins(%arg1, %arg3 : tensor<?x4xf32>, tensor<4x4xf32>) outs(%5 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %cst_2 = arith.constant dense<2.000000e+00> : tensor<f32>
  %expanded_3 = tensor.expand_shape %6 [[0], [1, 2]] output_shape [%dim, 2, 2] : tensor<?x4xf32> into tensor<?x2x2xf32>
  %7 = tensor.empty(%dim) : tensor<2x?x2xf32>
  %transposed_4 = linalg.transpose ins(%expanded_3 : tensor<?x2x2xf32>) outs(%7 : tensor<2x?x2xf32>) permutation = [1, 0, 2] 
  %8 = tensor.empty(%dim) : tensor<?x4xf32>
  %cst_5 = arith.constant 0.000000e+00 : f32
  %9 = linalg.fill ins(%cst_5 : f32) outs(%8 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %10 = linalg.matmul ins(%arg1, %arg4 : tensor<?x4xf32>, tensor<4x4xf32>) outs(%9 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %cst_6 = arith.constant dense<2.000000e+00> : tensor<f32>
  %expanded_7 = tensor.expand_shape %10 [[0], [1, 2]] output_shape [%dim, 2, 2] : tensor<?x4xf32> into tensor<?x2x2xf32>
  %11 = tensor.empty(%dim) : tensor<2x?x2xf32>
  %transposed_8 = linalg.transpose ins(%expanded_7 : tensor<?x2x2xf32>) outs(%11 : tensor<2x?x2xf32>) permutation = [1, 0, 2] 
  %12 = tensor.empty(%dim) : tensor<2x2x?xf32>
  %transposed_9 = linalg.transpose ins(%transposed_4 : tensor<2x?x2xf32>) outs(%12 : tensor<2x2x?xf32>) permutation = [0, 2, 1] 
  %13 = tensor.empty(%dim, %dim) : tensor<2x?x?xf32>
  %cst_10 = arith.constant 0.000000e+00 : f32
  %14 = linalg.fill ins(%cst_10 : f32) outs(%13 : tensor<2x?x?xf32>) -> tensor<2x?x?xf32>
  %15 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%transposed, %transposed_9 : tensor<2x?x2xf32>, tensor<2x2x?xf32>) outs(%14 : tensor<2x?x?xf32>) {
  ^bb0(%in: f32, %in_18: f32, %out: f32):
    %31 = arith.mulf %in, %in_18 : f32
    %32 = arith.addf %out, %31 : f32
    linalg.yield %32 : f32
  } -> tensor<2x?x?xf32>
  %16 = tensor.empty(%dim, %dim) : tensor<2x?x?xf32>
  %c1 = arith.constant 1 : index
  %dim_11 = tensor.dim %15, %c1 : tensor<2x?x?xf32>
  %c2 = arith.constant 2 : index
  %dim_12 = tensor.dim %15, %c2 : tensor<2x?x?xf32>
  %17 = tensor.empty(%dim_11) : tensor<2x?xf32>
  %cst_13 = arith.constant 0xFFC00000 : f32
  %18 = linalg.fill ins(%cst_13 : f32) outs(%17 : tensor<2x?xf32>) -> tensor<2x?xf32>
  %19 = linalg.generic {indexing_maps = [#map3, #map4], iterator_types = ["parallel", "parallel", "reduction"]} ins(%15 : tensor<2x?x?xf32>) outs(%18 : tensor<2x?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %31 = arith.maxnumf %in, %out : f32
    linalg.yield %31 : f32
  } -> tensor<2x?xf32>
  %20 = linalg.generic {indexing_maps = [#map3, #map4, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%15, %19 : tensor<2x?x?xf32>, tensor<2x?xf32>) outs(%16 : tensor<2x?x?xf32>) {
  ^bb0(%in: f32, %in_18: f32, %out: f32):
    %31 = arith.subf %in, %in_18 : f32
    %32 = math.exp %31 : f32
    linalg.yield %32 : f32
  } -> tensor<2x?x?xf32>
  %cst_14 = arith.constant 0.000000e+00 : f32
  %21 = linalg.fill ins(%cst_14 : f32) outs(%17 : tensor<2x?xf32>) -> tensor<2x?xf32>
  %22 = linalg.generic {indexing_maps = [#map3, #map4], iterator_types = ["parallel", "parallel", "reduction"]} ins(%20 : tensor<2x?x?xf32>) outs(%21 : tensor<2x?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %31 = arith.addf %in, %out : f32
    linalg.yield %31 : f32
  } -> tensor<2x?xf32>
  %23 = linalg.generic {indexing_maps = [#map3, #map4, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%20, %22 : tensor<2x?x?xf32>, tensor<2x?xf32>) outs(%16 : tensor<2x?x?xf32>) {
  ^bb0(%in: f32, %in_18: f32, %out: f32):
    %31 = arith.divf %in, %in_18 : f32
    linalg.yield %31 : f32
  } -> tensor<2x?x?xf32>
  %24 = tensor.empty(%dim) : tensor<2x?x2xf32>
  %cst_15 = arith.constant 0.000000e+00 : f32
  %25 = linalg.fill ins(%cst_15 : f32) outs(%24 : tensor<2x?x2xf32>) -> tensor<2x?x2xf32>
  %26 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%23, %transposed_8 : tensor<2x?x?xf32>, tensor<2x?x2xf32>) outs(%25 : tensor<2x?x2xf32>) {
  ^bb0(%in: f32, %in_18: f32, %out: f32):
    %31 = arith.mulf %in, %in_18 : f32
    %32 = arith.addf %out, %31 : f32
    linalg.yield %32 : f32
  } -> tensor<2x?x2xf32>
  %27 = tensor.empty(%dim) : tensor<?x2x2xf32>
  %transposed_16 = linalg.transpose ins(%26 : tensor<2x?x2xf32>) outs(%27 : tensor<?x2x2xf32>) permutation = [1, 0, 2] 
  %collapsed = tensor.collapse_shape %transposed_16 [[0], [1, 2]] : tensor<?x2x2xf32> into tensor<?x4xf32>
  %28 = tensor.empty(%dim) : tensor<?x4xf32>
  %cst_17 = arith.constant 0.000000e+00 : f32
  %29 = linalg.fill ins(%cst_17 : f32) outs(%28 : tensor<?x4xf32>) -> tensor<?x4xf32>
  // expected-remark @below {{attention block left in standard form: its queries, keys and values read different inputs}}
  %30 = linalg.matmul ins(%collapsed, %arg5 : tensor<?x4xf32>, tensor<4x4xf32>) outs(%29 : tensor<?x4xf32>) -> tensor<?x4xf32>
  return %30 : tensor<?x4xf32>
}

// -----

// W_O maps to 3 features, G_VO would not be d x d.
// CHECK-LABEL: func.func @output_size_differs
//   CHECK-NOT:   geo.relational_attention

#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
#map2 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#map3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map4 = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @output_size_differs(%arg0: tensor<?x4xf32> {torsor.dims = ["L", 4], torsor.kind = "input", torsor.name = "x"}, %arg1: tensor<4x4xf32> {torsor.dims = [4, 4], torsor.kind = "param", torsor.name = "Wq"}, %arg2: tensor<4x4xf32> {torsor.dims = [4, 4], torsor.kind = "param", torsor.name = "Wk"}, %arg3: tensor<4x4xf32> {torsor.dims = [4, 4], torsor.kind = "param", torsor.name = "Wv"}, %arg4: tensor<4x3xf32> {torsor.dims = [4, 3], torsor.kind = "param", torsor.name = "Wo"}) -> (tensor<?x3xf32> {torsor.dims = ["L", 3], torsor.name = "y"}) {
  %c0 = arith.constant 0 : index
  %dim = tensor.dim %arg0, %c0 : tensor<?x4xf32>
  %0 = tensor.empty(%dim) : tensor<?x4xf32>
  %cst = arith.constant 0.000000e+00 : f32
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %2 = linalg.matmul ins(%arg0, %arg1 : tensor<?x4xf32>, tensor<4x4xf32>) outs(%1 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %cst_0 = arith.constant dense<2.000000e+00> : tensor<f32>
  %expanded = tensor.expand_shape %2 [[0], [1, 2]] output_shape [%dim, 2, 2] : tensor<?x4xf32> into tensor<?x2x2xf32>
  %3 = tensor.empty(%dim) : tensor<2x?x2xf32>
  %transposed = linalg.transpose ins(%expanded : tensor<?x2x2xf32>) outs(%3 : tensor<2x?x2xf32>) permutation = [1, 0, 2] 
  %4 = tensor.empty(%dim) : tensor<?x4xf32>
  %cst_1 = arith.constant 0.000000e+00 : f32
  %5 = linalg.fill ins(%cst_1 : f32) outs(%4 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %6 = linalg.matmul ins(%arg0, %arg2 : tensor<?x4xf32>, tensor<4x4xf32>) outs(%5 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %cst_2 = arith.constant dense<2.000000e+00> : tensor<f32>
  %expanded_3 = tensor.expand_shape %6 [[0], [1, 2]] output_shape [%dim, 2, 2] : tensor<?x4xf32> into tensor<?x2x2xf32>
  %7 = tensor.empty(%dim) : tensor<2x?x2xf32>
  %transposed_4 = linalg.transpose ins(%expanded_3 : tensor<?x2x2xf32>) outs(%7 : tensor<2x?x2xf32>) permutation = [1, 0, 2] 
  %8 = tensor.empty(%dim) : tensor<?x4xf32>
  %cst_5 = arith.constant 0.000000e+00 : f32
  %9 = linalg.fill ins(%cst_5 : f32) outs(%8 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %10 = linalg.matmul ins(%arg0, %arg3 : tensor<?x4xf32>, tensor<4x4xf32>) outs(%9 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %cst_6 = arith.constant dense<2.000000e+00> : tensor<f32>
  %expanded_7 = tensor.expand_shape %10 [[0], [1, 2]] output_shape [%dim, 2, 2] : tensor<?x4xf32> into tensor<?x2x2xf32>
  %11 = tensor.empty(%dim) : tensor<2x?x2xf32>
  %transposed_8 = linalg.transpose ins(%expanded_7 : tensor<?x2x2xf32>) outs(%11 : tensor<2x?x2xf32>) permutation = [1, 0, 2] 
  %12 = tensor.empty(%dim) : tensor<2x2x?xf32>
  %transposed_9 = linalg.transpose ins(%transposed_4 : tensor<2x?x2xf32>) outs(%12 : tensor<2x2x?xf32>) permutation = [0, 2, 1] 
  %13 = tensor.empty(%dim, %dim) : tensor<2x?x?xf32>
  %cst_10 = arith.constant 0.000000e+00 : f32
  %14 = linalg.fill ins(%cst_10 : f32) outs(%13 : tensor<2x?x?xf32>) -> tensor<2x?x?xf32>
  %15 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%transposed, %transposed_9 : tensor<2x?x2xf32>, tensor<2x2x?xf32>) outs(%14 : tensor<2x?x?xf32>) {
  ^bb0(%in: f32, %in_18: f32, %out: f32):
    %31 = arith.mulf %in, %in_18 : f32
    %32 = arith.addf %out, %31 : f32
    linalg.yield %32 : f32
  } -> tensor<2x?x?xf32>
  %16 = tensor.empty(%dim, %dim) : tensor<2x?x?xf32>
  %c1 = arith.constant 1 : index
  %dim_11 = tensor.dim %15, %c1 : tensor<2x?x?xf32>
  %c2 = arith.constant 2 : index
  %dim_12 = tensor.dim %15, %c2 : tensor<2x?x?xf32>
  %17 = tensor.empty(%dim_11) : tensor<2x?xf32>
  %cst_13 = arith.constant 0xFFC00000 : f32
  %18 = linalg.fill ins(%cst_13 : f32) outs(%17 : tensor<2x?xf32>) -> tensor<2x?xf32>
  %19 = linalg.generic {indexing_maps = [#map3, #map4], iterator_types = ["parallel", "parallel", "reduction"]} ins(%15 : tensor<2x?x?xf32>) outs(%18 : tensor<2x?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %31 = arith.maxnumf %in, %out : f32
    linalg.yield %31 : f32
  } -> tensor<2x?xf32>
  %20 = linalg.generic {indexing_maps = [#map3, #map4, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%15, %19 : tensor<2x?x?xf32>, tensor<2x?xf32>) outs(%16 : tensor<2x?x?xf32>) {
  ^bb0(%in: f32, %in_18: f32, %out: f32):
    %31 = arith.subf %in, %in_18 : f32
    %32 = math.exp %31 : f32
    linalg.yield %32 : f32
  } -> tensor<2x?x?xf32>
  %cst_14 = arith.constant 0.000000e+00 : f32
  %21 = linalg.fill ins(%cst_14 : f32) outs(%17 : tensor<2x?xf32>) -> tensor<2x?xf32>
  %22 = linalg.generic {indexing_maps = [#map3, #map4], iterator_types = ["parallel", "parallel", "reduction"]} ins(%20 : tensor<2x?x?xf32>) outs(%21 : tensor<2x?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %31 = arith.addf %in, %out : f32
    linalg.yield %31 : f32
  } -> tensor<2x?xf32>
  %23 = linalg.generic {indexing_maps = [#map3, #map4, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%20, %22 : tensor<2x?x?xf32>, tensor<2x?xf32>) outs(%16 : tensor<2x?x?xf32>) {
  ^bb0(%in: f32, %in_18: f32, %out: f32):
    %31 = arith.divf %in, %in_18 : f32
    linalg.yield %31 : f32
  } -> tensor<2x?x?xf32>
  %24 = tensor.empty(%dim) : tensor<2x?x2xf32>
  %cst_15 = arith.constant 0.000000e+00 : f32
  %25 = linalg.fill ins(%cst_15 : f32) outs(%24 : tensor<2x?x2xf32>) -> tensor<2x?x2xf32>
  %26 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%23, %transposed_8 : tensor<2x?x?xf32>, tensor<2x?x2xf32>) outs(%25 : tensor<2x?x2xf32>) {
  ^bb0(%in: f32, %in_18: f32, %out: f32):
    %31 = arith.mulf %in, %in_18 : f32
    %32 = arith.addf %out, %31 : f32
    linalg.yield %32 : f32
  } -> tensor<2x?x2xf32>
  %27 = tensor.empty(%dim) : tensor<?x2x2xf32>
  %transposed_16 = linalg.transpose ins(%26 : tensor<2x?x2xf32>) outs(%27 : tensor<?x2x2xf32>) permutation = [1, 0, 2] 
  %collapsed = tensor.collapse_shape %transposed_16 [[0], [1, 2]] : tensor<?x2x2xf32> into tensor<?x4xf32>
  %28 = tensor.empty(%dim) : tensor<?x3xf32>
  %cst_17 = arith.constant 0.000000e+00 : f32
  %29 = linalg.fill ins(%cst_17 : f32) outs(%28 : tensor<?x3xf32>) -> tensor<?x3xf32>
  // expected-remark @below {{attention block left in standard form: its output size 3 differs from its input size 4}}
  %30 = linalg.matmul ins(%collapsed, %arg4 : tensor<?x4xf32>, tensor<4x3xf32>) outs(%29 : tensor<?x3xf32>) -> tensor<?x3xf32>
  return %30 : tensor<?x3xf32>
}

// -----

// softmax over the query axis is not attention: no match, no remark.
// CHECK-LABEL: func.func @softmax_other_axis
//   CHECK-NOT:   geo.relational_attention
//       CHECK:   return

#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
#map2 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#map3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map4 = affine_map<(d0, d1, d2) -> (d0, d2)>
func.func @softmax_other_axis(%arg0: tensor<?x4xf32> {torsor.dims = ["L", 4], torsor.kind = "input", torsor.name = "x"}, %arg1: tensor<4x4xf32> {torsor.dims = [4, 4], torsor.kind = "param", torsor.name = "Wq"}, %arg2: tensor<4x4xf32> {torsor.dims = [4, 4], torsor.kind = "param", torsor.name = "Wk"}, %arg3: tensor<4x4xf32> {torsor.dims = [4, 4], torsor.kind = "param", torsor.name = "Wv"}, %arg4: tensor<4x4xf32> {torsor.dims = [4, 4], torsor.kind = "param", torsor.name = "Wo"}) -> (tensor<?x4xf32> {torsor.dims = ["L", 4], torsor.name = "y"}) {
  %c0 = arith.constant 0 : index
  %dim = tensor.dim %arg0, %c0 : tensor<?x4xf32>
  %0 = tensor.empty(%dim) : tensor<?x4xf32>
  %cst = arith.constant 0.000000e+00 : f32
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %2 = linalg.matmul ins(%arg0, %arg1 : tensor<?x4xf32>, tensor<4x4xf32>) outs(%1 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %cst_0 = arith.constant dense<2.000000e+00> : tensor<f32>
  %expanded = tensor.expand_shape %2 [[0], [1, 2]] output_shape [%dim, 2, 2] : tensor<?x4xf32> into tensor<?x2x2xf32>
  %3 = tensor.empty(%dim) : tensor<2x?x2xf32>
  %transposed = linalg.transpose ins(%expanded : tensor<?x2x2xf32>) outs(%3 : tensor<2x?x2xf32>) permutation = [1, 0, 2] 
  %4 = tensor.empty(%dim) : tensor<?x4xf32>
  %cst_1 = arith.constant 0.000000e+00 : f32
  %5 = linalg.fill ins(%cst_1 : f32) outs(%4 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %6 = linalg.matmul ins(%arg0, %arg2 : tensor<?x4xf32>, tensor<4x4xf32>) outs(%5 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %cst_2 = arith.constant dense<2.000000e+00> : tensor<f32>
  %expanded_3 = tensor.expand_shape %6 [[0], [1, 2]] output_shape [%dim, 2, 2] : tensor<?x4xf32> into tensor<?x2x2xf32>
  %7 = tensor.empty(%dim) : tensor<2x?x2xf32>
  %transposed_4 = linalg.transpose ins(%expanded_3 : tensor<?x2x2xf32>) outs(%7 : tensor<2x?x2xf32>) permutation = [1, 0, 2] 
  %8 = tensor.empty(%dim) : tensor<?x4xf32>
  %cst_5 = arith.constant 0.000000e+00 : f32
  %9 = linalg.fill ins(%cst_5 : f32) outs(%8 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %10 = linalg.matmul ins(%arg0, %arg3 : tensor<?x4xf32>, tensor<4x4xf32>) outs(%9 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %cst_6 = arith.constant dense<2.000000e+00> : tensor<f32>
  %expanded_7 = tensor.expand_shape %10 [[0], [1, 2]] output_shape [%dim, 2, 2] : tensor<?x4xf32> into tensor<?x2x2xf32>
  %11 = tensor.empty(%dim) : tensor<2x?x2xf32>
  %transposed_8 = linalg.transpose ins(%expanded_7 : tensor<?x2x2xf32>) outs(%11 : tensor<2x?x2xf32>) permutation = [1, 0, 2] 
  %12 = tensor.empty(%dim) : tensor<2x2x?xf32>
  %transposed_9 = linalg.transpose ins(%transposed_4 : tensor<2x?x2xf32>) outs(%12 : tensor<2x2x?xf32>) permutation = [0, 2, 1] 
  %13 = tensor.empty(%dim, %dim) : tensor<2x?x?xf32>
  %cst_10 = arith.constant 0.000000e+00 : f32
  %14 = linalg.fill ins(%cst_10 : f32) outs(%13 : tensor<2x?x?xf32>) -> tensor<2x?x?xf32>
  %15 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%transposed, %transposed_9 : tensor<2x?x2xf32>, tensor<2x2x?xf32>) outs(%14 : tensor<2x?x?xf32>) {
  ^bb0(%in: f32, %in_18: f32, %out: f32):
    %31 = arith.mulf %in, %in_18 : f32
    %32 = arith.addf %out, %31 : f32
    linalg.yield %32 : f32
  } -> tensor<2x?x?xf32>
  %16 = tensor.empty(%dim, %dim) : tensor<2x?x?xf32>
  %c1 = arith.constant 1 : index
  %dim_11 = tensor.dim %15, %c1 : tensor<2x?x?xf32>
  %c2 = arith.constant 2 : index
  %dim_12 = tensor.dim %15, %c2 : tensor<2x?x?xf32>
  %17 = tensor.empty(%dim_12) : tensor<2x?xf32>
  %cst_13 = arith.constant 0xFFC00000 : f32
  %18 = linalg.fill ins(%cst_13 : f32) outs(%17 : tensor<2x?xf32>) -> tensor<2x?xf32>
  %19 = linalg.generic {indexing_maps = [#map3, #map4], iterator_types = ["parallel", "reduction", "parallel"]} ins(%15 : tensor<2x?x?xf32>) outs(%18 : tensor<2x?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %31 = arith.maxnumf %in, %out : f32
    linalg.yield %31 : f32
  } -> tensor<2x?xf32>
  %20 = linalg.generic {indexing_maps = [#map3, #map4, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%15, %19 : tensor<2x?x?xf32>, tensor<2x?xf32>) outs(%16 : tensor<2x?x?xf32>) {
  ^bb0(%in: f32, %in_18: f32, %out: f32):
    %31 = arith.subf %in, %in_18 : f32
    %32 = math.exp %31 : f32
    linalg.yield %32 : f32
  } -> tensor<2x?x?xf32>
  %cst_14 = arith.constant 0.000000e+00 : f32
  %21 = linalg.fill ins(%cst_14 : f32) outs(%17 : tensor<2x?xf32>) -> tensor<2x?xf32>
  %22 = linalg.generic {indexing_maps = [#map3, #map4], iterator_types = ["parallel", "reduction", "parallel"]} ins(%20 : tensor<2x?x?xf32>) outs(%21 : tensor<2x?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %31 = arith.addf %in, %out : f32
    linalg.yield %31 : f32
  } -> tensor<2x?xf32>
  %23 = linalg.generic {indexing_maps = [#map3, #map4, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%20, %22 : tensor<2x?x?xf32>, tensor<2x?xf32>) outs(%16 : tensor<2x?x?xf32>) {
  ^bb0(%in: f32, %in_18: f32, %out: f32):
    %31 = arith.divf %in, %in_18 : f32
    linalg.yield %31 : f32
  } -> tensor<2x?x?xf32>
  %24 = tensor.empty(%dim) : tensor<2x?x2xf32>
  %cst_15 = arith.constant 0.000000e+00 : f32
  %25 = linalg.fill ins(%cst_15 : f32) outs(%24 : tensor<2x?x2xf32>) -> tensor<2x?x2xf32>
  %26 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%23, %transposed_8 : tensor<2x?x?xf32>, tensor<2x?x2xf32>) outs(%25 : tensor<2x?x2xf32>) {
  ^bb0(%in: f32, %in_18: f32, %out: f32):
    %31 = arith.mulf %in, %in_18 : f32
    %32 = arith.addf %out, %31 : f32
    linalg.yield %32 : f32
  } -> tensor<2x?x2xf32>
  %27 = tensor.empty(%dim) : tensor<?x2x2xf32>
  %transposed_16 = linalg.transpose ins(%26 : tensor<2x?x2xf32>) outs(%27 : tensor<?x2x2xf32>) permutation = [1, 0, 2] 
  %collapsed = tensor.collapse_shape %transposed_16 [[0], [1, 2]] : tensor<?x2x2xf32> into tensor<?x4xf32>
  %28 = tensor.empty(%dim) : tensor<?x4xf32>
  %cst_17 = arith.constant 0.000000e+00 : f32
  %29 = linalg.fill ins(%cst_17 : f32) outs(%28 : tensor<?x4xf32>) -> tensor<?x4xf32>
  %30 = linalg.matmul ins(%collapsed, %arg4 : tensor<?x4xf32>, tensor<4x4xf32>) outs(%29 : tensor<?x4xf32>) -> tensor<?x4xf32>
  return %30 : tensor<?x4xf32>
}
