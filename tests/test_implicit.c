/* test_implicit.c — implicit schemes and steady solves through PETSc (runtime/implicit.c), and
 * the explicit stability check (runtime/stability.c).
 *
 * Against independent expectations: the Jacobian assembled from the derived kernel against
 * PETSc's finite-difference Jacobian (every sample made implicit, the random-expression set);
 * Newton's residuals falling quadratically on a nonlinear problem; the orders of beuler (1), cn
 * and bdf2 (2) against the exact solution of the semi-discrete heat equation (sin(pi x) is an
 * exact eigenvector of the discrete Laplacian with the ghost rule of u = 0); a steady Poisson
 * problem at order 2 in space against its manufactured solution; the heat-from-a-wall problem at
 * 100x the explicit limit against 1 - erf; exit codes and messages of the command. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "derive.h"
#include "diag.h"
#include "implicit.h"
#include "pdejit.h"
#include "solve.h"
#include "program.h"
#include "randexpr.h"
#include "scheme.h"
#include "sim.h"
#include "testutil.h"

/* The implicit solver of a test's host sim (implicit.h takes a simulation: a state and its executor). */
static implicit_solver *implicit_on_sim(sim *s, const char *options, char *err, size_t len)
{
    simulation m = {&sim_exec_ops, s, sim_get_state(s)};
    return implicit_create(&m, options, err, len);
}

static pj_program *compile_as(const char *src, int scheme)
{
    diag d;
    diag_init(&d, "t.pde", src, strlen(src));
    pj_compile_options o = {.scheme = (pj_scheme)scheme, .scheme_set = scheme >= 0};
    pj_program *p = compile_problem("t.pde", src, strlen(src), &d, scheme >= 0 ? &o : NULL);
    if (!p) fprintf(stderr, "%s", d.log ? d.log : "(no diagnostics)\n");
    diag_free(&d);
    return p;
}

/* The derived Jacobian of p (implicit) at its initial state (scrambled: each value of a field
 * with an equation moved to 0.2 .. 0.8, away from the kinks a flux limiter has where neighbours
 * are equal) against finite differences. */
static jacobian_check jacobian_difference(pj_program *p, int scramble, double tol)
{
    char err[512];
    sim_options so = {.threads = 1};
    sim *s = sim_create(p, &so, err, sizeof err);
    assert_non_null(s);
    sim_init(s);
    int64_t cells = p->n[0] * p->n[1] * p->n[2];
    double *u = malloc(sizeof *u * (size_t)cells);
    for (int f = 0; scramble && f < p->n_fields; f++) {
        if (!p->field_has_eq[f]) continue;
        for (int64_t c = 0; c < cells; c++) u[c] = 0.5 + 0.3 * sin(1.7 * (double)c + 2.3 * f);
        sim_set_field(s, f, u);
    }
    free(u);
    implicit_solver *q = implicit_on_sim(s, NULL, err, sizeof err);
    if (!q) fprintf(stderr, "%s\n", err);
    assert_non_null(q);
    jacobian_check r;
    int rc = implicit_check_jacobian(q, 0.25, tol, &r, err, sizeof err);
    if (rc) fprintf(stderr, "%s\n", err);
    assert_int_equal(rc, 0);
    implicit_destroy(q);
    sim_destroy(s);
    return r;
}

static void jacobian_of_every_sample(void **state)
{
    (void)state;
    static const char *const samples[] = {"advection_vanleer", "allen_cahn", "fisher", "gray_scott", "heat1d", "heat3d", "robin",
                                          "implicit/cahn_hilliard_coupled"}; /* rows of an algebraic equation */
    for (size_t i = 0; i < sizeof samples / sizeof *samples; i++) {
        char path[256];
        snprintf(path, sizeof path, "../samples/%s.pde", samples[i]);
        char *src = tu_read_file(path, NULL);
        assert_non_null(src);
        pj_program *p = compile_as(src, PJ_BEULER);
        assert_non_null(p);
        for (int a = 0; a < p->dim; a++) /* a small grid: the differences are dense */
            if (p->n[a] > 9) p->n[a] = 9;
        jacobian_check r = jacobian_difference(p, 1, 1e-5);
        printf("%-18s %d Jacobian entries per cell; %lld rows, all compared: worst |J - J_fd| / max|J_fd| %.2g\n",
               samples[i], program_jacobian(p, NULL, 0)->n, (long long)r.rows, r.worst);
        assert_true(r.rows > 0);
        assert_int_equal(r.compared, r.rows);
        assert_int_equal(r.disagree, 0);
        assert_true(r.worst < 1e-6);
        program_free(p);
        free(src);
    }
}

/* The random set: coupled fields, conditionals, face fluxes, Robin and time-dependent conditions,
 * periodic axes, each problem judged on its own. The check compares only what differencing can
 * see (implicit_check_jacobian): not the entries below 1e-12 of their column's largest (PETSc's
 * differencing drops those), nor a column that reaches a non-finite F (it drops the whole
 * column). A problem whose F is non-finite somewhere (a log or sqrt of a negative number, a
 * negative base to a fractional power) is counted: these random expressions make about a third
 * of them so (17 of 48), and more than 40 % fails the test. Every other problem's rows must
 * agree to 1e-4 of the row's largest entry (forward differences of t ^ lap(u), which grows like
 * e^(840 u) here, carry errors of 1e-5), with at most one row of a problem excepted (a forward
 * difference across the kink of a conditional, abs, min or max). */
static void jacobian_of_random_problems(void **state)
{
    (void)state;
    randexpr r = {9090};
    int64_t rows = 0;
    int problems = 0, nonfinite = 0, total = 48, with_a_kink = 0;
    double worst = 0;
    for (int prob = 0; prob < total; prob++) {
        char *src = randexpr_problem(&r, prob);
        assert_non_null(src);
        pj_program *p = compile_as(src, PJ_BEULER);
        assert_non_null(p);
        jacobian_check c = jacobian_difference(p, 1, 1e-4);
        if (c.compared == c.rows) {
            problems++;
            rows += c.rows;
            worst = fmax(worst, c.worst);
            with_a_kink += c.disagree > 0;
            if (c.disagree > 1)
                fail_msg("random problem %d: %lld of %lld rows disagree (first: row %lld)\n%s", prob,
                         (long long)c.disagree, (long long)c.compared, (long long)c.first_bad, src);
        } else {
            nonfinite++;
        }
        program_free(p);
        free(src);
    }
    printf("random problems: %d compared, %d with a non-finite F; %lld rows, %d problems with one row across a "
           "kink; worst of the others %.2g\n", problems, nonfinite, (long long)rows, with_a_kink, worst);
    assert_true(nonfinite * 10 <= total * 4);
    assert_true(problems >= 28);
    assert_true(worst <= 1e-4);
}

/* Newton on a nonlinear steady problem: -div((1 + u^2) grad u) = f. The residual norms, as PETSc
 * records them, must fall quadratically once close: r[k+1] <= C r[k]^2. */
static void newton_converges_quadratically(void **state)
{
    (void)state;
    const char *src = "mesh grid(nx = 40, ny = 40)\n"
                      "field u = 0\n"
                      "eq dt(u) = div((1 + u^2)*grad(u)) + 20*exp(-20*((x-0.5)^2 + (y-0.5)^2))\n"
                      "on all: u = 0.1\n"
                      "steady\n"
                      "solver rtol = 1e-14, atol = 1e-13, linear = preonly, pc = lu\n";
    pj_program *p = compile_as(src, -1);
    assert_non_null(p);
    char err[512];
    sim_options so = {.threads = 1};
    sim *s = sim_create(p, &so, err, sizeof err);
    assert_non_null(s);
    sim_init(s);
    implicit_solver *q = implicit_on_sim(s, NULL, err, sizeof err);
    assert_non_null(q);
    int rc = implicit_step(q, 1, err, sizeof err);
    if (rc) fprintf(stderr, "%s\n", err);
    assert_int_equal(rc, 0);
    const double *h;
    int n = implicit_residual_history(q, &h);
    char history[1024] = "";
    for (int k = 0; k < n; k++) snprintf(history + strlen(history), sizeof history - strlen(history), " %.3e", h[k]);
    int quadratic = 0;
    for (int k = 1; k + 1 < n; k++) /* close to the root, and above the floor that rounding sets */
        if (h[k] < 1e-3 * h[0] && h[k + 1] > 1e-11 * h[0]) {
            double order = log(h[k + 1] / h[k]) / log(h[k] / h[k - 1]);
            if (order < 1.8) fail_msg("Newton's residuals do not fall quadratically (order %.2f at iteration %d):%s", order, k, history);
            quadratic++;
        }
    printf("Newton residuals:%s\n", history);
    if (quadratic < 1) fail_msg("too few iterations to see the order:%s", history);
    assert_true(h[n - 1] < 1e-14 * h[0]);
    assert_true(n <= 8); /* from u = 0: a handful of iterations */
    implicit_destroy(q);
    sim_destroy(s);
    program_free(p);
}

/* The semi-discrete heat equation u' = D L u, u(0) = sin(pi x): exactly exp(-lambda t) sin(pi x)
 * with lambda = D 4 sin^2(pi h / 2) / h^2. Max error at t = 0.1 after steps of dt. */
/* u' = D L u - k u on 50 cells with u = 0 on both sides, u(0) = sin(pi x), run to T by `scheme`
 * with steps of dt: exactly exp(-(lambda + k) t) sin(pi x), lambda = 4 sin^2(pi h / 2) / h^2 (D = 1;
 * sin(pi x) is an eigenvector of the discrete Laplacian with the ghost rule of u = 0). `rhs` is the
 * equation's right-hand side as written. Max error at T. */
static double decay_error(const char *rhs, double k, const char *scheme, double dt, double T)
{
    char src[512];
    snprintf(src, sizeof src,
             "mesh grid(nx = 50, Lx = 1)\nparam D = 1, k = %g\nfield u = sin(pi*x)\neq dt(u) = %s\non all: u = 0\n"
             "time dt = %.17g, until = %g, scheme = %s\nsolver rtol = 1e-13, linear = preonly, pc = lu\n",
             k, rhs, dt, T, scheme);
    pj_problem *pr;
    char *diags = NULL, err[512];
    assert_int_equal(pj_problem_compile("decay.pde", src, strlen(src), &pr, &diags), PJ_OK);
    pj_sim *sim;
    pj_sim_options so = {.backend = PJ_BACKEND_CPU, .threads = 1};
    pj_status st = pj_sim_create(pr, &so, &sim, err, sizeof err);
    if (st) fprintf(stderr, "%s\n", err);
    assert_int_equal(st, PJ_OK);
    st = pj_sim_advance(sim, dt, T, err, sizeof err);
    if (st) fprintf(stderr, "%s\n", err);
    assert_int_equal(st, PJ_OK);
    assert_true(fabs(pj_sim_time(sim) - T) < 1e-12);
    double u[50], h = 1.0 / 50, lambda = 4 * sin(M_PI * h / 2) * sin(M_PI * h / 2) / (h * h) + k, worst = 0;
    assert_int_equal(pj_sim_get_field(sim, "u", u), PJ_OK);
    for (int i = 0; i < 50; i++) worst = fmax(worst, fabs(u[i] - exp(-lambda * T) * sin(M_PI * (i + 0.5) * h)));
    pj_sim_free(sim);
    pj_problem_free(pr);
    return worst;
}

static double heat_error(const char *scheme, double dt) { return decay_error("D*lap(u)", 0, scheme, dt, 0.1); }

static void orders_in_time(void **state)
{
    (void)state;
    static const struct { const char *scheme; double order; } cases[] = {{"beuler", 1}, {"cn", 2}, {"bdf2", 2}};
    for (int c = 0; c < 3; c++) {
        double e1 = heat_error(cases[c].scheme, 0.004), e2 = heat_error(cases[c].scheme, 0.002),
               e3 = heat_error(cases[c].scheme, 0.001);
        double o1 = log2(e1 / e2), o2 = log2(e2 / e3);
        printf("%-6s errors %.3e %.3e %.3e: orders %.3f %.3f\n", cases[c].scheme, e1, e2, e3, o1, o2);
        assert_true(fabs(o2 - cases[c].order) < 0.1);
        assert_true(fabs(o1 - cases[c].order) < 0.2);
    }
}

/* imex: u' = implicit(D L u) - k u, k = 5. ARK IMEX 3: order 3. */
static double imex_error(double dt) { return decay_error("implicit(D*lap(u)) - k*u", 5, "imex", dt, 0.2); }

static void imex_order_three(void **state)
{
    (void)state;
    double e1 = imex_error(0.01), e2 = imex_error(0.005), e3 = imex_error(0.0025);
    printf("imex   errors %.3e %.3e %.3e: orders %.3f %.3f\n", e1, e2, e3, log2(e1 / e2), log2(e2 / e3));
    assert_true(fabs(log2(e2 / e3) - 3) < 0.15);
    assert_true(fabs(log2(e1 / e2) - 3) < 0.25);
}

/* adapt: the error controller takes far fewer steps than dt would, lands on the output times and
 * the end, and stays near the tolerance. */
static void adaptive_steps(void **state)
{
    (void)state;
    const char *src = "mesh grid(nx = 200, Lx = 1)\nparam D = 1\nfield u = sin(pi*x)\neq dt(u) = D*lap(u)\n"
                      "on all: u = 0\ntime dt = 0.0001, until = 0.1, scheme = bdf2, adapt = 1e-4\n";
    pj_problem *pr;
    char *diags = NULL, err[512];
    assert_int_equal(pj_problem_compile("adapt.pde", src, strlen(src), &pr, &diags), PJ_OK);
    pj_sim *sim;
    pj_sim_options so = {.backend = PJ_BACKEND_CPU, .single = 0, .threads = 1, .fast_math = 0, .solver_options = NULL};
    assert_int_equal(pj_sim_create(pr, &so, &sim, err, sizeof err), PJ_OK);
    pj_run_options ro = pj_run_options_default();
    pj_run_result res;
    assert_int_equal(pj_sim_run(sim, &ro, &res, err, sizeof err), PJ_OK);
    assert_true(pj_sim_time(sim) == 0.1);
    pj_solver_stats st;
    assert_int_equal(pj_sim_solver_stats(sim, &st), PJ_OK);
    double u[200], worst = 0;
    assert_int_equal(pj_sim_get_field(sim, "u", u), PJ_OK);
    for (int i = 0; i < 200; i++) worst = fmax(worst, fabs(u[i] - exp(-M_PI * M_PI * 0.1) * sin(M_PI * (i + 0.5) / 200)));
    printf("adapt = 1e-4: %lld steps (%lld rejected) instead of 1000; max error %.3g\n", (long long)st.steps,
           (long long)st.rejected, worst);
    assert_true(st.steps < 100);
    assert_true(worst < 1e-3);
    pj_sim_free(sim);
    pj_problem_free(pr);
}

static double poisson_error(int n)
{
    char src[512];
    snprintf(src, sizeof src,
             "mesh grid(nx = %d, ny = %d)\nfield u = 0\neq dt(u) = lap(u) + 2*pi^2*sin(pi*x)*sin(pi*y)\non all: u = 0\n"
             "steady\nsolver rtol = 1e-12\n", n, n);
    pj_program *p = compile_as(src, -1);
    assert_non_null(p);
    assert_int_equal(p->scheme, PJ_STEADY);
    char err[512];
    sim_options so = {.threads = 1};
    sim *s = sim_create(p, &so, err, sizeof err);
    assert_non_null(s);
    sim_init(s);
    implicit_solver *q = implicit_on_sim(s, "-ksp_rtol 1e-13", err, sizeof err);
    assert_non_null(q);
    assert_int_equal(implicit_step(q, 1, err, sizeof err), 0);
    double *u = malloc(sizeof *u * (size_t)(n * n)), worst = 0;
    sim_get_field(s, 0, u);
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++)
            worst = fmax(worst, fabs(u[j * n + i] - sin(M_PI * (i + 0.5) / n) * sin(M_PI * (j + 0.5) / n)));
    free(u);
    implicit_destroy(q);
    sim_destroy(s);
    program_free(p);
    return worst;
}

static void steady_poisson_order_two(void **state)
{
    (void)state;
    double e1 = poisson_error(16), e2 = poisson_error(32), e3 = poisson_error(64);
    printf("steady Poisson: errors %.3e %.3e %.3e: orders %.3f %.3f\n", e1, e2, e3, log2(e1 / e2), log2(e2 / e3));
    assert_true(fabs(log2(e2 / e3) - 2) < 0.1);
    assert_true(fabs(log2(e1 / e2) - 2) < 0.15);
}

/* A fourth-order problem with two conditions per side, u and lap(u): u^(4) = pi^4 sin(pi x) with
 * u = sin(pi x) + x^3 (u(0) = 0, lap(u)(0) = 0, u(1) = 1, lap(u)(1) = 6). The second ghost layer
 * keeps lap(u) = c at the face; order 2 in space; the Jacobian (the second layer depends on two
 * interior cells) against finite differences. */
static double biharmonic_error(int n, int check_jacobian)
{
    char src[512];
    snprintf(src, sizeof src,
             "mesh grid(nx = %d, Lx = 1)\nfield u = 0\neq dt(u) = -lap(lap(u)) + pi^4*sin(pi*x)\n"
             "on left: u = 0, lap(u) = 0\non right: u = 1, lap(u) = 6\nsteady\n"
             "solver rtol = 1e-12, linear = preonly, pc = lu\n", n);
    pj_program *p = compile_as(src, -1);
    assert_non_null(p);
    assert_int_equal(p->bc[0][1].lap, 1);
    if (check_jacobian) {
        jacobian_check r = jacobian_difference(p, 1, 1e-5);
        printf("biharmonic: %lld rows, %lld disagree, worst %.2g\n", (long long)r.rows, (long long)r.disagree, r.worst);
        assert_int_equal(r.disagree, 0);
        assert_true(r.worst < 1e-6);
    }
    char err[512];
    sim_options so = {.threads = 1};
    sim *s = sim_create(p, &so, err, sizeof err);
    assert_non_null(s);
    sim_init(s);
    implicit_solver *q = implicit_on_sim(s, NULL, err, sizeof err);
    assert_non_null(q);
    assert_int_equal(implicit_step(q, 1, err, sizeof err), 0);
    implicit_stats st;
    implicit_get_stats(q, &st);
    assert_true(st.newton <= 2); /* linear, exact Jacobian, LU: one step, and one to confirm */
    double *u = malloc(sizeof *u * (size_t)n), worst = 0;
    sim_get_field(s, 0, u);
    for (int i = 0; i < n; i++) {
        double x = (i + 0.5) / n;
        worst = fmax(worst, fabs(u[i] - sin(M_PI * x) - x * x * x));
    }
    free(u);
    implicit_destroy(q);
    sim_destroy(s);
    program_free(p);
    return worst;
}

static void fourth_order_with_two_conditions(void **state)
{
    (void)state;
    double e1 = biharmonic_error(20, 1), e2 = biharmonic_error(40, 0), e3 = biharmonic_error(80, 0);
    printf("u^(4) = f, u and lap(u) given: errors %.3e %.3e %.3e: orders %.3f %.3f\n", e1, e2, e3, log2(e1 / e2),
           log2(e2 / e3));
    assert_true(fabs(log2(e2 / e3) - 2) < 0.1);
    assert_true(fabs(log2(e1 / e2) - 2) < 0.15);
}

/* Heat from a wall held at 1 into a cold medium, bdf2 at 100x the explicit limit h^2 / (2 D). */
static void heat_from_a_wall_at_100x_the_limit(void **state)
{
    (void)state;
    const int n = 400;
    const double L = 2, D = 1, h = L / n, dt = 100 * h * h / (2 * D), T = 0.1;
    char src[512];
    snprintf(src, sizeof src,
             "mesh grid(nx = %d, Lx = %g)\nparam D = %g\nfield u = 0\neq dt(u) = D*lap(u)\non left: u = 1\n"
             "on right: dn(u) = 0\ntime dt = %.17g, until = %g, scheme = bdf2\n", n, L, D, dt, T);
    pj_problem *pr;
    char *diags = NULL;
    assert_int_equal(pj_problem_compile("wall.pde", src, strlen(src), &pr, &diags), PJ_OK);
    pj_sim *sim;
    char err[512];
    pj_sim_options so = {.backend = PJ_BACKEND_CPU, .single = 0, .threads = 1, .fast_math = 0, .solver_options = NULL};
    assert_int_equal(pj_sim_create(pr, &so, &sim, err, sizeof err), PJ_OK);
    assert_int_equal(pj_sim_advance(sim, dt, T, err, sizeof err), PJ_OK);
    double *u = malloc(sizeof *u * n), worst = 0;
    assert_int_equal(pj_sim_get_field(sim, "u", u), PJ_OK);
    for (int i = 0; i < n; i++) worst = fmax(worst, fabs(u[i] - erfc((i + 0.5) * h / (2 * sqrt(D * T)))));
    printf("heat from a wall, dt = %.3g (100x the explicit limit), %lld steps: max |u - (1 - erf)| = %.3g\n", dt,
           (long long)pj_sim_steps(sim), worst);
    assert_true(worst < 1e-3);
    free(u);
    pj_sim_free(sim);
    pj_problem_free(pr);
}

/* interp and cpu run the same kernels under the same solver: the same numbers, bit for bit. */
static void interp_and_cpu_agree(void **state)
{
    (void)state;
    const char *src = "mesh grid(nx = 24, ny = 20)\nparam D = 0.1\nfield u = exp(-20*((x-0.4)^2+(y-0.5)^2))\n"
                      "field v = 0.2\neq dt(u) = D*lap(u) + u*(1-u)*v\neq dt(v) = div((0.01 + v^2)*grad(v)) - u*v\n"
                      "on left: u = 1 + t\non right: dn(u) = 0\nperiodic y\non left, right: v = 0.2\n"
                      "time dt = 0.05, steps = 4, scheme = bdf2\n";
    double out[2][2][480];
    for (int be = 0; be < 2; be++) {
        pj_problem *pr;
        char *diags = NULL;
        assert_int_equal(pj_problem_compile("c.pde", src, strlen(src), &pr, &diags), PJ_OK);
        pj_sim *sim;
        char err[512];
        pj_sim_options so = {.backend = be ? PJ_BACKEND_CPU : PJ_BACKEND_INTERP, .single = 0, .threads = 1, .fast_math = 0, .solver_options = NULL};
        assert_int_equal(pj_sim_create(pr, &so, &sim, err, sizeof err), PJ_OK);
        assert_int_equal(pj_sim_advance(sim, 0.05, 0.2, err, sizeof err), PJ_OK);
        assert_int_equal(pj_sim_get_field(sim, "u", out[be][0]), PJ_OK);
        assert_int_equal(pj_sim_get_field(sim, "v", out[be][1]), PJ_OK);
        pj_solver_stats st;
        assert_int_equal(pj_sim_solver_stats(sim, &st), PJ_OK);
        assert_int_equal(st.steps, 4);
        assert_true(st.newton >= 4 && st.linear >= st.newton);
        pj_sim_free(sim);
        pj_problem_free(pr);
    }
    assert_memory_equal(out[0], out[1], sizeof out[0]);
}

/* What the Jacobian reads (derive_reads, program_jacobian(p)->reads) decides how the solver uses it: a linear
 * problem, none of the unknowns; a constant Jacobian, nothing but constants, params and spacings. */
static void what_the_jacobian_reads(void **state)
{
    (void)state;
    static const struct { const char *rhs; unsigned reads; int symmetric; } cases[] = {
        {"D*lap(u)", DERIVE_READS_PARAM, 1},
        {"lap(u) - 3*u + x", 0, 1},
        {"(1 + t)*lap(u)", DERIVE_READS_TIME, 0},   /* symmetric, but not by derive_symmetric's rule */
        {"c*lap(u)", DERIVE_READS_FIELD, 0},        /* c(i) / h^2 against c(i+1) / h^2 */
        {"lap(u) + u - u^3", DERIVE_READS_UNKNOWN, 1}, /* the state on the diagonal only */
        {"div((1 + u^2)*grad(u))", DERIVE_READS_UNKNOWN, 0},
        {"lap(u) + floor(u)", DERIVE_READS_UNKNOWN, 1},          /* constant derivative, F not affine */
        {"lap(u) + (u > 0.5 ? 1 : 0)", DERIVE_READS_UNKNOWN, 1}, /* a condition on u */
        {"lap(u) + (x > 0.5 ? 2 : 1)*u", 0, 1},                  /* a condition on x only */
        {"lap(u) - div(2*u)", 0, 0},                           /* advection: not symmetric */
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        char src[512];
        snprintf(src, sizeof src, "mesh grid(nx = 16)\nparam D = 2\nfield u = sin(pi*x)\nfield c = 1 + x\n"
                 "eq dt(u) = %s\non all: u = 0\ntime dt = 0.01, steps = 1, scheme = beuler\n", cases[c].rhs);
        pj_program *p = compile_as(src, -1);
        assert_non_null(p);
        const pj_jacobian *J = program_jacobian(p, NULL, 0);
        assert_non_null(J);
        if (J->reads != cases[c].reads)
            fail_msg("dt(u) = %s: the Jacobian reads %#x, expected %#x", cases[c].rhs, J->reads, cases[c].reads);
        if (J->symmetric != cases[c].symmetric)
            fail_msg("dt(u) = %s: symmetric %d, expected %d", cases[c].rhs, J->symmetric, cases[c].symmetric);
        program_free(p);
    }
}

/* 2D heat with bdf2 and fixed steps of dt, `coef` times lap(u), to t = 10 dt: the final u, the
 * solver's counts; D changed to 2 after 5 steps when set_d. */
static void heat_2d_run(const char *coef, const char *options, int set_d, double *u, pj_solver_stats *st)
{
    char src[512];
    snprintf(src, sizeof src, "mesh grid(nx = 32, ny = 24)\nparam D = 1\nfield u = 0\neq dt(u) = %s*lap(u)\n"
             "on left: u = 1\non bottom: u = x\ntime dt = 0.002, until = 0.02, scheme = bdf2\n", coef);
    api_sim a = api_sim_start("h.pde", src, options);
    char err[512];
    pj_status rc = pj_sim_advance(a.sim, 0.002, 0.01, err, sizeof err);
    if (set_d && rc == PJ_OK) rc = pj_sim_set_param(a.sim, "D", 2);
    if (rc == PJ_OK) rc = pj_sim_advance(a.sim, 0.002, 0.02, err, sizeof err);
    if (rc) fprintf(stderr, "%s\n", err);
    assert_int_equal(rc, PJ_OK);
    api_sim_end(&a, u, st);
}

/* A linear problem takes one linear solve a step, and a Jacobian that depends on nothing that
 * changes is assembled once: the same result as assembling it at every step (a coefficient that
 * reads t but is 1 to the last bit makes the solver assemble it each time) and, to the solver's
 * tolerance, as Newton's method; a param changed between steps makes it assemble again. */
static void linear_problem_assembles_its_jacobian_once(void **state)
{
    (void)state;
    enum { N = 32 * 24 };
    static double once[N], every[N], newton[N];
    pj_solver_stats a, b, c;
    heat_2d_run("D", "-ksp_type cg -pc_type icc", 0, once, &a); /* the reference reads t: not CG by default */
    heat_2d_run("(D + 1e-300*t)", "-ksp_type cg -pc_type icc", 0, every, &b);
    heat_2d_run("D", "-snes_type newtonls", 0, newton, &c);
    printf("linear heat, 10 bdf2 steps: %lld Jacobians, %lld Newton, %lld linear iterations; coefficient with t: "
           "%lld Jacobians; Newton's method: %lld Newton iterations, %lld Jacobians\n", (long long)a.jacobians,
           (long long)a.newton, (long long)a.linear, (long long)b.jacobians, (long long)c.newton, (long long)c.jacobians);
    assert_int_equal(a.steps, 10);
    assert_int_equal(a.jacobians, 1);
    /* one linear solve per step, and one more in the first: TSBDF starts bdf2 with an extra solve of order 1
       (every solve is counted, TS's own totals: -snes_monitor shows 11 solves for these 10 steps) */
    assert_int_equal(a.newton, 11);
    assert_true(b.jacobians >= b.steps); /* at every linear solve (bdf2's start takes one more) */
    assert_int_equal(c.jacobians, 1);
    assert_int_equal(c.newton, 22); /* Newton: the second iteration confirms the first */
    double diff_every = 0, diff_newton = 0, top = 0;
    for (int i = 0; i < N; i++) {
        diff_every = fmax(diff_every, fabs(once[i] - every[i]));
        diff_newton = fmax(diff_newton, fabs(once[i] - newton[i]));
        top = fmax(top, fabs(once[i]));
    }
    printf("  max |u - u (assembled every step)| = %.3g, max |u - u (Newton)| = %.3g, max |u| = %.3g\n", diff_every,
           diff_newton, top);
    assert_true(diff_every <= 1e-14 * top);
    assert_true(diff_newton <= 1e-7 * top);
    assert_true(top > 0.5);

    heat_2d_run("D", "-ksp_type cg -pc_type icc", 1, once, &a);
    heat_2d_run("(D + 1e-300*t)", "-ksp_type cg -pc_type icc", 1, every, &b);
    diff_every = 0;
    for (int i = 0; i < N; i++) diff_every = fmax(diff_every, fabs(once[i] - every[i]));
    printf("  D set to 2 after 5 steps: %lld Jacobians; max |u - u (assembled every step)| = %.3g\n",
           (long long)a.jacobians, diff_every);
    assert_int_equal(a.jacobians, 2);
    assert_true(diff_every <= 1e-14 * top);
}

/* 2D heat from a wall (u = 1 on the left, 64 x 64 cells), bdf2 with adapt = 1e-4 to t = 0.02, `coef`
 * times lap(u), with these solver options: the final u, the solver's counts. */
static void wall_heat_adaptive(const char *coef, const char *options, double *u, pj_solver_stats *st)
{
    char src[512];
    snprintf(src, sizeof src, "mesh grid(nx = 64, ny = 64)\nfield u = 0\neq dt(u) = %s*lap(u)\non left: u = 1\n"
             "time dt = 1e-6, until = 0.02, scheme = bdf2, adapt = 1e-4\n", coef);
    api_sim a = api_sim_start("w.pde", src, options);
    char err[512];
    pj_status rc = pj_sim_advance(a.sim, 0.02, 0.02, err, sizeof err);
    if (rc) fprintf(stderr, "%s\n", err);
    assert_int_equal(rc, PJ_OK);
    api_sim_end(&a, u, st);
}

/* Under adapt, a linear problem's CG solve stops at a third of the step controller's tolerance
 * (Varah's bound, step_tolerance) instead of Newton's 1e-8 reduction: fewer linear iterations, the
 * same steps, and the same answer within a tenth of the tolerance. And a Jacobian assembled
 * once is shifted on its diagonal only at every step: under adapt the shift changes at every step,
 * and the answer is the one of assembling, negating and shifting the whole matrix at each (a
 * coefficient that reads t but is 1 to the last bit), to rounding. */
static void adaptive_linear_solve_to_the_step_accuracy(void **state)
{
    (void)state;
    enum { N = 64 * 64 };
    static double def[N], tight[N], once[N], every[N];
    pj_solver_stats a, b, c, d;
    wall_heat_adaptive("1", NULL, def, &a);
    wall_heat_adaptive("1", "-ksp_rtol 1e-8", tight, &b); /* a tolerance named: Newton's rule */
    double diff = 0, top = 0;
    for (int i = 0; i < N; i++) {
        diff = fmax(diff, fabs(def[i] - tight[i]));
        top = fmax(top, fabs(tight[i]));
    }
    printf("wall heat, bdf2 adapt 1e-4: %lld steps, %lld linear iterations; with -ksp_rtol 1e-8: %lld steps, %lld "
           "linear iterations; max |u - u_tight| = %.3g (max |u| %.3g)\n", (long long)a.steps, (long long)a.linear,
           (long long)b.steps, (long long)b.linear, diff, top);
    assert_int_equal(a.steps, b.steps);
    assert_true(a.linear < 0.6 * b.linear);
    assert_true(diff <= 0.1 * 1e-4 * top);
    assert_true(top > 0.5);

    /* -pj_lin_fraction 0.1 (the fraction before): more iterations than the default's third, the
     * same steps, the same answer within a tenth of the tolerance */
    static double tenth[N];
    pj_solver_stats e;
    wall_heat_adaptive("1", "-pj_lin_fraction 0.1", tenth, &e);
    diff = 0;
    for (int i = 0; i < N; i++) diff = fmax(diff, fabs(tenth[i] - tight[i]));
    printf("  -pj_lin_fraction 0.1: %lld steps, %lld linear iterations; max |u - u_tight| = %.3g\n",
           (long long)e.steps, (long long)e.linear, diff);
    assert_int_equal(e.steps, b.steps);
    assert_true(e.linear > a.linear);
    assert_true(diff <= 0.1 * 1e-4 * top);

    wall_heat_adaptive("1", "-ksp_type cg -pc_type icc -ksp_rtol 1e-10", once, &c);
    wall_heat_adaptive("(1 + 1e-300*t)", "-ksp_type cg -pc_type icc -ksp_rtol 1e-10", every, &d);
    diff = 0;
    for (int i = 0; i < N; i++) diff = fmax(diff, fabs(once[i] - every[i]));
    printf("  Jacobian assembled once, shifted on its diagonal: %lld Jacobians, %lld steps; assembled at every step: "
           "%lld Jacobians; max |u - u_every| = %.3g\n", (long long)c.jacobians, (long long)c.steps, (long long)d.jacobians, diff);
    assert_int_equal(c.jacobians, 1);
    assert_true(d.jacobians >= d.steps);
    assert_int_equal(c.steps, d.steps);
    assert_true(diff <= 1e-14 * top);
}

/* A nonlinear problem assembles its Jacobian at every Newton iteration. */
static void nonlinear_problem_assembles_at_every_iteration(void **state)
{
    (void)state;
    const char *src = "mesh grid(nx = 32, ny = 32)\nfield u = cos(3*pi*x)*cos(2*pi*y)\neq dt(u) = 0.001*lap(u) + u - u^3\n"
                      "on all: dn(u) = 0\ntime dt = 0.2, steps = 3, scheme = beuler\n";
    pj_problem *pr;
    char *diags = NULL, err[512];
    assert_int_equal(pj_problem_compile("ac.pde", src, strlen(src), &pr, &diags), PJ_OK);
    pj_sim *sim;
    pj_sim_options so = {.backend = PJ_BACKEND_CPU, .threads = 1};
    assert_int_equal(pj_sim_create(pr, &so, &sim, err, sizeof err), PJ_OK);
    assert_int_equal(pj_sim_advance(sim, 0.2, 0.6, err, sizeof err), PJ_OK);
    pj_solver_stats st;
    assert_int_equal(pj_sim_solver_stats(sim, &st), PJ_OK);
    printf("Allen-Cahn, 3 steps: %lld Newton iterations, %lld Jacobians\n", (long long)st.newton, (long long)st.jacobians);
    assert_true(st.newton >= 6);
    assert_int_equal(st.jacobians, st.newton);
    pj_sim_free(sim);
    pj_problem_free(pr);
}

/* Allen-Cahn on 32 x 32 cells, 3 backward Euler steps of dt with these solver options: the final u
 * into u; the run's status. */
static pj_status allen_cahn_run(double dt, const char *options, double *u, pj_solver_stats *st)
{
    const char *src = "mesh grid(nx = 32, ny = 32)\nfield u = 0.1*cos(3*pi*x)*cos(2*pi*y)\n"
                      "eq dt(u) = 0.001*lap(u) + u - u^3\non all: dn(u) = 0\ntime dt = 1, steps = 3, scheme = beuler\n";
    api_sim a = api_sim_start("ac.pde", src, options);
    char err[512];
    pj_status rc = pj_sim_advance(a.sim, dt, 3 * dt, err, sizeof err);
    api_sim_end(&a, rc == PJ_OK ? u : NULL, rc == PJ_OK ? st : NULL);
    return rc;
}

/* A symmetric Jacobian gets conjugate gradients with ICC by default: on Allen-Cahn (the state on
 * the diagonal only) the same result as GMRES with ILU to Newton's tolerance. With dt = 1.1 the
 * growth term (1 - 3u^2, near 1 where u is small) outgrows 1/dt, shift I - J is indefinite, and CG
 * with ICC, asked for by name, fails in the first step; the default gives way to GMRES there: the
 * same result as GMRES. */
static void symmetric_jacobian_gets_cg(void **state)
{
    (void)state;
    enum { N = 32 * 32 };
    static double cg[N], gmres[N];
    pj_solver_stats a, b;
    assert_int_equal(allen_cahn_run(1.1, "-ksp_type cg -pc_type icc", cg, &a), PJ_ERR_RUN);
    for (int big = 0; big < 2; big++) {
        double dt = big ? 1.1 : 0.2, diff = 0, top = 0;
        assert_int_equal(allen_cahn_run(dt, NULL, cg, &a), PJ_OK);
        assert_int_equal(allen_cahn_run(dt, "-ksp_type gmres -pc_type ilu", gmres, &b), PJ_OK);
        for (int i = 0; i < N; i++) {
            diff = fmax(diff, fabs(cg[i] - gmres[i]));
            top = fmax(top, fabs(gmres[i]));
        }
        printf("Allen-Cahn, dt = %g: default %lld Newton, %lld linear iterations; GMRES/ILU %lld, %lld; max |u - u_gmres| = %.3g "
               "(max |u| %.3g)\n", dt, (long long)a.newton, (long long)a.linear, (long long)b.newton, (long long)b.linear, diff, top);
        assert_true(diff <= 1e-7 * top);
        assert_true(top > 0.01);
    }
}

/* Allen-Cahn's Jacobian changes on its diagonal only: assembled once, then updated there. The
 * same result, to rounding, as assembling it at every Newton iteration (a diffusivity that reads t
 * but is 0.001 to the last bit makes the solver assemble every time). */
static void diagonal_update_equals_assembly(void **state)
{
    (void)state;
    static const char *rhs[2] = {"0.001*lap(u) + u - u^3", "(0.001 + 1e-300*t)*lap(u) + u - u^3"};
    enum { N = 32 * 32 };
    static double u[2][N];
    double secs[2];
    for (int v = 0; v < 2; v++) {
        char src[512];
        snprintf(src, sizeof src, "mesh grid(nx = 32, ny = 32)\nfield u = cos(3*pi*x)*cos(2*pi*y)\neq dt(u) = %s\n"
                 "on left: u = 0.5\non right, top, bottom: dn(u) = 0\ntime dt = 0.2, steps = 3, scheme = bdf2\n", rhs[v]);
        pj_program *p = compile_as(src, -1);
        assert_non_null(p);
        const pj_jacobian *J = program_jacobian(p, NULL, 0);
        assert_non_null(J);
        printf("dt(u) = %s: off the diagonal the Jacobian reads %#x\n", rhs[v], J->offdiag_reads);
        assert_int_equal(J->offdiag_reads, v ? DERIVE_READS_TIME : 0);
        program_free(p);
        pj_problem *pr;
        char *diags = NULL, err[512];
        assert_int_equal(pj_problem_compile("ac.pde", src, strlen(src), &pr, &diags), PJ_OK);
        pj_sim *sim;
        pj_sim_options so = {.backend = PJ_BACKEND_CPU, .threads = 1, .solver_options = "-ksp_type cg -pc_type icc"};
        assert_int_equal(pj_sim_create(pr, &so, &sim, err, sizeof err), PJ_OK);
        assert_int_equal(pj_sim_advance(sim, 0.2, 0.6, err, sizeof err), PJ_OK);
        assert_int_equal(pj_sim_get_field(sim, "u", u[v]), PJ_OK);
        pj_solver_stats st;
        assert_int_equal(pj_sim_solver_stats(sim, &st), PJ_OK);
        assert_true(st.jacobians >= st.newton);
        secs[v] = st.seconds_jacobian / (double)st.jacobians;
        printf("  %lld Newton iterations, %lld Jacobians, %.3g ms each\n", (long long)st.newton, (long long)st.jacobians,
               1e3 * secs[v]);
        pj_sim_free(sim);
        pj_problem_free(pr);
    }
    double diff = 0;
    for (int i = 0; i < N; i++) diff = fmax(diff, fabs(u[0][i] - u[1][i]));
    printf("  max |u (diagonal updated) - u (assembled)| = %.3g\n", diff);
    assert_true(diff <= 1e-12);
}

/* Each simulation's solver options are its own: an LU solve in one leaves the next on GMRES. */
static void options_stay_with_their_simulation(void **state)
{
    (void)state;
    const char *base = "mesh grid(nx = 40, ny = 40)\nfield u = sin(pi*x)*sin(pi*y)\neq dt(u) = lap(u)\non all: u = 0\n"
                       "time dt = 0.01, steps = 2, scheme = beuler\n";
    int64_t linear[3];
    for (int i = 0; i < 3; i++) {
        char src[512];
        snprintf(src, sizeof src, "%s%s", base, i == 1 ? "solver linear = preonly, pc = lu\n" : "");
        pj_problem *pr;
        char *diags = NULL, err[512];
        assert_int_equal(pj_problem_compile("o.pde", src, strlen(src), &pr, &diags), PJ_OK);
        pj_sim *sim;
        pj_sim_options so = {.backend = PJ_BACKEND_INTERP, .single = 0, .threads = 1, .fast_math = 0, .solver_options = i == 2 ? "-ksp_type preonly -pc_type lu" : NULL};
        assert_int_equal(pj_sim_create(pr, &so, &sim, err, sizeof err), PJ_OK);
        assert_int_equal(pj_sim_advance(sim, 0.01, 0.02, err, sizeof err), PJ_OK);
        pj_solver_stats st;
        assert_int_equal(pj_sim_solver_stats(sim, &st), PJ_OK);
        linear[i] = st.linear / (st.newton > 0 ? st.newton : 1);
        pj_sim_free(sim);
        pj_problem_free(pr);
    }
    printf("linear iterations per Newton iteration: default %lld, solver statement lu %lld, --solver-options lu %lld\n",
           (long long)linear[0], (long long)linear[1], (long long)linear[2]);
    assert_true(linear[0] > 3);
    assert_true(linear[1] <= 1);
    assert_true(linear[2] <= 1);
}

static int run_cli(const char *pde, const char *args, char **output)
{
    char path[512], cmd[2048];
    snprintf(path, sizeof path, "%s/p.pde", tu_dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(pde, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "cd %s && PDEJIT_CACHE_DIR=%s/cache %s run p.pde --quiet %s", tu_dir, tu_dir, PJ_BINARY, args);
    return tu_run(cmd, output);
}

static const char *stiff = "mesh grid(nx = 200, Lx = 1)\nparam D = 1\nfield u = sin(pi*x)\neq dt(u) = D*lap(u)\n"
                           "on all: u = 0\ntime dt = 0.001, until = 0.1, scheme = bdf2\n";

static void command_line(void **state)
{
    (void)state;
    char *out = NULL;
    /* the contract's example runs */
    assert_int_equal(run_cli(stiff, "--dump d.csv", &out), 0);
    free(out);
    /* explicitly it is refused, with the message of LANGUAGE.md 7, and runs when told to */
    assert_int_equal(run_cli(stiff, "--scheme rk4", &out), 2);
    assert_non_null(strstr(out, "p.pde: dt = 0.001 exceeds the explicit stability limit (about 1.74e-05) of rk4; "
                                "use a smaller dt or an implicit scheme"));
    free(out);
    assert_int_equal(run_cli(stiff, "--scheme euler", &out), 2);
    assert_non_null(strstr(out, "(about 1.25e-05) of euler"));
    free(out);
    assert_int_equal(run_cli(stiff, "--scheme euler --no-stability-check --steps 3", &out), 0);
    free(out);
    /* at the limit it runs: h^2 / (2 D) for euler */
    assert_int_equal(run_cli(stiff, "--scheme euler --dt 1.25e-5 --steps 3", &out), 0);
    free(out);
    /* --verbose prints the iterations per step */
    assert_int_equal(run_cli(stiff, "--verbose --steps 2", &out), 0);
    assert_non_null(strstr(out, "pdejit: step 2, t = 0.002, dt = 0.001: "));
    assert_non_null(strstr(out, "Newton, "));
    free(out);
    /* Newton that does not converge: exit 1 naming the step's time and the residual */
    const char *hard = "mesh grid(nx = 30)\nfield u = 0\neq dt(u) = div((1 + u^4)*grad(u)) + 50\non all: u = 0\n"
                       "time dt = 1, steps = 2, scheme = beuler\nsolver rtol = 1e-12, max_it = 2\n";
    assert_int_equal(run_cli(hard, "", &out), 1);
    assert_non_null(strstr(out, "pdejit: run failed: Newton did not converge in the step from t = 0: residual "));
    assert_non_null(strstr(out, "after 2 iterations (DIVERGED_NONLINEAR_SOLVE)"));
    free(out);
    /* bad solver options are the user's error: exit 2 as the docs say (it was 1, as a failed run) */
    /* under LeakSanitizer: PETSc's error returns leak temporaries (tests/petsc_error_lsan.supp), in
       every run below whose options PETSc refuses */
    const char *lsan = getenv("LSAN_OPTIONS");
    char *lsan_kept = lsan ? strdup(lsan) : NULL;
    setenv("LSAN_OPTIONS", "suppressions=" PJ_SOURCE_DIR "/tests/petsc_error_lsan.supp:print_suppressions=0", 1);
    assert_int_equal(run_cli(stiff, "--solver-options '-ksp_type nosuchsolver' --steps 1", &out), 2);
    assert_string_equal(out, "pdejit: p.pde: the solver's options (the solver statement, --solver-options) were "
                             "refused: PETSc error 86 (Unknown type. Check for miss-spelling or missing package: "
                             "https://petsc.org/release/install/install/#external-packages): Unable to find requested "
                             "KSP type nosuchsolver\n");
    free(out);
    /* an option without its value */
    assert_int_equal(run_cli(stiff, "--solver-options '-ksp_type' --steps 1", &out), 2);
    assert_non_null(strstr(out, "pdejit: p.pde: the solver's options (the solver statement, --solver-options) were refused"));
    free(out);
    /* malformed strings, which PETSc's reader dropped without a word (the run went on with its
       defaults): refused before anything runs */
    assert_int_equal(run_cli(stiff, "--solver-options 'ksp_type cg' --steps 1", &out), 2);
    assert_string_equal(out, "pdejit: --solver-options \"ksp_type cg\": 'ksp_type' is not an option (options start "
                             "with '-')\n");
    free(out);
    assert_int_equal(run_cli(stiff, "--solver-options '-ksp_type cg gmres' --steps 1", &out), 2);
    assert_string_equal(out, "pdejit: --solver-options \"-ksp_type cg gmres\": 'gmres' is not an option (options "
                             "start with '-'), and the option before it, -ksp_type, takes one value\n");
    free(out);
    assert_int_equal(run_cli(stiff, "--solver-options '-ksp_type \"cg' --steps 1", &out), 2);
    assert_string_equal(out, "pdejit: --solver-options \"-ksp_type \"cg\": the quote opened at '\"cg' is not closed\n");
    free(out);
    assert_int_equal(run_cli(stiff, "--solver-options '--ksp_type cg' --steps 1", &out), 2);
    assert_string_equal(out, "pdejit: --solver-options \"--ksp_type cg\": '--ksp_type' is not an option's name (-NAME: "
                             "letters, digits and underscores)\n");
    free(out);
    /* well formed: a negative number is a value, a flag takes none */
    assert_int_equal(run_cli(stiff, "--solver-options '-ksp_type cg -pc_type jacobi -snes_converged_reason "
                                    "-ksp_atol 1e-30' --steps 1", &out), 0);
    free(out);
    /* on an explicit scheme nothing takes them: said, not silently passed */
    assert_int_equal(run_cli(stiff, "--scheme euler --dt 1e-5 --steps 1 --solver-options '-ksp_type cg'", &out), 0);
    assert_string_equal(out, "pdejit: warning: p.pde: --solver-options are not used: the scheme is explicit (no PETSc "
                             "solver)\n");
    free(out);
    /* the GPU back end says it cannot yet */
    assert_int_equal(run_cli(stiff, "--backend cuda", &out), 2);
    assert_non_null(strstr(out, "the cuda back end cannot solve implicit schemes or steady problems yet (bdf2): use --backend cpu"));
    free(out);
    assert_int_equal(run_cli(stiff, "--precision single", &out), 1);
    assert_non_null(strstr(out, "implicit schemes run in double precision"));
    free(out);
    if (lsan_kept) setenv("LSAN_OPTIONS", lsan_kept, 1);
    else unsetenv("LSAN_OPTIONS");
    free(lsan_kept);
}

/* The line of `out` that matches `pattern`, where '#' stands for a number (digits, '.', 'e', signs;
 * or nan, inf), the rest exactly; NULL when none does. */
static const char *line_like(const char *out, const char *pattern)
{
    for (const char *ln = out; ln && *ln; ln = strchr(ln, '\n') ? strchr(ln, '\n') + 1 : NULL) {
        const char *o = ln, *q = pattern;
        while (*q && *o && *o != '\n') {
            if (*q == '#') {
                const char *from = o;
                if (!strncmp(o, "nan", 3) || !strncmp(o, "inf", 3)) o += 3;
                else
                    while (strchr("0123456789.e+-", *o) && *o) o++;
                if (o == from) break;
                q++;
            } else if (*q == *o) {
                q++;
                o++;
            } else {
                break;
            }
        }
        if (!*q && (*o == '\n' || !*o)) return ln;
    }
    return NULL;
}

/* The last "N SNES Function norm X" PETSc's -snes_monitor printed, as %.3g. */
static void last_monitor_norm(const char *out, char *buf, size_t len)
{
    const char *at = NULL;
    for (const char *p = strstr(out, "SNES Function norm "); p; p = strstr(p + 1, "SNES Function norm ")) at = p;
    assert_non_null(at);
    snprintf(buf, len, "%.3g", strtod(at + strlen("SNES Function norm "), NULL));
}

/* The run's report (issue 28): every step the scheme took counted (accepted and rejected apart
 * under adapt), the residual the one PETSc's own monitor prints, steady solves in iterations,
 * nothing of a success after a refused or failed run; the options no solver used named. */
static void run_report(void **state)
{
    (void)state;
    char *out = NULL, norm[32], want[256];
    /* a linear step (one linear solve, SNESKSPONLY): the residual was 0, PETSc's monitor says 1e-10 */
    const char *heat = "mesh grid(nx = 200, Lx = 1)\nfield u = sin(pi*x)\neq dt(u) = lap(u)\non all: u = 0\n"
                       "time dt = 0.001, until = 0.1, scheme = beuler\n";
    assert_int_equal(run_cli(heat, "--verbose --steps 1 --solver-options -snes_monitor", &out), 0);
    last_monitor_norm(out, norm, sizeof norm);
    snprintf(want, sizeof want, "pdejit: step 1, t = 0.001, dt = 0.001: 1 Newton, 1 linear iterations, residual %s",
             norm);
    if (!line_like(out, want)) fail_msg("no line '%s' in:\n%s", want, out);
    assert_true(strtod(norm, NULL) > 0);
    assert_non_null(line_like(out, "pdejit: implicit solver: 1 steps accepted, 0 rejected; 1 Newton iterations, 1 "
                                   "linear iterations; Jacobian assembly: 1 in # s"));
    assert_non_null(line_like(out, "pdejit: 1 step to t = 0.001 in # s: # Mcells/s (cpu)"));
    free(out);
    /* a nonlinear step: Newton's last norm */
    const char *ac = "mesh grid(nx = 64, Lx = 1)\nfield u = 0.3*sin(2*pi*x)\neq dt(u) = 0.01*lap(u) + u - u^3\n"
                     "periodic x\ntime dt = 0.5, until = 1, scheme = beuler\n";
    assert_int_equal(run_cli(ac, "--verbose --steps 1 --solver-options -snes_monitor", &out), 0);
    last_monitor_norm(out, norm, sizeof norm);
    snprintf(want, sizeof want, "pdejit: step 1, t = 0.5, dt = 0.5: # Newton, # linear iterations, residual %s", norm);
    if (!line_like(out, want)) fail_msg("no line '%s' in:\n%s", want, out);
    free(out);
    /* steady: Newton's iterations and the residual, no steps, no Mcells/s */
    const char *steady = "mesh grid(nx = 32, ny = 32, Lx = 1, Ly = 1)\nfield u = 0\n"
                         "eq dt(u) = lap(u) + exp(u) - 2 + 8*pi^2*sin(2*pi*x)*sin(2*pi*y)\non all: u = 0\nsteady\n";
    assert_int_equal(run_cli(steady, "--verbose --solver-options -snes_monitor", &out), 0);
    last_monitor_norm(out, norm, sizeof norm);
    snprintf(want, sizeof want, "pdejit: steady solve: 3 Newton iterations, # linear iterations, final residual norm %s; "
             "Jacobian assembly: 3 in # s; # s in all (cpu)", norm);
    if (!line_like(out, want)) fail_msg("no line '%s' in:\n%s", want, out);
    assert_null(strstr(out, "Mcells/s"));
    assert_null(strstr(out, "steps"));
    free(out);
    /* adaptive: the steps the controller took, more than the run loop's stops (4 outputs) */
    const char *ad = "mesh grid(nx = 100, Lx = 1)\nfield u = sin(pi*x)\neq dt(u) = lap(u) - u^3\non all: u = 0\n"
                     "time dt = 1e-4, until = 0.4, scheme = bdf2, adapt = 1e-5\noutput every = 0.1\n";
    assert_int_equal(run_cli(ad, "--verbose --out none", &out), 0);
    long long acc = -1, rej = -1, acc2 = -1, rej2 = -1, sum = 0, sum_rej = 0;
    const char *fin = line_like(out, "pdejit: # steps accepted (# rejected) to t = 0.4 in # s: # Mcells/s (cpu)");
    const char *tot = line_like(out, "pdejit: implicit solver: # steps accepted, # rejected; # Newton iterations, # "
                                     "linear iterations; Jacobian assembly: # in # s");
    if (!fin || !tot) fail_msg("no report in:\n%s", out);
    assert_int_equal(sscanf(fin, "pdejit: %lld steps accepted (%lld rejected)", &acc, &rej), 2);
    assert_int_equal(sscanf(tot, "pdejit: implicit solver: %lld steps accepted, %lld rejected", &acc2, &rej2), 2);
    assert_int_equal(acc, acc2);
    assert_int_equal(rej, rej2);
    assert_true(acc > 4);
    int spans = 0;
    for (const char *l = strstr(out, "pdejit: steps "); l; l = strstr(l + 1, "pdejit: steps ")) {
        long long a0, a1, n, r;
        assert_int_equal(sscanf(l, "pdejit: steps %lld-%lld (%lld accepted, %lld rejected)", &a0, &a1, &n, &r), 4);
        assert_int_equal(a1 - a0 + 1, n);
        assert_int_equal(a0, sum + 1);
        sum += n;
        sum_rej += r;
        spans++;
    }
    assert_int_equal(spans, 4);
    assert_int_equal(sum, acc);
    assert_int_equal(sum_rej, rej);
    printf("adaptive bdf2 to t = 0.4: %lld steps accepted, %lld rejected, in 4 spans\n", acc, rej);
    free(out);
    /* the same counts through the C API: pj_sim_steps is the scheme's accepted steps */
    pj_problem *pr;
    char *diags = NULL, err[512];
    assert_int_equal(pj_problem_compile("ad.pde", ad, strlen(ad), &pr, &diags), PJ_OK);
    pj_sim *sim;
    pj_sim_options so = {.backend = PJ_BACKEND_CPU, .threads = 1};
    assert_int_equal(pj_sim_create(pr, &so, &sim, err, sizeof err), PJ_OK);
    assert_int_equal(pj_sim_advance(sim, 1e-4, 0.4, err, sizeof err), PJ_OK);
    pj_solver_stats st;
    assert_int_equal(pj_sim_solver_stats(sim, &st), PJ_OK);
    assert_int_equal(pj_sim_steps(sim), st.steps);
    assert_true(st.steps > 4); /* one span, the controller's steps (the run above also landed on its outputs) */
    assert_true(st.adaptive && !st.steady && st.last_dt > 0);
    pj_sim_free(sim);
    pj_problem_free(pr);
    /* a resumed run counts its own steps and iterations, numbered on from the checkpoint's */
    const char *be = "mesh grid(nx = 50, Lx = 1)\nfield u = sin(pi*x)\neq dt(u) = lap(u)\non all: u = 0\n"
                     "time dt = 0.01, until = 0.1, scheme = beuler\n";
    assert_int_equal(run_cli(be, "--out be.out --checkpoint-every 0.05 --until 0.05", &out), 0);
    free(out);
    assert_int_equal(run_cli(be, "--out be.out --resume be.out/checkpoint.pjc --verbose", &out), 0);
    assert_non_null(line_like(out, "pdejit: step 6, t = 0.06, dt = 0.01: 1 Newton, 1 linear iterations, residual #"));
    assert_null(strstr(out, "pdejit: step 5,"));
    assert_non_null(line_like(out, "pdejit: implicit solver: 5 steps accepted, 0 rejected; 5 Newton iterations, 5 "
                                   "linear iterations; Jacobian assembly: 1 in # s"));
    assert_non_null(line_like(out, "pdejit: 5 steps to t = 0.1 in # s: # Mcells/s (cpu), output in be.out"));
    free(out);
    /* refused: the message, and no statistics */
    assert_int_equal(run_cli(heat, "--verbose --scheme rk4", &out), 2);
    assert_non_null(strstr(out, "exceeds the explicit stability limit"));
    assert_null(strstr(out, "Mcells/s"));
    assert_null(strstr(out, "steps to t"));
    free(out);
    /* failed: the failure, no statistics of a success */
    const char *hard = "mesh grid(nx = 30)\nfield u = 0\neq dt(u) = div((1 + u^4)*grad(u)) + 50\non all: u = 0\n"
                       "time dt = 1, steps = 2, scheme = beuler\nsolver rtol = 1e-12, max_it = 2\n";
    assert_int_equal(run_cli(hard, "--verbose", &out), 1);
    assert_non_null(strstr(out, "pdejit: run failed: Newton did not converge"));
    assert_null(strstr(out, "implicit solver:"));
    assert_null(strstr(out, "steps to t"));
    free(out);
    /* options no solver used: named after the run; --strict-options makes them an error */
    assert_int_equal(run_cli(heat, "--steps 2 --solver-options '-ksp_typo cg'", &out), 0);
    assert_string_equal(out, "pdejit: warning: p.pde: PETSc option that no solver used: -ksp_typo (misspelt, or for a "
                             "solver this run does not have)\n");
    free(out);
    assert_int_equal(run_cli(heat, "--steps 2 --strict-options --solver-options '-ksp_typo cg -snes_typo'", &out), 2);
    assert_string_equal(out, "pdejit: p.pde: PETSc options that no solver used (--strict-options): -ksp_typo -snes_typo\n");
    free(out);
    /* used ones, those read only at the first solve (the preconditioner's) too: nothing said */
    assert_int_equal(run_cli(heat, "--steps 2 --strict-options --solver-options '-ksp_type gmres -pc_type ilu "
                                   "-pc_factor_levels 2 -ts_max_snes_failures 3'", &out), 0);
    assert_string_equal(out, "");
    free(out);
    /* -ts_ options of a steady solve: no TS reads them */
    assert_int_equal(run_cli(steady, "--solver-options '-ts_bdf_order 3'", &out), 0);
    assert_string_equal(out, "pdejit: warning: p.pde: PETSc option that no solver used: -ts_bdf_order (misspelt, or "
                             "for a solver this run does not have)\n");
    free(out);
    /* imex with no implicit(...) term: said once */
    assert_int_equal(run_cli(heat, "--scheme imex --steps 2", &out), 0);
    assert_string_equal(out, "pdejit: note: p.pde: imex: the problem has no implicit(...) term: every term is taken "
                             "explicitly (ARKIMEX3's explicit half), with a linear solve of the empty implicit part at "
                             "each stage; an explicit scheme (rk3) takes the same terms without the solves\n");
    free(out);
}

/* A steady problem whose Jacobian has an all-zero row (dF/du = 0 everywhere): PETSc refuses it in
 * the multigrid smoother ("Zero diagonal on row 0"); the run fails with PETSc's message and exit
 * status 1, and the solver is destroyed without a crash (it segfaulted in implicit_destroy, rc 139). */
static void zero_jacobian_row_fails_cleanly(void **state)
{
    (void)state;
    char *out = NULL;
    const char *zero = "mesh grid(nx = 64, ny = 64)\nfield u = 0\neq dt(u) = 0*u + 1\nsteady\n";
    assert_int_equal(run_cli(zero, "", &out), 1);
    assert_string_equal(out, "pdejit: run failed: the steady solve failed: PETSc error 75 (Arguments are incompatible): "
                             "Zero diagonal on row 0\n");
    free(out);
}

/* Reads a CSV of numbers after its header line into rows of `cols` values; returns the rows. */
static int read_csv(const char *path, double *v, int cols, int max_rows)
{
    char *csv = tu_read_file(path, NULL);
    assert_non_null(csv);
    int rows = 0;
    for (char *line = strchr(csv, '\n'); line && line[1] && rows < max_rows; line = strchr(line + 1, '\n'), rows++) {
        char *q = line + 1;
        for (int c = 0; c < cols; c++) {
            char *end;
            v[rows * cols + c] = strtod(q, &end);
            assert_true(end != q);
            q = *end == ',' ? end + 1 : end;
        }
    }
    free(csv);
    return rows;
}

/* FiPy's examples/diffusion/nthOrder/input4thOrder1D.py as samples/implicit/fourth_order_1d.pde:
 * u'''' = 0 on [0, 1000], u(0) = 2, u''(0) = 4, u'(L) = 1, u'''(L) = -3. FiPy's doctest: every cell
 * within a relative 1e-4 (numpy's allclose, atol 1e-8) of the cubic it states. The values reach
 * 1e9, so the Newton step is far longer than PETSc's default cap of 1e8 on a step. */
static void fipy_fourth_order_1d(void **state)
{
    (void)state;
    char cmd[1024], *out = NULL;
    snprintf(cmd, sizeof cmd, "cd %s && PDEJIT_CACHE_DIR=%s/cache %s run %s/samples/implicit/fourth_order_1d.pde --quiet --dump f4.csv",
             tu_dir, tu_dir, PJ_BINARY, PJ_SOURCE_DIR);
    int rc = tu_run(cmd, &out);
    if (rc) fail_msg("exit %d:\n%s", rc, out ? out : "");
    free(out);
    snprintf(cmd, sizeof cmd, "%s/f4.csv", tu_dir);
    static double v[2 * 600];
    int rows = read_csv(cmd, v, 2, 600);
    assert_int_equal(rows, 500);
    const double a1 = 2, a2 = 1, a3 = 4, a4 = -3, L = 1000;
    double worst = 0;
    int outside = 0;
    for (int i = 0; i < rows; i++) {
        double x = v[2 * i], u = v[2 * i + 1];
        assert_true(fabs(x - (i + 0.5) * 2) < 1e-9);
        double exact = a4 / 6 * x * x * x + a3 / 2 * x * x + (a2 - a4 / 2 * L * L - a3 * L) * x + a1;
        worst = fmax(worst, fabs(u - exact) / fabs(exact));
        if (!(fabs(u - exact) <= 1e-8 + 1e-4 * fabs(exact))) outside++;
    }
    printf("FiPy's input4thOrder1D: 500 cells, max |u - exact| / |exact| = %.3g (FiPy's bound 1e-4)\n", worst);
    assert_int_equal(outside, 0);
    assert_true(worst < 1e-4);
}

/* FiPy's examples/cahnHilliard/mesh2D.py as samples/implicit/cahn_hilliard_fipy.pde, on the
 * doctest's 20 x 20 cells of 0.25, bdf2 with adapt to t = 1000. FiPy's doctest: phi separates,
 * max > 0.7 and min < 0.3. Also: the mean is conserved (zero-flux sides), the free energy never
 * rises (a gradient flow), and the adaptive steps are fewer than FiPy's schedule's (about 730). */
static void fipy_cahn_hilliard_2d(void **state)
{
    (void)state;
    char path[512], cmd[2048], *out = NULL;
    snprintf(path, sizeof path, "%s/samples/implicit/cahn_hilliard_fipy.pde", PJ_SOURCE_DIR);
    char *src = tu_read_file(path, NULL);
    assert_non_null(src);
    const char *mesh = "nx = 100, ny = 100, Lx = 25, Ly = 25", *small = "nx = 20, ny = 20, Lx = 5, Ly = 5";
    char *m = strstr(src, mesh);
    assert_non_null(m);
    snprintf(path, sizeof path, "%s/ch.pde", tu_dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "%.*s%s%s", (int)(m - src), src, small, m + strlen(mesh));
    fclose(f);
    free(src);
    snprintf(cmd, sizeof cmd, "cd %s && PDEJIT_CACHE_DIR=%s/cache %s run ch.pde --verbose --out ch.out", tu_dir, tu_dir, PJ_BINARY);
    int rc = tu_run(cmd, &out);
    if (rc) fail_msg("exit %d:\n%s", rc, out ? out : "");
    long long steps = -1;
    const char *st = strstr(out, "implicit solver: ");
    assert_non_null(st);
    assert_int_equal(sscanf(st, "implicit solver: %lld steps", &steps), 1);
    free(out);
    snprintf(path, sizeof path, "%s/ch.out/monitor.csv", tu_dir);
    static double v[6 * 200]; /* t, step, high, low, avg, energy */
    int rows = read_csv(path, v, 6, 200);
    assert_int_equal(rows, 101);
    double mean0 = v[4], drift = 0, rise = 0, separated = -1;
    for (int r = 1; r < rows; r++) {
        const double *w = v + 6 * r;
        drift = fmax(drift, fabs(w[4] - mean0));
        rise = fmax(rise, w[5] - w[5 - 6]);
        if (separated < 0 && w[2] > 0.7 && w[3] < 0.3) separated = w[0];
    }
    const double *end = v + 6 * (rows - 1);
    printf("FiPy's mesh2D (20 x 20): %lld bdf2 steps to t = %g; separated (max > 0.7, min < 0.3) by t = %g; at the end "
           "max %.4f min %.4f; mean drift %.2g; energy %.4f -> %.4f, largest rise %.2g\n",
           steps, end[0], separated, end[2], end[3], drift, v[5], end[5], rise);
    assert_true(end[0] == 1000);
    assert_true(separated > 10 && separated <= 1000);
    assert_true(end[2] > 0.7 && end[3] < 0.3);
    assert_true(drift < 1e-12);
    assert_true(rise < 1e-12);
    assert_true(end[5] < 0.5 * v[5]);
    assert_true(steps > 0 && steps < 730);
}

/* Runs text `src` (written to NAME.pde in tu_dir) with `options` and dumps its final fields into v
 * (cols per cell); the number of cells. */
static int run_dump(const char *name, const char *src, const char *options, double *v, int cols, int max_rows)
{
    char path[512], cmd[2048], *out = NULL;
    snprintf(path, sizeof path, "%s/%s.pde", tu_dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(src, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "cd %s && PDEJIT_CACHE_DIR=%s/cache %s run %s.pde --quiet --out none --dump %s.csv%s%s%s",
             tu_dir, tu_dir, PJ_BINARY, name, name, options ? " --solver-options '" : "", options ? options : "",
             options ? "'" : "");
    int rc = tu_run(cmd, &out);
    if (rc) fail_msg("%s: exit %d:\n%s", name, rc, out ? out : "");
    free(out);
    snprintf(path, sizeof path, "%s/%s.csv", tu_dir, name);
    return read_csv(path, v, cols, max_rows);
}

/* FiPy's coupled Cahn-Hilliard (examples/cahnHilliard/mesh2DCoupled.py) as
 * samples/implicit/cahn_hilliard_coupled.pde: mu an unknown of its own with the algebraic equation
 * eq 0 = mu - (f'(c) - eps^2 lap(c)). On 40 x 40 cells of 0.25 (FiPy's doctest has 20 x 20, a
 * domain too small for the spinodal instability), 120 backward Euler steps of 1, until c has
 * separated (max > 0.7, min < 0.3, FiPy's doctest's criterion), against the single equation dt(c) = D lap(f'(c) - eps^2 lap(c)) from the same
 * noise: both are the same discrete problem (the inner lap's ghosts, by the zero-flux mirror, are
 * those of mu's), so c agrees to Newton's tolerance: with the defaults (relative 1e-8) and with
 * -snes_rtol 1e-12. And mu at the end is f'(c) - eps^2 lap_h(c) of the final c, computed here from
 * the five-point Laplacian with mirrored ghosts. */
static void fipy_cahn_hilliard_coupled(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/samples/implicit/cahn_hilliard_coupled.pde", PJ_SOURCE_DIR);
    char *src = tu_read_file(path, NULL);
    assert_non_null(src);
    char *small = tu_replaced(src, "nx = 100, ny = 100, Lx = 25, Ly = 25", "nx = 40, ny = 40, Lx = 10, Ly = 10");
    char *coupled = tu_replaced(small, "time dt = exp(-5), until = 1000, scheme = bdf2, adapt = 1e-3",
                                "time dt = 1, until = 120, scheme = beuler");
    char *s1 = tu_replaced(coupled, "field c = 0.5 + 0.1*randn(), mu = 0", "field c = 0.5 + 0.1*randn()");
    char *s2 = tu_replaced(s1, "eq dt(c) = D*lap(mu)\n", "");
    char *single = tu_replaced(s2, "eq 0 = mu - (a^2*c*(1 - c)*(1 - 2*c) - eps^2*lap(c))",
                               "eq dt(c) = D*lap(a^2*c*(1 - c)*(1 - 2*c) - eps^2*lap(c))");
    enum { N = 40, CELLS = N * N };
    static double vc[4 * CELLS], vs[3 * CELLS];
    const char *options[2] = {NULL, "-snes_rtol 1e-12"};
    /* the default Newton tolerance (relative 1e-8) leaves c within 1e-6 over the 120 steps of a
       spinodal instability (2.3e-7 from noise stream 2's initial field, 6e-8 from stream 1's) */
    double bound[2] = {1e-6, 1e-9};
    for (int o = 0; o < 2; o++) {
        assert_int_equal(run_dump("chc", coupled, options[o], vc, 4, CELLS), CELLS);
        assert_int_equal(run_dump("chs", single, options[o], vs, 3, CELLS), CELLS);
        double diff = 0, lo = 1, hi = 0, mu_err = 0, mu_max = 0, h = 0.25;
        for (int i = 0; i < CELLS; i++) {
            diff = fmax(diff, fabs(vc[4 * i + 2] - vs[3 * i + 2]));
            lo = fmin(lo, vc[4 * i + 2]);
            hi = fmax(hi, vc[4 * i + 2]);
            int ix = i % N, iy = i / N;
            double c = vc[4 * i + 2], sum = 0;
            int nb[4][2] = {{ix - 1, iy}, {ix + 1, iy}, {ix, iy - 1}, {ix, iy + 1}};
            for (int k = 0; k < 4; k++) {
                int jx = nb[k][0] < 0 || nb[k][0] >= N ? ix : nb[k][0], jy = nb[k][1] < 0 || nb[k][1] >= N ? iy : nb[k][1];
                sum += vc[4 * (jy * N + jx) + 2] - c;
            }
            double mu = c * (1 - c) * (1 - 2 * c) - sum / (h * h);
            mu_err = fmax(mu_err, fabs(vc[4 * i + 3] - mu));
            mu_max = fmax(mu_max, fabs(mu));
        }
        printf("coupled Cahn-Hilliard (40 x 40, 120 beuler steps of 1, %s): c in [%.4f, %.4f], max |c_coupled - "
               "c_single| = %.3g; max |mu - (f'(c) - lap_h c)| = %.3g (max |mu| %.3g)\n",
               options[o] ? options[o] : "default tolerances", lo, hi, diff, mu_err, mu_max);
        assert_true(hi > 0.7 && lo < 0.3); /* separated, as FiPy's doctest says */
        assert_true(diff < bound[o]);
        assert_true(mu_err < bound[o] * 100 * fmax(1, mu_max));
    }
    free(src);
    free(small);
    free(coupled);
    free(s1);
    free(s2);
    free(single);
}

/* steady with an algebraic unknown: lap(u) + s = 0, 0 = s - 2 on [0, 1], u = 0 at both ends: u = x(1 - x),
 * which the finite-volume scheme gives to its second order (the boundary ghosts). */
static void steady_with_algebraic_unknown(void **state)
{
    (void)state;
    static double v[3 * 64];
    int n = run_dump("sa", "mesh grid(nx = 64)\nfield u = 0, s = 0\neq dt(u) = lap(u) + s\neq 0 = s - 2 - 0*u\n"
                           "on left, right: u = 0\nsteady\n", NULL, v, 3, 64);
    assert_int_equal(n, 64);
    double err = 0, serr = 0;
    for (int i = 0; i < 64; i++) {
        double x = v[3 * i];
        err = fmax(err, fabs(v[3 * i + 1] - x * (1 - x)));
        serr = fmax(serr, fabs(v[3 * i + 2] - 2));
    }
    printf("steady lap(u) + s = 0, 0 = s - 2: max |u - x(1 - x)| = %.3g, max |s - 2| = %.3g\n", err, serr);
    assert_true(err < 1e-3);
    assert_true(serr < 1e-10);
}

static void language_errors(void **state)
{
    (void)state;
    static const struct { const char *text, *message; } cases[] = {
        {"time dt = 0.1, steps = 1, scheme = bdf3\n", "t.pde:4:36: error: unknown scheme 'bdf3' (did you mean 'bdf2'?); schemes are euler, rk2, rk3, rk4, rk23, rk45, beuler, cn, bdf2, imex"},
        {"time dt = 0.1, steps = 1\nsolver rtol = 1e-8\n", "t.pde:5:1: error: the solver statement needs an implicit scheme (beuler, cn, bdf2, imex) or steady; this problem steps explicitly with euler"},
        {"time dt = 0.1, steps = 1, scheme = cn\nsolver pc = multigrid\n", "t.pde:5:13: error: unknown preconditioner 'multigrid'"},
        {"time dt = 0.1, steps = 1, scheme = rk4, adapt = 1e-4\n", "t.pde:4:41: error: adapt needs a scheme with an error estimate: rk23 or rk45 (or an implicit one: beuler, cn, bdf2, imex); rk4 has none"},
        {"time dt = 0.1, steps = 1\nsteady\n", "t.pde:5:1: error: steady replaces the time statement (at line 4): give one of them"},
        {"steady\nsteady\n", "t.pde:5:1: error: a second steady statement (the first is at line 4)"},
        {"eq dt(v) = 2*implicit(lap(v))\nfield v = 0\nsteady\n", "t.pde:4:14: error: implicit(...) must be a term of an equation's right-hand side"},
        {"func g(a) = implicit(a)\nfield v = 0\neq dt(v) = g(v)\nsteady\n", "t.pde:4:13: error: implicit(...) must be a term"},
        {"field v = implicit(1)\nsteady\n", "t.pde:4:11: error: implicit(...) must be a term"},
        {"on left: u = 0, dn(u) = 0\nsteady\n", "t.pde:4:17: error: a second boundary condition is lap(u) = value (for fourth-order operators)"},
        {"on left: u = 0, lap(u) = u\nsteady\n", "t.pde:4:26: error: the value of lap(u) on a boundary cannot depend on the fields"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        char src[512];
        snprintf(src, sizeof src, "mesh grid(nx = 8)\nfield u = 0\neq dt(u) = lap(u)\n%s", cases[c].text);
        diag d;
        diag_init(&d, "t.pde", src, strlen(src));
        pj_program *p = compile_problem("t.pde", src, strlen(src), &d, NULL);
        if (p || !d.log || !strstr(d.log, cases[c].message))
            fail_msg("case %zu: expected '%s' in:\n%s", c, cases[c].message, d.log ? d.log : "(none)");
        diag_free(&d);
    }
}

/* samples/implicit/: the stiff example lands on its exact solution; every file there compiles to
 * an implicit program. */
static void implicit_samples(void **state)
{
    (void)state;
    static const char *const names[] = {"stiff_heat", "cahn_hilliard", "pfhub1", "fourth_order_1d",
                                        "cahn_hilliard_fipy", "cahn_hilliard_coupled"};
    for (int i = 0; i < 6; i++) {
        char path[256];
        snprintf(path, sizeof path, "../samples/implicit/%s.pde", names[i]);
        size_t len;
        char *src = tu_read_file(path, &len);
        assert_non_null(src);
        pj_program *p = compile_as(src, -1);
        assert_non_null(p);
        assert_true(PJ_SCHEME_IMPLICIT(p->scheme));
        program_free(p);
        free(src);
    }
    char *out = NULL, cmd[1024];
    snprintf(cmd, sizeof cmd, "cd %s && PDEJIT_CACHE_DIR=%s/cache %s run %s/samples/implicit/stiff_heat.pde --quiet --dump s.csv",
             tu_dir, tu_dir, PJ_BINARY, PJ_SOURCE_DIR);
    assert_int_equal(tu_run(cmd, &out), 0);
    free(out);
    snprintf(cmd, sizeof cmd, "%s/s.csv", tu_dir);
    char *csv = tu_read_file(cmd, NULL);
    assert_non_null(csv);
    double worst = 0, x, u;
    int rows = 0;
    for (char *line = strchr(csv, '\n'); line && sscanf(line + 1, "%lf,%lf", &x, &u) == 2; line = strchr(line + 1, '\n'), rows++)
        worst = fmax(worst, fabs(u - exp(-M_PI * M_PI * 0.1) * sin(M_PI * x)));
    printf("stiff_heat.pde: %d cells, max |u - exp(-pi^2 t) sin(pi x)| = %.3g\n", rows, worst);
    assert_int_equal(rows, 200);
    assert_true(worst < 1e-5);
    free(csv);
}

/* The environment's OMPI_MCA_ess_singleton_isolated when the test started (NULL: unset). */
static const char *isolated_at_start;

/* PETSc's start asked Open MPI for an isolated singleton (no orted forked): set by the first
 * implicit solve of this process, unless the environment had set it. */
static void mpi_singleton_is_isolated(void **state)
{
    (void)state;
    const char *v = getenv("OMPI_MCA_ess_singleton_isolated");
    assert_non_null(v);
    if (!isolated_at_start) assert_string_equal(v, "1");
    else assert_string_equal(v, isolated_at_start);
}

int main(void)
{
    isolated_at_start = getenv("OMPI_MCA_ess_singleton_isolated");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(language_errors),
        cmocka_unit_test(fipy_cahn_hilliard_coupled),
        cmocka_unit_test(steady_with_algebraic_unknown),
        cmocka_unit_test(jacobian_of_every_sample),
        cmocka_unit_test(jacobian_of_random_problems),
        cmocka_unit_test(newton_converges_quadratically),
        cmocka_unit_test(orders_in_time),
        cmocka_unit_test(imex_order_three),
        cmocka_unit_test(adaptive_steps),
        cmocka_unit_test(steady_poisson_order_two),
        cmocka_unit_test(fourth_order_with_two_conditions),
        cmocka_unit_test(heat_from_a_wall_at_100x_the_limit),
        cmocka_unit_test(interp_and_cpu_agree),
        cmocka_unit_test(what_the_jacobian_reads),
        cmocka_unit_test(linear_problem_assembles_its_jacobian_once),
        cmocka_unit_test(adaptive_linear_solve_to_the_step_accuracy),
        cmocka_unit_test(nonlinear_problem_assembles_at_every_iteration),
        cmocka_unit_test(symmetric_jacobian_gets_cg),
        cmocka_unit_test(diagonal_update_equals_assembly),
        cmocka_unit_test(options_stay_with_their_simulation),
        cmocka_unit_test(command_line),
        cmocka_unit_test(run_report),
        cmocka_unit_test(zero_jacobian_row_fails_cleanly),
        cmocka_unit_test(implicit_samples),
        cmocka_unit_test(fipy_fourth_order_1d),
        cmocka_unit_test(fipy_cahn_hilliard_2d),
        cmocka_unit_test(mpi_singleton_is_isolated),
    };
    return cmocka_run_group_tests(tests, tu_dir_setup, tu_dir_teardown);
}
