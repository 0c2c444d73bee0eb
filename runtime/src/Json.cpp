//===- Json.cpp - Strict JSON reader --------------------------------------===//
//
// Recursive-descent parser for Json.h. Depth is bounded so a hostile file
// cannot overflow the stack; numbers follow the JSON grammar exactly (no
// leading '+', no leading zeros, no NaN/Infinity).
//
//===----------------------------------------------------------------------===//

#include "Json.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <unordered_set>

namespace torsor::rt::json {

const Value *Value::get(const std::string &key) const {
  for (const auto &m : members)
    if (m.first == key)
      return &m.second;
  return nullptr;
}

std::string Value::where() const { return format("%d:%d", line, column); }

const char *Value::kindName(Kind kind) {
  switch (kind) {
  case Null:
    return "null";
  case Bool:
    return "a boolean";
  case Number:
    return "a number";
  case String:
    return "a string";
  case Array:
    return "an array";
  case Object:
    return "an object";
  }
  return "?";
}

namespace {

/// Nesting limit: manifests are a few levels deep.
constexpr int kMaxDepth = 256;

/// Cursor over the text with line/column tracking.
class Parser {
public:
  /// Parses `text`, which must outlive the parser.
  explicit Parser(const std::string &text) : text(text) {}

  /// Parses one document: a value then only whitespace.
  Status parseDocument(Value &out) {
    skipSpace();
    Status s = parseValue(out, 0);
    if (!s.ok())
      return s;
    skipSpace();
    if (pos != text.size())
      return error("unexpected trailing characters after the JSON value");
    return Status();
  }

private:
  const std::string &text;
  size_t pos = 0;
  int line = 1, column = 1;

  /// An error at the current position.
  Status error(const std::string &what) const {
    return ioError(format("%d:%d: ", line, column) + what);
  }
  /// True at the end of the text.
  bool atEnd() const { return pos >= text.size(); }
  /// The next character, or NUL at the end.
  char peek() const { return atEnd() ? '\0' : text[pos]; }
  /// Consumes one character, updating line and column.
  char next() {
    char c = text[pos++];
    if (c == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
    return c;
  }
  /// Skips JSON whitespace.
  void skipSpace() {
    while (!atEnd() && (peek() == ' ' || peek() == '\t' || peek() == '\n' ||
                        peek() == '\r'))
      next();
  }
  /// Describes the current character for error messages.
  std::string found() const {
    if (atEnd())
      return "end of input";
    unsigned char c = static_cast<unsigned char>(peek());
    if (c < 0x20 || c >= 0x7f)
      return format("byte 0x%02x", c);
    return format("'%c'", c);
  }

  /// Parses any value at nesting `depth`.
  Status parseValue(Value &out, int depth) {
    if (depth > kMaxDepth)
      return error("nesting deeper than 256 levels");
    out.line = line;
    out.column = column;
    char c = peek();
    if (c == '{')
      return parseObject(out, depth);
    if (c == '[')
      return parseArray(out, depth);
    if (c == '"') {
      out.kind = Value::String;
      return parseString(out.string);
    }
    if (c == '-' || (c >= '0' && c <= '9'))
      return parseNumber(out);
    if (matchWord("true")) {
      out.kind = Value::Bool;
      out.boolean = true;
      return Status();
    }
    if (matchWord("false")) {
      out.kind = Value::Bool;
      return Status();
    }
    if (matchWord("null")) {
      out.kind = Value::Null;
      return Status();
    }
    return error("expected a JSON value, found " + found());
  }

  /// Consumes `word` if the text continues with it.
  bool matchWord(const char *word) {
    size_t n = std::strlen(word);
    if (text.compare(pos, n, word) != 0)
      return false;
    for (size_t i = 0; i < n; ++i)
      next();
    return true;
  }

  /// Parses {...}; keys must be unique. The duplicate check uses a hash set
  /// so an object with n keys costs O(n), not O(n^2) (a safetensors header
  /// with 200k keys used to take minutes).
  Status parseObject(Value &out, int depth) {
    out.kind = Value::Object;
    std::unordered_set<std::string> seen;
    next(); // '{'
    skipSpace();
    if (peek() == '}') {
      next();
      return Status();
    }
    while (true) {
      skipSpace();
      if (peek() != '"')
        return error("expected a string key in object, found " + found());
      std::string key;
      int keyLine = line, keyColumn = column;
      Status s = parseString(key);
      if (!s.ok())
        return s;
      if (!seen.insert(key).second)
        return ioError(format("%d:%d: duplicate key \"%s\"", keyLine, keyColumn,
                              key.c_str()));
      skipSpace();
      if (peek() != ':')
        return error("expected ':' after object key, found " + found());
      next();
      skipSpace();
      out.members.emplace_back(key, Value());
      s = parseValue(out.members.back().second, depth + 1);
      if (!s.ok())
        return s;
      skipSpace();
      if (peek() == ',') {
        next();
        continue;
      }
      if (peek() == '}') {
        next();
        return Status();
      }
      return error("expected ',' or '}' in object, found " + found());
    }
  }

  /// Parses [...].
  Status parseArray(Value &out, int depth) {
    out.kind = Value::Array;
    next(); // '['
    skipSpace();
    if (peek() == ']') {
      next();
      return Status();
    }
    while (true) {
      skipSpace();
      out.elements.emplace_back();
      Status s = parseValue(out.elements.back(), depth + 1);
      if (!s.ok())
        return s;
      skipSpace();
      if (peek() == ',') {
        next();
        continue;
      }
      if (peek() == ']') {
        next();
        return Status();
      }
      return error("expected ',' or ']' in array, found " + found());
    }
  }

  /// Reads 4 hex digits of a \u escape.
  Status parseHex4(unsigned &code) {
    code = 0;
    for (int i = 0; i < 4; ++i) {
      char c = peek();
      unsigned d;
      if (c >= '0' && c <= '9')
        d = c - '0';
      else if (c >= 'a' && c <= 'f')
        d = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        d = c - 'A' + 10;
      else
        return error("expected 4 hex digits after \\u, found " + found());
      next();
      code = code * 16 + d;
    }
    return Status();
  }

  /// Appends `code` as UTF-8.
  static void appendUtf8(std::string &out, unsigned code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xE0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  /// Parses a string literal, decoding escapes to UTF-8.
  Status parseString(std::string &out) {
    next(); // '"'
    while (true) {
      if (atEnd())
        return error("unterminated string");
      unsigned char c = static_cast<unsigned char>(peek());
      if (c == '"') {
        next();
        return Status();
      }
      if (c < 0x20)
        return error(
            format("control character 0x%02x in string; escape it", c));
      if (c != '\\') {
        out += next();
        continue;
      }
      next(); // '\\'
      char e = atEnd() ? '\0' : next();
      switch (e) {
      case '"':
      case '\\':
      case '/':
        out += e;
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        unsigned code;
        Status s = parseHex4(code);
        if (!s.ok())
          return s;
        if (code >= 0xD800 && code < 0xDC00) {
          // A high surrogate must be followed by an escaped low surrogate.
          if (!matchWord("\\u"))
            return error("unpaired UTF-16 surrogate in \\u escape");
          unsigned low;
          s = parseHex4(low);
          if (!s.ok())
            return s;
          if (low < 0xDC00 || low >= 0xE000)
            return error("unpaired UTF-16 surrogate in \\u escape");
          code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
        } else if (code >= 0xDC00 && code < 0xE000) {
          return error("unpaired UTF-16 surrogate in \\u escape");
        }
        appendUtf8(out, code);
        break;
      }
      default:
        return error(format("invalid escape '\\%c' in string", e ? e : '0'));
      }
    }
  }

  /// Consumes digits; returns how many.
  size_t digits() {
    size_t n = 0;
    while (peek() >= '0' && peek() <= '9') {
      next();
      ++n;
    }
    return n;
  }

  /// Parses a number per the JSON grammar.
  Status parseNumber(Value &out) {
    out.kind = Value::Number;
    size_t start = pos;
    bool integral = true;
    if (peek() == '-')
      next();
    if (peek() == '0') {
      next();
      if (peek() >= '0' && peek() <= '9')
        return error("leading zeros are not allowed in numbers");
    } else if (!digits()) {
      return error("expected digits in number, found " + found());
    }
    if (peek() == '.') {
      integral = false;
      next();
      if (!digits())
        return error("expected digits after '.' in number, found " + found());
    }
    if (peek() == 'e' || peek() == 'E') {
      integral = false;
      next();
      if (peek() == '+' || peek() == '-')
        next();
      if (!digits())
        return error("expected digits in exponent, found " + found());
    }
    std::string literal = text.substr(start, pos - start);
    out.number = std::strtod(literal.c_str(), nullptr);
    if (integral) {
      errno = 0;
      long long v = std::strtoll(literal.c_str(), nullptr, 10);
      if (errno == 0) {
        out.isInteger = true;
        out.integer = v;
      }
    }
    return Status();
  }
};

} // namespace

Status parse(const std::string &text, Value &out) {
  out = Value();
  return Parser(text).parseDocument(out);
}

} // namespace torsor::rt::json
