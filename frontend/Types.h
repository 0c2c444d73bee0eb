//===- Types.h - Semantic types of the Torsor language ---------*- C++ -*-===//
//
// What Sema computes for every value: a tensor with a dtype and a shape of
// fixed and symbolic dims, or a sequence of group elements. Groups are
// described by GroupInfo: matrix size, algebra dimension and the named norm
// blocks that `lambda` weights index. Built-in groups live in a table here;
// declared groups get a GroupInfo from Sema.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_FRONTEND_TYPES_H
#define TORSOR_FRONTEND_TYPES_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace torsor::frontend {

/// Element types.
enum class DType { F16, BF16, F32, F64, I32, I64 };

/// Parses `f32` etc.; nullopt for anything else.
std::optional<DType> parseDType(llvm::StringRef name);
/// The spelling of a dtype.
llvm::StringRef getDTypeName(DType dtype);
/// True for the floating-point dtypes.
bool isFloatDType(DType dtype);

/// The largest fixed dim (docs/language.md §10).
constexpr int64_t kMaxDimSize = int64_t(1) << 32;
/// The most elements a tensor's fixed dims may multiply to: byte sizes and
/// linearized indices of every dtype stay far inside int64.
constexpr int64_t kMaxStaticElements = int64_t(1) << 56;
/// Converts `v` to an integer if it is one and fits in int64. Casting an
/// out-of-range double to int64_t is undefined behaviour, so every integer
/// read from a number literal goes through this.
inline bool exactInt64(double v, int64_t &out) {
  // 2^63 is exact as a double; the range test also rejects NaN.
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0))
    return false;
  int64_t i = int64_t(v);
  if (double(i) != v)
    return false;
  out = i;
  return true;
}
/// The most heads `lie_attention` splits its values into.
constexpr int64_t kMaxAttentionHeads = 256;
/// The most offsets one `grassmann_mix` may list.
constexpr int64_t kMaxGrassmannOffsets = 32;

/// A named algebra block (λ weight) and its number of coordinates.
struct NormBlock {
  std::string name;
  unsigned size = 0;
};

/// A matrix Lie group as the frontend sees it.
struct GroupInfo {
  std::string name;     ///< As spelled in source: `SE3`, `Heis3`.
  std::string mnemonic; ///< For `#lie.group<...>`: `se3`; declared: name.
  bool builtin = true;
  unsigned matrixSize = 0; ///< n: elements are n×n.
  unsigned algebraDim = 0; ///< k: log returns k coordinates.
  unsigned pointDim = 0;   ///< Points `act` moves: n−1 (affine) or n.
  std::vector<NormBlock> blocks;
  /// Declared groups: generators, each row-major n×n, in declaration order.
  std::vector<std::vector<double>> generators;
  std::vector<std::string> generatorNames;
};

/// Looks up a built-in group (SO2, SE2, SO3, SE3, Aff2, Sim3).
const GroupInfo *lookupBuiltinGroup(llvm::StringRef name);
/// All built-in groups, for messages.
llvm::ArrayRef<GroupInfo> getBuiltinGroups();

/// A fixed (`64`) or symbolic (`L`) dimension.
struct Dim {
  bool symbolic = false;
  int64_t value = 0;
  std::string name;

  static Dim fixed(int64_t v) { return Dim{false, v, ""}; }
  static Dim sym(llvm::StringRef n) { return Dim{true, 0, n.str()}; }
  bool isOne() const { return !symbolic && value == 1; }
  bool operator==(const Dim &o) const {
    return symbolic == o.symbolic &&
           (symbolic ? name == o.name : value == o.value);
  }
  bool operator!=(const Dim &o) const { return !(*this == o); }
  std::string str() const;
};

/// The semantic type of a value.
struct Type {
  enum Kind {
    Invalid,   ///< An error was already reported.
    Tensor,    ///< dtype[shape]; rank 0 is a scalar.
    Group,     ///< Group elements: shape holds the sequence dims.
    List,      ///< A literal list (only as a keyword argument).
    Bool,      ///< `true`/`false` (only as a keyword argument).
    GroupName, ///< A group used as a value, e.g. `exp(v, group = SE3)`.
  };
  Kind kind = Invalid;
  DType dtype = DType::F32;
  std::vector<Dim> shape;
  const GroupInfo *group = nullptr;
  /// Numeric literals: the dtype adapts to the other operand.
  bool weak = false;

  static Type tensor(DType dt, std::vector<Dim> shape) {
    Type t;
    t.kind = Tensor;
    t.dtype = dt;
    t.shape = std::move(shape);
    return t;
  }
  static Type groupSeq(const GroupInfo *g, DType dt, std::vector<Dim> shape) {
    Type t = tensor(dt, std::move(shape));
    t.kind = Group;
    t.group = g;
    return t;
  }
  static Type ofKind(Kind k) {
    Type t;
    t.kind = k;
    return t;
  }
  bool isInvalid() const { return kind == Invalid; }
  bool isTensor() const { return kind == Tensor; }
  bool isGroup() const { return kind == Group; }
  unsigned rank() const { return shape.size(); }
  /// Same kind, dtype, group and dims (weakness ignored).
  bool operator==(const Type &o) const;
  bool operator!=(const Type &o) const { return !(*this == o); }
  /// `f32[L, 64]`, `SE3[L]`, `f32` (scalar).
  std::string str() const;
};

} // namespace torsor::frontend

#endif // TORSOR_FRONTEND_TYPES_H
