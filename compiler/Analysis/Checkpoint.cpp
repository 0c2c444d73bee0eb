//===- Checkpoint.cpp - Weights of attention blocks -----------------------===//
//
// Products are accumulated in float64 whatever the file's dtype, so a
// converted f64 checkpoint reproduces the standard model to rounding
// (test/Models/relational-pair.py) and an f32 one loses only the
// final rounding to f32.
//
//===----------------------------------------------------------------------===//

#include "compiler/Analysis/Checkpoint.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace torsor;

FailureOr<const WeightTensor *>
torsor::lookupParam(const WeightFile &file, StringRef path, Value param) {
  auto arg = cast<BlockArgument>(param);
  auto func = cast<func::FuncOp>(arg.getOwner()->getParentOp());
  auto name =
      func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "torsor.name");
  auto type = cast<RankedTensorType>(param.getType());
  auto it = file.tensors.find(name.getValue());
  if (it == file.tensors.end())
    return emitError(param.getLoc())
           << "weights file '" << path << "' has no tensor '" << name.getValue()
           << "' for param '" << name.getValue() << "'";
  std::vector<int64_t> expected(type.getShape().begin(), type.getShape().end());
  if (!type.hasStaticShape() || it->second.shape != expected)
    return emitError(param.getLoc())
           << "tensor '" << name.getValue() << "' in '" << path
           << "' has shape " << formatShape(it->second.shape) << ", but param '"
           << name.getValue() << "' is " << formatShape(expected);
  return &it->second;
}

std::vector<double> torsor::formQK(const WeightTensor &wq,
                                   const WeightTensor &wk, int64_t heads) {
  int64_t d = wq.shape[0], e = wq.shape[1], dh = e / heads;
  std::vector<double> g(static_cast<size_t>(heads * d * d), 0.0);
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < d; ++i)
      for (int64_t j = 0; j < d; ++j) {
        double sum = 0;
        for (int64_t k = h * dh; k < (h + 1) * dh; ++k)
          sum += wq.data[i * e + k] * wk.data[j * e + k];
        g[(h * d + i) * d + j] = sum;
      }
  return g;
}

std::vector<double> torsor::formVO(const WeightTensor &wv,
                                   const WeightTensor &wo, int64_t heads) {
  int64_t d = wv.shape[0], e = wv.shape[1], dOut = wo.shape[1];
  int64_t dh = e / heads;
  std::vector<double> g(static_cast<size_t>(heads * d * dOut), 0.0);
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < d; ++i)
      for (int64_t j = 0; j < dOut; ++j) {
        double sum = 0;
        for (int64_t k = h * dh; k < (h + 1) * dh; ++k)
          sum += wv.data[i * e + k] * wo.data[k * dOut + j];
        g[(h * d + i) * dOut + j] = sum;
      }
  return g;
}

LogicalResult torsor::convertCheckpoint(ModuleOp module, StringRef inPath,
                                        StringRef outPath) {
  auto in = readSafetensors(inPath);
  if (!in)
    return emitError(module.getLoc()) << toString(in.takeError());
  WeightFile out;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    for (BlockArgument arg : func.getArguments()) {
      unsigned i = arg.getArgNumber();
      auto kind = func.getArgAttrOfType<StringAttr>(i, "torsor.kind");
      auto name = func.getArgAttrOfType<StringAttr>(i, "torsor.name");
      if (!kind || kind.getValue() != "param" || !name ||
          out.tensors.count(name.getValue()))
        continue;
      auto made = func.getArgAttrOfType<DictionaryAttr>(i, "torsor.relational");
      if (!made) {
        auto tensor = lookupParam(*in, inPath, arg);
        if (failed(tensor))
          return failure();
        out.tensors[name.getValue()] = **tensor;
        out.order.push_back(name.str());
        continue;
      }
      // A param the pass made: its sources are named in `from`, and their
      // shapes were checked against the standard model when it was matched.
      auto from = made.getAs<ArrayAttr>("from");
      auto heads = made.getAs<IntegerAttr>("heads");
      auto form = made.getAs<StringAttr>("form");
      const WeightTensor *src[2];
      for (int k = 0; k < 2; ++k) {
        StringRef srcName = cast<StringAttr>(from[k]).getValue();
        auto it = in->tensors.find(srcName);
        if (it == in->tensors.end())
          return emitError(arg.getLoc())
                 << "weights file '" << inPath << "' has no tensor '" << srcName
                 << "' needed for '" << name.getValue() << "'";
        src[k] = &it->second;
      }
      auto type = cast<RankedTensorType>(arg.getType());
      int64_t h = heads.getInt(), d = type.getDimSize(1);
      bool qk = form.getValue() == "qk";
      // Re-check the sources here: the checkpoint may not be the one the
      // model was written for.
      int64_t e = src[0]->shape.size() == 2 ? src[0]->shape[1] : -1;
      bool fits = src[0]->shape == std::vector<int64_t>{d, e} && e % h == 0 &&
                  (qk ? src[1]->shape == std::vector<int64_t>{d, e}
                      : src[1]->shape == std::vector<int64_t>{e, d});
      if (!fits)
        return emitError(arg.getLoc())
               << "tensors '" << cast<StringAttr>(from[0]).getValue() << "' "
               << formatShape(src[0]->shape) << " and '"
               << cast<StringAttr>(from[1]).getValue() << "' "
               << formatShape(src[1]->shape) << " in '" << inPath
               << "' do not fit " << h << " heads of a d = " << d << " model";
      WeightTensor tensor;
      tensor.dtype =
          src[0]->dtype == "F64" || src[1]->dtype == "F64" ? "F64" : "F32";
      tensor.shape = {h, d, d};
      tensor.data =
          qk ? formQK(*src[0], *src[1], h) : formVO(*src[0], *src[1], h);
      out.tensors[name.getValue()] = std::move(tensor);
      out.order.push_back(name.str());
    }
  }
  if (auto err = writeSafetensors(outPath, out))
    return emitError(module.getLoc()) << toString(std::move(err));
  return success();
}
