/* test_bc_time_order.c — boundary values that change in time, taken at each stage's own time
 * (issue 25): u(x, t) = x sin(t) on [0, 1] with u = 0 on the left and u = sin(t) on the right,
 * du/dt = D lap(u) + x cos(t). u is linear in x, which the finite volumes represent exactly
 * (lap of a linear field with its ghosts filled from exact boundary values is 0), so the error
 * at t = 1 is the time scheme's alone. Its observed order over dt halvings must be the scheme's
 * (within 0.3) for rk2, rk3 and rk4, and for beuler, bdf2 and cn where PETSc is there: a stage
 * whose boundary is filled at another time than its own (the step's start, say) adds an error
 * of D (c dt) g'(t) / h^2 to the cells by the wall, which makes the order fall to one. On the
 * interpreter and the cpu back end. */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pdejit.h"

#define NX 4

/* max |u - x sin(1)| at t = 1 after steps of dt; NAN when the scheme is not available here. */
static double error_at_one(const char *scheme, pj_backend be, double dt)
{
    const char *text = "mesh grid(nx = 4)\nfield u = 0\neq dt(u) = 0.1*lap(u) + x*cos(t)\n"
                       "on left: u = 0\non right: u = sin(t)\ntime dt = 0.01, until = 1\n";
    pj_problem *pr = NULL;
    char *log = NULL;
    if (pj_problem_compile_scheme("bc.pde", text, strlen(text), scheme, &pr, &log) != PJ_OK)
        fail_msg("%s", log ? log : "does not compile");
    free(log);
    pj_sim_options o = {.backend = be, .single = 0, .threads = 1, .fast_math = 0,
                        .solver_options = "-ksp_rtol 1e-14 -ksp_atol 1e-16 -snes_rtol 1e-14 -snes_atol 1e-16"};
    pj_sim *s = NULL;
    char err[512];
    pj_status st = pj_sim_create(pr, &o, &s, err, sizeof err);
    if (st == PJ_ERR_UNAVAILABLE) {
        pj_problem_free(pr);
        return NAN;
    }
    if (st != PJ_OK) fail_msg("%s: %s", scheme, err);
    if (pj_sim_advance(s, dt, 1.0, err, sizeof err) != PJ_OK) fail_msg("%s: %s", scheme, err);
    assert_true(fabs(pj_sim_time(s) - 1) < 1e-12);
    double u[NX], e = 0;
    assert_int_equal(pj_sim_get_field(s, "u", u), PJ_OK);
    for (int i = 0; i < NX; i++) e = fmax(e, fabs(u[i] - (i + 0.5) / NX * sin(1.0)));
    pj_sim_free(s);
    pj_problem_free(pr);
    return e;
}

static void orders(void **state)
{
    (void)state;
    struct { const char *scheme; double order; } schemes[] = {
        {"rk2", 2}, {"rk3", 3}, {"rk4", 4}, {"beuler", 1}, {"bdf2", 2}, {"cn", 2},
    };
    const double dts[] = {0.04, 0.02, 0.01, 0.005};
    int ran = 0;
    for (size_t k = 0; k < sizeof schemes / sizeof *schemes; k++)
        for (int b = 0; b < 2; b++) {
            pj_backend be = b ? PJ_BACKEND_CPU : PJ_BACKEND_INTERP;
            double e[4];
            for (int i = 0; i < 4; i++) e[i] = error_at_one(schemes[k].scheme, be, dts[i]);
            if (isnan(e[0])) {
                print_message("%s: not available here (no PETSc)\n", schemes[k].scheme);
                continue;
            }
            ran++;
            /* the order of the last halving (the asymptotic one), and every halving's */
            double last = log2(e[2] / e[3]);
            print_message("%s on %s: errors %.3g %.3g %.3g %.3g, orders %.2f %.2f %.2f\n", schemes[k].scheme,
                          b ? "cpu" : "interp", e[0], e[1], e[2], e[3], log2(e[0] / e[1]), log2(e[1] / e[2]), last);
            assert_true(e[3] > 1e-13); /* above the rounding: an order is measured */
            assert_true(fabs(last - schemes[k].order) <= 0.3);
        }
    assert_true(ran >= 6); /* the explicit ones on both back ends at least */
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(orders)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
