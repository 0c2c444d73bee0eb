# Every example compiles with `torsorc --grad` and its library exports the
# backward entry named in its manifest (-O0 keeps this test quick; the
# gradients themselves are checked in gradients.py and
# examples-gradients.py). Every example must compile, the declared groups'
# (heisenberg, sim2_similarity) included.
#
# RUN: rm -rf %t && mkdir -p %t && %python %s %torsor_src %torsor_bin %t | FileCheck %s
# CHECK: grassmann_lm: torsor_backward
# CHECK: grassmann_lm_train: torsor_backward
# CHECK: heisenberg: torsor_backward
# CHECK: relational_attention: torsor_backward
# CHECK: relational_block: torsor_backward
# CHECK: se2_planar: torsor_backward
# CHECK: se3_pose_attention: torsor_backward
# CHECK: se3_pose_train: torsor_backward
# CHECK: sim2_similarity: torsor_backward
# CHECK: standard_attention: torsor_backward
# CHECK: every example compiles with --grad
import glob
import json
import os
import subprocess
import sys

src, bindir, out = sys.argv[1:4]
sys.path.insert(0, os.path.join(src, "python"))
import torsor  # noqa: E402
bad = []
for path in sorted(glob.glob(os.path.join(src, "examples", "*.tsr"))):
    name = os.path.splitext(os.path.basename(path))[0]
    so = os.path.join(out, name + ".so")
    res = subprocess.run([os.path.join(bindir, "torsorc"), path, "--grad", "-O0",
                          "-o", so], capture_output=True, text=True)
    if res.returncode != 0:
        bad.append(name)
        print("%s: FAILED\n%s" % (name, res.stderr))
        continue
    with open(os.path.join(out, name + ".json")) as f:
        entry = json.load(f)["backward"]["entry"]
    # The runtime resolves the manifest's backward entry with dlsym when it
    # loads the model (an ABI error if the library lacks it).
    model = torsor.load(so)
    if not model.has_backward:
        bad.append(name)
    print("%s: %s%s" % (name, entry, "" if model.has_backward else " MISSING"))
    model.close()
print("every example compiles with --grad" if not bad else "failed: " + ", ".join(bad))
