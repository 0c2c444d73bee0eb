#!/usr/bin/env bash
#===- update-docs.sh - Regenerate the ODS op and pass references ---------===#
#
# Builds the `mlir-doc` target (add_mlir_doc in each dialect's CMake) and
# copies the generated Markdown into docs/reference/.
#
#===----------------------------------------------------------------------===#
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
ninja -C "$BUILD" mlir-doc
mkdir -p docs/reference
find "$BUILD/docs" -name '*.md' | while read -r f; do
  cp "$f" docs/reference/
done
ls docs/reference
