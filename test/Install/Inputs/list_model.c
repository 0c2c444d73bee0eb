/* list_model.c - a C program built against the *installed* runtime: loads
 * a compiled model, lists its tensors, runs it once on zeros (group
 * inputs on identities) and prints the first output's shape. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <torsor/runtime.h>

static int check(TorsorStatus *s) {
  if (torsorStatusCode(s) == TORSOR_OK)
    return 0;
  fprintf(stderr, "error: %s\n", torsorStatusMessage(s));
  torsorStatusFree(s);
  return 1;
}

/* Binds tensor `i` of `kind` to a buffer of zeros (identity matrices for
 * group elements), with every symbolic dim set to `L`. */
static int bindZeros(TorsorModule *m, TorsorTensorKind kind, int32_t i,
                     int64_t L, void **keep) {
  int64_t shape[8];
  int32_t rank = torsorModuleTensorRank(m, kind, i);
  int64_t n = 1;
  for (int32_t d = 0; d < rank; ++d) {
    int64_t e = torsorModuleTensorDimExtent(m, kind, i, d);
    shape[d] = e < 0 ? L : e;
    n *= shape[d];
  }
  int32_t dtype = torsorModuleTensorDType(m, kind, i);
  size_t elem = dtype == TORSOR_DTYPE_F32 ? 4 : 8;
  char *data = calloc((size_t)n, elem);
  if (torsorModuleTensorGroup(m, kind, i)) {
    int64_t k = shape[rank - 1];
    for (int64_t e = 0; e < n / (k * k); ++e)
      for (int64_t j = 0; j < k; ++j) {
        size_t at = (size_t)(e * k * k + j * k + j);
        if (dtype == TORSOR_DTYPE_F32)
          ((float *)data)[at] = 1.0f;
        else
          ((double *)data)[at] = 1.0;
      }
  }
  *keep = data;
  TorsorTensor t = {data, shape, NULL, rank, dtype};
  const char *name = torsorModuleTensorName(m, kind, i);
  return kind == TORSOR_INPUT ? check(torsorModuleBindInput(m, name, &t))
                              : check(torsorModuleBindParam(m, name, &t));
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: list_model MODEL.so\n");
    return 2;
  }
  TorsorModule *m = NULL;
  if (check(torsorModuleLoad(argv[1], &m)))
    return 1;
  printf("model %s\n", torsorModuleName(m));
  void *keep[64] = {0};
  int k = 0;
  for (int kind = TORSOR_INPUT; kind <= TORSOR_OUTPUT; ++kind)
    for (int32_t i = 0; i < torsorModuleNumTensors(m, kind); ++i) {
      printf("  %s %s (%s)\n",
             kind == TORSOR_INPUT   ? "input"
             : kind == TORSOR_PARAM ? "param"
                                    : "output",
             torsorModuleTensorName(m, kind, i),
             torsorDTypeName(torsorModuleTensorDType(m, kind, i)));
      if (kind != TORSOR_OUTPUT && k < 64 &&
          bindZeros(m, kind, i, 5, &keep[k++]))
        return 1;
    }
  if (check(torsorModuleRun(m)))
    return 1;
  TorsorTensor out;
  if (check(torsorModuleGetOutput(
          m, torsorModuleTensorName(m, TORSOR_OUTPUT, 0), &out)))
    return 1;
  printf("ran: first output has rank %d, dim 0 = %lld\n", out.rank,
         (long long)out.shape[0]);
  torsorModuleFree(m);
  for (int i = 0; i < k; ++i)
    free(keep[i]);
  return 0;
}
