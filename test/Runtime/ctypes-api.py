# Drives the C API from Python's ctypes, which loads libtorsor_runtime.so
# RTLD_LOCAL: the model must still resolve torsor_parallel_for (the runtime
# promotes itself to RTLD_GLOBAL before dlopen-ing the model).
#
# RUN: %python %s %torsor_bin/../lib | FileCheck %s
# CHECK: model FakePose inputs ['pose', 'x'] params ['w'] outputs ['out', 'rowsum']
# CHECK-NEXT: pose dims ['L', 4, 4] group SE3
# CHECK-NEXT: error: unknown input 'posee'; model inputs are: pose, x
# CHECK-NEXT: error: input 'pose' element 0 is not in SE3: rotation block not orthonormal
# CHECK-NEXT: out shape (5, 8) matches numpy: True
# CHECK-NEXT: threads 2
import ctypes
import os
import sys

import numpy as np

lib = ctypes.CDLL(os.path.join(sys.argv[1], "libtorsor_runtime.so"))
model_path = os.path.join(sys.argv[1], "torsor_fake_model.so").encode()


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("rank", ctypes.c_int32), ("dtype", ctypes.c_int32)]


P = ctypes.c_void_p
lib.torsorModuleLoad.argtypes = [ctypes.c_char_p, ctypes.POINTER(P)]
lib.torsorModuleLoad.restype = P
lib.torsorStatusMessage.argtypes = [P]
lib.torsorStatusMessage.restype = ctypes.c_char_p
lib.torsorStatusFree.argtypes = [P]
lib.torsorModuleName.argtypes = [P]
lib.torsorModuleName.restype = ctypes.c_char_p
lib.torsorModuleNumTensors.argtypes = [P, ctypes.c_int]
lib.torsorModuleTensorName.argtypes = [P, ctypes.c_int, ctypes.c_int32]
lib.torsorModuleTensorName.restype = ctypes.c_char_p
lib.torsorModuleTensorRank.argtypes = [P, ctypes.c_int, ctypes.c_int32]
lib.torsorModuleTensorDimSymbol.argtypes = [P, ctypes.c_int, ctypes.c_int32,
                                            ctypes.c_int32]
lib.torsorModuleTensorDimSymbol.restype = ctypes.c_char_p
lib.torsorModuleTensorDimExtent.argtypes = [P, ctypes.c_int, ctypes.c_int32,
                                            ctypes.c_int32]
lib.torsorModuleTensorDimExtent.restype = ctypes.c_int64
lib.torsorModuleTensorGroup.argtypes = [P, ctypes.c_int, ctypes.c_int32]
lib.torsorModuleTensorGroup.restype = ctypes.c_char_p
for f in ("torsorModuleBindInput", "torsorModuleBindParam"):
    getattr(lib, f).argtypes = [P, ctypes.c_char_p, ctypes.POINTER(Tensor)]
    getattr(lib, f).restype = P
lib.torsorModuleRun.argtypes = [P]
lib.torsorModuleRun.restype = P
lib.torsorModuleGetOutput.argtypes = [P, ctypes.c_char_p,
                                      ctypes.POINTER(Tensor)]
lib.torsorModuleGetOutput.restype = P
lib.torsorModuleFree.argtypes = [P]
lib.torsorSetNumThreads.restype = P


def check(status):
    if status:
        msg = lib.torsorStatusMessage(status).decode()
        lib.torsorStatusFree(status)
        raise RuntimeError(msg)


def tensor(arr):
    shape = (ctypes.c_int64 * arr.ndim)(*arr.shape)
    dtype = {np.float32: 0, np.float64: 1, np.int64: 2}[arr.dtype.type]
    t = Tensor(arr.ctypes.data, shape, None, arr.ndim, dtype)
    t._keep = (arr, shape)
    return t


module = P()
check(lib.torsorModuleLoad(model_path, ctypes.byref(module)))
names = [[lib.torsorModuleTensorName(module, k, i).decode()
          for i in range(lib.torsorModuleNumTensors(module, k))]
         for k in range(3)]
print("model", lib.torsorModuleName(module).decode(), "inputs", names[0],
      "params", names[1], "outputs", names[2])
dims = []
for d in range(lib.torsorModuleTensorRank(module, 0, 0)):
    sym = lib.torsorModuleTensorDimSymbol(module, 0, 0, d)
    dims.append(sym.decode() if sym else
                lib.torsorModuleTensorDimExtent(module, 0, 0, d))
print("pose dims", dims, "group",
      lib.torsorModuleTensorGroup(module, 0, 0).decode())

pose = np.tile(np.eye(4, dtype=np.float32), (5, 1, 1))
pose[:, 0, 0] = np.arange(5)
x = np.arange(40, dtype=np.float32).reshape(5, 8)
w = np.ones(8, np.float32)
try:
    check(lib.torsorModuleBindInput(module, b"posee", tensor(pose)))
except RuntimeError as e:
    print("error:", e)
check(lib.torsorSetNumThreads(2))
check(lib.torsorModuleBindInput(module, b"pose", tensor(pose)))
check(lib.torsorModuleBindInput(module, b"x", tensor(x)))
check(lib.torsorModuleBindParam(module, b"w", tensor(w)))
# These "poses" are not rigid motions: the group check (on by default)
# rejects them; this test is about the binding, so it opts out.
try:
    check(lib.torsorModuleRun(module))
except RuntimeError as e:
    print("error:", e)
lib.torsorModuleSetCheckGroups.argtypes = [P, ctypes.c_int32, ctypes.c_double]
lib.torsorModuleSetCheckGroups(module, 0, 1e-4)
check(lib.torsorModuleRun(module))
out = Tensor()
check(lib.torsorModuleGetOutput(module, b"out", ctypes.byref(out)))
shape = tuple(out.shape[i] for i in range(out.rank))
got = np.ctypeslib.as_array(ctypes.cast(out.data,
                                        ctypes.POINTER(ctypes.c_float)),
                            shape=shape)
want = 2 * x + pose[:, 0, 0, None] + w
print("out shape", shape, "matches numpy:", bool(np.array_equal(got, want)))
print("threads", lib.torsorGetNumThreads())
lib.torsorModuleFree(module)
