/* cuda_kset.h — what the GPU back end generates for a program: a kernel set (kset), one CUDA C
 * source per kernel (the program's kernels asked for, init, the ghost fill of each side by the
 * plan, the NaN check, the monitors' reduction and its fold), each with the ir component of its
 * cache key. Needs neither a device nor NVRTC (cuda_backend_emit prints a set whole). */
#ifndef PJ_CUDA_KSET_H
#define PJ_CUDA_KSET_H
#include "cuda_codegen.h"
#include "grid.h"
#include "program.h"

typedef enum { KK_INIT, KK_STAGE, KK_FILL, KK_CHECK, KK_REDUCE, KK_FOLD } kkind;
extern const char *const kkind_name[]; /* "init", "stage", ... */

typedef struct kspec {
    kkind kind;
    int index;            /* stage number, side */
    char name[80];        /* the __global__ function */
    char ir[80];          /* the ir component of the key */
    char *src;
} kspec;

typedef struct kset {
    kspec *k;             /* init, the kernels asked for, fills, check, reduce, fold */
    int n;
    int init, *stage, fill[6], check; /* index into k, -1 absent */
    int named[PJ_KERNEL_NAMED]; /* [-id - 1]: named kernel id (program.h), -1 absent */
    int reduce, fold;     /* the monitors' reduction: lanes and their fold, -1 absent */
} kset;

/* Frees the sources and tables of ks. */
void kset_free(kset *ks);

/* Generates the CUDA C of the kernels ids[0 .. n_ids) of p (stages, named kernels, the
 * reduction: program.h), the init kernel, the fills as `plan` says (no fill kernel for a side a
 * hook fills) and the check: whole sources, or with prelude non-NULL the kernels without their
 * shared definitions, whose CUDA_PRELUDE_* bits are ORed into *prelude (cuda_options). 0, or -1
 * with a message. */
int kset_build(kset *ks, const pj_program *p, const pj_kernel_id *ids, int n_ids, const ghost_plan *plan, int single,
               int fast_math, unsigned *prelude, char *err, size_t err_len);
/* kset_build over the kernels a run of p loads (program_run_kernels). */
int kset_build_run(kset *ks, const pj_program *p, const ghost_plan *plan, int single, int fast_math, unsigned *prelude,
                   char *err, size_t err_len);

#endif
