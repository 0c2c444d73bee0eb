// RUN: torsor-opt %s --torsor-merge-gpu-modules | FileCheck %s

// Two kernels in two modules (as gpu-kernel-outlining leaves them, with
// the same kernel name), with a helper cloned into both: one module, each
// kernel named after its old module, the helper once, launches retargeted.
// CHECK:       gpu.module @torsor_kernels {
// CHECK-DAG:     gpu.func @a_kernel
// CHECK-DAG:     gpu.func @b_kernel(%{{.*}}: index)
// CHECK-DAG:     func.func private @helper
// CHECK:       }
// CHECK-NOT:   gpu.module
// CHECK-LABEL: func.func @f
// CHECK:         gpu.launch_func @torsor_kernels::@a_kernel
// CHECK:         gpu.launch_func @torsor_kernels::@b_kernel
// CHECK-NOT:   func.func private @helper
module attributes {gpu.container_module} {
  gpu.module @a_kernel {
    func.func private @helper() { return }
    gpu.func @a_kernel() kernel {
      func.call @helper() : () -> ()
      gpu.return
    }
  }
  gpu.module @b_kernel {
    func.func private @helper() { return }
    gpu.func @a_kernel(%x: index) kernel {
      func.call @helper() : () -> ()
      gpu.return
    }
  }
  func.func @f() {
    %c1 = arith.constant 1 : index
    gpu.launch_func @a_kernel::@a_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    gpu.launch_func @b_kernel::@a_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%c1 : index)
    return
  }
}
