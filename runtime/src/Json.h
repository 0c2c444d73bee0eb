//===- Json.h - Strict JSON reader ----------------------------*- C++ -*-===//
//
// A small, strict JSON (RFC 8259) parser for manifests and safetensors
// headers, so the runtime needs no third-party library. It rejects comments,
// trailing commas, duplicate keys, bad escapes and trailing garbage, and
// reports errors as "line:col: message". Every value remembers where it
// started so schema errors can point at the offending field too.
//
//===----------------------------------------------------------------------===//

#ifndef TORSOR_RUNTIME_JSON_H
#define TORSOR_RUNTIME_JSON_H

#include "Support.h"

#include <string>
#include <utility>
#include <vector>

namespace torsor::rt::json {

/// A parsed JSON value. Objects keep their members in file order.
class Value {
public:
  enum Kind { Null, Bool, Number, String, Array, Object };

  Kind kind = Null;
  bool boolean = false;
  /// Numbers: the value as a double, and whether the literal was an integer
  /// (no fraction or exponent) that fits int64, in which case `integer`
  /// holds it exactly.
  double number = 0;
  bool isInteger = false;
  int64_t integer = 0;
  std::string string;
  std::vector<Value> elements;
  std::vector<std::pair<std::string, Value>> members;
  /// 1-based position of the value's first character.
  int line = 0, column = 0;

  /// Returns the member named `key`, or nullptr (objects only).
  const Value *get(const std::string &key) const;
  /// "line:col" of this value.
  std::string where() const;
  /// JSON kind as a word for messages ("a string", "an object").
  static const char *kindName(Kind kind);
};

/// Parses `text` into `out`. On failure the message is "line:col: what".
Status parse(const std::string &text, Value &out);

} // namespace torsor::rt::json

#endif // TORSOR_RUNTIME_JSON_H
