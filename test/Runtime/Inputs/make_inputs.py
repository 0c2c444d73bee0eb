"""Writes the .npy/.safetensors files the test/Runtime lit tests feed to
torsor-run with the fake model (unittests/Runtime/FakeModel.cpp):
inputs pose [L,4,4] SE3 and x [L,8] f32, param w [8] f32, with L = 5; plus
one broken file per error the tests check.

usage: make_inputs.py OUTDIR
"""
import json
import os
import struct
import sys

import numpy as np

L = 5


def pose(n=L):
    p = np.tile(np.eye(4, dtype=np.float32), (n, 1, 1))
    p[:, 0, 3] = np.arange(n, dtype=np.float32)
    # Rotate about z by a different angle per element; keeps pose[...,0,0]
    # interesting for the numeric check.
    a = np.linspace(0.0, 1.0, n, dtype=np.float32)
    p[:, 0, 0], p[:, 0, 1] = np.cos(a), -np.sin(a)
    p[:, 1, 0], p[:, 1, 1] = np.sin(a), np.cos(a)
    return p


def x(n=L):
    return (np.arange(n * 8, dtype=np.float32) * 0.5).reshape(n, 8)


def w():
    return (np.arange(8, dtype=np.float32) * 100.0)


def safetensors(path, tensors, tag="F32"):
    header, blobs, off = {}, [], 0
    for name, arr in tensors.items():
        data = arr.tobytes()
        header[name] = {"dtype": tag, "shape": list(arr.shape),
                        "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    h = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def main(out):
    os.makedirs(out, exist_ok=True)
    j = lambda name: os.path.join(out, name)
    np.save(j("pose.npy"), pose())
    np.save(j("x.npy"), x())
    safetensors(j("w.safetensors"), {"w": w()})
    # Shape, dtype and name errors.
    np.save(j("pose_rank2.npy"), np.zeros((L, 4), np.float32))
    np.save(j("pose_dim.npy"), np.zeros((L, 3, 4), np.float32))
    np.save(j("x_f64.npy"), x().astype(np.float64))
    np.save(j("x_f16.npy"), x().astype(np.float16))
    np.save(j("x_i64.npy"), x().astype(np.int64))
    np.save(j("w_f64.npy"), w().astype(np.float64))
    np.save(j("w_i64.npy"), w().astype(np.int64))
    np.save(j("x12.npy"), x(12))
    sheared = pose()
    sheared[3, 0, 1] += 0.21
    np.save(j("pose_shear.npy"), sheared)
    safetensors(j("w_f64.safetensors"), {"w": w().astype(np.float64)}, "F64")
    safetensors(j("w_i64.safetensors"), {"w": w().astype(np.int64)}, "I64")
    safetensors(j("w_extra.safetensors"), {"w": w(), "v": w()})
    good = open(j("w.safetensors"), "rb").read()
    open(j("w_trunc.safetensors"), "wb").write(good[:-4])
    # File-format errors.
    np.save(j("x_fortran.npy"), np.asfortranarray(x()))
    np.save(j("x_big.npy"), x().astype(">f4"))
    np.save(j("x_i32.npy"), x().astype(np.int32))
    np.save(j("x_c64.npy"), x().astype(np.complex64))
    whole = open(j("x.npy"), "rb").read()
    open(j("x_trunc.npy"), "wb").write(whole[:-8])
    open(j("garbage.npy"), "wb").write(b"this is not an array\n")
    # Weights in formats users try before safetensors.
    np.save(j("w.npy"), w())
    np.savez(j("w.npz"), w=w())
    import pickle
    open(j("w_pickle.pt"), "wb").write(pickle.dumps({"w": w().tolist()},
                                                    protocol=2))
    open(j("model.tsr"), "w").write("model M { }\n")


if __name__ == "__main__":
    main(sys.argv[1])
