//===- gpu_axpy.mlir - A GPU model lowered by MLIR's own pipeline ---------===//
//
// Input of test/Runtime/cuda-mlir-lowering.test: host code and a kernel in
// the gpu dialect, lowered by upstream gpu-lower-to-nvvm-pipeline, so the
// mgpu* calls (and the kernel's expanded arguments) are exactly what LLVM
// 22 emits. out = 2 x + w over x [L, 8] and w [8]; on a real GPU the
// kernel runs, and the fake driver emulates it under the same name.
//
//===----------------------------------------------------------------------===//
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @torsor_fake_axpy(%in: memref<?xf32>, %w: memref<?xf32>,
                               %out: memref<?xf32>, %n: index, %d: index) kernel {
      %bid = gpu.block_id x
      %tid = gpu.thread_id x
      %bdim = gpu.block_dim x
      %base = arith.muli %bid, %bdim : index
      %i = arith.addi %base, %tid : index
      %inside = arith.cmpi ult, %i, %n : index
      scf.if %inside {
        %j = arith.remui %i, %d : index
        %xv = memref.load %in[%i] : memref<?xf32>
        %wv = memref.load %w[%j] : memref<?xf32>
        %two = arith.constant 2.0 : f32
        %t = arith.mulf %two, %xv : f32
        %r = arith.addf %t, %wv : f32
        memref.store %r, %out[%i] : memref<?xf32>
      }
      gpu.return
    }
  }
  func.func @forward(%x: memref<?x8xf32>, %w: memref<8xf32>, %out: memref<?x8xf32>)
      attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c127 = arith.constant 127 : index
    %c128 = arith.constant 128 : index
    %xf = memref.collapse_shape %x [[0, 1]] : memref<?x8xf32> into memref<?xf32>
    %of = memref.collapse_shape %out [[0, 1]] : memref<?x8xf32> into memref<?xf32>
    %wd = memref.cast %w : memref<8xf32> to memref<?xf32>
    %n = memref.dim %xf, %c0 : memref<?xf32>
    %d = memref.dim %wd, %c0 : memref<?xf32>
    %np = arith.addi %n, %c127 : index
    %blocks = arith.divui %np, %c128 : index
    %t0 = gpu.wait async
    %tmp, %t1 = gpu.alloc async [%t0] (%n) : memref<?xf32>
    %t2 = gpu.memcpy async [%t1] %tmp, %xf : memref<?xf32>, memref<?xf32>
    %t3 = gpu.launch_func async [%t2] @kernels::@torsor_fake_axpy
        blocks in (%blocks, %c1, %c1) threads in (%c128, %c1, %c1)
        args(%tmp : memref<?xf32>, %wd : memref<?xf32>, %of : memref<?xf32>, %n : index, %d : index)
    %t4 = gpu.dealloc async [%t3] %tmp : memref<?xf32>
    gpu.wait [%t4]
    return
  }
}
