/* cuda_nvrtc_memo.h — the NVRTC version without loading NVRTC.
 *
 * The NVRTC version is part of every GPU kernel's cache key, but NVRTC is ~100 MB and takes
 * milliseconds to load, so a run whose kernels are all cached must not load it. The library that
 * cuda_nvrtc_open would load is located by the same search (without dlopen); its identity (real
 * path, size, mtime) keys a memo entry in the kernel cache whose payload is the version string,
 * written whenever NVRTC is loaded and the loaded file is the one the search located. */
#ifndef PJ_CUDA_NVRTC_MEMO_H
#define PJ_CUDA_NVRTC_MEMO_H
#include <stddef.h>
#include "cache.h"

/* The version cache c remembers for the NVRTC library the search locates: 0 with it in version
 * (size bytes), -1 when there is no memo (then load NVRTC to ask it). */
int cuda_nvrtc_memo_get(cache *c, char *version, size_t size);
/* NVRTC is loaded and says `version`: remembered for its library file, when that file is the one
 * the search locates. */
void cuda_nvrtc_memo_put(cache *c, const char *version);

#endif
