/*===- bench/microbench.c - FMA peak and vector math cost ---------*- C -*-===*\
|*                                                                            *|
|* Part of the Torsor benchmarks (never built by `make`; machine_bound.py     *|
|* compiles it: cc -O3 -mavx512f -mfma microbench.c -lmvec -lpthread).       *|
|*                                                                            *|
|* Prints, for T threads (pthreads, one kernel per thread, summed):           *|
|*   fma   : f32 FMA lane-operations per second, 12 independent vector        *|
|*           accumulators (enough to hide the FMA latency on 2 ports);        *|
|*   expf, atan2f, sinf, sqrtf, div: ns per element (aggregate throughput)    *|
|*           of y[i] = f(x[i]) over an L1-resident array, 16 lanes at a time  *|
|*           with glibc's libmvec AVX-512 functions (_ZGVeN16v_expf, ...),    *|
|*           i.e. what vectorized code calling libmvec pays per element.      *|
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
#define VEC 16 /* lanes per accumulator (one zmm) */

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

/// FMA chains: acc = acc * a + b, ACC independent zmm vectors; returns
/// lane-operations.
static double kernelFma(long iters, float *sink) {
  __m512 acc[ACC];
  __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (int k = 0; k < ACC; ++k)
    acc[k] = _mm512_set1_ps((float)k);
  for (long i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int k = 0; k < ACC; ++k)
      acc[k] = _mm512_fmadd_ps(acc[k], a, b);
  }
  __m512 s = acc[0];
  for (int k = 1; k < ACC; ++k)
    s = _mm512_add_ps(s, acc[k]);
  *sink = _mm512_reduce_add_ps(s);
  return (double)iters * ACC * VEC;
}

static float X[64][N] __attribute__((aligned(64))), Y[64][N], Z[64][N];

/// glibc libmvec's AVX-512 variants (what LLVM's -fveclib=libmvec calls),
/// declared here and called directly so the measurement does not depend on
/// which of them a given compiler maps.
__m512 _ZGVeN16v_expf(__m512);
__m512 _ZGVeN16v_sinf(__m512);
__m512 _ZGVeN16vv_atan2f(__m512, __m512);

/// One pass of `op` over the thread's arrays, 16 lanes at a time.
static void pass(int op, int t) {
  float *x = X[t], *y = Y[t], *z = Z[t];
  for (int i = 0; i < N; i += 16) {
    __m512 a = _mm512_loadu_ps(x + i), b = _mm512_loadu_ps(y + i), r;
    switch (op) {
    case 0:
      r = _ZGVeN16v_expf(a);
      break;
    case 1:
      r = _ZGVeN16vv_atan2f(b, a);
      break;
    case 2:
      r = _ZGVeN16v_sinf(a);
      break;
    case 3:
      r = _mm512_sqrt_ps(a);
      break;
    default:
      r = _mm512_div_ps(b, a);
      break;
    }
    _mm512_storeu_ps(z + i, r);
  }
}

static const char *opNames[] = {"expf", "atan2f", "sinf", "sqrtf", "div"};

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
  double best = 0;
  for (int r = 0; r < 5; ++r) {
    double v = measure(-1, threads, 20000000 / 4);
    best = v > best ? v : best;
  }
  printf("fma %.6g\n", best);
  for (int op = 0; op < 5; ++op) {
    best = 0;
    for (int r = 0; r < 5; ++r) {
      double v = measure(op, threads, 20000);
      best = v > best ? v : best;
    }
    printf("%s %.6g\n", opNames[op], 1e9 / best);
  }
  return 0;
}
