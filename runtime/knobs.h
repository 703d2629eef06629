/* knobs.h — every environment variable the library reads, in one table: its name, what it
 * does, and one accessor. Nothing else in the library calls getenv (test_knobs checks it), so
 * this table is the whole list, and docs/language.md ("Environment variables") lists it. The one
 * exception is the PETSc module (implicit.c, decomp.c), which reaches the library only through
 * its host table: it reads PDEJIT_PETSC_TRACE itself, under the name this table gives.
 *
 * A knob is read each time it is asked for (tests and embedding programs set them while a
 * process runs); an empty value counts as unset. */
#ifndef PJ_KNOBS_H
#define PJ_KNOBS_H
#include <stdint.h>

typedef enum pj_knob {
    KNOB_CACHE_DIR,         /* the kernel cache's folder */
    KNOB_CACHE_MAX,         /* the cache's size limit */
    KNOB_XDG_CACHE_HOME,    /* where the cache's folder is when PDEJIT_CACHE_DIR is not set */
    KNOB_HOME,
    KNOB_MEMORY_AVAILABLE,  /* host memory a simulation may take, instead of /proc and cgroups */
    KNOB_TBLOCK,            /* temporal blocking: off, on, auto */
    KNOB_TBLOCK_K,          /* its steps per sweep */
    KNOB_TBLOCK_ROWS,       /* its rows per band */
    KNOB_TBLOCK_LAUNCH,     /* its rows per kernel launch in the rings */
    KNOB_TBLOCK_STRIP,      /* its cells per strip of a 2D launch, or off */
    KNOB_TBLOCK_TILE,       /* its rows of y per tile of a 3D block, or off */
    KNOB_TILE_Y,            /* y tiles of a 3D stage: off, auto, rows */
    KNOB_CUDA_BLOCK,        /* the GPU's stage block shape x,y,z */
    KNOB_LIBCUDA,           /* the CUDA driver library to open */
    KNOB_NVRTC,             /* the NVRTC library to open */
    KNOB_CUDA_HOME,         /* where NVRTC is looked for */
    KNOB_LD_LIBRARY_PATH,   /* where NVRTC is looked for */
    KNOB_IMPLICIT_MODULE,   /* the PETSc module to open */
    KNOB_PETSC_TRACE,       /* PETSc's own error handler (prints its traceback) */
    KNOB_TERM_COPY,         /* Terms copy their inputs instead of reading the caller's arrays */
    KNOB_WATCH_STEPS,       /* --watch polls its file every N steps instead of every 0.2 s */
    KNOB_COUNT
} pj_knob;

/* The variable's name ("PDEJIT_TBLOCK"), and a line saying what it does. */
const char *knob_name(pj_knob k);
const char *knob_doc(pj_knob k);
/* Its value now, or NULL when unset or empty. */
const char *knob(pj_knob k);
/* Its value as an integer (strtoll), or dflt when unset or not a number. */
int64_t knob_int(pj_knob k, int64_t dflt);

#endif
