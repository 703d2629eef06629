/* gpu_emu/nvrtc.c — a stand-in NVRTC for the GPU back end's host emulation (tests/test_gpu.c, test_cases.c,
 * python/tests/test_term_device.py): "compiles" the generated CUDA C as C++ (c++ -O2
 * -ffp-contract=off) into a shared object, returned as the "cubin" (8-byte magic PJEMU, length,
 * the object). Built by the tests with cc into a temporary folder; PJ_EMU_DIR names where it
 * writes its files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cuda_on_host.h"
typedef int nvrtcResult;
typedef struct prog { char *src, *name, *log; unsigned char *img; size_t len; } *nvrtcProgram;
static const char prelude[] = PJ_CUDA_ON_HOST_PRELUDE;
static const char runner[] =
  "\ntemplate <class T> static void pj_emu(void (*f)(T), const void *arg, const unsigned *g, const unsigned *b)\n"
  "{ T a; memcpy(&a, arg, sizeof a); blockDim = {b[0], b[1], b[2]};\n"
  "  for (unsigned z = 0; z < g[2]; z++) for (unsigned y = 0; y < g[1]; y++) for (unsigned x = 0; x < g[0]; x++)\n"
  "  for (unsigned tz = 0; tz < b[2]; tz++) for (unsigned ty = 0; ty < b[1]; ty++) for (unsigned tx = 0; tx < b[0]; tx++)\n"
  "  { blockIdx = {x, y, z}; threadIdx = {tx, ty, tz}; f(a); } }\n"
  "extern \"C\" const char pj_emu_name[] = \"%s\";\n"
  "extern \"C\" void pj_emu_run(const void *a, const unsigned *g, const unsigned *b) { pj_emu(%s, a, g, b); }\n";
const char *nvrtcGetErrorString(nvrtcResult r) { return r ? "NVRTC_ERROR_COMPILATION" : "NVRTC_SUCCESS"; }
nvrtcResult nvrtcVersion(int *a, int *b) { *a = 0; *b = 1; return 0; }
nvrtcResult nvrtcGetNumSupportedArchs(int *n) { *n = 1; return 0; }
nvrtcResult nvrtcGetSupportedArchs(int *a) { a[0] = 90; return 0; }
nvrtcResult nvrtcCreateProgram(nvrtcProgram *p, const char *src, const char *name, int n, const char *const *h,
                               const char *const *i) {
  (void)n; (void)h; (void)i; *p = calloc(1, sizeof **p); (*p)->src = strdup(src);
  (*p)->name = strdup(name ? name : "k"); return 0; }
nvrtcResult nvrtcDestroyProgram(nvrtcProgram *p) {
  if (*p) { free((*p)->src); free((*p)->name); free((*p)->log); free((*p)->img); free(*p); } *p = 0; return 0; }
nvrtcResult nvrtcCompileProgram(nvrtcProgram p, int n, const char *const *o) {
  (void)n; (void)o; static int seq; char fn[256] = ""; const char *g = strstr(p->src, "__global__ void ");
  if (!g) return 6; g += 16; int k = 0; while (k < 250 && (g[k] == '_' || (g[k] >= 'a' && g[k] <= 'z') ||
    (g[k] >= 'A' && g[k] <= 'Z') || (g[k] >= '0' && g[k] <= '9'))) { fn[k] = g[k]; k++; } fn[k] = 0;
  const char *dir = getenv("PJ_EMU_DIR"); char cpp[600], so[600], lg[600], cmd[2400];
  snprintf(cpp, sizeof cpp, "%s/k%d_%d.cpp", dir, (int)getpid(), seq);
  snprintf(so, sizeof so, "%s/k%d_%d.so", dir, (int)getpid(), seq);
  snprintf(lg, sizeof lg, "%s/k%d_%d.log", dir, (int)getpid(), seq++);
  FILE *f = fopen(cpp, "w"); if (!f) return 6; fputs(prelude, f); fputs("#line 1 \"gen.cu\"\n", f);
  fputs(p->src, f); fprintf(f, runner, fn, fn); fclose(f);
  snprintf(cmd, sizeof cmd, "c++ -std=c++17 -O2 -ffp-contract=off -fno-fast-math -shared -fPIC -w -o '%s' '%s' >'%s' 2>&1", so, cpp, lg);
  int rc = system(cmd); f = fopen(lg, "r");
  if (f) { p->log = calloc(1, 65536); size_t r = fread(p->log, 1, 65535, f); (void)r; fclose(f); }
  unlink(lg); unlink(cpp); if (rc) return 6;
  f = fopen(so, "rb"); if (!f) return 6; fseek(f, 0, SEEK_END); long len = ftell(f); fseek(f, 0, SEEK_SET);
  p->len = 16 + (size_t)len; p->img = malloc(p->len); memcpy(p->img, "PJEMU\0\0\0", 8);
  unsigned long long L = (unsigned long long)len; memcpy(p->img + 8, &L, 8);
  size_t r = fread(p->img + 16, 1, (size_t)len, f); fclose(f); unlink(so); return r == (size_t)len ? 0 : 6; }
nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram p, size_t *n) { *n = p->log ? strlen(p->log) + 1 : 1; return 0; }
nvrtcResult nvrtcGetProgramLog(nvrtcProgram p, char *s) { strcpy(s, p->log ? p->log : ""); return 0; }
nvrtcResult nvrtcGetPTXSize(nvrtcProgram p, size_t *n) { (void)p; *n = 0; return 7; }
nvrtcResult nvrtcGetPTX(nvrtcProgram p, char *s) { (void)p; (void)s; return 7; }
nvrtcResult nvrtcGetCUBINSize(nvrtcProgram p, size_t *n) { *n = p->len; return p->img ? 0 : 7; }
nvrtcResult nvrtcGetCUBIN(nvrtcProgram p, char *s) { if (!p->img) return 7; memcpy(s, p->img, p->len); return 0; }
