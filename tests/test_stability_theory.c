/* test_stability_theory.c — the explicit stability limits of rk2, rk3 and rk4 against their
 * theory (test_stability.c checks euler's). A p-stage Runge-Kutta scheme of order p (p <= 4: the
 * schemes here) multiplies an eigenmode of y' = lambda y by R(z) = sum_{k <= p} z^k / k! per
 * step, z = lambda dt; it is stable where |R(z)| <= 1, on the negative real axis from 0 down to
 * -beta_p. beta_p is found here from R alone (a scan and a bisection: 2 for rk2, 2.5127... for rk3,
 * 2.7852... for rk4), not taken from runtime/stability.c. For 2D diffusion with walls every
 * eigenvalue is real and the spectral radius is rho = 4 D (1/hx^2 + 1/hy^2) (the Gershgorin
 * bound stability.c uses is exact there), so the limit is beta_p / rho for every scheme: a
 * constant of one scheme given to another (rk3's set to rk4's) fails here. */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "engine.h"
#include "solve.h"
#include "stability.h"

/* R(z) of the p-stage scheme of order p. */
static double amplification(int p, double z)
{
    double term = 1, sum = 1;
    for (int k = 1; k <= p; k++) {
        term *= z / k;
        sum += term;
    }
    return sum;
}

/* beta_p: |R(z)| <= 1 on [-beta_p, 0], and not just beyond it. */
static double real_axis_limit(int p)
{
    double good = 0, bad = 0;
    for (double z = -1e-3;; z -= 1e-3)
        if (fabs(amplification(p, z)) > 1) {
            bad = z;
            good = z + 1e-3;
            break;
        }
    for (int i = 0; i < 200; i++) {
        double mid = 0.5 * (good + bad);
        if (fabs(amplification(p, mid)) > 1) bad = mid;
        else good = mid;
    }
    return -good;
}

static void runge_kutta_limits(void **state)
{
    (void)state;
    /* the textbook values, as a check on the search itself */
    assert_true(fabs(real_axis_limit(1) - 2) < 1e-12);
    assert_true(fabs(real_axis_limit(2) - 2) < 1e-12);
    assert_true(fabs(real_axis_limit(3) - 2.5127) < 1e-4);
    assert_true(fabs(real_axis_limit(4) - 2.7853) < 1e-4);
    const char *schemes[] = {"euler", "rk2", "rk3", "rk4"};
    const double hx = 2.0 / 40, hy = 0.5 / 30, D = 0.7;
    const double rho = 4 * D * (1 / (hx * hx) + 1 / (hy * hy));
    for (int s = 0; s < 4; s++) {
        char src[512];
        snprintf(src, sizeof src, "mesh grid(nx = 40, ny = 30, Lx = 2, Ly = 0.5)\nparam D = 0.7\nfield u = x*y\n"
                 "eq dt(u) = D*lap(u)\non all: u = 0\ntime dt = 1e-6, steps = 1, scheme = %s\n", schemes[s]);
        pj_program *p = compile_text(src);
        char err[1024] = "";
        engine_options o = {.threads = 1};
        engine *e = engine_create(engine_backend("interp"), p, &o, NULL, err, sizeof err);
        if (!e) fail_msg("%s", err);
        assert_int_equal(engine_init(e, err, sizeof err), 0);
        double limit = 0, exact = real_axis_limit(s + 1) / rho;
        assert_int_equal(stability_limit(e, &limit, err, sizeof err), 0);
        print_message("%-5s limit %.17g, theory %.17g (beta %.17g)\n", schemes[s], limit, exact, real_axis_limit(s + 1));
        assert_true(fabs(limit - exact) <= 1e-9 * exact);
        /* and the check itself: just below the limit runs, just above is refused */
        assert_int_equal(stability_check(e, exact * (1 - 1e-4), err, sizeof err), 0);
        assert_int_equal(stability_check(e, exact * (1 + 1e-4), err, sizeof err), 1);
        engine_destroy(e);
        program_free(p);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(runge_kutta_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
