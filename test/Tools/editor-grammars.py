# The editor grammars (tools/editors/) know the whole language and
# tokenize every example without errors (issue #14, item 8):
# - the TextMate grammar (VS Code) is valid JSON whose patterns compile;
#   a small TextMate-style scanner (leftmost match, first pattern on ties)
#   runs it over examples/*.tsr and test/Runtime/Inputs/*.tsr, and no
#   character may land in its `invalid.illegal` catch-all or in no token;
# - both grammars list exactly the keywords of frontend/TokenKinds.def,
#   the built-ins of frontend/Builtins.def and the groups of
#   torsor/GroupFacts.def.
#
# RUN: %python %s %torsor_src | FileCheck %s
# CHECK: tokenized {{[0-9]+}} files, no invalid tokens
# CHECK: textmate and vim grammars match the language
import glob
import json
import os
import re
import sys

root = sys.argv[1]
editors = os.path.join(root, "tools", "editors")
grammar = json.load(open(os.path.join(
    editors, "vscode", "syntaxes", "torsor.tmLanguage.json")))
patterns = [(re.compile(p["match"]), p["name"]) for p in grammar["patterns"]]


def tokenize(line):
    """TextMate rule: the earliest match wins; ties go to the first rule."""
    pos, tokens = 0, []
    while pos < len(line):
        best = None
        for regex, name in patterns:
            m = regex.search(line, pos)
            if m and m.end() > m.start() and (best is None
                                              or m.start() < best[0].start()):
                best = (m, name)
        if best is None:
            gap = line[pos:]
            if gap.strip():
                tokens.append((gap, None))
            break
        m, name = best
        if line[pos:m.start()].strip():
            tokens.append((line[pos:m.start()], None))
        tokens.append((m.group(0), name))
        pos = m.end()
    return tokens


files = sorted(glob.glob(os.path.join(root, "examples", "*.tsr")) +
               glob.glob(os.path.join(root, "test", "Runtime", "Inputs",
                                      "*.tsr")))
bad = []
for path in files:
    for number, line in enumerate(open(path, encoding="utf-8"), 1):
        for text, scope in tokenize(line.rstrip("\n")):
            if scope is None or scope.startswith("invalid"):
                bad.append("%s:%d: %r -> %s" % (path, number, text, scope))
# The grammar must be able to fail: an unknown character is illegal.
assert any(s and s.startswith("invalid") for _, s in tokenize("let x = $;"))
assert ("lie_attention", "support.function.builtin.tsr") in tokenize(
    "lie_attention(g, v)")
for b in bad:
    print(b)
if bad or not files:
    sys.exit(1)
print("tokenized %d files, no invalid tokens" % len(files))


def words(path, macro):
    text = open(os.path.join(root, path)).read()
    return set(re.findall(r"^%s\((\w+)" % macro, text, re.M))


keywords = words("frontend/TokenKinds.def", "KEYWORD")
builtins = words("frontend/Builtins.def", "BUILTIN")
groups = words("runtime/include/torsor/GroupFacts.def", "TORSOR_GROUP")
assert keywords and builtins and groups
language = keywords | builtins | groups | {"f16", "bf16", "f32", "f64",
                                           "i32", "i64"}

tm_words = set()
for p in grammar["patterns"]:
    m = re.match(r"^\\b\(\?:([\w|]+)\)\\b", p["match"])
    if m:
        tm_words |= set(m.group(1).split("|"))
vim = open(os.path.join(editors, "vim", "syntax", "tsr.vim")).read()
vim_words = set()
for line in vim.splitlines():
    m = re.match(r"syn keyword tsr(?!Todo)\w+ (.*)", line)
    if m:
        vim_words |= set(m.group(1).split())
for name, got in (("textmate", tm_words), ("vim", vim_words)):
    if got != language:
        print("%s grammar: missing %s, extra %s" % (
            name, sorted(language - got), sorted(got - language)))
        sys.exit(1)
print("textmate and vim grammars match the language")
