/*===- bench/microbench.c - FMA peak and vector math cost ---------*- C -*-===*\
|*                                                                            *|
|* Part of the Torsor benchmarks (never built by `make`; machine_bound.py     *|
|* compiles it: cc -O3 -mavx512f -mavx512dq -mfma microbench.c -lmvec         *|
|* -lpthread, or with -mavx2 -mfma on a CPU without AVX-512: the vector       *|
|* width the fused kernels use on this machine, 16 or 8 f32 lanes).           *|
|*                                                                            *|
|* Prints, for T threads (pthreads, one kernel per thread, summed):           *|
|*   lanes : f32 lanes per vector it was built for (16 or 8);                 *|
|*   fma   : f32 FMA lane-operations per second, 12 independent vector        *|
|*           accumulators (enough to hide a 4-cycle FMA latency on 2 pipes;   *|
|*           on a Zen 4 a zmm FMA issues as two 256-bit halves, so it         *|
|*           measures half the lane rate per instruction of an Intel core     *|
|*           with two 512-bit FMA ports);                                     *|
|*   expf, atan2f, sinf, sqrtf, div: ns per element (aggregate throughput)    *|
|*           of y[i] = f(x[i]) over an L1-resident array, one vector at a     *|
|*           time with glibc's libmvec functions (_ZGVeN16v_expf on AVX-512,  *|
|*           _ZGVdN8v_expf on AVX2, ...), i.e. what vectorized code calling   *|
|*           libmvec pays per element;                                        *|
|*   kernel_exp, kernel_atan2: the same for the fused kernels' own            *|
|*           polynomial exp and atan2 (KernelMath.cpp), rewritten here with   *|
|*           intrinsics in the same operations.                               *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/
#include <immintrin.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N 2048 /* 8 KiB per array: stays in L1 */
#define ACC 12 /* independent FMA chains */
#ifdef __AVX512F__
#define VEC 16 /* lanes per accumulator (one zmm) */
typedef __m512 vf;
#define V(op) _mm512_##op
#define VEXP _ZGVeN16v_expf
#define VSIN _ZGVeN16v_sinf
#define VATAN2 _ZGVeN16vv_atan2f
#else
#define VEC 8 /* lanes per accumulator (one ymm) */
typedef __m256 vf;
#define V(op) _mm256_##op
#define VEXP _ZGVdN8v_expf
#define VSIN _ZGVdN8v_sinf
#define VATAN2 _ZGVdN8vv_atan2f
#endif

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

/// FMA chains: acc = acc * a + b, ACC independent zmm vectors; returns
/// lane-operations.
static double kernelFma(long iters, float *sink) {
  vf acc[ACC];
  vf a = V(set1_ps)(0.999999f), b = V(set1_ps)(1e-7f);
  for (int k = 0; k < ACC; ++k)
    acc[k] = V(set1_ps)((float)k);
  for (long i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int k = 0; k < ACC; ++k)
      acc[k] = V(fmadd_ps)(acc[k], a, b);
  }
  vf s = acc[0];
  for (int k = 1; k < ACC; ++k)
    s = V(add_ps)(s, acc[k]);
  float lanes[VEC];
  V(storeu_ps)(lanes, s);
  *sink = 0;
  for (int k = 0; k < VEC; ++k)
    *sink += lanes[k];
  return (double)iters * ACC * VEC;
}

static float X[64][N] __attribute__((aligned(64))), Y[64][N], Z[64][N];

/// glibc libmvec's variants of this width (what LLVM's -fveclib=libmvec
/// calls), declared here and called directly so the measurement does not
/// depend on which of them a given compiler maps.
vf VEXP(vf);
vf VSIN(vf);
vf VATAN2(vf, vf);

#ifdef __AVX512F__
#define VCMP(a, b, pred) _mm512_cmp_ps_mask(a, b, pred)
#define VSELECT(m, t, f) _mm512_mask_blend_ps(m, f, t)
typedef __m512i vi;
#define VI(op) _mm512_##op
#define VCASTI _mm512_castps_si512
#define VCASTF _mm512_castsi512_ps
#else
#define VCMP(a, b, pred) _mm256_cmp_ps(a, b, pred)
#define VSELECT(m, t, f) _mm256_blendv_ps(f, t, m)
typedef __m256i vi;
#define VI(op) _mm256_##op
#define VCASTI _mm256_castps_si256
#define VCASTF _mm256_castsi256_ps
#endif

/// The fused kernels' own f32 exp (dialects/Geo/Transforms/KernelMath.cpp,
/// PolynomialExp): the same operations in the same order, degree-6
/// polynomial, exponent added in the bits, the subnormal and out-of-range
/// selects.
static vf kernelExp(vf x) {
  static const float c[] = {1.0000000005542096f,   1.000000036323745f,
                            0.4999999207920389f,   0.1666642016718447f,
                            0.04166822569120988f,  0.008374816038301347f,
                            0.0013836840078167935f};
  vf shifter = V(set1_ps)(12582912.0f);
  vf t = V(fmadd_ps)(x, V(set1_ps)(1.4426950408889634f), shifter);
  vf k = V(sub_ps)(t, shifter);
  vf r = V(fmadd_ps)(k, V(set1_ps)(-0.693145751953125f), x);
  r = V(fmadd_ps)(k, V(set1_ps)(-1.428606820309417e-06f), r);
  vf p = V(set1_ps)(c[6]);
  for (int i = 5; i >= 0; --i)
    p = V(fmadd_ps)(p, r, V(set1_ps)(c[i]));
  vi scaled = VI(add_epi32)(VCASTI(p), VI(slli_epi32)(VCASTI(t), 23));
  vf y = VCASTF(scaled);
  vf tiny = V(mul_ps)(VCASTF(VI(add_epi32)(scaled, VI(set1_epi32)(64 << 23))),
                      V(set1_ps)(0x1p-64f));
  y = VSELECT(VCMP(x, V(set1_ps)(-80.0f), _CMP_LT_OQ), tiny, y);
  y = VSELECT(VCMP(x, V(set1_ps)(-104.0f), _CMP_LT_OQ), V(setzero_ps)(), y);
  return VSELECT(VCMP(x, V(set1_ps)(88.72283905f), _CMP_GT_OQ),
                 V(set1_ps)(__builtin_inff()), y);
}

/// The fused kernels' own f32 atan2 (KernelMath.cpp, PolynomialAtan2):
/// one division, a degree-15 odd polynomial and the octant selects.
static vf kernelAtan2(vf y, vf x) {
  static const float c[] = {0.9999999010931311f,   -0.33331991127656846f,
                            0.1996972796645299f,   -0.14019499976387192f,
                            0.09914338556762493f,  -0.059486979053691894f,
                            0.024252784623308613f, -0.004693375203889061f};
  vf sign = V(set1_ps)(-0.0f), zero = V(setzero_ps)();
  vf ax = V(andnot_ps)(sign, x), ay = V(andnot_ps)(sign, y);
  vf big = V(max_ps)(ax, ay), small = V(min_ps)(ax, ay);
  vf t = VSELECT(VCMP(big, zero, _CMP_GT_OQ), V(div_ps)(small, big), zero);
  vf t2 = V(mul_ps)(t, t), p = V(set1_ps)(c[7]);
  for (int i = 6; i >= 0; --i)
    p = V(fmadd_ps)(p, t2, V(set1_ps)(c[i]));
  vf a = V(mul_ps)(t, p);
  a = VSELECT(VCMP(ay, ax, _CMP_GT_OQ),
              V(sub_ps)(V(set1_ps)(1.5707963267948966f), a), a);
  vf negative = V(or_ps)(V(and_ps)(sign, x), V(set1_ps)(1.0f));
  a = VSELECT(VCMP(negative, zero, _CMP_LT_OQ),
              V(sub_ps)(V(set1_ps)(3.141592653589793f), a), a);
  a = VSELECT(VCMP(x, y, _CMP_UNORD_Q), V(add_ps)(x, y), a);
  vf ysign = V(and_ps)(sign, y);
  return V(or_ps)(V(andnot_ps)(sign, a), ysign);
}

/// One pass of `op` over the thread's arrays, one vector at a time.
static void pass(int op, int t) {
  float *x = X[t], *y = Y[t], *z = Z[t];
  for (int i = 0; i < N; i += VEC) {
    vf a = V(loadu_ps)(x + i), b = V(loadu_ps)(y + i), r;
    switch (op) {
    case 0:
      r = VEXP(a);
      break;
    case 1:
      r = VATAN2(b, a);
      break;
    case 2:
      r = VSIN(a);
      break;
    case 3:
      r = V(sqrt_ps)(a);
      break;
    case 4:
      r = V(div_ps)(b, a);
      break;
    case 5:
      r = kernelExp(V(sub_ps)(V(setzero_ps)(), a));
      break;
    default:
      r = kernelAtan2(b, a);
      break;
    }
    V(storeu_ps)(z + i, r);
  }
}

static const char *opNames[] = {"expf", "atan2f",     "sinf",        "sqrtf",
                                "div",  "kernel_exp", "kernel_atan2"};
#define NUM_OPS 7

struct Job {
  int op, thread;
  long iters;
  double elems, seconds;
  float sink;
};

static void *run(void *p) {
  struct Job *j = p;
  double t0 = now();
  if (j->op < 0) {
    j->elems = kernelFma(j->iters, &j->sink);
  } else {
    for (long r = 0; r < j->iters; ++r)
      pass(j->op, j->thread);
    j->elems = (double)j->iters * N;
    j->sink = Z[j->thread][N / 2];
  }
  j->seconds = now() - t0;
  return NULL;
}

/// Runs `op` on `threads` threads; returns aggregate elements per second.
static double measure(int op, int threads, long iters) {
  pthread_t tid[64];
  struct Job jobs[64];
  for (int t = 0; t < threads; ++t) {
    jobs[t] = (struct Job){op, t, iters, 0, 0, 0};
    pthread_create(&tid[t], NULL, run, &jobs[t]);
  }
  double rate = 0;
  for (int t = 0; t < threads; ++t) {
    pthread_join(tid[t], NULL);
    rate += jobs[t].elems / jobs[t].seconds;
  }
  return rate;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  if (threads < 1 || threads > 64)
    threads = 1;
  for (int t = 0; t < 64; ++t)
    for (int i = 0; i < N; ++i) {
      X[t][i] = 0.1f + 2.0f * (float)i / N;
      Y[t][i] = -1.0f + 2.0f * (float)((i * 7919) % N) / N;
    }
  printf("lanes %d\n", VEC);
  double best = 0;
  for (int r = 0; r < 5; ++r) {
    double v = measure(-1, threads, 20000000 / 4);
    best = v > best ? v : best;
  }
  printf("fma %.6g\n", best);
  for (int op = 0; op < NUM_OPS; ++op) {
    best = 0;
    for (int r = 0; r < 5; ++r) {
      double v = measure(op, threads, 20000);
      best = v > best ? v : best;
    }
    printf("%s %.6g\n", opNames[op], 1e9 / best);
  }
  return 0;
}
