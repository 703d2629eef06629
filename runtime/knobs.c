/* knobs.c — the environment variables the library reads (see knobs.h). */
#include "knobs.h"
#include <stdlib.h>

static const struct { const char *name, *doc; } knobs[KNOB_COUNT] = {
    [KNOB_CACHE_DIR] = {"PDEJIT_CACHE_DIR", "the kernel cache's folder (default: $XDG_CACHE_HOME/pdejit, else ~/.cache/pdejit)"},
    [KNOB_CACHE_MAX] = {"PDEJIT_CACHE_MAX", "the kernel cache's size limit: bytes, or a number with K, M or G"},
    [KNOB_XDG_CACHE_HOME] = {"XDG_CACHE_HOME", "where the cache's folder is when PDEJIT_CACHE_DIR is not set"},
    [KNOB_HOME] = {"HOME", "where the cache's folder is when neither of the above is set"},
    [KNOB_MEMORY_AVAILABLE] = {"PDEJIT_MEMORY_AVAILABLE",
                               "the host memory a simulation may take, in bytes (e.g. 8e9), instead of MemAvailable, "
                               "the cgroup limits and ulimit -v"},
    [KNOB_TBLOCK] = {"PDEJIT_TBLOCK", "temporal blocking: auto (default: when it pays), on (whenever it applies), off"},
    [KNOB_TBLOCK_K] = {"PDEJIT_TBLOCK_K", "temporal blocking: steps per sweep (default: chosen by the caches)"},
    [KNOB_TBLOCK_ROWS] = {"PDEJIT_TBLOCK_ROWS", "temporal blocking: rows of the last axis per band"},
    [KNOB_TBLOCK_LAUNCH] = {"PDEJIT_TBLOCK_LAUNCH", "temporal blocking: rows per kernel launch in the rings"},
    [KNOB_TBLOCK_STRIP] = {"PDEJIT_TBLOCK_STRIP", "temporal blocking: cells per strip of a 2D launch, or off"},
    [KNOB_TBLOCK_TILE] = {"PDEJIT_TBLOCK_TILE", "temporal blocking: rows of y (ROWSxCELLS: and cells of x) per tile of a 3D block, or off"},
    [KNOB_TILE_Y] = {"PDEJIT_TILE_Y", "y tiles of a 3D stage on the CPU: auto (default), off, or rows per tile"},
    [KNOB_CUDA_BLOCK] = {"PDEJIT_CUDA_BLOCK", "the GPU's stage block shape, \"x,y,z\" (default: chosen by the mesh)"},
    [KNOB_LIBCUDA] = {"PDEJIT_LIBCUDA", "the CUDA driver library to open (default libcuda.so.1)"},
    [KNOB_NVRTC] = {"PDEJIT_NVRTC", "the NVRTC library to open (default: libnvrtc.so.13, then the CUDA toolkit's)"},
    [KNOB_CUDA_HOME] = {"CUDA_HOME", "the CUDA toolkit, where NVRTC is looked for"},
    [KNOB_LD_LIBRARY_PATH] = {"LD_LIBRARY_PATH", "folders where NVRTC is looked for"},
    [KNOB_IMPLICIT_MODULE] = {"PDEJIT_IMPLICIT_MODULE", "the PETSc module (libpdejit-implicit.so) to open"},
    [KNOB_PETSC_TRACE] = {"PDEJIT_PETSC_TRACE", "set: PETSc's own error handler (prints its traceback)"},
    [KNOB_TERM_COPY] = {"PDEJIT_TERM_COPY", "set: Terms copy their inputs instead of reading the caller's arrays"},
    [KNOB_WATCH_STEPS] = {"PDEJIT_WATCH_STEPS", "--watch polls its file every N steps instead of every 0.2 s"},
};

const char *knob_name(pj_knob k) { return k >= 0 && k < KNOB_COUNT ? knobs[k].name : ""; }
const char *knob_doc(pj_knob k) { return k >= 0 && k < KNOB_COUNT ? knobs[k].doc : ""; }

const char *knob(pj_knob k)
{
    const char *v = k >= 0 && k < KNOB_COUNT ? getenv(knobs[k].name) : NULL;
    return v && *v ? v : NULL;
}

int64_t knob_int(pj_knob k, int64_t dflt)
{
    const char *v = knob(k);
    char *end;
    long long x = v ? strtoll(v, &end, 10) : 0;
    return v && end != v ? (int64_t)x : dflt;
}
