/* test_noise.c — rand() and randn(): the generator against SplitMix64's reference words and
 * libm's Box-Muller, the same bits on the interpreter and the CPU JIT (any thread count, both
 * precisions), the statistics of the numbers (mean, variance, histogram, the normal's shape, no
 * correlation between neighbouring cells, steps, stages or call sites) and broken generators that
 * they catch, seeds, and where noise is refused. The emulated and the real GPU are in
 * test_gpu.c (noise_bits). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine.h"
#include "noise.h"
#include "program.h"
#include "testutil.h"

/* ---- the generator ------------------------------------------------------------------------ */

/* mix() is SplitMix64's output function: the reference sequence from state 0 (Vigna's
 * splitmix64.c, state += 0x9E3779B97F4A7C15 before each output) starts with these three words.
 * The key and word of a call are noise.h's formulas; rand() is (w >> 11) 2^-53 (single: (w >> 40)
 * 2^-24). */
static void generator_reference(void **state)
{
    (void)state;
    static const uint64_t splitmix[] = {0xE220A8397B1DCDAFull, 0x6E789E6AA1B965F4ull, 0x06C45D188009454Full};
    for (int i = 0; i < 3; i++) assert_true(pj_noise_mix((uint64_t)(i + 1) * 0x9E3779B97F4A7C15ull) == splitmix[i]);
    uint64_t c = (0xab00000007ull << 24) | (3u << 16) | 0x2a; /* the step's low 40 bits */
    uint64_t key = pj_noise_mix(pj_noise_mix(0x5eed) + (c + 1) * 0x9E3779B97F4A7C15ull);
    assert_true(pj_noise_key(0x5eed, 0x12ab00000007ll, 3, 0x2a) == key);
    uint64_t w = pj_noise_mix(key ^ (0x123456789ull * 0x9E3779B97F4A7C15ull));
    assert_true(pj_noise_word(key, 0x123456789ll) == w);
    assert_true(pj_noise_value(0x5eed, 0x123456789ll, 0x12ab00000007ll, 3, 0x2a, 0, 0) == (double)(w >> 11) * 0x1p-53);
    assert_true(pj_noise_value(0x5eed, 0x123456789ll, 0x12ab00000007ll, 3, 0x2a, 0, 1) ==
                (double)(float)((double)(w >> 40) * 0x1p-24));
}

/* randn() against the exact Box-Muller transform of its bits through libm (noise.h):
 * +-sqrt(-2 ln u0) sin(pi/2 v), u0 = (a + 1/2) 2^-32, v = (b mod 2^31) 2^-31, the sign bit 31 of
 * b; within 1e-9 relative, over a million words and the extreme ones. */
static void normal_transform_accuracy(void **state)
{
    (void)state;
    double worst = 0;
    for (int64_t i = -8; i < 1000000; i++) {
        uint64_t w = i >= 0 ? pj_noise_word(0x1234, i)
                            : (uint64_t[]){0, ~0ull, 0xffffffff00000000ull, 0xffffffffull, 0x80000000ull,
                                           0x7fffffffull, 0xffffffff7fffffffull, 0x00000001ffffffffull}[i + 8];
        double u0 = ((double)(w >> 32) + 0.5) * 0x1p-32, v = (double)(w & 0x7fffffffu) * 0x1p-31;
        double exact = sqrt(-2 * log(u0)) * sin(M_PI / 2 * v) * ((w >> 31) & 1 ? -1 : 1);
        double z = pj_noise_normal(w), err = fabs(z - exact) / fmax(fabs(exact), 1e-3);
        if (err > worst) worst = err;
        assert_true(fabs(z) <= 6.765); /* sqrt(66 ln 2) */
    }
    print_message("randn: largest relative difference from libm's transform %.3g\n", worst);
    assert_true(worst < 1e-9);
}

/* ---- running problems --------------------------------------------------------------------- */

static pj_program *compile_ok(const char *text)
{
    diag d;
    diag_init(&d, "noise.pde", text, strlen(text));
    pj_program *p = compile_problem("noise.pde", text, strlen(text), &d, NULL);
    if (!p) fail_msg("%s", d.log);
    diag_free(&d);
    return p;
}

/* The compile's error log of a text that must not compile. */
static char *compile_errors(const char *text)
{
    diag d;
    diag_init(&d, "noise.pde", text, strlen(text));
    pj_program *p = compile_problem("noise.pde", text, strlen(text), &d, NULL);
    assert_null(p);
    char *log = strdup(d.log ? d.log : "");
    diag_free(&d);
    return log;
}

/* The fields of p after init and `steps` steps of dt on back end `be`: out[f] (malloc'd). */
static void run(const pj_program *p, const char *be, uint64_t seed, int single, int threads, int steps,
                double **out)
{
    char err[1024];
    engine_options o = {.single = single, .threads = threads, .seed = seed};
    engine *e = engine_create(engine_backend(be), p, &o, NULL, err, sizeof err);
    if (!e) fail_msg("%s: %s", be, err);
    assert_int_equal(engine_init(e, err, sizeof err), 0);
    for (int s = 0; s < steps; s++) assert_int_equal(engine_step(e, p->dt, err, sizeof err), 0);
    int64_t n = engine_cells(e);
    for (int f = 0; f < p->n_fields; f++) {
        out[f] = malloc(sizeof(double) * (size_t)n);
        assert_int_equal(engine_get_field(e, f, out[f], err, sizeof err), 0);
    }
    engine_destroy(e);
}

static int64_t cells(const pj_program *p) { return p->n[0] * p->n[1] * p->n[2]; }

static void free_fields(double **u, int n)
{
    for (int f = 0; f < n; f++) free(u[f]);
}

/* noise in initial values and equations, in a func, at a neighbour, on faces, every scheme
   stage (rk4: four stages), 2D with x not a multiple of the vector width */
static const char prob_mixed[] =
    "mesh grid(nx = 37, ny = 21, Lx = 1, Ly = 1)\n"
    "func kick(a) = a*randn()\n"
    "field u = rand()\n"
    "field v = 0.5 + 0.1*randn()\n"
    "eq dt(u) = 0.01*lap(u) + kick(0.2) + 0.05*(rand() - 0.5)\n"
    "eq dt(v) = div(0.01*rand()*grad(v)) + 0.1*lap(randn()) - 0.1*v\n"
    "on left: u = 0\n"
    "time dt = 0.001, steps = 4, scheme = rk4\n";

/* The same bits on the interpreter and the CPU JIT, one or two threads, double and single. */
static void interp_and_cpu_agree_bitwise(void **state)
{
    (void)state;
    pj_program *p = compile_ok(prob_mixed);
    int64_t n = cells(p);
    for (int single = 0; single <= 1; single++)
        for (uint64_t seed = 0; seed <= 0x123456789abcull; seed += 0x123456789abcull) {
            double *ref[2], *cpu1[2], *cpu2[2];
            run(p, "interp", seed, single, 1, 4, ref);
            run(p, "cpu", seed, single, 1, 4, cpu1);
            run(p, "cpu", seed, single, 2, 4, cpu2);
            for (int f = 0; f < 2; f++) {
                assert_memory_equal(ref[f], cpu1[f], sizeof(double) * (size_t)n);
                assert_memory_equal(ref[f], cpu2[f], sizeof(double) * (size_t)n);
            }
            free_fields(ref, 2);
            free_fields(cpu1, 2);
            free_fields(cpu2, 2);
        }
    program_free(p);
}

/* ---- statistics ------------------------------------------------------------------------------ */

static double mean_of(const double *a, int64_t n)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += a[i];
    return s / (double)n;
}

static double var_of(const double *a, int64_t n)
{
    double m = mean_of(a, n), s = 0;
    for (int64_t i = 0; i < n; i++) s += (a[i] - m) * (a[i] - m);
    return s / (double)n;
}

/* Pearson correlation of pairs (a[i], b[i]) for i in idx... expressed as two arrays of n. */
static double corr(const double *a, const double *b, int64_t n)
{
    double ma = mean_of(a, n), mb = mean_of(b, n), sab = 0, saa = 0, sbb = 0;
    for (int64_t i = 0; i < n; i++) {
        sab += (a[i] - ma) * (b[i] - mb);
        saa += (a[i] - ma) * (a[i] - ma);
        sbb += (b[i] - mb) * (b[i] - mb);
    }
    return sab / sqrt(saa * sbb);
}

/* Correlation of each cell with its neighbour along x (axis 0) or y (axis 1) on an nx x ny grid. */
static double neighbour_corr(const double *a, int64_t nx, int64_t ny, int axis)
{
    int64_t m = axis == 0 ? (nx - 1) * ny : nx * (ny - 1), k = 0;
    double *l = malloc(sizeof *l * (size_t)m), *r = malloc(sizeof *r * (size_t)m);
    for (int64_t j = 0; j < ny; j++)
        for (int64_t i = 0; i < nx; i++) {
            if (axis == 0 && i + 1 < nx) { l[k] = a[i + nx * j]; r[k++] = a[i + 1 + nx * j]; }
            if (axis == 1 && j + 1 < ny) { l[k] = a[i + nx * j]; r[k++] = a[i + nx * (j + 1)]; }
        }
    double c = corr(l, r, m);
    free(l);
    free(r);
    return c;
}

/* The numbers of one stream under test: u = rand() and g = randn() at every cell of an nx x ny
 * grid, r1 and r2 randn() of two consecutive steps, a and b rand() of two call sites. */
typedef struct stream {
    const double *u, *g, *r1, *r2, *a, *b;
    int64_t nx, ny;
} stream;

/* Every bound is 5 standard errors of its statistic for independent numbers of the stated
 * distribution: a correct generator fails one with probability < 1e-6 (and these are fixed
 * seeds: they either pass or fail, always). Returns the number of failed checks. */
static int stream_failures(const stream *s)
{
    const int64_t n = s->nx * s->ny, nx = s->nx, ny = s->ny;
    const double se = 1 / sqrt((double)n), *u = s->u, *g = s->g;
    int bad = 0;
#define CHECK(cond, ...)                                                                          \
    do {                                                                                          \
        int ok_ = (cond);                                                                         \
        bad += !ok_;                                                                              \
        print_message("%s ", ok_ ? "ok  " : "FAIL");                                             \
        print_message(__VA_ARGS__);                                                               \
    } while (0)
    /* uniform: [0, 1), mean 1/2, variance 1/12 (standard error of the variance: sqrt(1/180/n)),
       a flat histogram of 64 bins (chi-square of 63 degrees of freedom: 63 +- sqrt(126)) */
    int64_t outside = 0, hist[64] = {0};
    for (int64_t i = 0; i < n; i++) {
        outside += !(u[i] >= 0 && u[i] < 1);
        if (u[i] >= 0 && u[i] < 1) hist[(int)(u[i] * 64)]++;
    }
    double chi2 = 0, expect = (double)n / 64;
    for (int i = 0; i < 64; i++) chi2 += ((double)hist[i] - expect) * ((double)hist[i] - expect) / expect;
    double mu = mean_of(u, n), vu = var_of(u, n);
    CHECK(outside == 0, "rand: %lld outside [0, 1)\n", (long long)outside);
    CHECK(fabs(mu - 0.5) < 5 * sqrt(1 / 12.0) * se, "rand: mean %.5f (0.5)\n", mu);
    CHECK(fabs(vu - 1 / 12.0) < 5 * sqrt(1 / 180.0) * se, "rand: variance %.5f (%.5f)\n", vu, 1 / 12.0);
    CHECK(fabs(chi2 - 63) < 5 * sqrt(126.0), "rand: chi-square of 64 bins %.1f (63 +- %.1f)\n", chi2, 5 * sqrt(126.0));
    /* normal: mean 0, variance 1 (se sqrt(2/n)), skewness 0 (se sqrt(6/n)), excess kurtosis 0
       (se sqrt(24/n)), 68.27 % within one sigma, 95.45 % within two */
    double mg = mean_of(g, n), vg = var_of(g, n), m3 = 0, m4 = 0;
    int64_t in1 = 0, in2 = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = g[i] - mg;
        m3 += d * d * d;
        m4 += d * d * d * d;
        in1 += fabs(g[i]) < 1;
        in2 += fabs(g[i]) < 2;
    }
    double skew = m3 / (double)n / pow(vg, 1.5), kurt = m4 / (double)n / (vg * vg) - 3;
    double f1 = (double)in1 / (double)n, f2 = (double)in2 / (double)n;
    const double p1 = 0.682689492137086, p2 = 0.954499736103642;
    CHECK(fabs(mg) < 5 * se, "randn: mean %.5f (0)\n", mg);
    CHECK(fabs(vg - 1) < 5 * sqrt(2.0) * se, "randn: variance %.5f (1)\n", vg);
    CHECK(fabs(skew) < 5 * sqrt(6.0) * se, "randn: skewness %.5f (0)\n", skew);
    CHECK(fabs(kurt) < 5 * sqrt(24.0) * se, "randn: excess kurtosis %.5f (0)\n", kurt);
    CHECK(fabs(f1 - p1) < 5 * sqrt(p1 * (1 - p1)) * se, "randn: within 1 sigma %.4f (%.4f)\n", f1, p1);
    CHECK(fabs(f2 - p2) < 5 * sqrt(p2 * (1 - p2)) * se, "randn: within 2 sigma %.4f (%.4f)\n", f2, p2);
    /* no correlation: neighbouring cells along x and y, rand() with randn() at the same cell,
       one step with the next, two call sites of one step */
    double c[] = {neighbour_corr(u, nx, ny, 0), neighbour_corr(u, nx, ny, 1), neighbour_corr(g, nx, ny, 0),
                  neighbour_corr(g, nx, ny, 1), corr(u, g, n), corr(s->r1, s->r2, n), corr(s->a, s->b, n),
                  neighbour_corr(s->r1, nx, ny, 0)};
    const char *what[] = {"rand x-neighbours", "rand y-neighbours", "randn x-neighbours", "randn y-neighbours",
                          "rand/randn same cell", "step 1/step 2", "two call sites", "step noise x-neighbours"};
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) /* 1.01: a neighbour pair count slightly below n */
        CHECK(fabs(c[i]) < 5 * se * 1.01, "correlation %-24s %+.5f (bound %.5f)\n", what[i], c[i], 5 * se * 1.01);
    CHECK(var_of(s->r2, n) > 0.9, "the second step draws new numbers\n");
#undef CHECK
    return bad;
}

static void statistics(void **state)
{
    (void)state;
    /* increments of one euler step of dt = 1 are the numbers themselves: w1 = r1 (w0 = 0),
       w2 - w1 = r2; a and b: two call sites in one equation */
    static const char text[] =
        "mesh grid(nx = 256, ny = 256)\n"
        "field u = rand()\nfield g = randn()\nfield w = 0\nfield a = 0\nfield b = 0\n"
        "eq dt(w) = randn()\neq dt(a) = rand()\neq dt(b) = rand()\n"
        "time dt = 1, steps = 2, scheme = euler\n";
    pj_program *p = compile_ok(text);
    const int64_t n = cells(p);
    double *s1[5], *s2[5];
    run(p, "cpu", 0, 0, 2, 1, s1);
    run(p, "cpu", 0, 0, 2, 2, s2);
    double *r2 = malloc(sizeof *r2 * (size_t)n);
    for (int64_t i = 0; i < n; i++) r2[i] = s2[2][i] - s1[2][i];
    stream st = {s1[0], s1[1], s1[2], r2, s1[3], s1[4], 256, 256};
    assert_int_equal(stream_failures(&st), 0);
    free(r2);
    free_fields(s1, 5);
    free_fields(s2, 5);
    program_free(p);
}

/* The checks above catch broken generators (each is compiler/noise.h with one thing wrong):
 * 0: no finaliser (w = key ^ cell G), 1: the key without the step (every step the same
 * numbers), 2: one multiply of the finaliser left out, 3: the radius sqrt(-ln u0) (variance 1/2),
 * 4: the angle's sign bit taken from the radius's bits. */
static uint64_t broken_word(int how, uint64_t key, int64_t cell)
{
    uint64_t x = key ^ ((uint64_t)cell * PJ_NOISE_G);
    if (how == 0) return x;
    if (how == 2) return (x ^ (x >> 30)) ^ ((x ^ (x >> 30)) >> 31);
    return pj_noise_mix(x);
}

static void broken_generators_fail(void **state)
{
    (void)state;
    enum { NX = 256, NY = 256, N = NX * NY };
    double *v = malloc(sizeof *v * 6 * N);
    for (int how = 0; how < 5; how++) {
        /* (step, site) of u, g, r1, r2, a, b as the statistics problem draws them */
        static const int step[6] = {0, 0, 0, 1, 0, 0}, stage[6] = {0, 0, 1, 1, 1, 1}, site[6] = {0, 1, 2, 2, 3, 4};
        for (int k = 0; k < 6; k++) {
            uint64_t key = pj_noise_key(7, how == 1 ? 0 : step[k], stage[k], site[k]);
            int normal = k == 1 || k == 2 || k == 3;
            for (int64_t c = 0; c < N; c++) {
                uint64_t w = broken_word(how, key, c);
                double z = normal ? pj_noise_normal(w) : pj_noise_uniform(w, 0);
                if (normal && how == 3) z /= sqrt(2.0);
                if (normal && how == 4) z = fabs(z) * ((w >> 63) ? -1 : 1);
                v[k * N + c] = z;
            }
        }
        stream st = {v, v + N, v + 2 * N, v + 3 * N, v + 4 * N, v + 5 * N, NX, NY};
        print_message("broken generator %d:\n", how);
        int bad = stream_failures(&st);
        assert_true(bad > 0);
        /* the same numbers from the right generator pass */
        if (how == 0) {
            for (int k = 0; k < 6; k++)
                for (int64_t c = 0; c < N; c++) {
                    uint64_t w = pj_noise_word(pj_noise_key(7, step[k], stage[k], site[k]), c);
                    v[k * N + c] = k >= 1 && k <= 3 ? pj_noise_normal(w) : pj_noise_uniform(w, 0);
                }
            assert_int_equal(stream_failures(&st), 0);
        }
    }
    free(v);
}

/* The stages of one step draw different numbers: rk2's two stages of `dt(w) = randn()` from
 * w = 0 give w = dt/2 (r1 + r2), whose variance is dt^2/2, not dt^2 (the same number twice). */
static void stages_differ(void **state)
{
    (void)state;
    pj_program *p = compile_ok("mesh grid(nx = 200, ny = 200)\nfield w = 0\neq dt(w) = randn()\n"
                               "time dt = 1, steps = 1, scheme = rk2\n");
    double *w[1];
    run(p, "cpu", 5, 0, 1, 1, w);
    int64_t n = cells(p);
    double v = var_of(w[0], n);
    print_message("rk2 step of randn(): variance %.4f (0.5 when the stages differ)\n", v);
    assert_true(fabs(v - 0.5) < 5 * sqrt(2.0) * 0.5 / sqrt((double)n));
    free_fields(w, 1);
    program_free(p);
}

/* Same seed: the same numbers; another seed: others, in (nearly) every cell. */
static void seeds(void **state)
{
    (void)state;
    pj_program *p = compile_ok("mesh grid(nx = 64, ny = 32)\nfield u = rand()\neq dt(u) = randn()\n"
                               "time dt = 0.1, steps = 3, scheme = rk3\n");
    int64_t n = cells(p);
    double *a[1], *b[1], *c[1], *d[1];
    run(p, "interp", 42, 0, 1, 3, a);
    run(p, "cpu", 42, 0, 2, 3, b);
    run(p, "cpu", 43, 0, 2, 3, c);
    run(p, "cpu", 1ull << 40, 0, 2, 3, d); /* the key's high word counts too */
    assert_memory_equal(a[0], b[0], sizeof(double) * (size_t)n);
    int64_t same_c = 0, same_d = 0;
    for (int64_t i = 0; i < n; i++) {
        same_c += a[0][i] == c[0][i];
        same_d += a[0][i] == d[0][i];
    }
    assert_int_equal(same_c, 0);
    assert_int_equal(same_d, 0);
    free_fields(a, 1);
    free_fields(b, 1);
    free_fields(c, 1);
    free_fields(d, 1);
    program_free(p);
}

/* The numbers are a function of the global cell: the cell (i, j) of a 2D run holds
 * pj_noise_value(seed, i + nx*j, 0, 0, site, 0) exactly. */
static void counter_is_the_cell(void **state)
{
    (void)state;
    pj_program *p = compile_ok("mesh grid(nx = 19, ny = 5, nz = 3)\nfield a = 0\nfield u = rand()\n"
                               "field v = rand()\n");
    double *f[3];
    for (int single = 0; single <= 1; single++) {
        run(p, single ? "interp" : "cpu", 9, single, 1, 0, f);
        for (int64_t c = 0; c < cells(p); c++) {
            assert_true(f[1][c] == pj_noise_value(9, c, 0, 0, 0, 0, single));
            assert_true(f[2][c] == pj_noise_value(9, c, 0, 0, 1, 0, single));
        }
        free_fields(f, 3);
    }
    program_free(p);
}

/* Noise only where there is a cell and a time: not in params, consts, the mesh or conditions. */
static void refused_where_it_means_nothing(void **state)
{
    (void)state;
    static const struct { const char *text, *message; } cases[] = {
        {"mesh grid(nx = 8)\nfield u = 0\neq dt(u) = 0\non left: u = rand()\n",
         "noise.pde:4:14: error: rand() cannot be used in a boundary condition: noise belongs in a field's "
         "initial value or an equation\n"},
        {"mesh grid(nx = 8)\nparam a = randn()\nfield u = a\n",
         "noise.pde:2:11: error: randn() cannot be used in a param value: noise belongs in a field's initial "
         "value or an equation\n"},
        {"mesh grid(nx = 8)\nfield u = rand(1)\n", "noise.pde:2:11: error: rand() takes 0 arguments, not 1\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *log = compile_errors(cases[i].text);
        if (strncmp(log, cases[i].message, strlen(cases[i].message))) fail_msg("got:\n%s", log);
        free(log);
    }
}

/* The command line: --seed changes the numbers and is checked. */
static void command_line_seed(void **state)
{
    (void)state;
    char *dir = tu_tempdir("noise");
    char cmd[2048], *out = NULL;
    snprintf(cmd, sizeof cmd,
             "cd '%s' && printf 'mesh grid(nx = 16)\\nfield u = randn()\\neq dt(u) = rand()\\ntime dt = 0.1, steps = 2\\n' > n.pde"
             " && %s run n.pde --quiet --dump a.csv && %s run n.pde --quiet --seed 0 --backend interp --dump b.csv"
             " && %s run n.pde --quiet --seed 0x10 --dump c.csv && %s run n.pde --quiet --seed 016 --dump d.csv"
             " && cmp a.csv b.csv && ! cmp -s a.csv c.csv && cmp c.csv d.csv",
             dir, PJ_BINARY, PJ_BINARY, PJ_BINARY, PJ_BINARY);
    int rc = tu_run(cmd, &out);
    if (rc) fail_msg("%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "cd '%s' && %s run n.pde --seed -1", dir, PJ_BINARY);
    assert_int_equal(tu_run(cmd, &out), 2);
    assert_non_null(strstr(out, "pdejit: --seed takes a whole number from 0 to 18446744073709551615, not '-1'"));
    free(out);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    tu_run(cmd, NULL);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(generator_reference),
        cmocka_unit_test(normal_transform_accuracy),
        cmocka_unit_test(interp_and_cpu_agree_bitwise),
        cmocka_unit_test(statistics),
        cmocka_unit_test(broken_generators_fail),
        cmocka_unit_test(stages_differ),
        cmocka_unit_test(seeds),
        cmocka_unit_test(counter_is_the_cell),
        cmocka_unit_test(refused_where_it_means_nothing),
        cmocka_unit_test(command_line_seed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
