// RUN: torsor-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(torsor-resolve-dims))' | FileCheck %s

// A loop of tensor.insert on an empty tensor, then an scf.if whose
// branches both yield the loop's result or an insert into it: the dim of
// the if's result is the empty tensor's size operand.

// CHECK-LABEL: func.func @loop_and_if
// CHECK-SAME:    (%[[N:.*]]: index, %{{.*}}: i1, %{{.*}}: f32)
// CHECK-NOT:     tensor.dim
// CHECK:         return %[[N]]
func.func @loop_and_if(%n: index, %c: i1, %x: f32) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %init = tensor.empty(%n) : tensor<?x64xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%t = %init)
      -> (tensor<?x64xf32>) {
    %u = tensor.insert %x into %t[%i, %c0] : tensor<?x64xf32>
    scf.yield %u : tensor<?x64xf32>
  }
  %s = scf.if %c -> (tensor<?x64xf32>) {
    %v = tensor.insert %x into %r[%c0, %c0] : tensor<?x64xf32>
    scf.yield %v : tensor<?x64xf32>
  } else {
    scf.yield %r : tensor<?x64xf32>
  }
  %d = tensor.dim %s, %c0 : tensor<?x64xf32>
  return %d : index
}

// -----

// An scf.forall's result has its shared_outs' shape; here they are a
// function argument, whose dim the dim now takes.

// CHECK-LABEL: func.func @forall_result
// CHECK-SAME:    (%[[A:.*]]: tensor<?x8xf32>
// CHECK:         %[[D:.*]] = tensor.dim %[[A]], %c0
// CHECK:         return %[[D]]
func.func @forall_result(%a: tensor<?x8xf32>, %b: tensor<4x8xf32>) -> index {
  %c0 = arith.constant 0 : index
  %r = scf.forall (%i) in (2) shared_outs(%o = %a) -> (tensor<?x8xf32>) {
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %b into %o[%i, 0] [4, 8] [1, 1]
          : tensor<4x8xf32> into tensor<?x8xf32>
    }
  }
  %d = tensor.dim %r, %c0 : tensor<?x8xf32>
  return %d : index
}

// -----

// A loop that yields a tensor of another shape (a slice of its iter_arg)
// does not keep its init's shape: the dim stays on the loop's result.
// So does an if whose branches yield different tensors.

// CHECK-LABEL: func.func @not_shape_preserving
// CHECK:         %[[R:.*]] = scf.for
// CHECK:         %[[S:.*]] = scf.if
// CHECK:         tensor.dim %[[R]], %c0
// CHECK:         tensor.dim %[[S]], %c0
func.func @not_shape_preserving(%a: tensor<?xf32>, %b: tensor<?xf32>,
                                %n: index, %c: i1) -> (index, index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%t = %a) -> (tensor<?xf32>) {
    %u = tensor.extract_slice %t[0] [%i] [1] : tensor<?xf32> to tensor<?xf32>
    scf.yield %u : tensor<?xf32>
  }
  %s = scf.if %c -> (tensor<?xf32>) {
    scf.yield %a : tensor<?xf32>
  } else {
    scf.yield %b : tensor<?xf32>
  }
  %d = tensor.dim %r, %c0 : tensor<?xf32>
  %e = tensor.dim %s, %c0 : tensor<?xf32>
  return %d, %e : index, index
}
