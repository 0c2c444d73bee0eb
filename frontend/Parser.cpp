//===- Parser.cpp - Torsor language parser --------------------------------===//
//
// Implementation of the recursive-descent parser declared in Parser.h. Each
// parse method reports at most one error and returns null/false; the item
// loops then call skipToNextItem() so later statements are still checked.
//
//===----------------------------------------------------------------------===//

#include "frontend/Parser.h"
#include "frontend/Suggest.h"

using namespace torsor::frontend;
using llvm::SMLoc;
using llvm::Twine;

Parser::Parser(Lexer &lexer) : lexer(lexer), diags(lexer.getDiagnostics()) {
  consume();
}

std::unique_ptr<Module>
torsor::frontend::parseTorsor(const llvm::SourceMgr &srcMgr, unsigned bufferId,
                              DiagnosticEngine &diags) {
  Lexer lexer(srcMgr, bufferId, diags);
  Parser parser(lexer);
  return parser.parseModule();
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

std::string Parser::describeToken() const {
  switch (tok.getKind()) {
  case Token::eof:
    return "end of file";
  case Token::identifier:
  case Token::integer:
  case Token::floating:
    return "'" + tok.getSpelling().take_front(40).str() + "'";
  default:
    return Token::getKindName(tok.getKind()).str();
  }
}

void Parser::errorHere(const Twine &msg) {
  if (inError)
    return;
  inError = true;
  // A lexing error was reported already; do not pile a parse error on it.
  if (tok.is(Token::error))
    return;
  diags.emitError(tok.getLoc(), msg);
}

bool Parser::expect(Token::Kind kind, const Twine &what) {
  if (tok.is(kind)) {
    consume();
    return true;
  }
  if (kind == Token::semi && prevEnd && tok.isNot(Token::error) && !inError) {
    inError = true;
    diags.emitError(SMLoc::getFromPointer(prevEnd),
                    "expected " + what + ", got " + describeToken());
    return false;
  }
  errorHere("expected " + what + ", got " + describeToken());
  return false;
}

bool Parser::expectIdent(std::string &name, SMLoc &loc, const Twine &what) {
  if (tok.isNot(Token::identifier)) {
    errorHere("expected " + what + ", got " + describeToken());
    return false;
  }
  name = tok.getSpelling().str();
  loc = tok.getLoc();
  consume();
  return true;
}

/// Tokens that start a statement inside a model, block or group.
static bool startsItem(const Token &tok) {
  switch (tok.getKind()) {
  case Token::kw_dim:
  case Token::kw_input:
  case Token::kw_param:
  case Token::kw_output:
  case Token::kw_let:
  case Token::kw_block:
  case Token::kw_return:
  case Token::kw_matrix:
  case Token::kw_generator:
  case Token::kw_norm:
  case Token::kw_model:
  case Token::kw_group:
    return true;
  default:
    return false;
  }
}

void Parser::skipToNextItem() {
  inError = false;
  unsigned braces = 0;
  while (tok.isNot(Token::eof)) {
    if (braces == 0 && startsItem(tok))
      return;
    if (tok.is(Token::l_brace)) {
      ++braces;
    } else if (tok.is(Token::r_brace)) {
      if (braces == 0)
        return;
      --braces;
    } else if (tok.is(Token::semi) && braces == 0) {
      consume();
      return;
    }
    consume();
  }
}

void Parser::noteDropped() {
  if (!currentModel)
    return;
  currentModel->hadParseError = true;
  if (!pendingName.empty())
    currentModel->droppedNames.insert(pendingName);
  pendingName.clear();
}

void Parser::skipToNextDecl() {
  inError = false;
  while (tok.isNot(Token::eof) && tok.isNot(Token::kw_model) &&
         tok.isNot(Token::kw_group))
    consume();
}

//===----------------------------------------------------------------------===//
// Declarations
//===----------------------------------------------------------------------===//

std::unique_ptr<Module> Parser::parseModule() {
  auto module = std::make_unique<Module>();
  while (tok.isNot(Token::eof)) {
    if (tok.is(Token::kw_group)) {
      if (auto group = parseGroup())
        module->groups.push_back(std::move(group));
      else
        skipToNextDecl();
    } else if (tok.is(Token::kw_model)) {
      if (auto model = parseModel())
        module->models.push_back(std::move(model));
      else
        skipToNextDecl();
    } else {
      std::string hint;
      if (tok.is(Token::identifier)) {
        Suggester s(tok.getSpelling());
        s.add("model");
        s.add("group");
        hint = s.hint();
      }
      errorHere("expected 'model' or 'group' declaration, got " +
                describeToken() + hint);
      consume();
      skipToNextDecl();
    }
  }
  return module;
}

std::unique_ptr<GroupDecl> Parser::parseGroup() {
  auto group = std::make_unique<GroupDecl>();
  group->loc = tok.getLoc();
  consume(); // 'group'
  if (!expectIdent(group->name, group->loc, "group name") ||
      !expect(Token::l_brace, "'{' after group name"))
    return nullptr;
  while (tok.isNot(Token::r_brace) && tok.isNot(Token::eof) &&
         tok.isNot(Token::kw_model) && tok.isNot(Token::kw_group)) {
    if (!parseGroupItem(*group))
      skipToNextItem();
  }
  if (!expect(Token::r_brace, "'}' at end of group '" + group->name + "'"))
    return nullptr;
  return group;
}

bool Parser::parseGroupItem(GroupDecl &group) {
  if (tok.is(Token::kw_matrix)) {
    consume();
    group.matrixLoc = tok.getLoc();
    if (tok.isNot(Token::integer)) {
      errorHere("expected matrix size (an integer), got " + describeToken());
      return false;
    }
    group.matrixSize = tok.getIntValue();
    consume();
    return expect(Token::semi, "';' after matrix size");
  }
  if (tok.is(Token::kw_generator)) {
    consume();
    GeneratorDecl gen;
    if (!expectIdent(gen.name, gen.loc, "generator name") ||
        !expect(Token::equal, "'=' after generator name"))
      return false;
    if (tok.isNot(Token::l_square)) {
      errorHere("expected a matrix literal '[[...], ...]', got " +
                describeToken());
      return false;
    }
    gen.matrix = parseList();
    if (!gen.matrix || !expect(Token::semi, "';' after generator"))
      return false;
    group.generators.push_back(std::move(gen));
    return true;
  }
  if (tok.is(Token::kw_norm)) {
    consume();
    NormBlockDecl norm;
    if (!expectIdent(norm.name, norm.loc, "norm block name") ||
        !expect(Token::equal, "'=' after norm block name"))
      return false;
    do {
      std::pair<SMLoc, std::string> gen;
      if (!expectIdent(gen.second, gen.first, "generator name"))
        return false;
      norm.generators.push_back(gen);
    } while (tok.is(Token::comma) && (consume(), true));
    if (!expect(Token::semi, "';' after norm block"))
      return false;
    group.norms.push_back(std::move(norm));
    return true;
  }
  errorHere("expected 'matrix', 'generator' or 'norm' in group, got " +
            describeToken());
  consume();
  return false;
}

std::unique_ptr<ModelDecl> Parser::parseModel() {
  auto model = std::make_unique<ModelDecl>();
  model->loc = tok.getLoc();
  consume(); // 'model'
  if (!expectIdent(model->name, model->loc, "model name") ||
      !expect(Token::l_brace, "'{' after model name"))
    return nullptr;
  currentModel = model.get();
  while (tok.isNot(Token::r_brace) && tok.isNot(Token::eof) &&
         tok.isNot(Token::kw_model) && tok.isNot(Token::kw_group)) {
    pendingName.clear();
    if (StmtPtr item = parseItem(/*inBlock=*/false)) {
      model->body.push_back(std::move(item));
    } else {
      noteDropped();
      skipToNextItem();
    }
  }
  currentModel = nullptr;
  if (!expect(Token::r_brace, "'}' at end of model '" + model->name + "'")) {
    // Keep what was parsed so Sema can still check it.
    model->hadParseError = true;
    skipToNextDecl();
  }
  return model;
}

StmtPtr Parser::parseItem(bool inBlock) {
  switch (tok.getKind()) {
  case Token::kw_dim:
    if (inBlock)
      break;
    return parseDim();
  case Token::kw_input:
    if (inBlock)
      break;
    return parseValueDecl(Stmt::Input);
  case Token::kw_param:
    return parseValueDecl(Stmt::Param);
  case Token::kw_block:
    if (inBlock)
      break;
    return parseBlock();
  case Token::kw_let:
    return parseBind(Stmt::Let);
  case Token::kw_output:
    if (inBlock)
      break;
    return parseBind(Stmt::Output);
  case Token::kw_return:
    if (!inBlock)
      break;
    return parseBind(Stmt::Return);
  default: {
    std::string hint;
    if (tok.is(Token::identifier)) {
      Suggester s(tok.getSpelling());
      for (const char *kw : {"dim", "input", "param", "block", "let", "output",
                             "return", "model", "group"})
        s.add(kw);
      hint = s.hint();
      if (tok.getSpelling() == "def" || tok.getSpelling() == "fn")
        hint = "; define reusable layers with 'block NAME(args) -> TYPE { "
               "... }'";
    }
    errorHere(Twine("expected ") +
              (inBlock ? "'param', 'let' or 'return'"
                       : "'dim', 'input', 'param', 'block', 'let' or "
                         "'output'") +
              ", got " + describeToken() + hint);
    consume();
    return nullptr;
  }
  }
  errorHere(Twine("'") + tok.getSpelling() + "' is not allowed " +
            (inBlock ? "inside a block" : "outside a block"));
  consume();
  return nullptr;
}

StmtPtr Parser::parseDim() {
  consume(); // 'dim'
  std::string name;
  SMLoc loc;
  if (!expectIdent(name, loc, "dim name"))
    return nullptr;
  pendingName = name;
  auto dim = std::make_unique<DimDecl>(loc, name);
  if (tok.is(Token::equal)) {
    consume();
    dim->valueLoc = tok.getLoc();
    if (tok.isNot(Token::integer)) {
      errorHere("expected dim size (an integer), got " + describeToken());
      return nullptr;
    }
    dim->isFixed = true;
    dim->value = tok.getIntValue();
    consume();
  }
  if (!expect(Token::semi, "';' after dim declaration"))
    return nullptr;
  return dim;
}

StmtPtr Parser::parseValueDecl(Stmt::StmtKind kind) {
  const char *what = kind == Stmt::Input ? "input" : "param";
  consume(); // 'input' / 'param'
  std::string name;
  SMLoc loc;
  TypeExpr type;
  if (!expectIdent(name, loc, Twine(what) + " name"))
    return nullptr;
  pendingName = name;
  if (!expect(Token::colon,
              Twine("':' and a type after ") + what + " '" + name + "'") ||
      !parseType(type) ||
      !expect(Token::semi, Twine("';' after ") + what + " declaration"))
    return nullptr;
  return std::make_unique<ValueDecl>(kind, loc, name, std::move(type));
}

StmtPtr Parser::parseBlock() {
  consume(); // 'block'
  std::string name;
  SMLoc loc;
  if (!expectIdent(name, loc, "block name"))
    return nullptr;
  pendingName = name;
  auto block = std::make_unique<BlockDecl>(loc, name);
  if (!expect(Token::l_paren, "'(' after block name"))
    return nullptr;
  if (tok.isNot(Token::r_paren)) {
    do {
      BlockArg arg;
      if (!expectIdent(arg.name, arg.loc, "block argument name") ||
          !expect(Token::colon, "':' and a type after block argument") ||
          !parseType(arg.typeExpr))
        return nullptr;
      block->args.push_back(std::move(arg));
    } while (tok.is(Token::comma) && (consume(), true));
  }
  if (!expect(Token::r_paren, "')' after block arguments") ||
      !expect(Token::arrow,
              "'->' and the result type of block '" + name + "'") ||
      !parseType(block->resultTypeExpr) ||
      !expect(Token::l_brace, "'{' to start the block body"))
    return nullptr;
  std::string blockName = pendingName;
  while (tok.isNot(Token::r_brace) && tok.isNot(Token::eof) &&
         tok.isNot(Token::kw_model) && tok.isNot(Token::kw_group)) {
    pendingName.clear();
    if (StmtPtr item = parseItem(/*inBlock=*/true)) {
      block->body.push_back(std::move(item));
    } else {
      noteDropped();
      skipToNextItem();
    }
  }
  pendingName = blockName;
  if (!expect(Token::r_brace, "'}' at end of block '" + name + "'"))
    return nullptr;
  return block;
}

StmtPtr Parser::parseBind(Stmt::StmtKind kind) {
  SMLoc kwLoc = tok.getLoc();
  consume(); // 'let' / 'output' / 'return'
  std::unique_ptr<BindStmt> bind;
  if (kind == Stmt::Return) {
    bind = std::make_unique<BindStmt>(kind, kwLoc, "");
  } else {
    std::string name;
    SMLoc loc;
    if (!expectIdent(name, loc,
                     kind == Stmt::Let ? "name after 'let'"
                                       : "name after 'output'"))
      return nullptr;
    pendingName = name;
    bind = std::make_unique<BindStmt>(kind, loc, name);
    // `let a, b = f(...)`: one name per result of a multi-result call.
    while (kind == Stmt::Let && tok.is(Token::comma)) {
      consume();
      std::string more;
      SMLoc moreLoc;
      if (!expectIdent(more, moreLoc, "name after ',' in 'let'"))
        return nullptr;
      bind->extraNames.push_back(more);
      bind->extraLocs.push_back(moreLoc);
    }
    if (!bind->extraNames.empty() && tok.is(Token::colon)) {
      errorHere("a 'let' of several names takes no type annotation; bind "
                "each result with its own 'let' to check its type");
      return nullptr;
    }
    if (tok.is(Token::colon)) {
      consume();
      bind->hasType = true;
      if (!parseType(bind->typeExpr))
        return nullptr;
    }
    if (!expect(Token::equal, "'=' after '" + name + "'"))
      return nullptr;
  }
  bind->value = parseExpr();
  if (!bind->value || !expect(Token::semi, "';' after expression"))
    return nullptr;
  return bind;
}

bool Parser::parseType(TypeExpr &type) {
  if (!expectIdent(type.base, type.loc,
                   "a type (e.g. 'f32[L, D]' or "
                   "'SE3[L]')"))
    return false;
  if (tok.is(Token::less)) {
    consume();
    if (!expectIdent(type.elemDType, type.elemDTypeLoc,
                     "element dtype after '<'") ||
        !expect(Token::greater, "'>' after element dtype"))
      return false;
  }
  if (tok.isNot(Token::l_square))
    return true;
  consume();
  if (tok.is(Token::r_square)) {
    consume();
    return true;
  }
  do {
    DimExpr dim;
    dim.loc = tok.getLoc();
    if (tok.is(Token::identifier)) {
      dim.name = tok.getSpelling().str();
    } else if (tok.is(Token::integer)) {
      dim.value = tok.getIntValue();
    } else {
      errorHere("expected a dim (a name or an integer), got " +
                describeToken());
      return false;
    }
    consume();
    type.dims.push_back(std::move(dim));
  } while (tok.is(Token::comma) && (consume(), true));
  return expect(Token::r_square, "']' after dims");
}
