/* cpu_tier.h — the CPU back end's second tier: kernels first compiled by the quick tier (no loop
 * strength reduction, llvm_options.lsr) are compiled again by the final tier on a background
 * thread once the run has stepped for a while, and swapped in at a step boundary by
 * cpu_backend.c. Short runs never pay for LSR; long runs get the faster code. Both tiers run the
 * same arithmetic, so the results are the same bits (test_tiers).
 *
 * When: after PDEJIT_TIER_UP_MS milliseconds (default CPU_TIER_UP_MS) of stepping, counted
 * from the first step that returned; a negative value never tiers up. */
#ifndef PJ_CPU_TIER_H
#define PJ_CPU_TIER_H
#include <stdatomic.h>
#include <stddef.h>
#include "cache.h"
#include "llvm_backend.h"

#define CPU_TIER_UP_MS 200.0

typedef struct cpu_tier_job {
    int slot;                 /* the kernel's place in the back end's arrays */
    kir_kernel *k;            /* a copy of the kernel (owned) */
    llvm_options lo;          /* its options, lsr set */
    char symbol[72];          /* the final tier's function */
    char ir_hash[33];         /* the kernel IR's hash: the key's "ir" value points here */
    cache_key key;            /* the kernel's cache entry, replaced by the final tier's object */
    void *obj;                /* the final tier's object and optimised IR (owned) once compiled */
    size_t len;
    char *ir;
    int rc;
} cpu_tier_job;

typedef struct cpu_tier cpu_tier;

/* An empty tier list with room for cap kernels. NULL when out of memory (nothing tiers up). */
cpu_tier *cpu_tier_create(int cap);
/* Joins the background compile if one runs, frees everything. NULL is ignored. */
void cpu_tier_destroy(cpu_tier *t);
/* Where the tier is told to stop (cpu_backend_stop_tier, any thread): once *stop is set no
 * background compile starts, and one running stops after its current kernel (the others' rc -1:
 * they stay at the quick tier). */
void cpu_tier_stop_at(cpu_tier *t, atomic_int *stop);
/* 1 while its background compile runs (cpu_tier_destroy would wait for it). */
int cpu_tier_busy(cpu_tier *t);
/* Adds kernel k (copied) of options lo, to be compiled into `symbol`; the key is copied, its
 * values that point to ir_hash pointed to the job's copy of it. Returns 0, or -1 when full or
 * out of memory. */
int cpu_tier_add(cpu_tier *t, int slot, const kir_kernel *k, const llvm_options *lo, const char *symbol,
                 const cache_key *key, const char *ir_hash);
/* A step returned: starts the background compile when its time has come, and returns the jobs
 * (*n of them) once it has finished (each job's rc says whether its object is there), else NULL.
 * Called on the stepping thread only. */
cpu_tier_job *cpu_tier_poll(cpu_tier *t, llvm_jit *jit, int *n);
/* The kernels' end: waits for the background compile if one was started and returns its jobs as
 * cpu_tier_poll does (set *stop first and it waits for one kernel at most; the jobs it did not
 * begin have rc -1), else NULL. */
cpu_tier_job *cpu_tier_join(cpu_tier *t, int *n);

#endif
