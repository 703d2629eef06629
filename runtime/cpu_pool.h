/* cpu_pool.h — runs a kernel over [0, n) split across a persistent set of threads.
 *
 * The range is cut into one contiguous chunk per thread (the calling thread runs chunk 0), so
 * each thread writes its own block of rows and no cache line is written by two threads except
 * where a chunk boundary falls inside one (1D: boundaries are multiples of CPU_POOL_GRAIN_1D
 * cells from cell 0, i.e. 64-byte aligned when cell 0 of the output is). Between launches the
 * workers spin briefly, then sleep on a futex, so back-to-back launches on small grids cost a few
 * microseconds and an idle pool costs nothing. See cpu_pool.c for the measurements.
 *
 * One launch at a time per pool: concurrent callers are serialised; a callback must not call
 * back into the same pool (it would deadlock). */
#ifndef PJ_CPU_POOL_H
#define PJ_CPU_POOL_H
#include <stdint.h>
#include "kir.h"

#define CPU_POOL_GRAIN_1D 16  /* cells: 128 bytes of doubles, 64 of floats */

typedef struct cpu_pool cpu_pool;

/* A generic range body: process [begin, end) of whatever ctx describes. */
typedef void (*cpu_pool_fn)(void *ctx, int64_t begin, int64_t end);

/* threads: how many threads run a launch, the caller included; 0 = every CPU this process may
 * run on. Returns NULL only when out of memory or threads cannot be started (then the caller may
 * still run kernels serially). Free with cpu_pool_destroy. */
cpu_pool *cpu_pool_create(int threads);
void cpu_pool_destroy(cpu_pool *pool);
int cpu_pool_threads(const cpu_pool *pool);

/* fn(L, begin, end) over [0, n_outer) of the outermost axis, split across the threads. In 1D
 * (L->n[1] == L->n[2] == 1 and n_outer == L->n[0]) the chunk boundaries are multiples of
 * CPU_POOL_GRAIN_1D. Returns when every chunk is done. pool may be NULL: runs serially. */
void cpu_pool_run(cpu_pool *pool, kir_cpu_fn fn, const kir_launch *L, int64_t n_outer);

/* fn(ctx, begin, end) over [0, n), chunk boundaries multiples of grain (>= 1; the last chunk
 * ends at n). Used by the interpreter. pool may be NULL: runs serially. */
void cpu_pool_run_range(cpu_pool *pool, cpu_pool_fn fn, void *ctx, int64_t n, int64_t grain);

#endif
