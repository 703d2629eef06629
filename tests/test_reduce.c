/* test_reduce.c — reductions (KIR_REDUCE kernels, the monitors of a problem) on every host back
 * end: an analytic case (the midpoint rule integrates a bilinear function exactly), the table of
 * samples and a set of random expressions (tests/randexpr.c) with the CPU JIT against the
 * interpreter (1e-12 relative; the order of kir.h makes them equal to the bit in double), and
 * the result independent of the number of threads (1, 2, 3: bit for bit); 1500 monitors, which
 * the CPU compiles as several functions, against the interpreter. */
#if defined(__GNUC__) && !defined(__clang__) /* clang has no such warning (and warns of the name) */
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine.h"
#include "randexpr.h"
#include "solve.h"

/* The monitors of p on back end `be` after `steps` steps of dt (values[] gets n_monitors). */
static void monitors_after(const pj_program *p, const char *be, int threads, int single, const char *sets, int steps,
                           double *values)
{
    char err[1024] = "";
    engine_options o = {.threads = threads, .single = single};
    engine *e = engine_create(engine_backend(be), p, &o, NULL, err, sizeof err);
    if (!e) fprintf(stderr, "%s\n", err);
    assert_non_null(e);
    engine_set_params(e, sets);
    assert_int_equal(engine_init(e, err, sizeof err), 0);
    double dt = p->dt > 0 ? p->dt : 1e-3;
    for (int i = 0; i < steps; i++) assert_int_equal(engine_step(e, dt, err, sizeof err), 0);
    assert_int_equal(engine_sync(e, err, sizeof err), 0);
    if (engine_reduce(e, values, err, sizeof err) < 0) fprintf(stderr, "%s\n", err);
    engine_destroy(e);
}

static int agree(double a, double b, double tol)
{
    if (isnan(a) && isnan(b)) return 1;
    if (isinf(a) || isinf(b)) return a == b;
    return tu_reldiff(a, b) <= tol;
}

/* integral, maxval, minval and mean of known functions on a 2D grid: the midpoint rule is exact
 * for x*y; the largest cell-centre value of x*y is in the last cell. */
static void analytic(void **state)
{
    (void)state;
    const char *src = "mesh grid(nx = 40, ny = 25, Lx = 2, Ly = 1)\n"
                      "field u = x*y\n"
                      "eq dt(u) = 0\n"
                      "monitor every = 1, I = integral(u), M = maxval(u), m = minval(u - 3), A = mean(1),\n"
                      "        V = integral(1), G = integral(u[1, 0] - u)\n"
                      "time dt = 0.1, until = 1\n";
    pj_program *p = compile_text(src);
    assert_int_equal(p->n_monitors, 6);
    const char *bes[] = {"interp", "cpu"};
    double hx = 2.0 / 40, hy = 1.0 / 25;
    double xmax = 2 - hx / 2, ymax = 1 - hy / 2, xmin = hx / 2, ymin = hy / 2;
    for (int b = 0; b < 2; b++)
        for (int single = 0; single <= 1; single++) {
            double v[6];
            monitors_after(p, bes[b], 2, single, NULL, 0, v);
            double tol = single ? 1e-6 : 1e-13;
            print_message("%s %s: %.17g %.17g %.17g %.17g %.17g %.17g\n", bes[b], single ? "single" : "double", v[0],
                          v[1], v[2], v[3], v[4], v[5]);
            assert_true(fabs(v[0] - 1.0) < tol);
            assert_true(fabs(v[1] - xmax * ymax) < tol);
            assert_true(fabs(v[2] - (xmin * ymin - 3)) < tol);
            assert_true(fabs(v[3] - 1.0) < tol);
            assert_true(fabs(v[4] - 2.0) < tol);
            /* sum over the cells of u[1,0] - u telescopes per row to the ghost (mirror: u[n]) minus
               u[0]: sum_rows (u(n-1) - u(0)) * hx*hy */
            double g = 0;
            for (int j = 0; j < 25; j++) g += ((xmax - xmin) * (ymin + j * hy)) * hx * hy;
            assert_true(fabs(v[5] - g) < tol);
        }
    program_free(p);
}

/* Every sample of the table (solve.h): interp and cpu agree, double and single precision. */
static void samples_agree(void **state)
{
    (void)state;
    test_case *cases;
    int n = test_cases(&cases);
    assert_true(n >= 10);
    for (int i = 0; i < n; i++) {
        char *src = case_with_monitors(&cases[i]);
        pj_program *p = compile_text(src);
        for (int single = 0; single <= 1; single++) {
            double a[64], b[64], c[64];
            assert_true(p->n_monitors <= 64);
            monitors_after(p, "interp", 2, single, cases[i].sets, 20, a);
            monitors_after(p, "cpu", 2, single, cases[i].sets, 20, b);
            monitors_after(p, "cpu", 3, single, cases[i].sets, 20, c);
            for (int m = 0; m < p->n_monitors; m++) {
                if (!agree(a[m], b[m], single ? 1e-5 : 1e-12))
                    fprintf(stderr, "%s %s monitor %d: interp %.17g cpu %.17g\n", cases[i].name,
                            single ? "single" : "double", m, a[m], b[m]);
                assert_true(agree(a[m], b[m], single ? 1e-5 : 1e-12));
                assert_memory_equal(&b[m], &c[m], sizeof b[m]);
            }
        }
        print_message("%-24s agrees\n", cases[i].name);
        free(src);
        program_free(p);
    }
    test_cases_free(cases, n);
}

/* Random problems (randexpr.c) on grids large enough to run on several threads, with four
 * monitors of random cell expressions each: cpu against interp, and 1, 2, 3 threads alike. */
static void random_agree(void **state)
{
    (void)state;
    randexpr r = {4242};
    int compared = 0, bitwise = 0;
    for (int prob = 0; prob < 24; prob++) {
        char *src = randexpr_problem(&r, prob);
        int dim = 1 + prob % 3;
        const char *small = dim == 1 ? "mesh grid(nx = 37, Lx = 3)"
                          : dim == 2 ? "mesh grid(nx = 13, ny = 9, Lx = 2, Ly = 1.5)"
                                     : "mesh grid(nx = 7, ny = 6, nz = 5)";
        const char *big = dim == 1 ? "mesh grid(nx = 20011, Lx = 3)"
                        : dim == 2 ? "mesh grid(nx = 131, ny = 93, Lx = 2, Ly = 1.5)"
                                   : "mesh grid(nx = 29, ny = 23, nz = 19)";
        char *m = strstr(src, small);
        assert_non_null(m);
        size_t cap = strlen(src) + 40000;
        char *text = malloc(cap);
        int n = snprintf(text, cap, "%s%s", big, m + strlen(small));
        char e[4][4096];
        for (int i = 0; i < 4; i++) randexpr_gen(&r, e[i], sizeof e[i], 3, dim, 0);
        snprintf(text + n, cap - (size_t)n, "monitor r0 = integral(%s), r1 = maxval(%s), r2 = minval(%s), r3 = mean(%s)\n",
                 e[0], e[1], e[2], e[3]);
        pj_program *p = compile_text(text);
        for (int steps = 0; steps <= 2; steps += 2) {
            double a[4], b1[4], b2[4], b3[4], a3[4];
            monitors_after(p, "interp", 1, 0, NULL, steps, a);
            monitors_after(p, "interp", 3, 0, NULL, steps, a3);
            monitors_after(p, "cpu", 1, 0, NULL, steps, b1);
            monitors_after(p, "cpu", 2, 0, NULL, steps, b2);
            monitors_after(p, "cpu", 3, 0, NULL, steps, b3);
            for (int i = 0; i < 4; i++) {
                if (!agree(a[i], b1[i], 1e-12))
                    fprintf(stderr, "problem %d monitor %d (%s): interp %.17g cpu %.17g\n", prob, i, e[i], a[i], b1[i]);
                assert_true(agree(a[i], b1[i], 1e-12));
                assert_memory_equal(&a[i], &a3[i], sizeof a[i]);
                assert_memory_equal(&b1[i], &b2[i], sizeof b1[i]);
                assert_memory_equal(&b1[i], &b3[i], sizeof b1[i]);
                compared += isfinite(a[i]);
                bitwise += !memcmp(&a[i], &b1[i], sizeof a[i]);
            }
        }
        program_free(p);
        free(text);
        free(src);
    }
    print_message("%d finite monitor values compared, %d of 192 equal to the bit\n", compared, bitwise);
    assert_true(compared >= 96);
}

/* 1500 monitors: the cpu back end compiles them as functions of LLVM_REDUCE_GROUP monitors each
 * (backends/cpu/llvm_ir_reduce.c; one function's compile grew with the square of its monitors).
 * Each monitor's sums keep their order: every value is the interpreter's (1e-12, and equal to the
 * bit in the count printed), the same on 1 and 3 threads, the four kinds of reduction mixed. */
static void many_monitors_split(void **state)
{
    (void)state;
    const int n = 1500;
    size_t cap = (size_t)n * 80 + 512, k = 0;
    char *text = malloc(cap);
    assert_non_null(text);
    k += (size_t)snprintf(text, cap, "mesh grid(nx = 37, ny = 9, Lx = 2, Ly = 1)\nfield u = x*y + 0.1*x\n"
                                     "eq dt(u) = 0.01*lap(u)\ntime dt = 0.001, steps = 2\nmonitor every = 0.001");
    const char *kind[] = {"integral", "maxval", "minval", "mean"};
    for (int i = 0; i < n; i++)
        k += (size_t)snprintf(text + k, cap - k, ", m%d = %s(u*u*%d + u[1, 0]*%d.25 - x)", i, kind[i % 4], i % 97 + 1, i % 13);
    snprintf(text + k, cap - k, "\n");
    pj_program *p = compile_text(text);
    assert_int_equal(p->n_monitors, n);
    double *a = malloc(sizeof *a * (size_t)n), *b1 = malloc(sizeof *b1 * (size_t)n), *b3 = malloc(sizeof *b3 * (size_t)n);
    assert_true(a && b1 && b3);
    monitors_after(p, "interp", 2, 0, NULL, 2, a);
    monitors_after(p, "cpu", 1, 0, NULL, 2, b1);
    monitors_after(p, "cpu", 3, 0, NULL, 2, b3);
    int bitwise = 0;
    for (int m = 0; m < n; m++) {
        if (!agree(a[m], b1[m], 1e-12)) fprintf(stderr, "monitor %d: interp %.17g cpu %.17g\n", m, a[m], b1[m]);
        assert_true(isfinite(a[m]));
        assert_true(agree(a[m], b1[m], 1e-12));
        assert_memory_equal(&b1[m], &b3[m], sizeof b1[m]);
        bitwise += !memcmp(&a[m], &b1[m], sizeof a[m]);
    }
    print_message("%d monitors, %d equal to the bit\n", n, bitwise);
    free(a);
    free(b1);
    free(b3);
    free(text);
    program_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(analytic),
        cmocka_unit_test(samples_agree),
        cmocka_unit_test(random_agree),
        cmocka_unit_test(many_monitors_split),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
