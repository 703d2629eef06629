/* test_implicit_wide.c — the defaults for a wide system (issue 30 item 6; runtime/implicit_mg.c's
 * wide_defaults, implicit_jacobian.c's jacobian_matrix): PFHub 2b (samples/pfhub2b.pde: c by
 * Cahn-Hilliard, fourth order, and four order parameters) reduced to 32 x 32 cells of the sample's
 * h = 2, to t = 2. bdf2 under error control with the defaults must take them (the Jacobian
 * assembled at every 10th Newton iteration, so fewer assemblies than Newton iterations; naming
 * -snes_lag_jacobian 1 gives one a Newton iteration again), converge, and agree with rk4 below its
 * stability limit to the step controller's accuracy. The linear solves stop at 1e-2 of their
 * residual (SOR-preconditioned GMRES): fewer linear iterations than with -ksp_rtol 1e-8 named, and
 * the same answer, Newton's tolerance being the accuracy. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

#define CELLS (32 * 32)
#define COLS 7 /* x, y, c, eta1..eta4 */

/* The reduced 2b with the time statement `time`; malloc'd. */
static char *reduced(const char *time)
{
    char *src = tu_read_file("../samples/pfhub2b.pde", NULL);
    assert_non_null(src);
    char *a = tu_replaced(src, "mesh grid(nx = 100, ny = 100, Lx = 200, Ly = 200)", "mesh grid(nx = 32, ny = 32, Lx = 64, Ly = 64)");
    char *b = tu_replaced(a, "time dt = 0.005, until = 50, scheme = rk2", time);
    char *c = tu_replaced(b, "output every = 50, format = png", "");
    free(src);
    free(a);
    free(b);
    return c;
}

/* Runs NAME.pde (src) with --verbose and `args`, dumps its final fields into v (COLS a cell); the output in *out. */
static void run(const char *name, const char *src, const char *args, double *v, char **out)
{
    char file[64];
    snprintf(file, sizeof file, "%s.pde", name);
    tu_write_file(file, src);
    int rc = tu_pdejit(out, "run %s.pde --verbose --out none --dump %s.csv %s", name, name, args);
    if (rc) fail_msg("%s: exit %d:\n%s", name, rc, *out ? *out : "");
    char path[512];
    snprintf(path, sizeof path, "%s/%s.csv", tu_dir, name);
    char *csv = tu_read_file(path, NULL);
    assert_non_null(csv);
    int n = 0;
    char *q = strchr(csv, '\n');
    while (q && q[1] && n < CELLS * COLS) {
        char *end;
        v[n++] = strtod(q + 1, &end);
        assert_true(end != q + 1);
        q = end;
    }
    free(csv);
    assert_int_equal(n, CELLS * COLS);
}

/* The number before `what` (" Newton iterations") on the report's totals line */
static long count_before(const char *out, const char *what)
{
    const char *line = strstr(out, "implicit solver:");
    assert_non_null(line);
    const char *n = strstr(line, what);
    assert_non_null(n);
    while (n > line && n[-1] >= '0' && n[-1] <= '9') n--;
    return strtol(n, NULL, 10);
}

/* "N Newton iterations" and "Jacobian assembly: M" of the report's totals line */
static void counts(const char *out, long *newton, long *assemblies)
{
    const char *line = strstr(out, "implicit solver:");
    assert_non_null(line);
    const char *a = strstr(line, "Jacobian assembly: ");
    assert_non_null(a);
    *newton = count_before(out, " Newton iterations");
    *assemblies = strtol(a + strlen("Jacobian assembly: "), NULL, 10);
}

static void pfhub2b_implicit_defaults(void **state)
{
    (void)state;
    static double vi[CELLS * COLS], ve[CELLS * COLS], vl[CELLS * COLS], vt[CELLS * COLS], vk[CELLS * COLS],
        vn[CELLS * COLS];
    char *imp = reduced("time dt = 0.005, until = 2, scheme = bdf2, adapt = 1e-4");
    char *exp_ = reduced("time dt = 0.002, until = 2, scheme = rk4");
    char *tight = reduced("time dt = 0.005, until = 2, scheme = bdf2, adapt = 1e-5");
    char *out = NULL, *out_lag = NULL, *out_e = NULL, *out_t = NULL, *out_k = NULL, *out_n = NULL;
    run("wide_bdf2", imp, "", vi, &out);
    run("wide_bdf2_lag1", imp, "--solver-options '-snes_lag_jacobian 1'", vl, &out_lag);
    run("wide_rk4", exp_, "", ve, &out_e);
    run("wide_bdf2_tight", tight, "", vt, &out_t);
    run("wide_bdf2_ksp", imp, "--solver-options '-ksp_rtol 1e-8'", vk, &out_k);
    run("wide_bdf2_noproj", imp, "--solver-options '-pj_conserve false'", vn, &out_n);
    long newton, assemblies, newton_l, assemblies_l;
    counts(out, &newton, &assemblies);
    counts(out_lag, &newton_l, &assemblies_l);
    long linear = count_before(out, " linear iterations"), linear_k = count_before(out_k, " linear iterations");
    double diff = 0, diff_t = 0, diff_l = 0, diff_k = 0, mass_i = 0, mass_e = 0, mass_n = 0;
    for (int i = 0; i < CELLS; i++) { /* c's mean: rk4 keeps it to rounding */
        mass_i += vi[i * COLS + 2] / CELLS;
        mass_e += ve[i * COLS + 2] / CELLS;
        mass_n += vn[i * COLS + 2] / CELLS;
    }
    for (int i = 0; i < CELLS; i++)
        for (int c = 2; c < COLS; c++) {
            diff = fmax(diff, fabs(vi[i * COLS + c] - ve[i * COLS + c]));
            diff_t = fmax(diff_t, fabs(vt[i * COLS + c] - ve[i * COLS + c]));
            diff_l = fmax(diff_l, fabs(vl[i * COLS + c] - vi[i * COLS + c]));
            diff_k = fmax(diff_k, fabs(vk[i * COLS + c] - vi[i * COLS + c]));
        }
    printf("2b at 32^2 to t = 2: bdf2 (adapt 1e-4) %ld Newton iterations, %ld assemblies; with -snes_lag_jacobian 1 "
           "%ld, %ld; max |bdf2 - rk4| over the fields %.3g (adapt 1e-5: %.3g); lagged against not %.3g\n",
           newton, assemblies, newton_l, assemblies_l, diff, diff_t, diff_l);
    printf("linear iterations: %ld (the default, to 1e-2), %ld with -ksp_rtol 1e-8; answers apart by %.3g\n", linear,
           linear_k, diff_k);
    assert_true(assemblies > 0 && assemblies * 3 < newton); /* lagged: one every 10th */
    assert_int_equal(assemblies_l, newton_l);               /* named: one a Newton iteration */
    assert_true(diff < 5e-3);                               /* bdf2's global error at TOL 1e-4 ... */
    assert_true(diff_t < diff / 3);                         /* ... falls with TOL (order 2: TOL^(2/3)) */
    assert_true(diff_l < 1e-2 * diff);                      /* the lag changes Newton's path, not the answer */
    assert_true(linear * 3 < linear_k * 2);                 /* the default's linear solves stop early ... */
    assert_true(diff_k < 1e-2 * diff);                      /* ... and Newton's tolerance keeps the answer */
    printf("mean of c against rk4's: %.3g with the projection (a matrix-free operator's shift measured), %.3g "
           "without\n", mass_i - mass_e, mass_n - mass_e);
    assert_true(fabs(mass_i - mass_e) < 1e-13);             /* the loose linear solves keep c's integral ... */
    assert_true(fabs(mass_n - mass_e) > 1e-11);             /* ... which they do not without the projection */
    free(out);
    free(out_lag);
    free(out_e);
    free(out_t);
    free(out_k);
    free(out_n);
    free(tight);
    free(imp);
    free(exp_);
}

/* The energy at the last monitor line of out. */
static double last_energy(const char *out)
{
    const char *e = NULL, *q = out;
    while ((q = strstr(q, "energy = "))) e = q++;
    assert_non_null(e);
    return strtod(e + strlen("energy = "), NULL);
}

/* 2b on a mesh coarser than its interfaces (64 x 64 cells on the benchmark's 200 x 200, h = 3.1):
 * near t = 9.93 a small grain vanishes, and Newton's backtracking line search failed to descend at
 * every smaller step the error control tried, down to dt = 1e-21, ending the run. Under adapt the
 * wide defaults take full Newton steps (the step's error estimate judges them); the run must reach
 * t = 10 with rk4's energy (below its stability limit) to the controller's accuracy. */
static void coarse_mesh_vanishing_grain(void **state)
{
    (void)state;
    char *src = tu_read_file("../samples/pfhub2b.pde", NULL);
    assert_non_null(src);
    char *a = tu_replaced(src, "mesh grid(nx = 100, ny = 100", "mesh grid(nx = 64, ny = 64");
    char *b = tu_replaced(a, "output every = 50, format = png", "");
    char *c = tu_replaced(b, "monitor every = 10", "monitor every = 1");
    char *imp = tu_replaced(c, "time dt = 0.005, until = 50, scheme = rk2", "time dt = 0.005, until = 10, scheme = bdf2, adapt = 1e-3");
    char *exp_ = tu_replaced(c, "time dt = 0.005, until = 50, scheme = rk2", "time dt = 0.002, until = 10, scheme = rk4");
    char *out = NULL, *out_e = NULL;
    tu_write_file("grain_bdf2.pde", imp);
    tu_write_file("grain_rk4.pde", exp_);
    int rc = tu_pdejit(&out, "run grain_bdf2.pde --verbose --out none --threads 1");
    if (rc) fail_msg("bdf2: exit %d:\n%s", rc, out ? out : "");
    rc = tu_pdejit(&out_e, "run grain_rk4.pde --verbose --out none --threads 1");
    if (rc) fail_msg("rk4: exit %d:\n%s", rc, out_e ? out_e : "");
    double fi = last_energy(out), fe = last_energy(out_e);
    printf("2b at 64^2 (h = 3.1) to t = 10: energy bdf2 %.9g, rk4 %.9g\n", fi, fe);
    assert_non_null(strstr(out, "monitor t = 10,"));
    assert_true(fabs(fi - fe) < 1e-3 * fabs(fe));
    free(out);
    free(out_e);
    free(imp);
    free(exp_);
    free(c);
    free(b);
    free(a);
    free(src);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pfhub2b_implicit_defaults),
        cmocka_unit_test(coarse_mesh_vanishing_grain),
    };
    return cmocka_run_group_tests(tests, tu_dir_setup, tu_dir_teardown);
}
