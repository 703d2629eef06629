/* test_pool.c — the thread pool's split of a launch (backends/host/cpu_pool.c), without timing.
 *
 * Every index of a launch is passed to the body exactly once, with piece boundaries on the
 * grain, whatever the number of threads and pieces. A worker that is late — here stopped in a
 * signal handler between launches, as a busy machine deschedules it — does not hold a launch up:
 * the caller runs that worker's share and every launch completes with every index done once;
 * once the worker runs again it takes part again. Workers delayed at random points (between
 * launches, after seeing a launch and before claiming, in the middle of a piece) never make an
 * index run twice or not at all. Parked workers wake for the next launch. No assertion depends on how long anything takes. */
#include "testutil.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cpu_pool.h"

#define MAX_T 8

/* ---- a body that counts and remembers which thread ran each index --------------------------- */

typedef struct count {
    atomic_int *hits;
    pthread_t *who;
    int64_t n, grain;
    atomic_int misaligned;
} count;

static void count_fn(void *ctx, int64_t begin, int64_t end)
{
    count *c = ctx;
    if (begin % c->grain || (end % c->grain && end != c->n) || begin >= end || end > c->n)
        atomic_store(&c->misaligned, 1);
    pthread_t self = pthread_self();
    for (int64_t i = begin; i < end; i++) {
        atomic_fetch_add_explicit(&c->hits[i], 1, memory_order_relaxed);
        c->who[i] = self;
    }
}

static count *count_new(int64_t n, int64_t grain)
{
    count *c = calloc(1, sizeof *c);
    c->hits = calloc((size_t)n + 1, sizeof *c->hits);
    c->who = calloc((size_t)n + 1, sizeof *c->who);
    c->n = n;
    c->grain = grain;
    atomic_init(&c->misaligned, 0);
    return c;
}

static void count_reset(count *c)
{
    for (int64_t i = 0; i < c->n; i++) atomic_store(&c->hits[i], 0);
    atomic_store(&c->misaligned, 0);
}

static void count_check_once(count *c)
{
    for (int64_t i = 0; i < c->n; i++) {
        if (atomic_load(&c->hits[i]) != 1) fprintf(stderr, "index %lld of %lld ran %d times\n",
                                                   (long long)i, (long long)c->n, atomic_load(&c->hits[i]));
        assert_int_equal(atomic_load(&c->hits[i]), 1);
    }
    assert_int_equal(atomic_load(&c->misaligned), 0);
}

static void count_free(count *c)
{
    free(c->hits);
    free(c->who);
    free(c);
}

/* Every index once, boundaries on the grain: 1 to 5 threads, few to many pieces per thread
 * (cells sets the piece size), fewer indices than threads included. */
static void every_index_once(void **state)
{
    (void)state;
    int64_t ns[] = {1, 2, 3, 5, 16, 17, 100, 1001, 4099};
    int64_t grains[] = {1, 16};
    int64_t cells[] = {1, 100, 4096, 1 << 20};
    for (int t = 1; t <= 5; t++) {
        cpu_pool *p = cpu_pool_create(t);
        assert_non_null(p);
        assert_int_equal(cpu_pool_threads(p), t);
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
            for (size_t gi = 0; gi < 2; gi++)
                for (size_t ci = 0; ci < sizeof cells / sizeof cells[0]; ci++) {
                    count *c = count_new(ns[ni], grains[gi]);
                    for (int rep = 0; rep < 20; rep++) {
                        count_reset(c);
                        cpu_pool_run_range(p, count_fn, c, c->n, c->grain, cells[ci]);
                        count_check_once(c);
                    }
                    count_free(c);
                }
        cpu_pool_destroy(p);
    }
}

/* ---- finding the workers --------------------------------------------------------------------- */

/* A launch of one index per thread in which every index waits until all threads have entered
 * one: a thread inside a piece cannot take another, so each thread, the caller and every
 * worker, runs exactly one index. Returns the workers' thread ids in who[0..threads-2]. */
typedef struct meet {
    atomic_int entered;
    int threads;
    pthread_t who[MAX_T];
} meet;

static void meet_fn(void *ctx, int64_t begin, int64_t end)
{
    meet *m = ctx;
    for (int64_t i = begin; i < end; i++) {
        m->who[i] = pthread_self();
        atomic_fetch_add(&m->entered, 1);
        while (atomic_load(&m->entered) < m->threads) sched_yield();
    }
}

static int find_workers(cpu_pool *p, pthread_t *workers)
{
    meet m = {.threads = cpu_pool_threads(p)};
    atomic_init(&m.entered, 0);
    cpu_pool_run_range(p, meet_fn, &m, m.threads, 1, 1);
    int nw = 0;
    pthread_t self = pthread_self();
    for (int i = 0; i < m.threads; i++) {
        for (int j = 0; j < i; j++) assert_false(pthread_equal(m.who[i], m.who[j]));
        if (!pthread_equal(m.who[i], self)) workers[nw++] = m.who[i];
    }
    assert_int_equal(nw, m.threads - 1);
    return nw;
}

/* Parked workers (cpu_pool_park: stop spinning, sleep) still take part in the next launch: each
 * of these launches needs every thread inside it at once (a worker that never woke would hang
 * it: the test's time limit), with a park before each, two in a row, and one right after the
 * pool's creation; every index is run once with parks between launches. */
static void parked_workers_wake(void **state)
{
    (void)state;
    for (int t = 2; t <= 4; t++) {
        cpu_pool *p = cpu_pool_create(t);
        assert_non_null(p);
        pthread_t w[MAX_T];
        cpu_pool_park(p);
        for (int rep = 0; rep < 50; rep++) {
            assert_int_equal(find_workers(p, w), t - 1);
            cpu_pool_park(p);
            if (rep % 2) cpu_pool_park(p);
            if (rep % 5 == 0) usleep(200); /* the workers past their spin and asleep */
        }
        count *c = count_new(4099, 1);
        for (int rep = 0; rep < 20; rep++) {
            count_reset(c);
            if (rep % 3) cpu_pool_park(p);
            cpu_pool_run_range(p, count_fn, c, c->n, c->grain, 4096);
            count_check_once(c);
        }
        count_free(c);
        cpu_pool_destroy(p);
    }
}

/* ---- a worker stopped between launches ------------------------------------------------------- */

static int frozen_pipe[2], thaw_pipe[2];

/* SIGUSR1: say so, then wait until told to go on (pipes: async-signal-safe) */
static void freeze_handler(int sig)
{
    (void)sig;
    int e = errno;
    char b = 'f';
    ssize_t r = write(frozen_pipe[1], &b, 1);
    (void)r;
    while (read(thaw_pipe[0], &b, 1) < 0 && errno == EINTR) {}
    errno = e;
}

static void wait_byte(int fd)
{
    char b;
    ssize_t r;
    while ((r = read(fd, &b, 1)) < 0 && errno == EINTR) {}
    assert_int_equal(r, 1);
}

/* One worker of 2 (then of 3) threads is stopped: a thousand launches still complete, every
 * index once, and none of it ran on the stopped worker; with 2 threads the caller ran it all.
 * Let go, the worker takes part again. */
static void stopped_worker(void **state)
{
    (void)state;
    assert_int_equal(pipe(frozen_pipe), 0);
    assert_int_equal(pipe(thaw_pipe), 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = freeze_handler;
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);
    for (int t = 2; t <= 3; t++) {
        cpu_pool *p = cpu_pool_create(t);
        assert_non_null(p);
        pthread_t workers[MAX_T];
        find_workers(p, workers);
        assert_int_equal(pthread_kill(workers[0], SIGUSR1), 0);
        wait_byte(frozen_pipe[0]); /* the worker is now inside the handler */
        pthread_t self = pthread_self();
        /* 1000 rows of 1000 cells: 30 pieces per thread; and 1D: 4099 cells, grain 16 */
        count *rows = count_new(1000, 1), *line = count_new(4099, 16);
        for (int rep = 0; rep < 500; rep++) {
            count *c = rep % 2 ? line : rows;
            count_reset(c);
            cpu_pool_run_range(p, count_fn, c, c->n, c->grain, c == rows ? 1000 : 1 << 16);
            count_check_once(c);
            for (int64_t i = 0; i < c->n; i++) {
                assert_false(pthread_equal(c->who[i], workers[0]));
                if (t == 2) assert_true(pthread_equal(c->who[i], self));
            }
        }
        char b = 't';
        assert_int_equal(write(thaw_pipe[1], &b, 1), 1);
        pthread_t again[MAX_T];
        find_workers(p, again); /* waits until every worker has run an index */
        for (int rep = 0; rep < 50; rep++) {
            count_reset(rows);
            cpu_pool_run_range(p, count_fn, rows, rows->n, 1, 1000);
            count_check_once(rows);
        }
        count_free(rows);
        count_free(line);
        cpu_pool_destroy(p);
    }
    signal(SIGUSR1, SIG_DFL);
    for (int i = 0; i < 2; i++) close(frozen_pipe[i]), close(thaw_pipe[i]);
}

/* ---- workers delayed at random points -------------------------------------------------------- */

/* SIGUSR2: stop the receiving thread for a few microseconds to a millisecond, wherever it is. */
static void delay_handler(int sig)
{
    (void)sig;
    int e = errno;
    static _Thread_local unsigned seed = 1;
    seed = seed * 1103515245u + 12345u;
    struct timespec ts = {0, (long)(seed >> 8) % 1000000};
    nanosleep(&ts, NULL);
    errno = e;
}

typedef struct chaos {
    pthread_t workers[MAX_T];
    int n;
    atomic_int stop;
} chaos;

static void *chaos_main(void *arg)
{
    chaos *ch = arg;
    unsigned seed = 7;
    while (!atomic_load(&ch->stop)) {
        seed = seed * 1103515245u + 12345u;
        pthread_kill(ch->workers[(seed >> 8) % (unsigned)ch->n], SIGUSR2);
        struct timespec ts = {0, (long)(seed >> 12) % 200000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static void delayed_workers(void **state)
{
    (void)state;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = delay_handler;
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGUSR2, &sa, NULL), 0);
    for (int t = 2; t <= 4; t++) {
        cpu_pool *p = cpu_pool_create(t);
        assert_non_null(p);
        chaos ch = {.n = t - 1};
        atomic_init(&ch.stop, 0);
        find_workers(p, ch.workers);
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, chaos_main, &ch), 0);
        count *c[3] = {count_new(300, 1), count_new(4099, 16), count_new(7, 1)};
        int64_t cells[3] = {2000, 1 << 12, 1 << 20};
        for (int rep = 0; rep < 3000; rep++) {
            count *x = c[rep % 3];
            count_reset(x);
            cpu_pool_run_range(p, count_fn, x, x->n, x->grain, cells[rep % 3]);
            count_check_once(x);
        }
        atomic_store(&ch.stop, 1);
        pthread_join(th, NULL);
        for (int i = 0; i < 3; i++) count_free(c[i]);
        cpu_pool_destroy(p);
    }
    signal(SIGUSR2, SIG_DFL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_index_once),
        cmocka_unit_test(parked_workers_wake),
        cmocka_unit_test(stopped_worker),
        cmocka_unit_test(delayed_workers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
