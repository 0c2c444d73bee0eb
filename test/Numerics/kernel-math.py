# RUN: %python %s | FileCheck %s
# CHECK: all {{[0-9]+}} checks passed
"""The fused kernels' polynomial f32 math (KernelMath.h) over the f32 range.

`torsor-opt --torsor-test-kernel-math` rewrites every math op of the module
with the patterns the attention kernels use (on vectors of 16 lanes, as
the kernels' pair forms are; scalar ops keep libm); torsorc compiles it and ctypes
runs it on f32 arrays. Reference: numpy's float64 function of the same f32
input (correctly rounded to far below an f32 ulp). Errors are in f32 ulps
of the reference, ulp(y) = np.spacing(float32(y)) (the smallest subnormal
for subnormal results), or relative where the result is near zero.

Inputs: every 509th f32 bit pattern of either sign (8.4·10⁶ values, every
binade from subnormals to FLT_MAX), dense samples around the switch points
(|x| = 1 for expm1, u = √½·2ᵏ for log, x = ±1 for log1p, the subnormal
boundary) and tiny arguments where expm1(x) = log1p(x) = x in f32, and the
special values ±0, ±∞, NaN, FLT_MIN, FLT_MAX, −1.

Bounds (the measured maxima with a margin, docs/geo.md):
  log    1 ulp on x > 0;  log1p 2 ulp on x > −1;  expm1 2 ulp
  (x ≥ −88.7; below, the result is −1 to within half an ulp);
  exp 2 ulp, subnormal results included (x ∈ [−103.97, −87.34], where the
  ulp is the smallest subnormal: gradual underflow, not a flush to 0),
  0 for x < −104.
  tiny x (|x| < 2⁻²⁵): expm1(x) and log1p(x) equal x bit for bit.
  specials as C99: log(0) = −∞, log(<0) = NaN, log(+∞) = +∞;
  log1p(−1) = −∞, log1p(<−1) = NaN; expm1(+∞) = +∞, expm1(−∞) = −1;
  exp(±0) = 1, exp(+∞) = +∞, exp(−∞) = 0; NaN → NaN.
atan2(y, x) on 16-lane vectors too: 4e-7 rad absolute over random and
specially placed (y, x) pairs (3.4e-7 measured over the whole circle, where
results near ±π have an f32 ulp of 2.4e-7; the polynomial's own 1.5e-7 is
on [0, π/4]); a NaN in either operand
gives NaN (its max and min of |x| and |y| are nnan nsz: the last select
alone restores the NaN); the signs of zero as C99 (atan2(±0, +0) = ±0,
atan2(±0, −0) = ±π, atan2(±0, x < 0) = ±π, atan2(±y, 0) = ±π/2).
"""
import subprocess

import numpy as np

from torsor_testing import SYMBOL_PREFIX, CompiledModule, Report, tool

OPS = ("log", "log1p", "expm1", "exp")
BOUND = {"log": 1.0, "log1p": 2.0, "expm1": 2.0, "exp": 2.0}


LANES = 16


def compile_ops():
    """One function per op: a loop over the array in vectors of 16 lanes
    (the patterns rewrite vectors only, as the kernels' pair forms are)."""
    text = []
    for op in OPS:
        text.append("""func.func @%(prefix)s%(op)s(%%in: memref<?xf32>, %%out: memref<?xf32>)
    attributes {llvm.emit_c_interface} {
  %%c0 = arith.constant 0 : index
  %%step = arith.constant %(lanes)d : index
  %%pad = arith.constant 0.0 : f32
  %%n = memref.dim %%in, %%c0 : memref<?xf32>
  scf.for %%i = %%c0 to %%n step %%step {
    %%x = vector.transfer_read %%in[%%i], %%pad {in_bounds = [true]}
        : memref<?xf32>, vector<%(lanes)dxf32>
    %%y = math.%(op)s %%x : vector<%(lanes)dxf32>
    vector.transfer_write %%y, %%out[%%i] {in_bounds = [true]}
        : vector<%(lanes)dxf32>, memref<?xf32>
  }
  return
}
""" % {"prefix": SYMBOL_PREFIX, "op": op, "lanes": LANES})
    text.append("""func.func @%(prefix)satan2(%%y: memref<?xf32>, %%x: memref<?xf32>,
                                  %%out: memref<?xf32>)
    attributes {llvm.emit_c_interface} {
  %%c0 = arith.constant 0 : index
  %%step = arith.constant %(lanes)d : index
  %%pad = arith.constant 0.0 : f32
  %%n = memref.dim %%x, %%c0 : memref<?xf32>
  scf.for %%i = %%c0 to %%n step %%step {
    %%a = vector.transfer_read %%y[%%i], %%pad {in_bounds = [true]}
        : memref<?xf32>, vector<%(lanes)dxf32>
    %%b = vector.transfer_read %%x[%%i], %%pad {in_bounds = [true]}
        : memref<?xf32>, vector<%(lanes)dxf32>
    %%r = math.atan2 %%a, %%b : vector<%(lanes)dxf32>
    vector.transfer_write %%r, %%out[%%i] {in_bounds = [true]}
        : vector<%(lanes)dxf32>, memref<?xf32>
  }
  return
}
""" % {"prefix": SYMBOL_PREFIX, "lanes": LANES})
    src = "\n".join(text)
    opt = subprocess.run([tool("torsor-opt"), "--torsor-test-kernel-math"],
                         input=src, capture_output=True, text=True)
    if opt.returncode:
        raise RuntimeError(opt.stderr + src)
    assert "math.log" not in opt.stdout and "math.expm1" not in opt.stdout \
        and "math.atan2" not in opt.stdout, \
        "the patterns left a math op: " + opt.stdout
    return CompiledModule(opt.stdout)


def run(mod, op, x):
    """op on x, padded to whole vectors."""
    count = len(x)
    padded = np.zeros(-(-count // LANES) * LANES, np.float32)
    padded[:count] = x
    out = np.zeros_like(padded)
    mod.call(op, padded, out)
    return out[:count]


def run_atan2(mod, y, x):
    """atan2(y, x), padded to whole vectors."""
    count = len(x)
    size = -(-count // LANES) * LANES
    py, px = np.zeros(size, np.float32), np.zeros(size, np.float32)
    py[:count], px[:count] = y, x
    out = np.zeros_like(px)
    mod.call("atan2", py, px, out)
    return out[:count]


def check_atan2(mod, rep):
    rng = np.random.default_rng(11)
    n = 400000
    # Every octant, both signs, magnitudes from 1e-30 to 1e30 and equal
    # magnitudes (the octant switch |y| = |x|).
    mag = 10.0 ** rng.uniform(-30, 30, n)
    angle = rng.uniform(-np.pi, np.pi, n)
    y = (mag * np.sin(angle)).astype(np.float32)
    x = (mag * np.cos(angle)).astype(np.float32)
    same = rng.uniform(0.1, 10, 2000).astype(np.float32)
    signs = rng.choice([-1, 1], (2, 2000)).astype(np.float32)
    y = np.concatenate([y, same * signs[0]])
    x = np.concatenate([x, same * signs[1]])
    got = run_atan2(mod, y, x).astype(np.float64)
    want = np.arctan2(y.astype(np.float64), x.astype(np.float64))
    rep.check("atan2: max abs error (rad) over %d finite (y, x)" % len(x),
              np.abs(got - want).max(), 4e-7)
    inf, nan = np.float32(np.inf), np.float32(np.nan)
    pi, half = np.float32(np.pi), np.float32(np.pi / 2)
    # (y, x, expected): NaN in either operand, and the signed zeros.
    cases = [(nan, 1.0, nan), (1.0, nan, nan), (nan, nan, nan), (nan, 0.0, nan),
             (0.0, nan, nan), (nan, -inf, nan), (inf, nan, nan),
             (0.0, 1.0, 0.0), (-0.0, 1.0, -0.0), (0.0, 0.0, 0.0),
             (-0.0, 0.0, -0.0), (0.0, -0.0, pi), (-0.0, -0.0, -pi),
             (0.0, -1.0, pi), (-0.0, -1.0, -pi), (1.0, 0.0, half),
             (-1.0, -0.0, -half), (1.0, inf, 0.0), (-1.0, -inf, -pi),
             (inf, 1.0, half), (-inf, -1.0, -half)]
    cy = np.array([c[0] for c in cases], np.float32)
    cx = np.array([c[1] for c in cases], np.float32)
    got = run_atan2(mod, cy, cx)
    bad = 0
    for g, (_, _, w) in zip(got, cases):
        w = np.float32(w)
        if np.isnan(w):
            bad += not np.isnan(g)
        else:
            bad += abs(float(g) - float(w)) > 3e-7 or np.signbit(g) != np.signbit(w)
    rep.check("atan2: NaN in either operand -> NaN, signed zeros and infinities "
              "as C99 (%d cases)" % len(cases), bad, 0)


def reference(op, x):
    x = x.astype(np.float64)
    with np.errstate(all="ignore"):
        return {"log": np.log, "log1p": np.log1p, "expm1": np.expm1,
                "exp": np.exp}[op](x)


def ulp_error(y, ref):
    """|y − ref| in ulps of ref rounded to f32; finite refs only."""
    r32 = ref.astype(np.float32)
    ulp = np.spacing(np.abs(r32)).astype(np.float64)
    ulp = np.maximum(ulp, np.float64(np.finfo(np.float32).smallest_subnormal))
    return np.abs(y.astype(np.float64) - ref) / ulp


def inputs():
    bits = np.arange(0, 0x7f800000, 509, dtype=np.uint32)
    pos = bits.view(np.float32)
    xs = [pos, -pos]
    rng = np.random.default_rng(7)
    # Switch points and subnormal boundary, densely.
    for c in (1.0, -1.0, np.sqrt(0.5), np.sqrt(2.0), 2.0, 0.5,
              np.finfo(np.float32).tiny, 88.7, -87.3, -0.5,
              -80.0, -103.97, -104.0):
        xs.append((c * (1 + rng.uniform(-1e-3, 1e-3, 20000))).astype(np.float32))
        steps = [np.float32(c)]
        for direction in (np.float32(np.inf), np.float32(-np.inf)):
            x = np.float32(c)
            for _ in range(50):
                x = np.nextafter(x, direction)
                steps.append(x)
        xs.append(np.array(steps, np.float32))
    for k in range(-126, 128, 3):
        xs.append((np.sqrt(0.5) * 2.0 ** k * (1 + rng.uniform(-1e-6, 1e-6, 200))
                   ).astype(np.float32))
    # Uniform in the ranges the kernels see.
    xs.append(rng.uniform(-20, 20, 200000).astype(np.float32))
    xs.append(rng.uniform(-1, 1, 200000).astype(np.float32))
    # exp's subnormal results and the switch at x = -80 (every binade).
    xs.append(rng.uniform(-105, -79, 200000).astype(np.float32))
    return np.concatenate(xs)


def main():
    mod = compile_ops()
    rep = Report("kernel math (f32)")
    x = inputs()
    finite = np.isfinite(x)
    for op in OPS:
        y = run(mod, op, x)
        ref = reference(op, x)
        domain = finite & np.isfinite(ref) & (np.abs(ref) <= np.finfo(np.float32).max)
        if op == "log":
            domain &= x > 0
        if op == "log1p":
            domain &= x > -1
        err = ulp_error(y[domain], ref[domain])
        worst = np.argmax(err)
        rep.check("%s: max ulp error over %d inputs (worst at x = %r)"
                  % (op, domain.sum(), float(x[domain][worst])),
                  err.max(), BOUND[op])
        if op == "exp":
            sub = domain & (x < -87.34) & (x >= -103.97)
            rep.check("exp: subnormal results, max error in smallest "
                      "subnormals over %d inputs in [-103.97, -87.34]"
                      % sub.sum(), ulp_error(y[sub], ref[sub]).max(), 2.0)
            rep.check("exp: no zero result above -103.97 (%d inputs)"
                      % (finite & (x > -103.97)).sum(),
                      np.sum(y[finite & (x > -103.97)] == 0), 0)
            rep.check("exp: 0 below -104 (%d inputs)" % (finite & (x < -104)).sum(),
                      np.sum(y[finite & (x < -104)] != 0), 0)
        if op in ("expm1", "log1p"):
            tiny = finite & (np.abs(x) < 2.0 ** -25)
            rep.check("%s(x) == x bit for bit for |x| < 2^-25 (%d inputs, "
                      "subnormals and ±0 included)" % (op, tiny.sum()),
                      np.sum(y[tiny].view(np.uint32) != x[tiny].view(np.uint32)), 0)

    inf, nan = np.float32(np.inf), np.float32(np.nan)
    fmax = np.finfo(np.float32).max
    special = np.array([0.0, -0.0, inf, -inf, nan, -1.0, -2.0, fmax, -fmax,
                        np.finfo(np.float32).tiny,
                        np.finfo(np.float32).smallest_subnormal], np.float32)
    expect = {
        "log": [-inf, -inf, inf, nan, nan, nan, nan, np.log(np.float64(fmax)),
                nan, np.log(np.float64(np.finfo(np.float32).tiny)),
                np.log(np.float64(np.finfo(np.float32).smallest_subnormal))],
        "log1p": [0.0, -0.0, inf, nan, nan, -inf, nan, np.log(np.float64(fmax)),
                  nan, np.finfo(np.float32).tiny,
                  np.finfo(np.float32).smallest_subnormal],
        "expm1": [0.0, -0.0, inf, -1.0, nan, np.expm1(-1.0), np.expm1(-2.0),
                  inf, -1.0, np.finfo(np.float32).tiny,
                  np.finfo(np.float32).smallest_subnormal],
        "exp": [1.0, 1.0, inf, 0.0, nan, np.exp(-1.0), np.exp(-2.0), inf, 0.0,
                1.0, 1.0],
    }
    check_atan2(mod, rep)
    for op, want in expect.items():
        y = run(mod, op, special).astype(np.float64)
        want = np.array(want, np.float64)
        bad = 0
        for got, w in zip(y, want):
            if np.isnan(w):
                bad += not np.isnan(got)
            elif np.isinf(w):
                bad += got != w
            else:
                bad += abs(got - w) > 2 * np.spacing(np.float32(abs(w)))
        rep.check("%s: special values (±0, ±inf, NaN, -1, -2, ±FLT_MAX, "
                  "FLT_MIN, the smallest subnormal)" % op, bad, 0)
    rep.finish()


if __name__ == "__main__":
    main()
