//===- GPUKernelBuilder.cpp - One GPU kernel: launch, tiles, emulation ----===//
//
// The kernel scaffolding shared by geo-map-attention-to-gpu and
// torsor-map-dense-to-gpu (GPUKernelBuilder.h): guard, shared tiles,
// launch, barriers and the host-loop emulation. The ops are created in the
// order the passes created them before they shared this code, so their
// output is unchanged.
//
//===----------------------------------------------------------------------===//

#include "dialects/Support/GPUKernelBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace torsor;

ImplicitLocOpBuilder
GPUKernelBuilder::guardNonEmptyGrid(ImplicitLocOpBuilder &b, ValueRange grid,
                                    Value zero) const {
  Value any;
  for (Value extent : grid) {
    Value positive =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ugt, extent, zero);
    any = any ? arith::AndIOp::create(b, any, positive).getResult() : positive;
  }
  auto guard = scf::IfOp::create(b, any, /*withElse=*/false);
  return ImplicitLocOpBuilder(b.getLoc(), guard.getThenBodyBuilder());
}

memref::GlobalOp GPUKernelBuilder::declareSharedTile(Location loc,
                                                     StringRef name,
                                                     int64_t elements,
                                                     Type elt) {
  MLIRContext *ctx = module.getContext();
  auto type = MemRefType::get(
      {elements}, elt, MemRefLayoutAttrInterface(),
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup));
  OpBuilder mb(ctx); // detached: the symbol table inserts (and renames)
  auto global =
      memref::GlobalOp::create(mb, loc, name, mb.getStringAttr("private"), type,
                               /*initial_value=*/Attribute(),
                               /*constant=*/false, mb.getI64IntegerAttr(16));
  SymbolTable(module).insert(global, module.getBody()->begin());
  return global;
}

void GPUKernelBuilder::buildStagingLoop(
    ImplicitLocOpBuilder &b, Value from, Value count, Value step,
    function_ref<void(ImplicitLocOpBuilder &, Value)> copyOne) {
  scf::ForOp::create(b, from, count, step, ValueRange{},
                     [&](OpBuilder &nested, Location loc, Value i, ValueRange) {
                       ImplicitLocOpBuilder lb(loc, nested);
                       copyOne(lb, i);
                       scf::YieldOp::create(lb);
                     });
}

void GPUKernelBuilder::buildLaunch(
    ImplicitLocOpBuilder &b, Value gridX, Value gridY, Value gridZ,
    Value threads, Value one, ArrayRef<memref::GlobalOp> tiles,
    function_ref<void(ImplicitLocOpBuilder &, const KernelIds &, ValueRange)>
        body) const {
  auto launch =
      gpu::LaunchOp::create(b, gridX, gridY, gridZ, threads, one, one);
  ImplicitLocOpBuilder kb =
      ImplicitLocOpBuilder::atBlockBegin(b.getLoc(), &launch.getBody().front());
  SmallVector<Value> tileValues;
  for (memref::GlobalOp tile : tiles)
    tileValues.push_back(
        memref::GetGlobalOp::create(kb, tile.getType(), tile.getSymName()));
  KernelIds ids{launch.getBlockIds().x, launch.getBlockIds().y,
                launch.getBlockIds().z, launch.getThreadIds().x};
  body(kb, ids, tileValues);
  gpu::TerminatorOp::create(kb);
}

void GPUKernelBuilder::buildHostParallel(
    ImplicitLocOpBuilder &b, ValueRange lower, ValueRange upper,
    ValueRange steps,
    function_ref<void(ImplicitLocOpBuilder &, ValueRange)> body) const {
  scf::ParallelOp::create(b, lower, upper, steps,
                          [&](OpBuilder &nested, Location loc, ValueRange ivs) {
                            ImplicitLocOpBuilder pb(loc, nested);
                            body(pb, ivs);
                            scf::ReduceOp::create(pb);
                          });
}

void GPUKernelBuilder::buildThreadLoop(
    ImplicitLocOpBuilder &b, int64_t threads,
    function_ref<void(ImplicitLocOpBuilder &, Value)> body) const {
  Value zero = arith::ConstantIndexOp::create(b, 0);
  Value count = arith::ConstantIndexOp::create(b, threads);
  Value step = arith::ConstantIndexOp::create(b, 1);
  scf::ForOp::create(b, zero, count, step, ValueRange{},
                     [&](OpBuilder &tb, Location loc, Value tid, ValueRange) {
                       ImplicitLocOpBuilder ib(loc, tb);
                       body(ib, tid);
                       scf::YieldOp::create(ib);
                     });
}

void GPUKernelBuilder::barrier(ImplicitLocOpBuilder &b) const {
  if (!emulate)
    gpu::BarrierOp::create(b);
}
