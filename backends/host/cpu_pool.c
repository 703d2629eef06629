/* cpu_pool.c — a persistent pthread pool for short kernel launches (see cpu_pool.h).
 *
 * Why not OpenMP: bench/launch_overhead.c times both on the same JIT kernel (MEASURED below).
 * The two are close when libgomp's threads are spinning; the pool wins on small grids because
 * a launch is one atomic increment plus a futex wake only for sleeping workers, and it owns its
 * spin/sleep policy (libgomp's depends on OMP_WAIT_POLICY / GOMP_SPINCOUNT and on the calling
 * thread: a second thread launching gets a second team). It is also plain C with no pragma, so
 * the interpreter and the JIT share one set of threads (mixing both would leave two sets of
 * threads spinning against each other).
 *
 * MEASURED (2-core AMD EPYC VM, Debian 12, gcc 12, libgomp, LLVM 14; bench/launch_overhead.c;
 * 2D two-field Gray-Scott JIT kernel, rows split in 2 contiguous chunks, best of 5 runs of 20000
 * launches (2000 at 256^2, 100 at 1024^2); microseconds per launch; two runs on a shared machine
 * (load ~2-3 from other builds), the second in brackets):
 *
 *     grid        serial        pool         OpenMP      empty body: pool   OpenMP
 *     32x32       0.53 (0.53)   0.48 (0.90)  0.77 (1.08)             0.18 (0.26) 0.46 (0.58)
 *     64x64       2.20 (2.21)   1.38 (1.47)  1.56 (1.68)             0.17 (0.25) 0.35 (0.36)
 *     128x128     9.41 (9.87)   5.07 (5.31)  5.25 (5.44)             0.18 (0.22) 0.34 (0.35)
 *     256x256     40.3 (39.9)   19.9 (20.1)  20.5 (20.9)             0.16 (0.24) 0.32 (0.35)
 *     1024x1024   1696 (1772)   813 (969)    787 (962)               0.16 (0.24) 0.34 (0.44)
 *
 * A launch costs ~0.2 us with the pool against ~0.35 us with an OpenMP parallel region; on a
 * 64x64 grid that is 1.4 against 1.6 us per sweep (serial 2.2). Large grids are bandwidth bound
 * and equal. Chosen: the pool.
 *
 * Contention (issue 15): with one chunk per thread, a launch on a busy machine waited for a
 * descheduled worker: a stage of a 103^2 problem took a scheduler time slice instead of ~20 us
 * (two threads 5-28x slower than one). Now each thread's range is cut into pieces (about
 * PIECE_CELLS cells, at most MAX_PIECES per range), claimed one by one; a thread that has run
 * its own takes the pieces nobody has started from the back of the others' ranges. A late worker
 * (descheduled, or still waking from the futex) therefore costs nothing: the caller runs its
 * share, and a launch waits only for pieces already started. Without contention each thread
 * still runs its own range, the same rows every launch (one uncontended CAS per piece on its own
 * cache line). Workers spin adaptively: a worker that finds, although it was spinning, that its
 * whole range was taken by others was descheduled while spinning, so it sleeps sooner (its spin
 * budget is quartered); on time it spins the full SPIN_US again; after each futex sleep the
 * budget grows by 1/16. On a busy machine the spinning would otherwise take CPU time from the
 * caller, which does most of the work there. Measured in docs/performance.md ("Threads under
 * contention").
 *
 * Protocol: the caller writes the job and each range's claim word (generation, front, back),
 * sets `pending` to the number of pieces and bumps the futex word `gen`; workers spin on `gen`,
 * then count themselves in `sleepers` and FUTEX_WAIT. The caller wakes only when `sleepers` > 0
 * (seq_cst on both sides: either the worker sees the new gen or the caller sees the sleeper).
 * Every claim is a CAS on a claim word that must carry the launch's generation, so a worker that
 * sees a launch late claims nothing of it, nor of a later one it has not seen (the 32-bit
 * generation would have to wrap around during one stall); the job is read only after a
 * successful claim, while the launch cannot end. Each thread subtracts its pieces from `pending`
 * when it finds nothing left to claim; the caller, done with its share, waits for 0 (spin, then
 * futex with `caller_waiting`). */
#include "cpu_pool.h"

#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SPIN_US 100        /* spin this long before sleeping on the futex */
#define MAX_THREADS 1024
#define PIECE_CELLS 16384  /* a piece is about this many cells or more ... */
#define MAX_PIECES 32      /* ... and a thread's range at most this many pieces (< 65536) */

typedef struct job {
    cpu_pool_fn fn;
    void *ctx;
    int64_t n, grain, units;  /* units: grains in [0, n) */
    int threads, pieces;      /* pieces per thread's range */
} job;

/* One thread's range: gen (32 bits) | front (16) | back (16); pieces [front, back) are unclaimed.
 * The owner takes from the front, the others from the back; every claim is a CAS that also checks
 * the launch's generation, so a worker that wakes after its launch is over claims nothing. */
typedef struct claim {
    _Alignas(64) _Atomic uint64_t w;
} claim;

struct cpu_pool {
    int n_threads;               /* the caller included */
    pthread_t *threads;          /* n_threads - 1 workers */
    int started;
    int spin;                    /* pause instructions in SPIN_US, calibrated at creation */
    pthread_mutex_t run_lock;    /* one launch at a time */
    job job;                     /* written by the caller before gen is bumped */
    claim *claims;               /* n_threads, 64-byte aligned */
    atomic_int stop;
    atomic_int park;             /* 1: spinning workers sleep now (cpu_pool_park); a launch clears it */
    _Alignas(64) atomic_uint gen;
    _Alignas(64) atomic_int sleepers;
    _Alignas(64) atomic_uint pending;  /* pieces of this launch not yet done */
    atomic_int caller_waiting;
    char pad[64];
};

typedef struct worker_arg {
    cpu_pool *pool;
    int index;
} worker_arg;

static void futex_wait(atomic_uint *addr, unsigned val)
{
    syscall(SYS_futex, (unsigned *)addr, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void futex_wake(atomic_uint *addr, int n)
{
    syscall(SYS_futex, (unsigned *)addr, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Piece k of thread t's range, in cells of [0, n): the ranges split the grains evenly between
 * the threads (as one chunk per thread would), the pieces split a range evenly. */
static void run_piece(const job *j, int t, int k)
{
    int64_t a = j->units * t / j->threads, b = j->units * (t + 1) / j->threads;
    int64_t lo = (a + (b - a) * k / j->pieces) * j->grain;
    int64_t hi = (a + (b - a) * (k + 1) / j->pieces) * j->grain;
    if (hi > j->n) hi = j->n;
    if (lo < hi) j->fn(j->ctx, lo, hi);
}

/* Claims a piece of a range for launch gen: from the front (the owner) or the back (a thief).
 * Returns its index, or -1 when the range is empty or the launch is not gen. */
static int take(claim *c, unsigned gen, int front)
{
    uint64_t v = atomic_load_explicit(&c->w, memory_order_acquire);
    for (;;) {
        if ((unsigned)(v >> 32) != gen) return -1;
        unsigned f = (unsigned)(v >> 16) & 0xffff, b = (unsigned)v & 0xffff;
        if (f >= b) return -1;
        uint64_t nv = front ? v + (1u << 16) : v - 1;
        if (atomic_compare_exchange_weak_explicit(&c->w, &v, nv, memory_order_acquire,
                                                  memory_order_acquire))
            return front ? (int)f : (int)b - 1;
    }
}

/* Thread t's part of launch gen: its own range from the front, then the others' from the back.
 * Returns the number of pieces it ran; *own: how many of them were its own. */
static unsigned run_share(cpu_pool *p, int t, unsigned gen, unsigned *own)
{
    unsigned done = 0;
    int k;
    while ((k = take(&p->claims[t], gen, 1)) >= 0) {
        run_piece(&p->job, t, k);
        done++;
    }
    *own = done;
    for (int d = 1; d < p->n_threads; d++) {
        int v = (t + d) % p->n_threads;
        while ((k = take(&p->claims[v], gen, 0)) >= 0) {
            run_piece(&p->job, v, k);
            done++;
        }
    }
    return done;
}

static void *worker_main(void *arg)
{
    cpu_pool *p = ((worker_arg *)arg)->pool;
    int index = ((worker_arg *)arg)->index;
    free(arg);
    unsigned seen = 0;
    int budget = p->spin;  /* pause instructions to spin before sleeping (see the top) */
    for (;;) {
        unsigned g;
        int spins = 0, slept = 0;
        while ((g = atomic_load_explicit(&p->gen, memory_order_acquire)) == seen) {
            if (spins < budget && !atomic_load_explicit(&p->park, memory_order_relaxed)) {
                spins++;
                cpu_relax();
                continue;
            }
            atomic_fetch_add(&p->sleepers, 1);
            if (atomic_load(&p->gen) == seen) futex_wait(&p->gen, seen);
            atomic_fetch_sub(&p->sleepers, 1);
            slept = 1;
            spins = 0;
        }
        seen = g;
        if (atomic_load_explicit(&p->stop, memory_order_relaxed)) return NULL;
        unsigned own, done = run_share(p, index, g, &own);
        if (slept) budget = budget + p->spin / 16 < p->spin ? budget + p->spin / 16 : p->spin;
        else if (own) budget = p->spin;  /* spinning paid off: on time */
        else budget /= 4;                /* late although spinning: descheduled, sleep sooner */
        if (done && atomic_fetch_sub(&p->pending, done) == done && atomic_load(&p->caller_waiting))
            futex_wake(&p->pending, 1);
    }
}

/* How many pause instructions take SPIN_US (a pause is ~1 ns on some CPUs, ~40 on others). */
static int calibrate_spin(void)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < 1000; i++) cpu_relax();
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ns = (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
    double per = ns / 1000 > 0.5 ? ns / 1000 : 0.5;
    double n = SPIN_US * 1e3 / per;
    return n < 1000 ? 1000 : n > 1e6 ? 1000000 : (int)n;
}

static int online_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

cpu_pool *cpu_pool_create(int threads)
{
    if (threads <= 0) threads = online_cpus();
    if (threads > MAX_THREADS) threads = MAX_THREADS;
    cpu_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->n_threads = threads;
    p->spin = calibrate_spin();
    pthread_mutex_init(&p->run_lock, NULL);
    atomic_init(&p->stop, 0);
    atomic_init(&p->park, 0);
    atomic_init(&p->gen, 0);
    atomic_init(&p->sleepers, 0);
    atomic_init(&p->pending, 0);
    atomic_init(&p->caller_waiting, 0);
    p->claims = aligned_alloc(64, (size_t)threads * sizeof *p->claims);
    if (!p->claims) goto fail;
    for (int t = 0; t < threads; t++) atomic_init(&p->claims[t].w, 0);
    if (threads > 1) {
        p->threads = calloc((size_t)threads - 1, sizeof *p->threads);
        if (!p->threads) goto fail;
        for (int i = 1; i < threads; i++) {
            worker_arg *a = malloc(sizeof *a);
            if (!a) goto fail;
            a->pool = p;
            a->index = i;
            if (pthread_create(&p->threads[i - 1], NULL, worker_main, a)) {
                free(a);
                goto fail;
            }
            p->started++;
        }
    }
    return p;
fail:
    p->n_threads = p->started + 1;  /* destroy joins the ones that did start */
    cpu_pool_destroy(p);
    return NULL;
}

void cpu_pool_destroy(cpu_pool *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->run_lock);
    atomic_store(&p->stop, 1);
    atomic_fetch_add(&p->gen, 1);
    futex_wake(&p->gen, INT_MAX);
    pthread_mutex_unlock(&p->run_lock);
    for (int i = 0; i < p->started; i++) pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->run_lock);
    free(p->claims);
    free(p->threads);
    free(p);
}

int cpu_pool_threads(const cpu_pool *p) { return p ? p->n_threads : 1; }

void cpu_pool_park(cpu_pool *p)
{
    if (p) atomic_store_explicit(&p->park, 1, memory_order_relaxed);
}

void cpu_pool_run_range(cpu_pool *p, cpu_pool_fn fn, void *ctx, int64_t n, int64_t grain,
                        int64_t cells)
{
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    if (cells < 1) cells = 1;
    if (!p || p->n_threads == 1 || n <= grain) {
        fn(ctx, 0, n);
        return;
    }
    int T = p->n_threads;
    int64_t units = (n + grain - 1) / grain, per = units / T;
    /* pieces per range: about PIECE_CELLS cells each, at most MAX_PIECES, at least one grain */
    int64_t pieces = per * grain * cells / PIECE_CELLS;
    if (pieces > per) pieces = per;
    if (pieces > MAX_PIECES) pieces = MAX_PIECES;
    if (pieces < 1) pieces = 1;
    pthread_mutex_lock(&p->run_lock);
    unsigned g = atomic_load_explicit(&p->gen, memory_order_relaxed) + 1;
    p->job = (job){fn, ctx, n, grain, units, T, (int)pieces};
    if (atomic_load_explicit(&p->park, memory_order_relaxed)) atomic_store_explicit(&p->park, 0, memory_order_relaxed);
    for (int t = 0; t < T; t++)
        atomic_store_explicit(&p->claims[t].w, (uint64_t)g << 32 | (uint64_t)pieces, memory_order_release);
    unsigned total = (unsigned)(T * pieces);
    atomic_store_explicit(&p->pending, total, memory_order_relaxed);
    atomic_fetch_add(&p->gen, 1);  /* seq_cst: publishes the job, then reads sleepers */
    if (atomic_load(&p->sleepers) > 0) futex_wake(&p->gen, INT_MAX);
    unsigned own, mine = run_share(p, 0, g, &own);
    if (atomic_fetch_sub(&p->pending, mine) != mine) {
        unsigned v;
        for (int spins = 0; (v = atomic_load_explicit(&p->pending, memory_order_acquire)) != 0;) {
            if (++spins < p->spin) {
                cpu_relax();
                continue;
            }
            atomic_store(&p->caller_waiting, 1);
            while ((v = atomic_load(&p->pending)) != 0) futex_wait(&p->pending, v);
            atomic_store(&p->caller_waiting, 0);
            break;
        }
    }
    pthread_mutex_unlock(&p->run_lock);
}

typedef struct kir_job {
    kir_cpu_fn fn;
    const kir_launch *L;
} kir_job;

static void run_kir(void *ctx, int64_t begin, int64_t end)
{
    const kir_job *j = ctx;
    j->fn(j->L, begin, end);
}

void cpu_pool_run(cpu_pool *p, kir_cpu_fn fn, const kir_launch *L, int64_t n_outer)
{
    kir_job j = {fn, L};
    int one_d = L->n[1] == 1 && L->n[2] == 1 && n_outer == L->n[0];
    int64_t cells = n_outer > 0 ? L->n[0] * L->n[1] * L->n[2] / n_outer : 1;
    cpu_pool_run_range(p, run_kir, &j, n_outer, one_d ? CPU_POOL_GRAIN_1D : 1, cells);
}
