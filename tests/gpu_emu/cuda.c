/* gpu_emu/cuda.c — a stand-in libcuda.so.1 for the GPU back end's host emulation (tests/test_gpu.c, test_cases.c,
 * python/tests/test_term_device.py): "device" memory is host memory (filled with 0xff bytes at
 * allocation; every copy checks that its range lies in one allocation), a module is gpu_emu/nvrtc.c's
 * shared object, and a launch runs its kernel thread by thread on the calling thread. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
typedef int CUresult; typedef unsigned long long dptr;
typedef struct al { dptr p; size_t n; struct al *next; } al;
static al *allocs; static size_t live; static const size_t total = (size_t)16 << 30;
typedef struct mod { void *h; char path[600]; void (*run)(const void *, const unsigned *, const unsigned *);
  const char *name; } mod;
static al *find(dptr p, size_t n) { for (al *a = allocs; a; a = a->next)
  if (p >= a->p && p + n <= a->p + a->n) return a; return 0; }
CUresult cuInit(unsigned f) { (void)f; return 0; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return 0; }
CUresult cuGetErrorName(CUresult r, const char **s) { *s = r ? "CUDA_ERROR_INVALID_VALUE" : "CUDA_SUCCESS"; return 0; }
CUresult cuGetErrorString(CUresult r, const char **s) { *s = r ? "invalid argument" : "no error"; return 0; }
CUresult cuDeviceGetCount(int *n) { *n = 1; return 0; }
CUresult cuDeviceGet(int *d, int o) { *d = o; return o ? 101 : 0; }
CUresult cuDeviceGetName(char *s, int n, int d) { (void)d; snprintf(s, (size_t)n, "pdejit host emulation"); return 0; }
CUresult cuDeviceGetAttribute(int *v, int a, int d) { (void)d; *v = a == 75 ? 9 : a == 76 ? 0 : a == 16 ? 132 : 0; return 0; }
CUresult cuDevicePrimaryCtxRetain(void **c, int d) { (void)d; *c = (void *)16; return 0; }
CUresult cuDevicePrimaryCtxRelease_v2(int d) { (void)d; return 0; }
CUresult cuCtxSetCurrent(void *c) { (void)c; return 0; }
CUresult cuCtxSynchronize(void) { return 0; }
CUresult cuMemGetInfo_v2(size_t *f, size_t *t) { *f = total - live; *t = total; return 0; }
CUresult cuMemAlloc_v2(dptr *p, size_t n) { size_t r = (n + 255) / 256 * 256; void *m = aligned_alloc(256, r);
  if (!m) return 2; memset(m, 0xff, r); al *a = malloc(sizeof *a); a->p = (dptr)m; a->n = n; a->next = allocs;
  allocs = a; live += n; *p = a->p; return 0; }
CUresult cuMemFree_v2(dptr p) { for (al **q = &allocs; *q; q = &(*q)->next) if ((*q)->p == p) { al *a = *q;
  *q = a->next; live -= a->n; free((void *)a->p); free(a); return 0; } return 1; }
CUresult cuMemGetAddressRange_v2(dptr *b, size_t *n, dptr p) { al *a = find(p, 0); if (!a) return 1;
  if (b) *b = a->p; if (n) *n = a->n; return 0; }
CUresult cuMemcpyHtoD_v2(dptr d, const void *s, size_t n) { if (!find(d, n)) return 1; memcpy((void *)d, s, n); return 0; }
CUresult cuMemcpyDtoH_v2(void *d, dptr s, size_t n) { if (!find(s, n)) return 1; memcpy(d, (void *)s, n); return 0; }
CUresult cuMemcpyDtoD_v2(dptr d, dptr s, size_t n) { if (!find(d, n) || !find(s, n)) return 1;
  memmove((void *)d, (void *)s, n); return 0; }
typedef struct { size_t sx, sy; unsigned smt; const void *sh; dptr sd; void *sa; size_t sp;
  size_t dx, dy; unsigned dmt; void *dh; dptr dd; void *da; size_t dp; size_t w, h; } m2d;
CUresult cuMemcpy2D_v2(const m2d *m) { if (m->smt != 2 || m->dmt != 2 || m->sx || m->sy || m->dx || m->dy) return 1;
  if (!m->h) return 0; if (m->sp < m->w || m->dp < m->w || !find(m->sd, m->sp * (m->h - 1) + m->w) ||
  !find(m->dd, m->dp * (m->h - 1) + m->w)) return 1;
  for (size_t r = 0; r < m->h; r++) memmove((void *)(m->dd + r * m->dp), (void *)(m->sd + r * m->sp), m->w); return 0; }
CUresult cuMemsetD8_v2(dptr d, unsigned char v, size_t n) { if (!find(d, n)) return 1; memset((void *)d, v, n); return 0; }
CUresult cuModuleLoadData(void **m, const void *img) { const unsigned char *b = img;
  if (memcmp(b, "PJEMU", 6)) return 200; unsigned long long len; memcpy(&len, b + 8, 8);
  static int seq; mod *md = calloc(1, sizeof *md);
  snprintf(md->path, sizeof md->path, "%s/m%d_%d.so", getenv("PJ_EMU_DIR"), (int)getpid(), seq++);
  FILE *f = fopen(md->path, "wb"); if (!f) { free(md); return 1; } fwrite(b + 16, 1, len, f); fclose(f);
  md->h = dlopen(md->path, RTLD_NOW | RTLD_LOCAL); if (!md->h) { unlink(md->path); free(md); return 200; }
  void *r = dlsym(md->h, "pj_emu_run"); memcpy(&md->run, &r, sizeof r);
  md->name = dlsym(md->h, "pj_emu_name"); *m = md; return 0; }
CUresult cuModuleUnload(void *m) { mod *md = m; dlclose(md->h); unlink(md->path); free(md); return 0; }
CUresult cuModuleGetFunction(void **f, void *m, const char *n) { mod *md = m; if (strcmp(md->name, n)) return 500;
  *f = md; return 0; }
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
  unsigned sh, void *st, void **args, void **extra) { (void)sh; (void)st; (void)extra; mod *md = f;
  if (!bx || !by || !bz || (unsigned long long)bx * by * bz > 1024) return 1;
  unsigned g[3] = {gx, gy, gz}, b[3] = {bx, by, bz}; md->run(args[0], g, b); return 0; }
typedef struct ev { double t; } ev;
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
CUresult cuEventCreate(void **e, unsigned f) { (void)f; *e = calloc(1, sizeof(ev)); return 0; }
CUresult cuEventDestroy_v2(void *e) { free(e); return 0; }
CUresult cuEventRecord(void *e, void *s) { (void)s; ((ev *)e)->t = now(); return 0; }
CUresult cuEventSynchronize(void *e) { (void)e; return 0; }
CUresult cuEventElapsedTime(float *ms, void *a, void *b) { *ms = (float)((((ev *)b)->t - ((ev *)a)->t) * 1e3); return 0; }
