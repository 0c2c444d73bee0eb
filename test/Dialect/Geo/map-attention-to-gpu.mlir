// RUN: torsor-opt %s --split-input-file --geo-map-attention-to-gpu="threads=32 key-tile=8 score-chunk=2" --verify-diagnostics | FileCheck %s
// RUN: torsor-opt %s --split-input-file --geo-map-attention-to-gpu="cpu-emulation=1 threads=32 key-tile=8 score-chunk=2" --verify-diagnostics | FileCheck %s --check-prefix=EMU

// A causal SO(3) attention over a batch: one gpu.launch with a grid of
// (query tiles, batch) and 32 threads; the key features and values of a
// key tile (8 × (64 + 9) f32) sit in one 16-byte aligned workgroup
// buffer, filled cooperatively between two barriers; the key loop carries
// the per-thread state (max, sum, 64 accumulators) in registers; value rows
// are 16-byte shared loads; the second, masked key loop compares keys with
// the row (causal); only the output is allocated (no L × L buffer).
// CHECK-LABEL: memref.global "private" @__torsor_attention_tile : memref<584xf32, #gpu.address_space<workgroup>> {alignment = 16 : i64}
// CHECK-LABEL: func.func @so3_causal
//  CHECK-SAME:   (%[[Q:[^:]*]]: tensor<?x?x9xf32>, %[[K:[^:]*]]: tensor<?x9x?xf32>, %[[V:[^:]*]]: tensor<?x?x64xf32>
//   CHECK-DAG:   %[[QB:.*]] = bufferization.to_buffer %[[Q]] read_only
//   CHECK-DAG:   %[[KB:.*]] = bufferization.to_buffer %[[K]] read_only
//   CHECK-DAG:   %[[VB:.*]] = bufferization.to_buffer %[[V]] read_only
//       CHECK:   %[[OUT:.*]] = memref.alloc({{.*}}) : memref<?x?x64xf32>
//   CHECK-NOT:   memref.alloc
//       CHECK:   scf.if
//       CHECK:     gpu.launch blocks({{.*}}) in ({{.*}} = %[[TILES:.*]], {{.*}} = %[[BATCH:.*]], {{.*}}) threads(%[[TID:[^,]*]], {{.*}}) in ({{.*}} = %c32{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}})
//       CHECK:       %[[TILE:.*]] = memref.get_global @__torsor_attention_tile
//       CHECK:       memref.load %[[QB]]
//       CHECK:       scf.for {{.*}} -> (f32, f32, f32
//       CHECK:         gpu.barrier
//       CHECK:         scf.for %[[I:.*]] = %[[TID]] to %c512{{.*}} step %c32
//       CHECK:           memref.load %[[VB]]
//       CHECK:           memref.store {{.*}}, %[[TILE]][%[[I]]]
//       CHECK:         scf.for %{{.*}} = %[[TID]] to %c72{{.*}} step %c32
//       CHECK:           memref.load %[[KB]]
//       CHECK:           memref.store {{.*}}, %[[TILE]]
//       CHECK:         gpu.barrier
//       CHECK:         scf.for {{.*}} step %c2{{.*}} -> (f32, f32, f32
//       CHECK:           memref.load %[[TILE]]
//       CHECK:           math.sqrt
//       CHECK:           vector.load %[[TILE]][{{.*}}] {alignment = 16 : i64} : memref<584xf32, #gpu.address_space<workgroup>>, vector<4xf32>
//       CHECK:           math.fma
//       CHECK:       scf.for
//       CHECK:         gpu.barrier
//       CHECK:         arith.minui
//       CHECK:         arith.cmpi sle
//       CHECK:         arith.select
//       CHECK:       scf.if
//       CHECK:         memref.store {{.*}}, %[[OUT]]
//       CHECK:       gpu.terminator
//   CHECK-NOT:   gpu.launch
//       CHECK:   %[[R:.*]] = bufferization.to_tensor %[[OUT]] restrict writable
//       CHECK:   return %[[R]]
//   CHECK-NOT:   geo.flash_lie_attention
//   CHECK-NOT:   math.atan2
//   CHECK-NOT:   math.exp

// The emulation: the same per-thread code, blocks as scf.parallel and the
// threads as a loop per phase; the state crosses phases in a stack array.
// EMU-LABEL: func.func @so3_causal
//   EMU-NOT:   gpu.
//       EMU:   scf.parallel
//       EMU:     %[[TILE:.*]] = memref.alloca() {alignment = 16 : i64} : memref<584xf32>
//       EMU:     %[[SPILL:.*]] = memref.alloca() : memref<2112xf32>
//       EMU:     scf.for
//       EMU:       memref.store {{.*}}, %[[SPILL]]
//       EMU:     scf.for
//       EMU:       scf.for
//       EMU:         memref.store {{.*}}, %[[TILE]]
//       EMU:       scf.for
//       EMU:         memref.load %[[SPILL]]
//       EMU:         math.sqrt
//       EMU:         memref.store {{.*}}, %[[SPILL]]
//       EMU:   bufferization.to_tensor
//   EMU-NOT:   gpu.
func.func @so3_causal(%q: tensor<?x?x9xf32>, %k: tensor<?x9x?xf32>, %v: tensor<?x?x64xf32>, %init: tensor<?x?x64xf32>) -> tensor<?x?x64xf32> {
  %c0 = arith.constant 0 : index
  %o = geo.flash_lie_attention %q, %k, %v, %c0, %init {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0], causal>} : (tensor<?x?x9xf32>, tensor<?x9x?xf32>, tensor<?x?x64xf32>, index, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  return %o : tensor<?x?x64xf32>
}

// -----

// Two attentions, two kernels with a tile each; SE(3), two heads, no
// batch, f64 (libm exp: no polynomial, 16-byte loads of 2 values).
// CHECK-DAG: memref.global "private" @__torsor_attention_tile : memref<352xf64
// CHECK-DAG: memref.global "private" @__torsor_attention_tile_0 : memref<352xf64
// CHECK-LABEL: func.func @se3_two_heads_f64
//       CHECK:   gpu.launch
//       CHECK:     vector.load {{.*}} vector<2xf64>
//       CHECK:     math.exp {{.*}} : f64
//       CHECK:   gpu.launch
//   CHECK-NOT:   gpu.launch
//   CHECK-NOT:   geo.flash_lie_attention
func.func @se3_two_heads_f64(%q: tensor<?x12xf64>, %k: tensor<12x?xf64>, %v: tensor<?x32xf64>, %init: tensor<?x32xf64>) -> (tensor<?x32xf64>, tensor<?x32xf64>) {
  %c0 = arith.constant 0 : index
  %a = geo.flash_lie_attention %q, %k, %v, %c0, %init {scores = #geo.scores<group = #lie.group<se3>, heads = 2, tau = [1.0, 2.0], lambda = [1.0, 0.5, 2.0, 0.25]>} : (tensor<?x12xf64>, tensor<12x?xf64>, tensor<?x32xf64>, index, tensor<?x32xf64>) -> tensor<?x32xf64>
  %b = geo.flash_lie_attention %q, %k, %v, %c0, %init {scores = #geo.scores<group = #lie.group<se3>, heads = 1, tau = [1.0], lambda = [1.0, 1.0], causal>} : (tensor<?x12xf64>, tensor<12x?xf64>, tensor<?x32xf64>, index, tensor<?x32xf64>) -> tensor<?x32xf64>
  return %a, %b : tensor<?x32xf64>, tensor<?x32xf64>
}

// -----

// A tile already split for the CPU is not mapped again.
func.func @already_tiled(%q: tensor<4x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x8xf32>, %init: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{is already tiled for the CPU (geo-tile-attention); map the untiled op}}
  %o = geo.flash_lie_attention %q, %k, %v, %c0, %init {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0]>, key_tile = 8 : i64} : (tensor<4x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>, index, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %o : tensor<4x8xf32>
}

// -----

// With a log-sum-exp result (the flash backward's statistics) the kernel
// also writes m + log l per row and head, into a buffer of its own.
// CHECK-LABEL: func.func @with_lse
//       CHECK:   %[[OUT:.*]] = memref.alloc({{.*}}) : memref<?x8xf32>
//       CHECK:   %[[LSE:.*]] = memref.alloc({{.*}}) : memref<?x1xf32>
//       CHECK:   gpu.launch
//       CHECK:     scf.if
//       CHECK:       %[[LOG:.*]] = math.log
//       CHECK:       %[[L:.*]] = arith.addf %{{.*}}, %[[LOG]] : f32
//       CHECK:       memref.store %[[L]], %[[LSE]]
//       CHECK:       memref.store {{.*}}, %[[OUT]]
//       CHECK:     gpu.terminator
//   CHECK-DAG:   %[[O:.*]] = bufferization.to_tensor %[[OUT]] restrict writable
//   CHECK-DAG:   %[[LT:.*]] = bufferization.to_tensor %[[LSE]] restrict writable
//       CHECK:   return %[[O]], %[[LT]]
func.func @with_lse(%q: tensor<?x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x8xf32>, %init: tensor<?x8xf32>, %lse0: tensor<?x1xf32>) -> (tensor<?x8xf32>, tensor<?x1xf32>) {
  %c0 = arith.constant 0 : index
  %o, %lse = geo.flash_lie_attention %q, %k, %v, %c0, %init lse %lse0 {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0]>} : (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>, index, tensor<?x8xf32>, tensor<?x1xf32>) -> (tensor<?x8xf32>, tensor<?x1xf32>)
  return %o, %lse : tensor<?x8xf32>, tensor<?x1xf32>
}

// -----

// The cross form (key_offset): the block's key range starts at the key
// position query_offset − key_offset of its first row (computed in the
// kernel) and clamps signed to [0, Lk]; the mask compares signed; the lse
// is written as with_lse.
// CHECK-LABEL: func.func @cross
//  CHECK-SAME:   %[[QO:[^:]*]]: index, %[[KO:[^:]*]]: index)
//       CHECK:   gpu.launch
//       CHECK:     %[[DIAG:.*]] = arith.subi %[[QO]], %[[KO]] : index
//       CHECK:     arith.addi %[[DIAG]]
//       CHECK:     arith.minsi
//       CHECK:     arith.maxsi
//       CHECK:       arith.cmpi sle
//       CHECK:     gpu.terminator
func.func @cross(%q: tensor<?x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x8xf32>, %init: tensor<?x8xf32>, %lse0: tensor<?x1xf32>, %qo: index, %ko: index) -> (tensor<?x8xf32>, tensor<?x1xf32>) {
  %o, %lse = geo.flash_lie_attention %q, %k, %v, %qo key_offset %ko, %init lse %lse0 {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0], causal>} : (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>, index, index, tensor<?x8xf32>, tensor<?x1xf32>) -> (tensor<?x8xf32>, tensor<?x1xf32>)
  return %o, %lse : tensor<?x8xf32>, tensor<?x1xf32>
}

// -----

// A declared group whose log is iterative (Sim(2), generic): each thread
// calls the one private function of its pair form per pair.
// CHECK-LABEL: func.func @declared_per_thread
//       CHECK:   gpu.launch
//       CHECK:     func.call @torsor_pair_norms_Sim2_f32
//       CHECK:     gpu.terminator
//       CHECK: func.func private @torsor_pair_norms_Sim2_f32
//       CHECK:   scf.while
//   CHECK-NOT:   math.exp
func.func @declared_per_thread(%q: tensor<?x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x8xf32>, %init: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %o = geo.flash_lie_attention %q, %k, %v, %c0, %init {scores = #geo.scores<group = #lie.group<"Sim2", n = 3, generators = array<f64: 0.0, -1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0>, blocks = [["rotscale", 0, 1], ["trans", 2, 3]], generic>, heads = 1, tau = [1.0], lambda = [1.0, 0.5]>} : (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>, index, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %o : tensor<?x8xf32>
}

// -----

// Offsets read from rank-0 tensors (a model's i64 inputs: device memory on
// the GPU) are loaded inside the kernel from their buffers, not on the
// host.
// CHECK-LABEL: func.func @cross_device_offsets
//       CHECK:   bufferization.to_buffer %{{.*}} read_only : tensor<i64>
//       CHECK:   gpu.launch
//       CHECK:     memref.load %{{.*}}[] : memref<i64
//       CHECK:     arith.index_cast
//       CHECK:     gpu.terminator
func.func @cross_device_offsets(%q: tensor<?x9xf32>, %k: tensor<9x?xf32>, %v: tensor<?x8xf32>, %init: tensor<?x8xf32>, %lse0: tensor<?x1xf32>, %qt: tensor<i64>, %kt: tensor<i64>) -> (tensor<?x8xf32>, tensor<?x1xf32>) {
  %q64 = tensor.extract %qt[] : tensor<i64>
  %qo = arith.index_cast %q64 : i64 to index
  %k64 = tensor.extract %kt[] : tensor<i64>
  %ko = arith.index_cast %k64 : i64 to index
  %o, %lse = geo.flash_lie_attention %q, %k, %v, %qo key_offset %ko, %init lse %lse0 {scores = #geo.scores<group = #lie.group<so3>, heads = 1, tau = [1.0], lambda = [1.0], causal>} : (tensor<?x9xf32>, tensor<9x?xf32>, tensor<?x8xf32>, index, index, tensor<?x8xf32>, tensor<?x1xf32>) -> (tensor<?x8xf32>, tensor<?x1xf32>)
  return %o, %lse : tensor<?x8xf32>, tensor<?x1xf32>
}
