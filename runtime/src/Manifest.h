//===- Manifest.h - Compiled-model manifest (OUT.json) --------*- C++ -*-===//
//
// The manifest torsorc writes next to OUT.so: model name, target, ABI
// version, entry symbol, symbolic dims, and the inputs/params/outputs (in
// ABI order) with dtype, symbolic shape and optional group annotation. This
// is the schema check on top of the JSON parser; every error names the file,
// the line:col and the field path (e.g. "inputs[1].shape[0]").
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_RUNTIME_MANIFEST_H
#define TORSOR_RUNTIME_MANIFEST_H

#include "Support.h"

#include <string>
#include <vector>

namespace torsor::rt {

/// One dim of a declared shape: a fixed extent or a symbolic name.
struct DimSpec {
  std::string symbol;  ///< non-empty when symbolic
  int64_t extent = -1; ///< fixed extent when not symbolic
  bool isSymbolic() const { return !symbol.empty(); }
};

/// One declared tensor.
struct TensorSpec {
  std::string name;
  int32_t dtype = TORSOR_DTYPE_F32;
  std::vector<DimSpec> shape;
  std::string group; ///< "" when not a group-element tensor
  int groupN = 0;    ///< matrix size of `group`
  bool leftInvariant = false;
  /// Checked by the model's group-residual entry (declared groups).
  bool residual = false;
  /// Its residual is the generic model's: compared with a tolerance scaled
  /// by the dtype and the log's conditioning (declaredResidualTolerance).
  bool residualConditioned = false;
  /// The shape as "L x 4 x 4".
  std::string shapeString() const;
};

/// A parsed manifest.
struct Manifest {
  std::string path; ///< where it was read from (for messages)
  std::string model, target, dtype, entry;
  /// Entry point measuring declared-group inputs ("" when none).
  std::string groupResidual;
  int64_t abi = 0;
  /// "compute": the precision of matrix products, "f32" (also when
  /// absent) or "bf16".
  std::string compute = "f32";
  /// "amx": the model runs tile instructions (the process must request
  /// tile state first, MatrixUnits.h).
  bool amx = false;
  /// "gpu_arch" of nvptx models (e.g. "sm_90"); "" when absent.
  std::string gpuArch;
  std::vector<std::string> dims;
  std::vector<TensorSpec> inputs, params, outputs;
  /// torsorc --grad: the backward entry ("" when none), its cotangents (one
  /// per output) and its gradients (`grad.<name>`).
  std::string backwardEntry;
  std::vector<TensorSpec> cotangents, gradients;
  /// "prepare" (`--compute=bf16`): the entry that writes the params'
  /// packed copies ("" when none) into a model-owned buffer of
  /// `prepareBytes` bytes, which every forward call reads.
  std::string prepareEntry;
  int64_t prepareBytes = 0;

  /// The list of `kind` (TorsorTensorKind).
  const std::vector<TensorSpec> &list(int kind) const {
    return kind == TORSOR_INPUT   ? inputs
           : kind == TORSOR_PARAM ? params
                                  : outputs;
  }
};

/// Parses manifest text; `path` labels messages.
Status parseManifest(const std::string &text, const std::string &path,
                     Manifest &out);
/// Reads and parses the manifest at `path`.
Status readManifest(const std::string &path, Manifest &out);

} // namespace torsor::rt

#endif // TORSOR_RUNTIME_MANIFEST_H
