// RUN: torsor-opt %s --torsor-select-strategy="vector-bits=512 compute=bf16 amx=true" --torsor-tile-dense --torsor-hoist-packed-params | FileCheck %s
// RUN: torsor-opt %s --torsor-select-strategy="vector-bits=512" --torsor-tile-dense --torsor-hoist-packed-params | FileCheck %s --check-prefix=F32

// torsor-hoist-packed-params: the VNNI tile packing of the param %w (40 x 48,
// padded to 64 x 64, 8192 bytes of bf16) moves into torsor_prepare_model,
// which writes it at offset 0 of the byte buffer; the model takes that
// buffer as a new last argument and reads the packed copy through a view.
// The input %x is still packed in the model (it changes every call).

// CHECK: module attributes {torsor.prepared_bytes = 8192 : i64}
// CHECK-LABEL: func.func @torsor_model(
// CHECK-SAME:    %[[X:[^:]*]]: memref<?x40xf32>, %{{[^:]*}}: memref<40x48xf32>, %{{[^:]*}}: memref<?x48xf32>, %[[BYTES:[^:]*]]: memref<?xi8>)
//      CHECK:   %[[VIEW:.*]] = memref.view %[[BYTES]][%{{.*}}][] : memref<?xi8> to memref<4x2x16x16x2xbf16>
//      CHECK:   %[[PACKED:.*]] = bufferization.to_tensor %[[VIEW]] restrict
//  CHECK-NOT:   torsor.packed_operand
//      CHECK:   linalg.generic {{.*}} ins(%{{.*}}, %[[PACKED]] : tensor<?x2x16x16x2xbf16>, tensor<4x2x16x16x2xbf16>) {{.*}} attrs = {torsor.bf16_product}
// CHECK-LABEL: func.func @torsor_prepare_model(
// CHECK-SAME:    %[[W:[^:]*]]: memref<40x48xf32>, %[[OUT:[^:]*]]: memref<?xi8>)
//      CHECK:   bufferization.to_tensor %[[W]]
//      CHECK:   %[[P:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<4x2x16x16x2xbf16>) attrs = {torsor.packed_operand}
//      CHECK:   %[[V:.*]] = memref.view %[[OUT]][%{{.*}}][] : memref<?xi8> to memref<4x2x16x16x2xbf16>
//      CHECK:   bufferization.materialize_in_destination %[[P]] in restrict writable %[[V]]

// f32: the param's column panels for the FMA kernel (48 columns in 2
// panels of 32, zero-padded: 2 x 40 x 32 f32, 10240 bytes) are made once
// in torsor_prepare_model the same way, and the register tiles read
// slices of the view (the first panel whole, 16 columns of the second).

// F32: module attributes {torsor.prepared_bytes = 10240 : i64}
// F32-LABEL: func.func @torsor_model(
//  F32-SAME:    %{{[^:]*}}: memref<?x40xf32>, %{{[^:]*}}: memref<40x48xf32>, %{{[^:]*}}: memref<?x48xf32>, %[[BYTES:[^:]*]]: memref<?xi8>)
//       F32:   %[[VIEW:.*]] = memref.view %[[BYTES]][%{{.*}}][] : memref<?xi8> to memref<2x40x32xf32>
//       F32:   %[[PANELS:.*]] = bufferization.to_tensor %[[VIEW]] restrict
//   F32-NOT:   torsor.packed_operand
//       F32:   scf.forall
//       F32:     tensor.extract_slice %[[PANELS]][0, 0, 0] [1, 40, 32] [1, 1, 1] : tensor<2x40x32xf32> to tensor<40x32xf32>
//       F32:     vector.fma
//       F32:     tensor.extract_slice %[[PANELS]][1, 0, 0] [1, 40, 16] [1, 1, 1] : tensor<2x40x32xf32> to tensor<40x16xf32>
// F32-LABEL: func.func @torsor_prepare_model(
//  F32-SAME:    %[[W:[^:]*]]: memref<40x48xf32>, %[[OUT:[^:]*]]: memref<?xi8>)
//       F32:   bufferization.to_tensor %[[W]]
//       F32:   %[[P:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<2x40x32xf32>) attrs = {torsor.packed_operand}
//       F32:   %[[V:.*]] = memref.view %[[OUT]][%{{.*}}][] : memref<?xi8> to memref<2x40x32xf32>
//       F32:   bufferization.materialize_in_destination %[[P]] in restrict writable %[[V]]
module {
  func.func @torsor_model(%xm: memref<?x40xf32>, %wm: memref<40x48xf32>, %ym: memref<?x48xf32>)
      attributes {llvm.emit_c_interface, torsor.param_args = array<i64: 1, 2>} {
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f32
    %x = bufferization.to_tensor %xm restrict : memref<?x40xf32> to tensor<?x40xf32>
    %w = bufferization.to_tensor %wm restrict : memref<40x48xf32> to tensor<40x48xf32>
    %l = tensor.dim %x, %c0 : tensor<?x40xf32>
    %init = tensor.empty(%l) : tensor<?x48xf32>
    %fill = linalg.fill ins(%zero : f32) outs(%init : tensor<?x48xf32>) -> tensor<?x48xf32>
    %y = linalg.matmul ins(%x, %w : tensor<?x40xf32>, tensor<40x48xf32>)
                       outs(%fill : tensor<?x48xf32>) -> tensor<?x48xf32>
    bufferization.materialize_in_destination %y in restrict writable %ym : (tensor<?x48xf32>, memref<?x48xf32>) -> ()
    return
  }
}
