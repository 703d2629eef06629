/* test_implicit_conserve.c — conservation by default (issue 28 item 5): a problem in divergence form
 * with no-flux or periodic sides keeps its integral over 1000 implicit steps to 1e-13 relative with
 * the default solver settings (runtime/implicit_conserve.c, docs/solvers.md "Conservation"). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pdejit.h"
#include "solve.h"
#include "testutil.h"

/* |sum u(T) - sum u(0)| / |sum u(0)| after `steps` steps of dt (the cells are equal: the sum of u times
 * the cell volume is the cell volume times the sum). */
static double drift(const char *src, const char *options, double dt, int steps, pj_solver_stats *st)
{
    api_sim a = api_sim_start("c.pde", src, options);
    int64_t n = 24 * 24; /* every problem's mesh */
    double *u = malloc(sizeof *u * (size_t)n);
    assert_int_equal(pj_sim_get_field(a.sim, "u", u), PJ_OK);
    long double s0 = 0, s1 = 0;
    for (int64_t i = 0; i < n; i++) s0 += u[i];
    char err[512];
    pj_status rc = pj_sim_advance(a.sim, dt, dt * steps, err, sizeof err);
    if (rc) fprintf(stderr, "%s\n", err);
    assert_int_equal(rc, PJ_OK);
    api_sim_end(&a, u, st);
    for (int64_t i = 0; i < n; i++) s1 += u[i];
    free(u);
    return (double)(fabsl(s1 - s0) / fabsl(s0));
}

static const char *ch = "mesh grid(nx = 24, ny = 24, Lx = 24, Ly = 24)\nperiodic x, y\n"
                        "param W = 1, kappa = 1, M = 1\nenergy F = W*u^2*(1 - u)^2 + kappa/2*grad2(u)\n"
                        "field u = 0.5 + 0.05*(2*rand() - 1)\neq dt(u) = div(M*grad(delta(F, u)))\n"
                        "time dt = 0.5, until = 500, scheme = %s\n";
static const char *nld = "mesh grid(nx = 24, ny = 24, Lx = 1, Ly = 1)\n%s"
                         "field u = 1 + 0.5*sin(2*pi*x)*cos(2*pi*y) + 0.3*rand()\neq dt(u) = div((1 + u^2)*grad(u))\n"
                         "time dt = 0.001, until = 1, scheme = %s\n";

/* Cahn-Hilliard (from its free energy, periodic) and variable-coefficient diffusion (walls: the
 * default no-flux sides; periodic), beuler and bdf2, 1000 steps each with the default solver
 * settings: the integral kept to 1e-13 relative. With the projection off (-pj_conserve false: the
 * behaviour before it) the same runs drift by up to 6e-11 (linear solves stopped at 1e-8). */
static double drift_of_all(const char *options)
{
    const char *schemes[] = {"beuler", "bdf2"};
    const char *sides[] = {"", "periodic x, y\n"};
    char src[1024];
    double worst = 0;
    for (int s = 0; s < 2; s++) {
        pj_solver_stats st;
        snprintf(src, sizeof src, ch, schemes[s]);
        double d = drift(src, options, 0.5, 1000, &st);
        printf("%-22s Cahn-Hilliard %-6s periodic: |dI|/|I| = %.3g (%lld Newton, %lld linear iterations)\n",
               options ? options : "defaults", schemes[s], d, (long long)st.newton, (long long)st.linear);
        assert_int_equal(st.steps, 1000);
        worst = fmax(worst, d);
        for (int w = 0; w < 2; w++) {
            snprintf(src, sizeof src, nld, sides[w], schemes[s]);
            d = drift(src, options, 0.001, 1000, &st);
            printf("%-22s (1+u^2) diffusion %-6s %-8s: |dI|/|I| = %.3g (%lld Newton, %lld linear iterations)\n",
                   options ? options : "defaults", schemes[s], w ? "periodic" : "walls", d, (long long)st.newton,
                   (long long)st.linear);
            assert_int_equal(st.steps, 1000);
            if (!options) assert_true(d <= 1e-13);
            worst = fmax(worst, d);
        }
    }
    return worst;
}

static void conservation_by_default(void **state)
{
    (void)state;
    double now = drift_of_all(NULL), before = drift_of_all("-pj_conserve false");
    printf("largest drift: %.3g by default, %.3g without the projection\n", now, before);
    assert_true(now <= 1e-13);
    assert_true(before > 1e-13); /* the test tells the two apart */
}

/* A problem that does not keep its integral (a Dirichlet side, a reaction term) is not projected:
 * the same answer to the last bit with the projection off; in a system the conserved field keeps
 * its integral while the other does not. */
static void only_conserved_fields_are_projected(void **state)
{
    (void)state;
    const char *dirichlet = "mesh grid(nx = 24, ny = 24, Lx = 1, Ly = 1)\nfield u = 1 + 0.3*rand()\n"
                            "eq dt(u) = div((1 + u^2)*grad(u))\non left: u = 2\ntime dt = 0.001, until = 0.05, scheme = bdf2\n";
    double a[24 * 24], b[24 * 24];
    pj_solver_stats st;
    double d = drift(dirichlet, NULL, 0.001, 50, &st);
    api_sim s1 = api_sim_start("c.pde", dirichlet, NULL), s2 = api_sim_start("c.pde", dirichlet, "-pj_conserve false");
    char err[512];
    assert_int_equal(pj_sim_advance(s1.sim, 0.001, 0.05, err, sizeof err), PJ_OK);
    assert_int_equal(pj_sim_advance(s2.sim, 0.001, 0.05, err, sizeof err), PJ_OK);
    api_sim_end(&s1, a, NULL);
    api_sim_end(&s2, b, NULL);
    printf("a Dirichlet side: the integral moves by %.3g; the same answer with the projection off: %s\n", d,
           memcmp(a, b, sizeof a) ? "no" : "yes");
    assert_true(d > 1e-3);
    assert_memory_equal(a, b, sizeof a);

    const char *system = "mesh grid(nx = 24, ny = 24, Lx = 1, Ly = 1)\nfield u = 1 + 0.3*rand(), v = 0.5*rand()\n"
                         "eq dt(u) = div((1 + v^2)*grad(u))\neq dt(v) = lap(v) + u - v^3\n"
                         "time dt = 0.001, until = 1, scheme = beuler\n";
    double du = drift(system, NULL, 0.001, 1000, &st);
    printf("u conserved beside v with a reaction: |dI_u|/|I_u| = %.3g\n", du);
    assert_true(du <= 1e-13);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(conservation_by_default),
        cmocka_unit_test(only_conserved_fields_are_projected),
    };
    return cmocka_run_group_tests(tests, tu_dir_setup, tu_dir_teardown);
}
