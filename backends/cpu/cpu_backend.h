/* cpu_backend.h — the CPU back end of a run: the kernels of a program it is asked for, by kind
 * (program.h's pj_kernel_id), compiled by the LLVM back end or loaded from the kernel cache, and
 * installed as the sim's stage runner.
 *
 * Per kernel: key = (canonical IR hash, kind, back end, target, LLVM version, precision,
 * fast-math, codegen version, build: PJ_BUILD_HASH, a hash of the code generator's sources made
 * at build time, CMakeLists.txt). Memory first (the JIT keeps loaded code), then the disk cache,
 * else compile once: emit the object, store it with its LLVM IR beside it, load that object. */
#ifndef PJ_CPU_BACKEND_H
#define PJ_CPU_BACKEND_H
#include <stdio.h>
#include "engine.h"
#include "program.h"
#include "sim.h"

/* Bump when the generated code changes for the same IR: old cache entries then miss. */
#define PJ_CODEGEN_VERSION "cpu-11" /* 11: two rows a pass in 2D (llvm_ir.c); 10: noise stream 2 */

typedef struct cpu_backend cpu_backend;

typedef struct cpu_backend_options {
    int single;            /* --precision single */
    int fast_math;         /* --fast-math */
    const char *cache_dir; /* NULL: $PDEJIT_CACHE_DIR, else the XDG cache folder */
    int final_tier;        /* 1: stage kernels compiled by the final tier at once (benchmarks of the
                              steady state); 0: the quick tier first, the final one later (cpu_tier.h) */
} cpu_backend_options;

typedef engine_kernel_info kernel_timing;

cpu_backend *cpu_backend_create(const cpu_backend_options *opt, char *err, size_t err_len);
void cpu_backend_destroy(cpu_backend *be);
/* The cache's one warning (e.g. a read-only folder), or NULL. */
const char *cpu_backend_warning(cpu_backend *be);

/* Compiles or loads the kernels a run of p needs (program_run_kernels: an explicit scheme's
 * stages, an implicit one's F, Jacobian and explicit part, and the monitors' reduction if any).
 * Returns 0, or -1 with a message. */
int cpu_backend_prepare(cpu_backend *be, const pj_program *p, char *err, size_t err_len);
/* Compiles or loads kernels ids[0 .. n) of p, replacing the last prepare's: a stage's id must be
 * its place in ids (stages first, in order), named kernels follow in any order (e.g. a term's
 * PJ_KERNEL_RHS alone). Returns 0, or -1 with a message. */
int cpu_backend_prepare_kernels(cpu_backend *be, const pj_program *p, const pj_kernel_id *ids, int n, char *err,
                                size_t err_len);
/* How each kernel of the last prepare was obtained (*n entries, in the order asked for). */
const kernel_timing *cpu_backend_timings(const cpu_backend *be, int *n);
/* Runs kernel `stage` (a pj_kernel_id) of the last prepare (ctx: the cpu_backend) over outermost
 * indices [begin, end): the sim_stage_runner that cpu_backend_install installs. */
void cpu_backend_run(void *ctx, pj_kernel_id stage, const kir_launch *L, int64_t begin, int64_t end);
/* 1 when the last prepare compiled or loaded kernel `id` (cpu_backend_run may run it), else 0. */
int cpu_backend_has(const cpu_backend *be, pj_kernel_id id);
/* The compiled reduction kernel of p (its monitors) after prepare, or NULL when p has none. */
kir_cpu_fn cpu_backend_reduce_fn(const cpu_backend *be, const pj_program *p);
/* Makes s run the prepared kernels (p must be the program s runs). */
void cpu_backend_install(cpu_backend *be, sim *s);
/* A step of the prepared kernels returned: the kernels loaded from the cache are off trial
 * (cache_trial_end; until then a crash marks their entries), and stage kernels at the quick tier
 * are swapped for the final tier's once it is compiled (cpu_tier.h). Cheap after the tier-up. */
void cpu_backend_ran(cpu_backend *be);
/* The last prepare's stage kernels: 0 all at their final tier from the start, 1 some at the quick
 * tier (the final one pending), 2 swapped for the final tier since. */
int cpu_backend_tier(const cpu_backend *be);
/* Any thread, while the kernels run: they are about to be replaced (a hot swap is being prepared),
 * so their final tier's background compile stops after its current kernel and none starts; the
 * swap then does not wait for it (cpu_backend_destroy joins it) nor share the cores with it. */
void cpu_backend_stop_tier(cpu_backend *be);
/* 1 while its final tier's background compile runs: cpu_backend_destroy would wait for it. */
int cpu_backend_busy(cpu_backend *be);

/* For every kernel a run of p compiles: hit, or miss and why (nearest entry's differing components). */
int cpu_backend_explain(cpu_backend *be, const pj_program *p, FILE *out);
/* Prints the optimised LLVM IR of every kernel a run of p compiles. */
int cpu_backend_emit(cpu_backend *be, const pj_program *p, FILE *out, char *err, size_t err_len);

/* The disk cache of this back end (for `pdejit cache`). */
struct cache *cpu_backend_cache(cpu_backend *be);

#endif
