// RUN: torsor-opt %s --torsor-route-allocations --split-input-file --verify-diagnostics | FileCheck %s

// malloc and free of the lowered model go through the helpers; each site
// gets a constant naming its source location, shared between equal sites.
// CHECK-DAG: llvm.mlir.global private constant @__torsor_alloc_site_0("an intermediate buffer of the op at model.tsr:6:14\00")
// CHECK-DAG: llvm.mlir.global private constant @__torsor_alloc_site_1("an intermediate buffer\00")
// CHECK-LABEL: llvm.func @model
//  CHECK-SAME:   (%[[N:.*]]: i64)
//       CHECK:   %[[SITE:.*]] = llvm.mlir.addressof @__torsor_alloc_site_0 : !llvm.ptr
//       CHECK:   %[[A:.*]] = llvm.call @__torsor_alloc(%[[N]], %[[SITE]]) : (i64, !llvm.ptr) -> !llvm.ptr
//       CHECK:   %[[SAME:.*]] = llvm.mlir.addressof @__torsor_alloc_site_0 : !llvm.ptr
//       CHECK:   %[[B:.*]] = llvm.call @__torsor_alloc(%[[N]], %[[SAME]])
//       CHECK:   %[[NOWHERE:.*]] = llvm.mlir.addressof @__torsor_alloc_site_1 : !llvm.ptr
//       CHECK:   llvm.call @__torsor_alloc(%[[N]], %[[NOWHERE]])
//       CHECK:   llvm.call @__torsor_free(%[[A]]) : (!llvm.ptr) -> ()
//       CHECK:   llvm.call @__torsor_free(%[[B]])
//   CHECK-NOT:   llvm.call @malloc
//   CHECK-NOT:   llvm.call @free
//
// The helpers: the runtime's entry points when they are linked, else libc.
// CHECK-LABEL: llvm.func extern_weak @torsor_alloc(i64, !llvm.ptr) -> !llvm.ptr
// CHECK-LABEL: llvm.func extern_weak @torsor_free(!llvm.ptr)
// CHECK-LABEL: llvm.func internal @__torsor_alloc
//  CHECK-SAME:   (%[[BYTES:.*]]: i64, %[[WHAT:.*]]: !llvm.ptr) -> !llvm.ptr
//  CHECK-SAME:   attributes {no_inline}
//       CHECK:   %[[RT:.*]] = llvm.mlir.addressof @torsor_alloc : !llvm.ptr
//       CHECK:   %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
//       CHECK:   %[[HAVE:.*]] = llvm.icmp "ne" %[[RT]], %[[NULL]] : !llvm.ptr
//       CHECK:   llvm.cond_br %[[HAVE]], ^[[WITH:.*]], ^[[WITHOUT:.*]]
//       CHECK: ^[[WITH]]:
//       CHECK:   %[[P:.*]] = llvm.call @torsor_alloc(%[[BYTES]], %[[WHAT]])
//       CHECK:   llvm.return %[[P]]
//       CHECK: ^[[WITHOUT]]:
//       CHECK:   %[[Q:.*]] = llvm.call @malloc(%[[BYTES]])
//       CHECK:   llvm.return %[[Q]]
// CHECK-LABEL: llvm.func internal @__torsor_free
//  CHECK-SAME:   attributes {no_inline}
//       CHECK:   llvm.call @torsor_free
//       CHECK:   llvm.call @free
llvm.func @malloc(i64) -> !llvm.ptr
llvm.func @free(!llvm.ptr)
llvm.func @model(%n: i64) {
  %a = llvm.call @malloc(%n) : (i64) -> !llvm.ptr loc("model.tsr":6:14)
  %b = llvm.call @malloc(%n) : (i64) -> !llvm.ptr loc(fused["model.tsr":6:14, "other.mlir":1:1])
  %c = llvm.call @malloc(%n) : (i64) -> !llvm.ptr loc(unknown)
  llvm.call @free(%a) : (!llvm.ptr) -> ()
  llvm.call @free(%b) : (!llvm.ptr) -> ()
  llvm.call @free(%c) : (!llvm.ptr) -> ()
  llvm.return
}

// -----

// No heap allocations: nothing is added.
// CHECK-LABEL: llvm.func @no_allocations
//   CHECK-NOT:   __torsor_alloc
//   CHECK-NOT:   torsor_alloc
llvm.func @no_allocations() {
  llvm.return
}

// -----

// expected-error @+1 {{the symbol '__torsor_alloc' is reserved for the allocation helpers}}
module {
  llvm.func @malloc(i64) -> !llvm.ptr
  llvm.func @__torsor_alloc() {
    llvm.return
  }
  llvm.func @f(%n: i64) {
    %a = llvm.call @malloc(%n) : (i64) -> !llvm.ptr
    llvm.return
  }
}
