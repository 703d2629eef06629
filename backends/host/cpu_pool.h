/* cpu_pool.h — runs a kernel over [0, n) split across a persistent set of threads.
 *
 * The range is cut into one contiguous range per thread (the calling thread's is range 0), and
 * each range into pieces of about PIECE_CELLS cells (cpu_pool.c). A thread runs its own range's
 * pieces in order, then takes the pieces that the others have not started, from the back of
 * their ranges; a piece is claimed with an atomic compare-and-swap, so each runs exactly once.
 * Without contention every thread runs its own range, the same block of rows launch after launch;
 * a worker that is late (descheduled by a busy machine, or still waking) has its share done by
 * the others, the caller included, and the launch waits only for pieces already started. No cache
 * line of output is written by two threads except where a piece boundary falls inside one (1D:
 * boundaries are multiples of CPU_POOL_GRAIN_1D cells from cell 0, i.e. 64-byte aligned when
 * cell 0 of the output is). Between launches the workers spin briefly, then sleep on a futex.
 * See cpu_pool.c for the measurements.
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
/* The caller runs serially for a while: the workers stop spinning and sleep until the next launch
   (a spinning worker would take CPU time from the caller where they share a core). */
void cpu_pool_park(cpu_pool *pool);

/* fn(L, begin, end) over [0, n_outer) of the outermost axis, split across the threads. In 1D
 * (L->n[1] == L->n[2] == 1 and n_outer == L->n[0]) the piece boundaries are multiples of
 * CPU_POOL_GRAIN_1D. Returns when every piece is done. pool may be NULL: runs serially. */
void cpu_pool_run(cpu_pool *pool, kir_cpu_fn fn, const kir_launch *L, int64_t n_outer);

/* fn(ctx, begin, end) over [0, n), piece boundaries multiples of grain (>= 1; the last piece
 * ends at n); cells: the work of one index of [0, n) in cells (a row's cells when [0, n) are
 * rows), which sets the size of the pieces. Every index is passed to fn exactly once. Used by
 * the sim for every stage (JIT or interpreter). pool may be NULL: runs serially. */
void cpu_pool_run_range(cpu_pool *pool, cpu_pool_fn fn, void *ctx, int64_t n, int64_t grain,
                        int64_t cells);

#endif
