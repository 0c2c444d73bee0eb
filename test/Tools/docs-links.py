# The project's docs stand alone (issue #14, item 7): no page points at
# files a clone does not have (../shared, MATH.md, DESIGN.md, STYLE.md), and
# every `docs/...`, `examples/...` or `tools/...` path a page names exists.
#
# RUN: %python %s %torsor_src | FileCheck %s
# CHECK: checked {{[0-9]+}} pages: self-contained
import os
import re
import subprocess
import sys

root = sys.argv[1]
pages = ["README.md"]
for base, _, names in os.walk(os.path.join(root, "docs")):
    pages += [os.path.relpath(os.path.join(base, n), root)
              for n in names if n.endswith(".md")]
pages += ["bench/README.md", "dialects/Geo/README.md"]
outside = re.compile(r"\.\./shared|\b(MATH|DESIGN|STYLE)\.md")
named = re.compile(r"\b((?:docs|examples|tools|test|runtime|scripts)/"
                   r"[A-Za-z0-9_./*-]+[A-Za-z0-9_*])")
problems = []
for page in pages:
    path = os.path.join(root, page)
    if not os.path.exists(path):
        continue
    for number, line in enumerate(open(path, encoding="utf-8"), 1):
        if outside.search(line):
            problems.append("%s:%d: points outside the repository: %s"
                            % (page, number, line.strip()))
        for ref in named.findall(line):
            ref = ref.rstrip(".")
            if "*" in ref or (ref + "-<") in line or (ref + "<") in line:
                continue  # a pattern such as test/Numerics/lie-<group>.py
            if not os.path.exists(os.path.join(root, ref)):
                problems.append("%s:%d: names a missing file '%s'"
                                % (page, number, ref))
for p in problems:
    print(p)
if problems:
    sys.exit(1)
print("checked %d pages: self-contained" % len(pages))
