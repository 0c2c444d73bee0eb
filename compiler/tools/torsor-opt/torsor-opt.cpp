//===- torsor-opt.cpp - Torsor's mlir-opt ---------------------------------===//
//
// MlirOptMain with every Torsor dialect and pass plus the upstream ones the
// pipelines use (compiler/InitAll.h). Every pass test runs through it.
//
//===----------------------------------------------------------------------===//

#include "compiler/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  torsor::registerAllPasses();
  mlir::DialectRegistry registry;
  torsor::registerAllDialects(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Torsor optimizer driver\n", registry));
}
