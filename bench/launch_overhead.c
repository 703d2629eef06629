/* launch_overhead.c — cost of one multicore launch of a JIT kernel: OpenMP against cpu_pool.
 *
 * Build (after the library):
 *   cc -O2 -fopenmp -D_GNU_SOURCE -Icompiler -Iruntime -I/usr/lib/llvm-14/include \
 *      bench/launch_overhead.c BUILD/libpdejit_core.a -L/usr/lib/llvm-14/lib -lLLVM-14 \
 *      -lxxhash -lpng -lz -lm -ldl -lpthread -o /tmp/launch_overhead
 * Run: /tmp/launch_overhead [threads]  (default: every CPU)
 *
 * The kernel is a 2D reaction-diffusion update (two fields, 5-point Laplacians, Gray-Scott
 * reaction) compiled by llvm_backend; each launch is one sweep of an n x n grid split in rows.
 * Reported: microseconds per launch, best of 5 runs, for serial, cpu_pool and OpenMP (a
 * parallel region with the same contiguous chunks), plus an empty body (pure launch cost). */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cpu_pool.h"
#include "kir.h"
#include "llvm_backend.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static kir_kernel *gray_scott(void)
{
    kir_kernel *k = kir_new(KIR_STAGE, 2, 2, 4, 2, "gs");
    int o0[3] = {0, 0, 0};
    int uv[2];
    int lap[2];
    for (int f = 0; f < 2; f++) {
        uv[f] = kir_load(k, 0, f, o0);
        lap[f] = kir_op2(k, KIR_MUL, kir_const(k, -4.0), uv[f]);
        for (int a = 0; a < 2; a++)
            for (int s = -1; s <= 1; s += 2) {
                int o[3] = {0, 0, 0};
                o[a] = s;
                lap[f] = kir_op2(k, KIR_ADD, lap[f], kir_load(k, 0, f, o));
            }
    }
    int uvv = kir_op2(k, KIR_MUL, uv[0], kir_op2(k, KIR_MUL, uv[1], uv[1]));
    int du = kir_op2(k, KIR_ADD, kir_op2(k, KIR_SUB, kir_op2(k, KIR_MUL, kir_param(k, 0), lap[0]), uvv),
                     kir_op2(k, KIR_MUL, kir_param(k, 2), kir_op2(k, KIR_SUB, kir_const(k, 1), uv[0])));
    int dv = kir_op2(k, KIR_SUB, kir_op2(k, KIR_ADD, kir_op2(k, KIR_MUL, kir_param(k, 1), lap[1]), uvv),
                     kir_op2(k, KIR_MUL, kir_op2(k, KIR_ADD, kir_param(k, 2), kir_param(k, 3)), uv[1]));
    int dt = kir_leaf(k, KIR_DT);
    kir_add_output(k, 1, 0, kir_op2(k, KIR_ADD, uv[0], kir_op2(k, KIR_MUL, dt, du)));
    kir_add_output(k, 1, 1, kir_op2(k, KIR_ADD, uv[1], kir_op2(k, KIR_MUL, dt, dv)));
    kir_finish(k);
    return k;
}

static void empty_fn(const kir_launch *L, int64_t b, int64_t e)
{
    (void)L;
    (void)b;
    (void)e;
}

typedef struct run {
    kir_cpu_fn fn;
    const kir_launch *L;
    int64_t n;
} run;

static double time_serial(const run *r, int reps)
{
    double t0 = now_s();
    for (int i = 0; i < reps; i++) r->fn(r->L, 0, r->n);
    return (now_s() - t0) / reps * 1e6;
}

static double time_pool(cpu_pool *p, const run *r, int reps)
{
    double t0 = now_s();
    for (int i = 0; i < reps; i++) cpu_pool_run(p, r->fn, r->L, r->n);
    return (now_s() - t0) / reps * 1e6;
}

static double time_omp(int threads, const run *r, int reps)
{
    double t0 = now_s();
    for (int i = 0; i < reps; i++) {
#pragma omp parallel num_threads(threads)
        {
            int t = omp_get_thread_num(), T = omp_get_num_threads();
            int64_t lo = r->n * t / T, hi = r->n * (t + 1) / T;
            if (lo < hi) r->fn(r->L, lo, hi);
        }
    }
    return (now_s() - t0) / reps * 1e6;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 0;
    char err[512];
    llvm_jit *jit = llvm_jit_create(err, sizeof err);
    if (!jit) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    kir_kernel *k = gray_scott();
    void *obj;
    size_t len;
    llvm_times lt;
    kir_cpu_fn fn;
    llvm_loaded *h;
    if (llvm_compile(jit, k, &(llvm_options){0, 0, 0}, "gs", &obj, &len, NULL, &lt, err, sizeof err) ||
        llvm_load(jit, obj, len, "gs", &fn, &h, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    cpu_pool *pool = cpu_pool_create(threads);
    threads = cpu_pool_threads(pool);
    printf("kernel compiled in %.1f ms; %d threads\n", lt.total, threads);
    printf("%8s %10s %10s %10s %10s %10s  (us per launch, best of 5)\n", "grid", "serial", "pool",
           "omp", "pool-empty", "omp-empty");
    int sizes[] = {32, 64, 128, 256, 1024};
    for (int si = 0; si < 5; si++) {
        int n = sizes[si], s1 = n + 2;
        size_t cells = (size_t)s1 * (size_t)(n + 2);
        double *mem = calloc(4 * cells, sizeof *mem);
        void *buf[4];
        for (int b = 0; b < 4; b++) {
            double *a = mem + (size_t)b * cells;
            for (size_t c = 0; c < cells; c++) a[c] = b % 2 ? 0.25 : 0.5 + 0.01 * (double)(c % 7);
            buf[b] = a + s1 + 1;
        }
        double param[4] = {0.16, 0.08, 0.035, 0.065};
        kir_launch L = {.buf = buf, .param = param, .t = 0, .dt = 1,
                        .n = {n, n, 1}, .stride = {1, s1, (int64_t)s1 * (n + 2)},
                        .h = {1, 1, 1}, .origin = {0, 0, 0}};
        run r = {fn, &L, n}, e = {empty_fn, &L, n};
        int reps = n <= 64 ? 20000 : n <= 256 ? 2000 : 100;
        double best[5] = {1e30, 1e30, 1e30, 1e30, 1e30};
        for (int rep = 0; rep < 5; rep++) {
            double v;
            if ((v = time_serial(&r, reps)) < best[0]) best[0] = v;
            usleep(20000);
            if ((v = time_pool(pool, &r, reps)) < best[1]) best[1] = v;
            if ((v = time_pool(pool, &e, reps)) < best[3]) best[3] = v;
            usleep(20000);
            if ((v = time_omp(threads, &r, reps)) < best[2]) best[2] = v;
            if ((v = time_omp(threads, &e, reps)) < best[4]) best[4] = v;
            usleep(20000);
        }
        char g[32];
        snprintf(g, sizeof g, "%dx%d", n, n);
        printf("%8s %10.2f %10.2f %10.2f %10.2f %10.2f\n", g, best[0], best[1], best[2], best[3], best[4]);
        free(mem);
    }
    cpu_pool_destroy(pool);
    llvm_unload(jit, h);
    free(obj);
    kir_free(k);
    llvm_jit_destroy(jit);
    return 0;
}
