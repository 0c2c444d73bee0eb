//===- ParseExpr.cpp - Torsor expression parser ---------------------------===//
//
// The expression half of the recursive-descent parser: precedence climbing
// by one method per level (`+ -` below `* / @`, unary minus above), calls
// with positional then keyword arguments, list literals and `repeat`.
// Nesting is counted so `((((...` or `[[[[...` input ends in an error, not
// a stack overflow.
//
//===----------------------------------------------------------------------===//

#include "frontend/Parser.h"

using namespace torsor::frontend;
using llvm::SMLoc;
using llvm::Twine;

namespace {
/// Counts nesting for the lifetime of one parse method.
struct DepthGuard {
  DepthGuard(unsigned &depth) : depth(depth) { ++depth; }
  ~DepthGuard() { --depth; }
  unsigned &depth;
};
} // namespace

ExprPtr Parser::parseExpr() {
  DepthGuard guard(depth);
  if (depth > kMaxNestingDepth) {
    errorHere("expression is nested too deeply (the limit is " +
              Twine(kMaxNestingDepth) + " levels)");
    return nullptr;
  }
  ExprPtr lhs = parseTerm();
  while (lhs && (tok.is(Token::plus) || tok.is(Token::minus))) {
    char op = tok.is(Token::plus) ? '+' : '-';
    SMLoc loc = tok.getLoc();
    consume();
    ExprPtr rhs = parseTerm();
    if (!rhs)
      return nullptr;
    lhs = makeBinary(loc, op, std::move(lhs), std::move(rhs));
  }
  return lhs;
}

ExprPtr Parser::parseTerm() {
  ExprPtr lhs = parseUnary();
  while (lhs &&
         (tok.is(Token::star) || tok.is(Token::slash) || tok.is(Token::at))) {
    char op = tok.is(Token::star) ? '*' : tok.is(Token::slash) ? '/' : '@';
    SMLoc loc = tok.getLoc();
    consume();
    ExprPtr rhs = parseUnary();
    if (!rhs)
      return nullptr;
    lhs = makeBinary(loc, op, std::move(lhs), std::move(rhs));
  }
  return lhs;
}

ExprPtr Parser::parseUnary() {
  DepthGuard guard(depth);
  if (depth > kMaxNestingDepth) {
    errorHere("expression is nested too deeply (the limit is " +
              Twine(kMaxNestingDepth) + " levels)");
    return nullptr;
  }
  if (tok.is(Token::minus)) {
    SMLoc loc = tok.getLoc();
    consume();
    ExprPtr operand = parseUnary();
    if (!operand)
      return nullptr;
    return checkHeight(
        std::make_unique<UnaryExpr>(loc, '-', std::move(operand)));
  }
  return parsePrimary();
}

ExprPtr Parser::parsePrimary() {
  SMLoc loc = tok.getLoc();
  switch (tok.getKind()) {
  case Token::integer:
  case Token::floating: {
    auto num = std::make_unique<NumberExpr>(loc, tok.getFloatValue(),
                                            tok.is(Token::integer));
    consume();
    return num;
  }
  case Token::kw_true:
  case Token::kw_false: {
    auto b = std::make_unique<BoolExpr>(loc, tok.is(Token::kw_true));
    consume();
    return b;
  }
  case Token::identifier: {
    std::string name = tok.getSpelling().str();
    consume();
    if (tok.is(Token::l_paren))
      return parseCall(loc, std::move(name));
    return std::make_unique<VarExpr>(loc, std::move(name));
  }
  case Token::l_paren: {
    consume();
    ExprPtr inner = parseExpr();
    if (!inner || !expect(Token::r_paren, "')' to close '('"))
      return nullptr;
    return inner;
  }
  case Token::l_square:
    return parseList();
  case Token::kw_repeat: {
    consume();
    if (tok.isNot(Token::integer)) {
      errorHere("expected a repeat count (an integer), got " + describeToken());
      return nullptr;
    }
    int64_t count = tok.getIntValue();
    SMLoc countLoc = tok.getLoc();
    // A count of 0 would read as a plain call (repeatCount 0 means "no
    // repeat"), so it is rejected here; Sema checks the upper bound.
    if (count < 1) {
      errorHere("repeat count must be between 1 and 1024, got " +
                llvm::Twine(count));
      return nullptr;
    }
    consume();
    std::string name;
    SMLoc nameLoc;
    if (!expectIdent(name, nameLoc, "block name after repeat count"))
      return nullptr;
    if (tok.isNot(Token::l_paren)) {
      errorHere("expected '(' after block name, got " + describeToken());
      return nullptr;
    }
    ExprPtr call = parseCall(nameLoc, std::move(name));
    if (!call)
      return nullptr;
    auto *callExpr = llvm::cast<CallExpr>(call.get());
    callExpr->repeatCount = count;
    callExpr->repeatLoc = countLoc;
    return call;
  }
  default:
    errorHere("expected an expression, got " + describeToken());
    return nullptr;
  }
}

ExprPtr Parser::checkHeight(ExprPtr e) {
  if (!e || e->height <= kMaxExprHeight)
    return e;
  errorHere("expression tree is deeper than " + Twine(kMaxExprHeight) +
            " levels; split it with 'let'");
  return nullptr;
}

ExprPtr Parser::makeBinary(SMLoc loc, char op, ExprPtr lhs, ExprPtr rhs) {
  return checkHeight(
      std::make_unique<BinaryExpr>(loc, op, std::move(lhs), std::move(rhs)));
}

ExprPtr Parser::parseCall(SMLoc loc, std::string callee) {
  DepthGuard guard(depth);
  if (depth > kMaxNestingDepth) {
    errorHere("expression is nested too deeply (the limit is " +
              Twine(kMaxNestingDepth) + " levels)");
    return nullptr;
  }
  auto call = std::make_unique<CallExpr>(loc, std::move(callee));
  consume(); // '('
  if (tok.isNot(Token::r_paren)) {
    do {
      // `group = SE3` uses a keyword as the argument name.
      if (tok.is(Token::kw_group)) {
        SMLoc kwLoc = tok.getLoc();
        consume();
        if (!expect(Token::equal, "'=' after 'group'"))
          return nullptr;
        KeywordArg kw{kwLoc, "group", parseExpr()};
        if (!kw.value)
          return nullptr;
        call->kwargs.push_back(std::move(kw));
        continue;
      }
      // `dim = -1` (PyTorch's spelling of `axis`): a language keyword used
      // as an argument name. Parse it as one so Sema can give the hint.
      if (tok.isKeyword() && tok.isNot(Token::kw_true) &&
          tok.isNot(Token::kw_false) && tok.isNot(Token::kw_repeat)) {
        Token nameTok = tok;
        consume();
        if (tok.isNot(Token::equal)) {
          diags.emitError(nameTok.getLoc(), "expected an expression, got '" +
                                                nameTok.getSpelling() + "'");
          inError = true;
          return nullptr;
        }
        consume();
        KeywordArg kw{nameTok.getLoc(), nameTok.getSpelling().str(),
                      parseExpr()};
        if (!kw.value)
          return nullptr;
        call->kwargs.push_back(std::move(kw));
        continue;
      }
      // `name = expr` is a keyword argument; look ahead one token.
      if (tok.is(Token::identifier)) {
        Token nameTok = tok;
        consume();
        if (tok.is(Token::equal)) {
          consume();
          KeywordArg kw{nameTok.getLoc(), nameTok.getSpelling().str(),
                        parseExpr()};
          if (!kw.value)
            return nullptr;
          call->kwargs.push_back(std::move(kw));
          continue;
        }
        if (!call->kwargs.empty()) {
          diags.emitError(nameTok.getLoc(),
                          "positional argument after keyword arguments");
          inError = true;
          return nullptr;
        }
        // Not a keyword: it was the start of an expression. Re-parse from a
        // primary that starts with this identifier.
        ExprPtr first;
        if (tok.is(Token::l_paren))
          first = parseCall(nameTok.getLoc(), nameTok.getSpelling().str());
        else
          first = std::make_unique<VarExpr>(nameTok.getLoc(),
                                            nameTok.getSpelling().str());
        if (!first)
          return nullptr;
        // Continue the binary expression with `first` as its leftmost term.
        while (tok.is(Token::star) || tok.is(Token::slash) ||
               tok.is(Token::at)) {
          char op = tok.is(Token::star)    ? '*'
                    : tok.is(Token::slash) ? '/'
                                           : '@';
          SMLoc opLoc = tok.getLoc();
          consume();
          ExprPtr rhs = parseUnary();
          if (!rhs)
            return nullptr;
          first = makeBinary(opLoc, op, std::move(first), std::move(rhs));
          if (!first)
            return nullptr;
        }
        while (tok.is(Token::plus) || tok.is(Token::minus)) {
          char op = tok.is(Token::plus) ? '+' : '-';
          SMLoc opLoc = tok.getLoc();
          consume();
          ExprPtr rhs = parseTerm();
          if (!rhs)
            return nullptr;
          first = makeBinary(opLoc, op, std::move(first), std::move(rhs));
          if (!first)
            return nullptr;
        }
        call->args.push_back(std::move(first));
        continue;
      }
      if (!call->kwargs.empty()) {
        errorHere("positional argument after keyword arguments");
        return nullptr;
      }
      ExprPtr arg = parseExpr();
      if (!arg)
        return nullptr;
      call->args.push_back(std::move(arg));
    } while (tok.is(Token::comma) && (consume(), true));
  }
  if (!expect(Token::r_paren,
              "')' or ',' in argument list of '" + call->callee + "'"))
    return nullptr;
  if (tok.is(Token::kw_as)) {
    consume();
    if (!expectIdent(call->prefix, call->prefixLoc,
                     "parameter prefix after 'as'"))
      return nullptr;
  }
  for (const ExprPtr &e : call->args)
    call->height = std::max(call->height, e->height + 1);
  for (const KeywordArg &kw : call->kwargs)
    call->height = std::max(call->height, kw.value->height + 1);
  return checkHeight(std::move(call));
}

ExprPtr Parser::parseList() {
  DepthGuard guard(depth);
  if (depth > kMaxNestingDepth) {
    errorHere("expression is nested too deeply (the limit is " +
              Twine(kMaxNestingDepth) + " levels)");
    return nullptr;
  }
  SMLoc loc = tok.getLoc();
  consume(); // '['
  std::vector<ExprPtr> elements;
  if (tok.isNot(Token::r_square)) {
    do {
      ExprPtr e = parseExpr();
      if (!e)
        return nullptr;
      elements.push_back(std::move(e));
    } while (tok.is(Token::comma) && (consume(), true));
  }
  if (!expect(Token::r_square, "']' or ',' in list"))
    return nullptr;
  return checkHeight(std::make_unique<ListExpr>(loc, std::move(elements)));
}
