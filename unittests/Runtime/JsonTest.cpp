//===- JsonTest.cpp - Tests of the strict JSON reader ---------------------===//
//
// Valid documents of every kind, and one test per rejection rule with the
// line:col it must report.
//
//===----------------------------------------------------------------------===//

#include "Json.h"

#include "gtest/gtest.h"

using namespace torsor::rt;

namespace {

/// Parses `text`, expecting failure; returns the message.
std::string parseError(const std::string &text) {
  json::Value v;
  Status s = json::parse(text, v);
  EXPECT_FALSE(s.ok()) << "accepted: " << text;
  return s.message;
}

TEST(Json, ParsesEveryKind) {
  json::Value v;
  Status s = json::parse(R"( {"a": [1, -2, 3.5, 1e3, true, false, null],
    "s": "q\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00", "o": {}, "e": []} )",
                         v);
  ASSERT_TRUE(s.ok()) << s.message;
  ASSERT_EQ(v.kind, json::Value::Object);
  const json::Value *a = v.get("a");
  ASSERT_TRUE(a && a->kind == json::Value::Array);
  ASSERT_EQ(a->elements.size(), 7u);
  EXPECT_TRUE(a->elements[0].isInteger);
  EXPECT_EQ(a->elements[1].integer, -2);
  EXPECT_FALSE(a->elements[2].isInteger);
  EXPECT_DOUBLE_EQ(a->elements[2].number, 3.5);
  EXPECT_FALSE(a->elements[3].isInteger);
  EXPECT_DOUBLE_EQ(a->elements[3].number, 1000);
  EXPECT_TRUE(a->elements[4].boolean);
  EXPECT_EQ(a->elements[6].kind, json::Value::Null);
  EXPECT_EQ(v.get("s")->string, "q\"\\/\b\f\n\r\t\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(v.get("o")->kind, json::Value::Object);
  EXPECT_EQ(v.get("e")->elements.size(), 0u);
  EXPECT_EQ(v.get("missing"), nullptr);
  EXPECT_EQ(a->line, 1);
  EXPECT_EQ(a->column, 8);
}

TEST(Json, KeepsMemberOrderAndPositions) {
  json::Value v;
  ASSERT_TRUE(json::parse("{\"z\": 1,\n \"a\": 2}", v).ok());
  EXPECT_EQ(v.members[0].first, "z");
  EXPECT_EQ(v.members[1].first, "a");
  EXPECT_EQ(v.members[1].second.where(), "2:7");
}

TEST(Json, HugeIntegerIsNotExact) {
  json::Value v;
  ASSERT_TRUE(json::parse("123456789012345678901234567890", v).ok());
  EXPECT_FALSE(v.isInteger);
  ASSERT_TRUE(json::parse("-9223372036854775808", v).ok());
  EXPECT_TRUE(v.isInteger);
  EXPECT_EQ(v.integer, INT64_MIN);
}

TEST(Json, RejectsMalformedInput) {
  EXPECT_EQ(parseError(""), "1:1: expected a JSON value, found end of input");
  EXPECT_EQ(parseError("{\"a\": 1,}"),
            "1:9: expected a string key in object, found '}'");
  EXPECT_EQ(parseError("[1, 2,]"), "1:7: expected a JSON value, found ']'");
  EXPECT_EQ(parseError("[1 2]"),
            "1:4: expected ',' or ']' in array, found '2'");
  EXPECT_EQ(parseError("{\"a\" 1}"),
            "1:6: expected ':' after object key, found '1'");
  EXPECT_EQ(parseError("{\"a\": 1 \"b\": 2}"),
            "1:9: expected ',' or '}' in object, found '\"'");
  EXPECT_EQ(parseError("// c\n{}"), "1:1: expected a JSON value, found '/'");
  EXPECT_EQ(parseError("{'a': 1}"),
            "1:2: expected a string key in object, found '''");
  EXPECT_EQ(parseError("\n  012"),
            "2:4: leading zeros are not allowed in numbers");
  EXPECT_EQ(parseError("1."), "1:3: expected digits after '.' in number, "
                              "found end of input");
  EXPECT_EQ(parseError("1e"),
            "1:3: expected digits in exponent, found end of input");
  EXPECT_EQ(parseError("-"),
            "1:2: expected digits in number, found end of input");
  EXPECT_EQ(parseError("+1"), "1:1: expected a JSON value, found '+'");
  EXPECT_EQ(parseError("NaN"), "1:1: expected a JSON value, found 'N'");
  EXPECT_EQ(parseError("\"abc"), "1:5: unterminated string");
  EXPECT_EQ(parseError("\"a\tb\""),
            "1:3: control character 0x09 in string; escape it");
  EXPECT_EQ(parseError("\"\\x\""), "1:4: invalid escape '\\x' in string");
  EXPECT_EQ(parseError("\"\\u12\""),
            "1:6: expected 4 hex digits after \\u, found '\"'");
  EXPECT_EQ(parseError("\"\\ud800\""),
            "1:8: unpaired UTF-16 surrogate in \\u escape");
  EXPECT_EQ(parseError("\"\\udc00\""),
            "1:8: unpaired UTF-16 surrogate in \\u escape");
  EXPECT_EQ(parseError("{\"a\": 1, \"a\": 2}"), "1:10: duplicate key \"a\"");
  EXPECT_EQ(parseError("{} x"),
            "1:4: unexpected trailing characters after the JSON value");
  EXPECT_EQ(parseError("tru"), "1:1: expected a JSON value, found 't'");
  EXPECT_EQ(parseError("\x01"), "1:1: expected a JSON value, found byte 0x01");
}

TEST(Json, RejectsDeepNesting) {
  std::string deep(300, '[');
  EXPECT_EQ(parseError(deep), "1:258: nesting deeper than 256 levels");
  std::string ok = std::string(100, '[') + std::string(100, ']');
  json::Value v;
  EXPECT_TRUE(json::parse(ok, v).ok());
}

} // namespace
