/* test_mg.c — geometric multigrid on cell-centred grids (runtime/implicit.c, mg_defaults): with
 * pc = mg, pdejit gives PETSc's PCMG a hierarchy that halves the cells (bilinear cell-centred
 * interpolation, Galerkin coarse operators).
 *
 * Against independent expectations: the linear iterations of a V-cycle preconditioner do not
 * grow as the grid is refined (a one-level smoother's, ILU's, grow about twofold per doubling of
 * n, printed for comparison), on a steady Poisson problem and on heat steps whose dt stays fixed
 * while h shrinks; the results equal a direct solve's (LU) to the solver's tolerance, also with
 * two coupled fields, periodic sides, in 1D and 3D, and on grids that halve only once; a steady
 * problem with a symmetric Jacobian gets it by default, a stiff time step too (ICC(1) below a
 * stiffness ratio, multigrid above, the diagonal, Jacobi, for the smallest ratios of adaptive steps). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pdejit.h"
#include "solve.h"
#include "testutil.h"

/* Runs src (one field u or two, u and v) with these solver options to its end: u (and v after
 * it) into out (cells each), the solver's counts into st. */
static void run(const char *src, const char *options, double *out, int64_t cells, int fields, pj_solver_stats *st)
{
    api_sim a = api_sim_start("mg.pde", src, options);
    char err[512];
    pj_run_options ro = pj_run_options_default();
    pj_run_result res;
    pj_status rc = pj_sim_run(a.sim, &ro, &res, err, sizeof err);
    if (rc) fprintf(stderr, "%s (options: %s)\n", err, options ? options : "none");
    assert_int_equal(rc, PJ_OK);
    if (fields > 1) assert_int_equal(pj_sim_get_field(a.sim, "v", out + cells), PJ_OK);
    api_sim_end(&a, out, st);
}

/* max |a - b| over max |b| */
static double rel_diff(const double *a, const double *b, int64_t n)
{
    double d = 0, top = 0;
    for (int64_t i = 0; i < n; i++) {
        d = fmax(d, fabs(a[i] - b[i]));
        top = fmax(top, fabs(b[i]));
    }
    assert_true(top > 0);
    return d / top;
}

/* Steady Poisson (-lap(u) = f, u = 0 on the walls) and 4 bdf2 heat steps of a fixed dt (dt / h^2
 * from 10 to 160) on n^2 cells, n = 32, 64, 128: multigrid's iterations stay put, ILU's grow;
 * multigrid's answer is LU's. */
static void iterations_do_not_grow(void **state)
{
    (void)state;
    static const char *problems[2] = {
        "mesh grid(nx = %d, ny = %d)\nfield u = 0\neq dt(u) = lap(u) + 2*pi^2*sin(pi*x)*sin(pi*y)\non all: u = 0\nsteady\n",
        "mesh grid(nx = %d, ny = %d)\nfield u = 0\neq dt(u) = lap(u)\non left: u = 1\non bottom: u = x\n"
        "time dt = 0.01, steps = 4, scheme = bdf2\n"};
    /* the preconditioner rebuilt at each step: pdejit's default lag keeps one built for an earlier
     * shift (bdf2's first step), which costs up to 3 more iterations a step at 128^2 */
    static const char *mg[2] = {"-pc_type mg", "-ksp_type cg -pc_type mg -snes_lag_preconditioner 1"};
    for (int pb = 0; pb < 2; pb++) {
        long long its[3], ilu_its[3];
        for (int r = 0; r < 3; r++) {
            int n = 32 << r;
            char src[512];
            snprintf(src, sizeof src, problems[pb], n, n);
            double *u = malloc(sizeof *u * (size_t)(n * n)), *ref = malloc(sizeof *ref * (size_t)(n * n));
            pj_solver_stats st, lu, ilu;
            run(src, "-ksp_type gmres -pc_type ilu", ref, n * n, 1, &ilu); /* only its count */
            run(src, mg[pb], u, n * n, 1, &st);
            run(src, "-ksp_type preonly -pc_type lu", ref, n * n, 1, &lu);
            double d = rel_diff(u, ref, n * n);
            its[r] = (long long)st.linear;
            ilu_its[r] = (long long)ilu.linear;
            printf("%s %d^2: multigrid %lld linear iterations in %lld solves, ILU(1) %lld; max |u - u_LU| / max |u_LU| = %.3g\n",
                   pb ? "heat, dt = 0.01," : "steady Poisson,", n, its[r], (long long)st.newton, ilu_its[r], d);
            assert_true(d < 1e-6);
            free(u);
            free(ref);
        }
        /* at most one more iteration per solve than on the coarsest grid, and few */
        long long solves = pb ? 4 : 1;
        assert_true(its[2] <= its[0] + solves);
        assert_true(its[2] <= 10 * solves);
        assert_true(ilu_its[2] >= 2 * ilu_its[0]); /* the comparison: a one-level method does grow */
        assert_true(its[2] * 4 <= ilu_its[2]);
    }
}

/* Two coupled fields (interlaced unknowns), a periodic side, 1D and 3D, and grids that halve once
 * (30 cells: 15 is odd) or never (7): the same answer as LU. */
static void agrees_with_lu(void **state)
{
    (void)state;
    static const struct {
        const char *src;
        int64_t cells;
        int fields;
    } cases[] = {
        {"mesh grid(nx = 64, ny = 32)\nperiodic x\nfield u = sin(2*pi*x)\nfield v = 0\n"
         "eq dt(u) = lap(u) - 2*u + v\neq dt(v) = 0.5*lap(v) + u - v\non top, bottom: u = 0\non top: v = 1\non bottom: dn(v) = 0\n"
         "time dt = 0.02, steps = 3, scheme = beuler\n", 64 * 32, 2},
        {"mesh grid(nx = 256)\nfield u = 0\neq dt(u) = lap(u) + 1\non left: u = 0\non right: dn(u) = 1\nsteady\n", 256, 1},
        {"mesh grid(nx = 16, ny = 16, nz = 16)\nfield u = 0\neq dt(u) = lap(u)\non left: u = 1\non right: u = 0\n"
         "time dt = 0.05, steps = 2, scheme = bdf2\n", 16 * 16 * 16, 1},
        {"mesh grid(nx = 30, ny = 30)\nfield u = 0\neq dt(u) = lap(u)\non left: u = 1\ntime dt = 0.05, steps = 2, scheme = beuler\n",
         900, 1},
        {"mesh grid(nx = 7, ny = 7)\nfield u = 0\neq dt(u) = lap(u)\non left: u = 1\ntime dt = 0.05, steps = 2, scheme = beuler\n",
         49, 1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        int64_t n = cases[c].cells * cases[c].fields;
        double *u = malloc(sizeof *u * (size_t)n), *ref = malloc(sizeof *ref * (size_t)n);
        pj_solver_stats st, lu;
        run(cases[c].src, "-pc_type mg", u, cases[c].cells, cases[c].fields, &st);
        run(cases[c].src, "-ksp_type preonly -pc_type lu", ref, cases[c].cells, cases[c].fields, &lu);
        double d = rel_diff(u, ref, n);
        printf("case %zu: %lld linear iterations in %lld solves; max |u - u_LU| / max |u_LU| = %.3g\n", c,
               (long long)st.linear, (long long)st.newton, d);
        assert_true(d < 1e-6);
        if (c < 3) assert_true(st.linear <= 12 * st.newton);
        free(u);
        free(ref);
    }
}

/* A steady problem with a symmetric Jacobian gets multigrid by default on one process (when the
 * mesh gives three levels): as few iterations as pc = mg asked for by name, LU's answer; named
 * options still win (-pc_type ilu: ILU's growing count). Time steps keep CG with ICC(1). */
static void steady_default_is_multigrid(void **state)
{
    (void)state;
    const char *src = "mesh grid(nx = 128, ny = 128)\nfield u = 0\neq dt(u) = lap(u) + 2*pi^2*sin(pi*x)*sin(pi*y)\n"
                      "on all: u = 0\nsteady\n";
    enum { N = 128 * 128 };
    static double u[N], ref[N];
    pj_solver_stats def, mg, ilu, lu;
    run(src, NULL, u, N, 1, &def);
    run(src, "-pc_type mg", ref, N, 1, &mg);
    run(src, "-pc_type ilu", ref, N, 1, &ilu);
    run(src, "-ksp_type preonly -pc_type lu", ref, N, 1, &lu);
    double d = rel_diff(u, ref, N);
    printf("steady Poisson 128^2: default %lld linear iterations, pc = mg %lld, pc = ilu %lld; max |u - u_LU| / max |u_LU| = %.3g\n",
           (long long)def.linear, (long long)mg.linear, (long long)ilu.linear, d);
    assert_int_equal(def.linear, mg.linear);
    assert_true(def.linear <= 6);
    assert_true(ilu.linear >= 4 * def.linear);
    assert_true(d < 1e-6);
}

/* Heat on 128^2 cells with backward Euler: dt0 to t1, then dt1 to t2; u and the counts. */
static void two_phase(const char *options, double dt0, double t1, double dt1, double t2, double *u, pj_solver_stats *st)
{
    const char *src = "mesh grid(nx = 128, ny = 128)\nfield u = 0\neq dt(u) = lap(u)\non left: u = 1\non bottom: u = x\n"
                      "time dt = 0.01, until = 1, scheme = beuler\n";
    api_sim a = api_sim_start("mg.pde", src, options);
    char err[512];
    pj_status rc = pj_sim_advance(a.sim, dt0, t1, err, sizeof err);
    if (rc == PJ_OK && t2 > t1) rc = pj_sim_advance(a.sim, dt1, t2, err, sizeof err);
    if (rc) fprintf(stderr, "%s\n", err);
    assert_int_equal(rc, PJ_OK);
    api_sim_end(&a, u, st);
}

/* A symmetric time step's default preconditioner follows the stiffness max |J_ii| / shift
 * (4 dt / h^2 and more): ICC(1) for small ratios (dt = 1e-4 on 128^2: 7; the same iterations as
 * ICC asked for by name), multigrid for large ones (dt = 0.05: 3300; few V-cycles a step where
 * ICC needs many), and back to ICC when the step shrinks again; every answer is LU's. */
static void stiff_steps_get_multigrid(void **state)
{
    (void)state;
    enum { N = 128 * 128 };
    static double u[N], ref[N];
    pj_solver_stats def, icc, lu;
    two_phase(NULL, 1e-4, 5e-4, 0, 0, u, &def);
    two_phase("-ksp_type cg -pc_type icc -pc_factor_levels 1", 1e-4, 5e-4, 0, 0, ref, &icc);
    printf("dt = 1e-4, 5 steps: default %lld linear iterations, ICC(1) %lld\n", (long long)def.linear, (long long)icc.linear);
    assert_int_equal(def.linear, icc.linear);

    two_phase(NULL, 0.05, 0.2, 0, 0, u, &def);
    two_phase("-ksp_type cg -pc_type icc -pc_factor_levels 1", 0.05, 0.2, 0, 0, ref, &icc);
    two_phase("-ksp_type preonly -pc_type lu", 0.05, 0.2, 0, 0, ref, &lu);
    double d = rel_diff(u, ref, N);
    printf("dt = 0.05, 4 steps: default %lld linear iterations, ICC(1) %lld; max |u - u_LU| / max |u_LU| = %.3g\n",
           (long long)def.linear, (long long)icc.linear, d);
    assert_true(def.linear <= 8 * 4);
    assert_true(icc.linear >= 3 * def.linear);
    assert_true(d < 1e-6);

    two_phase(NULL, 0.05, 0.1, 1e-4, 0.1005, u, &def); /* multigrid, then ICC again */
    two_phase("-ksp_type preonly -pc_type lu", 0.05, 0.1, 1e-4, 0.1005, ref, &lu);
    d = rel_diff(u, ref, N);
    printf("dt = 0.05 then 1e-4: default %lld linear iterations in %lld steps; max |u - u_LU| / max |u_LU| = %.3g\n",
           (long long)def.linear, (long long)def.steps, d);
    assert_int_equal(def.steps, 7);
    assert_true(d < 1e-6);
}

/* An adaptive step's linear solve, which stops at the step's accuracy, takes the diagonal (Jacobi)
 * below a stiffness of 3: heat on 128^2 with bdf2 and adapt = 1e-5 from dt = 1e-7 to t = 1e-4
 * (ratios up to about 1.5) takes the steps of the same run with exact solves (LU), its answer
 * within the step's tolerance of that run's, in few CG iterations a step. Fixed steps, whose solves
 * go to Newton's 1e-8, keep ICC(1) there (dt = 1e-5: 0.66; the same iterations as ICC by name). */
static void small_adaptive_steps_get_jacobi(void **state)
{
    (void)state;
    enum { N = 128 * 128 };
    static double u[N], ref[N];
    pj_solver_stats def, lu, icc;
    const char *src = "mesh grid(nx = 128, ny = 128)\nfield u = 0\neq dt(u) = lap(u)\non left: u = 1\non bottom: u = x\n"
                      "time dt = 1e-7, until = 1e-4, scheme = bdf2, adapt = 1e-5\n";
    run(src, NULL, u, N, 1, &def);
    run(src, "-ksp_type preonly -pc_type lu", ref, N, 1, &lu);
    double d = rel_diff(u, ref, N);
    printf("adapt, to t = 1e-4: default %lld steps, %lld solves, %lld linear iterations; LU %lld steps; "
           "max |u - u_LU| / max |u_LU| = %.3g\n", (long long)def.steps, (long long)def.newton, (long long)def.linear,
           (long long)lu.steps, d);
    assert_true(def.steps >= lu.steps - 1 && def.steps <= lu.steps + 1);
    assert_true(d < 1e-5);
    assert_true(def.linear <= 3 * def.newton);

    two_phase(NULL, 1e-5, 5e-5, 0, 0, u, &def);
    two_phase("-ksp_type cg -pc_type icc -pc_factor_levels 1", 1e-5, 5e-5, 0, 0, ref, &icc);
    printf("fixed dt = 1e-5, 5 steps: default %lld linear iterations, ICC(1) %lld\n", (long long)def.linear,
           (long long)icc.linear);
    assert_int_equal(def.linear, icc.linear);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(iterations_do_not_grow),
        cmocka_unit_test(agrees_with_lu),
        cmocka_unit_test(steady_default_is_multigrid),
        cmocka_unit_test(stiff_steps_get_multigrid),
        cmocka_unit_test(small_adaptive_steps_get_jacobi),
    };
    return cmocka_run_group_tests(tests, tu_dir_setup, tu_dir_teardown);
}
