/* test_algebraic.c — algebraic equations (`eq 0 = EXPR`, LANGUAGE.md §9) under the explicit
 * schemes: evaluated as mu = -b/a (EXPR = a*mu + b) in a pass before each stage, mu's ghosts filled
 * by its own conditions before the stage reads it (compiler/algebraic.c).
 *
 * The references are independent of that code: FiPy's coupled Cahn-Hilliard
 * (examples/cahnHilliard/mesh2DCoupled.py: dt(c) = M lap(mu), 0 = mu - (f'(c) - kappa lap(c)))
 * against pdejit's single equation dt(c) = div(M grad(f'(c) - kappa lap(c))), the same discrete
 * problem, on every explicit scheme, two back ends, periodic and zero-flux sides; mu against
 * f'(c) - kappa lap_h(c) summed here from the final c; a coefficient of mu that depends on c; and
 * a Dirichlet condition on mu against a plain C loop of the scheme written here. The refusals'
 * exact messages are test_parser's (algebraic_equations). */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pdejit.h"

#define N 24

/* Runs `text` on `backend` to t_end in steps of dt (the embedded pairs: their own steps within
   dt); c (and mu when not NULL) receive the final fields. */
static void run(const char *text, const char *backend, double dt, double t_end, double *c, double *mu)
{
    pj_problem *pr = NULL;
    char *diags = NULL, err[512] = "";
    if (pj_problem_compile("t.pde", text, strlen(text), &pr, &diags) != PJ_OK) fail_msg("%s\n%s", text, diags);
    free(diags);
    pj_sim_options o = {0};
    assert_int_equal(pj_backend_by_name(backend, &o.backend), 0);
    o.threads = 1;
    pj_sim *s = NULL;
    if (pj_sim_create(pr, &o, &s, err, sizeof err) != PJ_OK) fail_msg("%s", err);
    if (pj_sim_advance(s, dt, t_end, err, sizeof err) != PJ_OK) fail_msg("%s: %s", backend, err);
    assert_int_equal(pj_sim_get_field(s, "c", c), PJ_OK);
    if (mu) assert_int_equal(pj_sim_get_field(s, "mu", mu), PJ_OK);
    pj_sim_free(s);
    pj_problem_free(pr);
}

static double max_diff(const double *a, const double *b, int n)
{
    double m = 0;
    for (int i = 0; i < n; i++) m = fmax(m, fabs(a[i] - b[i]));
    return m;
}

/* c on the N x N mesh with its ghost: periodic (wrapped) or a zero-flux wall (the mirror cell). */
static double at(const double *c, int i, int j, int periodic)
{
    if (periodic) return c[((j + N) % N) * N + (i + N) % N];
    i = i < 0 ? 0 : i >= N ? N - 1 : i;
    j = j < 0 ? 0 : j >= N ? N - 1 : j;
    return c[j * N + i];
}

static void coupled_matches_single_equation(void **state)
{
    (void)state;
    /* the embedded pairs with fixed steps, then with adapt (their last stage reads the new state:
       no pass after it) */
    static const char *const schemes[] = {"euler", "rk2", "rk3", "rk4", "rk23", "rk45", "rk23 adapt", "rk45 adapt"};
    static const char *const backends[] = {"interp", "cpu"};
    const double h = 0.5, kappa = 1.5;
    double c1[N * N], c2[N * N], mu[N * N], ci[N * N];
    for (int per = 0; per < 2; per++)
        for (size_t s = 0; s < sizeof schemes / sizeof *schemes; s++)
            for (int b = 0; b < 2; b++) {
                int adaptive = strstr(schemes[s], "adapt") != NULL;
                char scheme[16];
                snprintf(scheme, sizeof scheme, "%.*s", (int)strcspn(schemes[s], " "), schemes[s]);
                char head[512], coupled[1024], single[1024];
                snprintf(head, sizeof head, "mesh grid(nx = %d, ny = %d, Lx = %g, Ly = %g)\n%sparam M = 1, kappa = %g\n"
                         "func df(c) = 2*c*(1 - c)*(1 - 2*c)\ntime dt = 0.0005, until = 1, scheme = %s%s\n",
                         N, N, N * h, N * h, per ? "periodic x, y\n" : "", kappa, scheme, adaptive ? ", adapt = 1e-6" : "");
                const char *init = "0.5 + 0.1*sin(2*pi*x/12)*cos(2*pi*y/12) + 0.05*cos(4*pi*(x + 2*y)/12)";
                snprintf(coupled, sizeof coupled, "%sfield c = %s, mu = 0\neq dt(c) = M*lap(mu)\n"
                         "eq 0 = mu - (df(c) - kappa*lap(c))\n", head, init);
                snprintf(single, sizeof single, "%sfield c = %s\neq dt(c) = div(M*grad(df(c) - kappa*lap(c)))\n", head, init);
                run(coupled, backends[b], 0.0005, 0.15, c1, mu);
                run(single, backends[b], 0.0005, 0.15, c2, NULL);
                double dc = max_diff(c1, c2, N * N), dmu = 0, moved = 0;
                for (int j = 0; j < N; j++)
                    for (int i = 0; i < N; i++) {
                        double v = at(c1, i, j, per), lap = (at(c1, i + 1, j, per) + at(c1, i - 1, j, per) + at(c1, i, j + 1, per) +
                                                             at(c1, i, j - 1, per) - 4 * v) / (h * h);
                        double want = 2 * v * (1 - v) * (1 - 2 * v) - kappa * lap;
                        dmu = fmax(dmu, fabs(mu[j * N + i] - want) / fmax(1, fabs(want)));
                        double x = (i + 0.5) * h, y = (j + 0.5) * h;
                        double c0 = 0.5 + 0.1 * sin(2 * M_PI * x / 12) * cos(2 * M_PI * y / 12) +
                                    0.05 * cos(4 * M_PI * (x + 2 * y) / 12);
                        moved = fmax(moved, fabs(v - c0));
                    }
                print_message("%-8s %-10s %-6s: |c coupled - c single| %.2e, |mu - (f'(c) - kappa lap c)| %.2e (c moved "
                              "%.3f)\n", per ? "periodic" : "walls", schemes[s], backends[b], dc, dmu, moved);
                /* adaptive: the steps follow the error estimate (a difference of nearly equal numbers: its
                   round-off moves them), and the single equation's are bounded by its stability limit,
                   which the coupled form's check does not estimate; both are within the tolerance */
                assert_true(dc <= (adaptive ? 1e-5 : 1e-12));
                assert_true(dmu <= 1e-12);
                assert_true(moved > 1e-2); /* the run did move c */
                if (b == 0) memcpy(ci, c1, sizeof ci);
                else assert_true(max_diff(ci, c1, N * N) <= 1e-12); /* cpu against the interpreter */
            }
}

/* A coefficient of mu that depends on c: mu = g(c) / a(c), against the single equation with the
   quotient written out. */
static void coefficient_of_the_field(void **state)
{
    (void)state;
    const char *head = "mesh grid(nx = 24, ny = 24, Lx = 12, Ly = 12)\nperiodic x, y\n"
                       "time dt = 0.001, until = 1, scheme = rk4\n";
    const char *init = "0.5 + 0.1*sin(2*pi*x/12)*cos(2*pi*y/12)";
    char coupled[1024], single[1024];
    double c1[N * N], c2[N * N], mu[N * N];
    snprintf(coupled, sizeof coupled, "%sfield c = %s, mu = 0\neq dt(c) = lap(mu)\n"
             "eq 0 = (1 + c^2)*exp(c)*mu + 3*mu - c^3 + c + lap(c)\n", head, init);
    snprintf(single, sizeof single, "%sfield c = %s\neq dt(c) = lap((c^3 - c - lap(c))/((1 + c^2)*exp(c) + 3))\n", head, init);
    run(coupled, "interp", 0.001, 0.2, c1, mu);
    run(single, "interp", 0.001, 0.2, c2, NULL);
    double dc = max_diff(c1, c2, N * N);
    print_message("a(c) = (1 + c^2) exp(c) + 3: |c coupled - c single| %.2e\n", dc);
    assert_true(dc <= 1e-12);
    double moved = 0;
    for (int j = 0; j < N; j++)
        for (int i = 0; i < N; i++)
            moved = fmax(moved, fabs(c1[j * N + i] - (0.5 + 0.1 * sin(2 * M_PI * (i + 0.5) / 24) * cos(2 * M_PI * (j + 0.5) / 24))));
    assert_true(moved > 1e-3);
}

/* mu's own condition fills its ghosts before the stage reads them: a Dirichlet mu = 0.1 at both
   ends of a 1D mesh (c keeps the zero-flux default), rk2, against the scheme written here. */
static void condition_of_the_field(void **state)
{
    (void)state;
    enum { M = 40, STEPS = 100 };
    const double h = 1.0 / M, dt = 1e-5, mb = 0.1;
    const char *text = "mesh grid(nx = 40, Lx = 1)\nfield c = 0.5 + 0.3*cos(3*x), mu = 0\neq dt(c) = lap(mu)\n"
                       "eq 0 = mu - (c^3 - c - 1e-3*lap(c))\non left, right: mu = 0.1\n"
                       "time dt = 1e-5, until = 1, scheme = rk2\n";
    double c[M], mu[M];
    run(text, "interp", dt, STEPS * dt, c, mu);
    /* the reference: U1 = U + dt F(U), U <- (U + U1 + dt F(U1)) / 2, F(c) = lap_h(mu(c)) */
    double u[M], u1[M], f0[M], f1[M];
    for (int i = 0; i < M; i++) u[i] = 0.5 + 0.3 * cos(3 * (i + 0.5) * h);
    for (int n = 0; n < STEPS; n++)
        for (int stage = 0; stage < 2; stage++) {
            const double *v = stage ? u1 : u;
            double m[M + 2];
            for (int i = 0; i < M; i++) {
                double l = v[i > 0 ? i - 1 : 0], r = v[i < M - 1 ? i + 1 : M - 1]; /* c's ghosts: the mirror */
                m[i + 1] = v[i] * v[i] * v[i] - v[i] - 1e-3 * (l - 2 * v[i] + r) / (h * h);
            }
            m[0] = 2 * mb - m[1], m[M + 1] = 2 * mb - m[M]; /* mu's: Dirichlet, g = 2 mb - u */
            double *f = stage ? f1 : f0;
            for (int i = 0; i < M; i++) f[i] = (m[i] - 2 * m[i + 1] + m[i + 2]) / (h * h);
            for (int i = 0; i < M; i++)
                if (!stage) u1[i] = u[i] + dt * f0[i];
                else u[i] = 0.5 * u[i] + 0.5 * (u1[i] + dt * f1[i]);
        }
    double d = 0, moved = 0;
    for (int i = 0; i < M; i++) {
        d = fmax(d, fabs(c[i] - u[i]));
        moved = fmax(moved, fabs(c[i] - (0.5 + 0.3 * cos(3 * (i + 0.5) * h))));
    }
    print_message("Dirichlet mu: |c - reference| %.2e (c moved %.3g)\n", d, moved);
    assert_true(d <= 1e-12);
    assert_true(moved > 1e-3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(coupled_matches_single_equation),
        cmocka_unit_test(coefficient_of_the_field),
        cmocka_unit_test(condition_of_the_field),
    };
    return cmocka_run_group_tests(tests, tu_dir_setup, tu_dir_teardown);
}
