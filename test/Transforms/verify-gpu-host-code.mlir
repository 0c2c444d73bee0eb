// RUN: torsor-opt %s --split-input-file --torsor-verify-gpu-host-code --verify-diagnostics | FileCheck %s

// Host code that only allocates, reads shapes and launches passes.
// CHECK-LABEL: func.func @control
//       CHECK:   gpu.launch_func
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%a: memref<?xf32>) kernel {
      %c0 = arith.constant 0 : index
      %x = memref.load %a[%c0] : memref<?xf32>
      gpu.return
    }
  }
  func.func @control(%a: memref<?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %a, %c0 : memref<?xf32>
    %t = gpu.alloc (%n) : memref<?xf32>
    gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%t : memref<?xf32>)
    gpu.dealloc %t : memref<?xf32>
    return
  }
}

// -----

// A load of tensor data on the host is an error at its location.
func.func @host_load(%a: memref<?xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{NVPTX host code would read or write tensor data here ('memref.load')}}
  %x = memref.load %a[%c0] : memref<?xf32>
  return %x : f32
}

// -----

// So is a store inside a host loop, and a host stack buffer.
func.func @host_loop(%a: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f32
  // expected-error @+1 {{'memref.alloca'}}
  %s = memref.alloca() : memref<4xf32>
  scf.for %i = %c0 to %n step %c1 {
    // expected-error @+1 {{'memref.store'}}
    memref.store %z, %a[%i] : memref<?xf32>
  }
  return
}
