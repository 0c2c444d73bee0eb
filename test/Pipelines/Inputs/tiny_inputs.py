"""Seeded inputs and a safetensors bundle for model-to-so.tsr."""
import json
import os
import struct
import sys

import numpy as np

out = sys.argv[1]
rng = np.random.default_rng(0)
L = 7
np.save(os.path.join(out, "pose.npy"), np.tile(np.eye(4), (L, 1, 1)).astype(np.float32))
np.save(os.path.join(out, "x.npy"), rng.standard_normal((L, 8)).astype(np.float32))
w = rng.standard_normal((8, 8)).astype(np.float32)
header = json.dumps({"Wv": {"dtype": "F32", "shape": [8, 8],
                            "data_offsets": [0, w.nbytes]}}).encode()
header += b" " * ((8 - len(header) % 8) % 8)
with open(os.path.join(out, "w.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(header)) + header + w.tobytes())
np.save(os.path.join(out, "w.npy"), w)
