/* test_adaptive.c — the embedded pairs rk23 (Bogacki-Shampine 3(2)) and rk45 (Dormand-Prince
 * 5(4)) and their error control (compiler/scheme.c, runtime/state.c's adaptive steps), against
 * independent expectations:
 *
 *   orders        with fixed steps each is its higher-order scheme: the error at T of the logistic
 *                 ODE u' = u(1 - u) per cell (exact solution) falls as dt^3 and dt^5
 *   stability     stability.c's limits for rk23 and rk45 are the schemes' real-axis intervals:
 *                 one step of u' = -L u with dt at the limit keeps |u1/u0| <= 1, 1e-6 beyond it
 *                 exceeds 1 (the amplification measured through the kernels, not the table)
 *   tolerances    with adapt = TOL the error at T against the exact solution (the heat equation's
 *                 semi-discrete sine mode, and the logistic ODE) falls with TOL over 3 tolerances,
 *                 stays within a TOL-scaled bound, and agrees with a fine fixed-step rk4 run
 *   rejections    a first try far too long is rejected (counted) and the state is as before: the
 *                 answer is as accurate as from a good first step; steps never exceed the limit
 *   back ends     the CPU back end takes the same steps and gives the same bits as the interpreter
 *   command       exact messages for adapt with euler, rk2, rk3, rk4 (in the file: at the text;
 *                 from --scheme: a plain message), exit 2; the final line and --verbose count
 *                 accepted and rejected steps; output and monitor times are hit exactly. */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "driver.h"
#include "engine.h"
#include "solve.h"
#include "stability.h"

#define FAIL_IF(cond, ...)                 \
    do {                                   \
        if (cond) fail_msg(__VA_ARGS__);   \
    } while (0)

static int g_single; /* engines in single precision */

static engine *start(const char *src, const char *backend)
{
    pj_program *p = compile_text(src);
    engine_options o = {.threads = 1, .single = g_single};
    char err[512];
    engine *e = engine_create(engine_backend(backend), p, &o, NULL, err, sizeof err);
    FAIL_IF(!e, "%s: %s", backend, err);
    FAIL_IF(engine_init(e, err, sizeof err) < 0, "%s", err);
    return e;
}

static void finish(engine *e)
{
    pj_program *p = (pj_program *)engine_program(e);
    engine_destroy(e);
    program_free(p);
}

static void field(engine *e, double *u)
{
    char err[512];
    FAIL_IF(engine_get_field(e, 0, u, err, sizeof err) < 0, "%s", err);
}

/* ---- the logistic ODE per cell: u(t) = u0 e^t / (1 - u0 + u0 e^t), u0 = 0.1 + 0.8 x ---------- */

#define LOG_N 8
static double logistic(double u0, double t) { return u0 * exp(t) / (1 - u0 + u0 * exp(t)); }

static double logistic_error(engine *e, double T)
{
    double u[LOG_N], m = 0;
    field(e, u);
    for (int i = 0; i < LOG_N; i++) {
        double x = (i + 0.5) / LOG_N, ex = logistic(0.1 + 0.8 * x, T);
        m = fmax(m, fabs(u[i] - ex));
    }
    return m;
}

static char *logistic_src(const char *scheme, double dt, double tol)
{
    static char src[512];
    char adapt[64] = "";
    if (tol > 0) snprintf(adapt, sizeof adapt, ", adapt = %g", tol);
    snprintf(src, sizeof src, "mesh grid(nx = %d, Lx = 1)\nfield u = 0.1 + 0.8*x\neq dt(u) = u*(1 - u)\n"
             "time dt = %.17g, until = 2, scheme = %s%s\n", LOG_N, dt, scheme, adapt);
    return src;
}

static void fixed_step_orders(void **state)
{
    (void)state;
    const struct { const char *scheme; double dt0; double order; } cases[] = {{"rk23", 0.1, 3}, {"rk45", 0.25, 5}};
    for (int c = 0; c < 2; c++) {
        double err[3];
        for (int k = 0; k < 3; k++) {
            double dt = cases[c].dt0 / (1 << k);
            engine *e = start(logistic_src(cases[c].scheme, dt, 0), "interp");
            char msg[512];
            int n = (int)lround(2 / dt);
            FAIL_IF(engine_step_n(e, dt, n, msg, sizeof msg) < 0, "%s", msg);
            assert_true(fabs(engine_time(e) - 2) < 1e-12);
            err[k] = logistic_error(e, 2);
            finish(e);
        }
        double o1 = log2(err[0] / err[1]), o2 = log2(err[1] / err[2]);
        print_message("%s fixed steps: errors %.3g %.3g %.3g, orders %.2f %.2f\n", cases[c].scheme, err[0], err[1],
                      err[2], o1, o2);
        assert_true(fabs(o1 - cases[c].order) < 0.4 && fabs(o2 - cases[c].order) < 0.4);
    }
}

/* ---- the stability limits ------------------------------------------------------------------ */

static double amplification(const char *scheme, double L, double dt)
{
    char src[512];
    snprintf(src, sizeof src, "mesh grid(nx = 4, Lx = 1)\nparam L = %.17g\nfield u = 1\neq dt(u) = -L*u\n"
             "time dt = %.17g, steps = 1, scheme = %s\n", L, dt, scheme);
    engine *e = start(src, "interp");
    char err[512];
    FAIL_IF(engine_step(e, dt, err, sizeof err) < 0, "%s", err);
    double u[4];
    field(e, u);
    finish(e);
    return u[0];
}

static void stability_intervals(void **state)
{
    (void)state;
    const struct { const char *scheme; double beta; } cases[] = {{"rk23", 2.5127}, {"rk45", 3.3066}};
    for (int c = 0; c < 2; c++) {
        const double L = 1000;
        char src[512], err[512];
        snprintf(src, sizeof src, "mesh grid(nx = 4, Lx = 1)\nparam L = %g\nfield u = 1\neq dt(u) = -L*u\n"
                 "time dt = 1e-4, steps = 1, scheme = %s\n", L, cases[c].scheme);
        engine *e = start(src, "interp");
        double limit;
        FAIL_IF(stability_limit(e, &limit, err, sizeof err) != 0, "%s", err);
        finish(e);
        double inside = amplification(cases[c].scheme, L, limit * (1 - 1e-9));
        double beyond = amplification(cases[c].scheme, L, limit * (1 + 1e-6));
        print_message("%s: stability limit dt L = %.10f; R at it %.12f, 1e-6 beyond %.12f\n", cases[c].scheme,
                      limit * L, inside, beyond);
        assert_true(fabs(limit * L - cases[c].beta) < 1e-4);
        assert_true(fabs(inside) <= 1);
        assert_true(fabs(beyond) > 1);
    }
}

/* ---- error against the tolerance ----------------------------------------------------------- */

/* 1D heat, periodic, one sine mode: the semi-discrete solution (the scheme's own space
   discretisation, solved exactly in time) is sin(2 pi x) exp(-lambda t) with lambda the discrete
   Laplacian's eigenvalue D 4 sin^2(pi h) / h^2, so what remains is the time stepping's error. */
#define HEAT_N 8
static const double heat_D = 0.1, heat_T = 1;

static char *heat_src(const char *scheme, double dt, double tol)
{
    static char src[512];
    char adapt[64] = "";
    if (tol > 0) snprintf(adapt, sizeof adapt, ", adapt = %g", tol);
    snprintf(src, sizeof src, "mesh grid(nx = %d, Lx = 1)\nperiodic x\nparam D = %g\nfield u = sin(2*pi*x)\n"
             "eq dt(u) = D*lap(u)\ntime dt = %.17g, until = %g, scheme = %s%s\n", HEAT_N, heat_D, dt, heat_T, scheme,
             adapt);
    return src;
}

static double heat_error(const double *u, double T)
{
    const double h = 1.0 / HEAT_N, lambda = heat_D * 4 * sin(M_PI * h) * sin(M_PI * h) / (h * h);
    double m = 0;
    for (int i = 0; i < HEAT_N; i++) m = fmax(m, fabs(u[i] - sin(2 * M_PI * (i + 0.5) * h) * exp(-lambda * T)));
    return m;
}

/* An adaptive run of src to T on `backend` in `spans` engine steps (as the run loop takes them
   between output times), the stability limit set as the API sets it. */
static engine *adaptive_run(const char *src, const char *backend, double T, int spans, int64_t *acc, int64_t *rej)
{
    engine *e = start(src, backend);
    char err[512];
    double limit;
    FAIL_IF(stability_limit(e, &limit, err, sizeof err) != 0, "%s", err);
    engine_set_max_step(e, limit);
    for (int k = 1; k <= spans; k++)
        FAIL_IF(engine_step(e, T * k / spans - engine_time(e), err, sizeof err) < 0, "%s", err);
    assert_true(engine_time(e) == T);
    assert_int_equal(engine_adaptive_stats(e, acc, rej, NULL, NULL), 0);
    return e;
}

static void error_falls_with_tolerance(void **state)
{
    (void)state;
    static const char *const schemes[] = {"rk23", "rk45"};
    const double tols[3] = {1e-4, 1e-6, 1e-8};
    /* a fine fixed-step rk4 run: its own error far below every tolerance's */
    double ref[HEAT_N];
    engine *r = start(heat_src("rk4", 1e-3, 0), "interp");
    char err[512];
    FAIL_IF(engine_step_n(r, 1e-3, 1000, err, sizeof err) < 0, "%s", err);
    field(r, ref);
    finish(r);
    double ref_err = heat_error(ref, heat_T);
    print_message("heat: rk4, dt = 1e-3: error %.3g against the semi-discrete solution\n", ref_err);
    assert_true(ref_err < 1e-12);
    for (int s = 0; s < 2; s++) {
        double e_heat[3], e_log[3];
        for (int k = 0; k < 3; k++) {
            int64_t acc, rej;
            engine *e = adaptive_run(heat_src(schemes[s], 1e-3, tols[k]), "interp", heat_T, 1, &acc, &rej);
            double u[HEAT_N], d = 0;
            field(e, u);
            finish(e);
            e_heat[k] = heat_error(u, heat_T);
            for (int i = 0; i < HEAT_N; i++) d = fmax(d, fabs(u[i] - ref[i]));
            int64_t acc2, rej2;
            e = adaptive_run(logistic_src(schemes[s], 1e-2, tols[k]), "interp", 2, 1, &acc2, &rej2);
            e_log[k] = logistic_error(e, 2);
            finish(e);
            print_message("%s adapt = %g: heat error %.3g (from rk4 %.3g; %lld steps, %lld rejected), logistic error "
                          "%.3g (%lld steps, %lld rejected)\n", schemes[s], tols[k], e_heat[k], d, (long long)acc,
                          (long long)rej, e_log[k], (long long)acc2, (long long)rej2);
            /* a local error per unit step of about TOL, over a run of length 1 to 2 on values of
               size 1: the global error within a few TOL */
            assert_true(e_heat[k] < 10 * tols[k]);
            assert_true(d < 10 * tols[k]);
            assert_true(e_log[k] < 10 * tols[k]);
        }
        for (int k = 0; k < 2; k++) { /* falls with TOL: by 10x at least over each 100x */
            assert_true(e_heat[k + 1] < e_heat[k] / 10);
            assert_true(e_log[k + 1] < e_log[k] / 10);
        }
    }
}

/* A first try of dt = 1 (far more than the tolerance allows) is rejected and the state stays
   as it was: the run ends as accurate as one from a small first step. */
static void rejected_tries_leave_the_state(void **state)
{
    (void)state;
    for (int s = 0; s < 2; s++) {
        const char *scheme = s ? "rk45" : "rk23";
        int64_t acc, rej, acc1, rej1;
        engine *e = adaptive_run(logistic_src(scheme, 1, 1e-6), "interp", 2, 1, &acc, &rej);
        double e0 = logistic_error(e, 2);
        finish(e);
        e = adaptive_run(logistic_src(scheme, 1e-4, 1e-6), "interp", 2, 1, &acc1, &rej1);
        double e1 = logistic_error(e, 2);
        finish(e);
        print_message("%s, adapt = 1e-6: from dt = 1: %lld steps, %lld rejected, error %.3g; from dt = 1e-4: %lld steps, "
                      "%lld rejected, error %.3g\n", scheme, (long long)acc, (long long)rej, e0, (long long)acc1,
                      (long long)rej1, e1);
        assert_true(rej >= 1);
        assert_true(e0 < 10 * 1e-6 && e1 < 10 * 1e-6);
    }
}

/* The stability limit bounds every step: the 64-cell heat equation with a loose tolerance takes
   no step longer than the limit (the error control alone would take longer ones). */
static void steps_within_the_stability_limit(void **state)
{
    (void)state;
    char src[512], err[512];
    snprintf(src, sizeof src, "mesh grid(nx = 64, Lx = 1)\nperiodic x\nparam D = 0.01\nfield u = sin(2*pi*x)\n"
             "eq dt(u) = D*lap(u)\ntime dt = 1, until = 1, scheme = rk45, adapt = 0.01\n");
    int64_t acc, rej;
    engine *e = adaptive_run(src, "interp", 1, 1, &acc, &rej);
    double limit, h_last, h_next;
    assert_int_equal(stability_limit(e, &limit, err, sizeof err), 0);
    assert_int_equal(engine_adaptive_stats(e, NULL, NULL, &h_last, &h_next), 0);
    finish(e);
    print_message("rk45, adapt = 0.01, 64 cells: %lld steps, %lld rejected (limit %.4g: at least %.0f steps); last dt "
                  "%.4g, next %.4g\n", (long long)acc, (long long)rej, limit, ceil(1 / limit), h_last, h_next);
    assert_true((double)acc >= 1 / limit);
    assert_true(h_last <= limit);
}

/* The CPU back end takes the same steps as the interpreter, to the bit, over several spans. */
static void backends_agree_to_the_bit(void **state)
{
    (void)state;
    static const char *const schemes[] = {"rk23", "rk45"};
    for (int s = 0; s < 2; s++) {
        int64_t acc[2], rej[2];
        double u[2][HEAT_N];
        static const char *const be[] = {"interp", "cpu"};
        for (int b = 0; b < 2; b++) {
            engine *e = adaptive_run(heat_src(schemes[s], 1e-2, 1e-6), be[b], heat_T, 7, &acc[b], &rej[b]);
            field(e, u[b]);
            finish(e);
        }
        assert_int_equal(acc[0], acc[1]);
        assert_int_equal(rej[0], rej[1]);
        assert_memory_equal(u[0], u[1], sizeof u[0]);
    }
    /* single precision: the error buffer read as floats */
    g_single = 1;
    int64_t acc[2], rej[2];
    double u[2][LOG_N];
    static const char *const be[] = {"interp", "cpu"};
    for (int b = 0; b < 2; b++) {
        engine *e = adaptive_run(logistic_src("rk23", 1, 1e-4), be[b], 2, 3, &acc[b], &rej[b]);
        field(e, u[b]);
        finish(e);
    }
    g_single = 0;
    double err = 0;
    for (int i = 0; i < LOG_N; i++) err = fmax(err, fabs(u[0][i] - logistic(0.1 + 0.8 * (i + 0.5) / LOG_N, 2)));
    print_message("rk23 single precision, adapt = 1e-4: %lld steps, %lld rejected, error %.3g\n", (long long)acc[0],
                  (long long)rej[0], err);
    assert_int_equal(acc[0], acc[1]);
    assert_int_equal(rej[0], rej[1]);
    assert_memory_equal(u[0], u[1], sizeof u[0]);
    assert_true(err < 10 * 1e-4);
}

/* The GPU back end in its host emulation (tests/gpu_emu/, test_gpu.c) takes the same steps and
   gives the same bits as the interpreter: its error buffer read back through the stepper's fetch
   and summed in the same order. Skipped without a C and a C++ compiler. */
static void emulated_gpu_agrees_to_the_bit(void **state)
{
    (void)state;
    char why[512];
    char *dir = tu_gpu_emulation_build(why, sizeof why);
    if (!dir) {
        print_message("skipped: %s\n", why);
        skip();
    }
    tu_gpu_emulation_use(dir);
    static const char *const schemes[] = {"rk23", "rk45"};
    for (int s = 0; s < 2; s++) {
        int64_t acc[2], rej[2];
        double u[2][LOG_N];
        static const char *const be[] = {"interp", "cuda"};
        for (int b = 0; b < 2; b++) {
            engine *e = adaptive_run(logistic_src(schemes[s], 1, 1e-7), be[b], 2, 3, &acc[b], &rej[b]);
            field(e, u[b]);
            finish(e);
        }
        print_message("%s on the emulated GPU: %lld steps, %lld rejected (the interpreter: %lld, %lld)\n", schemes[s],
                      (long long)acc[1], (long long)rej[1], (long long)acc[0], (long long)rej[0]);
        assert_true(rej[0] >= 1);
        assert_int_equal(acc[0], acc[1]);
        assert_int_equal(rej[0], rej[1]);
        assert_memory_equal(u[0], u[1], sizeof u[0]);
    }
    /* 2D, rows copied back from the device in ranges with ghosts between them */
    const char *src2 = "mesh grid(nx = 16, ny = 12, Lx = 1, Ly = 1)\nperiodic x\nfield u = sin(2*pi*x)*y\n"
                       "on bottom, top: u = 0\neq dt(u) = 0.01*lap(u) + u*(1 - u)\n"
                       "time dt = 0.5, until = 1, scheme = rk45, adapt = 1e-6\n";
    double v[2][16 * 12];
    int64_t acc[2], rej[2];
    for (int b = 0; b < 2; b++) {
        engine *e = adaptive_run(src2, b ? "cuda" : "interp", 1, 2, &acc[b], &rej[b]);
        field(e, v[b]);
        finish(e);
    }
    print_message("2D rk45 on the emulated GPU: %lld steps, %lld rejected (the interpreter: %lld, %lld)\n",
                  (long long)acc[1], (long long)rej[1], (long long)acc[0], (long long)rej[0]);
    assert_int_equal(acc[0], acc[1]);
    assert_int_equal(rej[0], rej[1]);
    assert_memory_equal(v[0], v[1], sizeof v[0]);
    tu_gpu_emulation_use(NULL);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    tu_run(cmd, NULL);
    free(dir);
}

/* An interrupt stops a span of adaptive steps after the step in progress (the run loop's exit 2
   at a step boundary short of the output time); the run taken up again from there ends with the
   uninterrupted run's steps and bits (the controller's next step is kept). */
typedef struct interrupter { atomic_int *flag; int64_t at; } interrupter;
static void interrupt_at(void *ctx, int64_t step, double t, double h, double error, int accepted)
{
    (void)t, (void)h, (void)error;
    interrupter *in = ctx;
    if (accepted && step + 1 == in->at) atomic_store(in->flag, 1);
}

static void interrupt_stops_a_span(void **state)
{
    (void)state;
    const char *src = logistic_src("rk45", 1e-2, 1e-9);
    double u[2][LOG_N];
    int64_t acc[2], rej[2];
    for (int k = 0; k < 2; k++) {
        engine *e = start(src, "cpu");
        atomic_int flag = 0;
        interrupter in = {&flag, 5};
        if (k) engine_on_adaptive_try(e, interrupt_at, &in);
        driver_options o = {.dt = 1e-2, .until = 2, .steps = -1, .check_every = 1, .adaptive = 1, .interrupt = &flag};
        driver_result r;
        char err[512];
        int rc = driver_run(e, &o, &r, err, sizeof err);
        if (k) {
            print_message("interrupted: %s\n", err);
            assert_int_equal(rc, 2);
            assert_int_equal(engine_steps(e), 5);
            assert_true(engine_time(e) > 0 && engine_time(e) < 2);
            engine_on_adaptive_try(e, NULL, NULL);
            rc = driver_run(e, &o, &r, err, sizeof err);
        }
        FAIL_IF(rc != 0, "%s", err);
        assert_true(engine_time(e) == 2);
        assert_int_equal(engine_adaptive_stats(e, &acc[k], &rej[k], NULL, NULL), 0);
        field(e, u[k]);
        finish(e);
    }
    assert_int_equal(acc[0], acc[1]);
    assert_int_equal(rej[0], rej[1]);
    assert_memory_equal(u[0], u[1], sizeof u[0]);
}

/* ---- the command ------------------------------------------------------------------------- */

static void write_text(const char *name, const char *text)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", tu_dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void adapt_needs_a_pair(void **state)
{
    (void)state;
    static const char *const fixed[] = {"euler", "rk2", "rk3", "rk4"};
    for (int s = 0; s < 4; s++) {
        char text[256], expect[512], *out;
        int col = (int)strlen("time dt = 0.01, until = 1, scheme = ") + (int)strlen(fixed[s]) + 3;
        snprintf(text, sizeof text, "mesh grid(nx = 8)\nfield u = x\neq dt(u) = -u\ntime dt = 0.01, until = 1, scheme = %s, "
                 "adapt = 1e-4\n", fixed[s]);
        write_text("fixed.pde", text);
        assert_int_equal(tu_pdejit(&out, "run fixed.pde"), 2);
        snprintf(expect, sizeof expect, "fixed.pde:4:%d: error: adapt needs a scheme with an error estimate: rk23 or rk45 "
                 "(or an implicit one: beuler, cn, bdf2, imex); %s has none\n", col, fixed[s]);
        FAIL_IF(!strstr(out, expect), "expected '%s' in:\n%s", expect, out);
        assert_non_null(strstr(out, "adapt = 1e-4\n"));
        free(out);
    }
    write_text("pair.pde", "mesh grid(nx = 8)\nfield u = x\neq dt(u) = -u\ntime dt = 0.01, until = 1, scheme = rk45, "
               "adapt = 1e-4\n");
    for (int s = 0; s < 4; s++) {
        char expect[512], *out;
        assert_int_equal(tu_pdejit(&out, "run pair.pde --scheme %s", fixed[s]), 2);
        snprintf(expect, sizeof expect, "pair.pde: error: the scheme %s given for this run has no error estimate for the "
                 "file's adapt = 0.0001 (line 4): adapt needs rk23 or rk45 (or an implicit scheme: beuler, cn, bdf2, "
                 "imex)\n", fixed[s]);
        FAIL_IF(!strstr(out, expect), "expected '%s' in:\n%s", expect, out);
        free(out);
    }
    /* the pair given for a file of rk4 with adapt is a run of the pair */
    char *out;
    write_text("rk4.pde", "mesh grid(nx = 8)\nfield u = x\neq dt(u) = -u\ntime dt = 0.01, until = 1, scheme = rk4, "
               "adapt = 1e-4\n");
    assert_int_equal(tu_pdejit(&out, "run rk4.pde --scheme rk23 -q"), 0);
    free(out);
}

/* Fixed steps of the pairs under temporal blocking (several steps per sweep, backends/host/tblock.c,
   forced on) give the interpreter's bits. */
static void fixed_steps_blocked(void **state)
{
    (void)state;
    static const char *const schemes[] = {"rk23", "rk45"};
    for (int s = 0; s < 2; s++) {
        char text[512], *out;
        snprintf(text, sizeof text, "mesh grid(nx = 64, ny = 64, Lx = 1, Ly = 1)\nperiodic x\nfield u = sin(2*pi*x)*y\n"
                 "on bottom, top: u = 0\neq dt(u) = 0.01*lap(u) + u*(1 - u)\ntime dt = 0.002, steps = 40, scheme = %s\n",
                 schemes[s]);
        write_text("tb.pde", text);
        assert_int_equal(tu_pdejit(&out, "run tb.pde --backend interp --dump i.csv -q"), 0);
        free(out);
        assert_int_equal(tu_pdejit(&out, "run tb.pde --backend cpu --threads 2 --dump c.csv -q"), 0);
        free(out);
        setenv("PDEJIT_TBLOCK", "on", 1);
        setenv("PDEJIT_TBLOCK_K", "4", 1);
        assert_int_equal(tu_pdejit(&out, "run tb.pde --backend cpu --threads 2 --dump b.csv -q"), 0);
        unsetenv("PDEJIT_TBLOCK");
        unsetenv("PDEJIT_TBLOCK_K");
        free(out);
        char cmd[4200];
        snprintf(cmd, sizeof cmd, "cd '%s' && cmp i.csv c.csv && cmp i.csv b.csv", tu_dir);
        int rc = tu_run(cmd, &out);
        FAIL_IF(rc != 0, "%s: %s", schemes[s], out);
        free(out);
    }
}

/* --verbose and the final line count accepted and rejected steps; monitor and output times are
   hit exactly. */
static void reports_and_times(void **state)
{
    (void)state;
    write_text("heat.pde", "mesh grid(nx = 8, Lx = 1)\nfield u = 0.1 + 0.8*x\neq dt(u) = u*(1 - u)\n"
               "time dt = 1, until = 1, scheme = rk45, adapt = 1e-8\n"
               "output at = 0.37, 0.5, 0.9, format = csv\nmonitor every = 0.3, m = maxval(u)\n");
    char *out;
    assert_int_equal(tu_pdejit(&out, "run heat.pde --verbose --out h.out"), 0);
    long long acc = -1, rej = -1, acc2 = -1, rej2 = -1;
    const char *fin = strstr(out, "pdejit: adaptive steps: ");
    assert_non_null(fin);
    assert_int_equal(sscanf(fin, "pdejit: adaptive steps: %lld accepted, %lld rejected", &acc, &rej), 2);
    const char *line = strstr(fin, "\npdejit: ");
    assert_non_null(line);
    assert_int_equal(sscanf(line, "\npdejit: %lld steps accepted (%lld rejected) to t = 1 ", &acc2, &rej2), 2);
    print_message("%s", fin);
    /* a line per try: the accepted ones numbered 1 .. acc, the rejected ones said so */
    int lines = 0, rejected_lines = 0;
    for (const char *l = strstr(out, "pdejit: step "); l; l = strstr(l + 1, "pdejit: step ")) {
        if (strstr(l, " rejected: dt ") && strstr(l, " rejected: dt ") < strchr(l, '\n')) rejected_lines++;
        else lines++;
    }
    assert_int_equal(lines, acc);
    assert_int_equal(rejected_lines, rej);
    assert_true(acc > 3 && rej >= 1); /* dt = 1 is far too long a first try */
    assert_true(acc == acc2 && rej == rej2);
    free(out);
    char path[4200];
    snprintf(path, sizeof path, "%s/h.out/monitor.csv", tu_dir);
    char *mon = tu_read_file(path, NULL);
    assert_non_null(mon);
    /* monitor rows at 0, 0.3, 0.6 and 0.9: the times as the run landed on them */
    const double want[] = {0, 0.3, 0.6, 0.9};
    const char *row = strchr(mon, '\n');
    for (int i = 0; i < 4; i++) {
        assert_non_null(row);
        double t = strtod(row + 1, NULL);
        FAIL_IF(fabs(t - want[i]) > 1e-12, "monitor row %d at t = %.17g, not %g:\n%s", i, t, want[i], mon);
        row = strchr(row + 1, '\n');
    }
    free(mon);
    snprintf(path, sizeof path, "%s/h.out/snapshots.csv", tu_dir);
    char *snaps = tu_read_file(path, NULL);
    assert_non_null(snaps);
    const double at[] = {0.37, 0.5, 0.9};
    row = strchr(snaps, '\n');
    for (int i = 0; i < 3; i++) {
        assert_non_null(row);
        const char *comma = strchr(row + 1, ',');
        assert_non_null(comma);
        double t = strtod(comma + 1, NULL);
        if (!(fabs(t - at[i]) <= 1e-12)) t = strtod(row + 1, NULL);
        FAIL_IF(fabs(t - at[i]) > 1e-12, "snapshot %d not at t = %g:\n%s", i, at[i], snaps);
        row = strchr(row + 1, '\n');
    }
    free(snaps);
}

/* The rate on the summary and progress lines: three significant digits, never an exponent (a
 * reader and a script both read 1420, where %.3g printed 1.42e+03). */
static void rate_format(void **state)
{
    (void)state;
    char b[32];
    assert_string_equal(driver_format_rate(b, sizeof b, 1419.6), "1420");
    assert_string_equal(driver_format_rate(b, sizeof b, 123456.7), "123457");
    assert_string_equal(driver_format_rate(b, sizeof b, 190.6), "191");
    assert_string_equal(driver_format_rate(b, sizeof b, 95.63), "95.6");
    assert_string_equal(driver_format_rate(b, sizeof b, 3.964), "3.96");
    assert_string_equal(driver_format_rate(b, sizeof b, 0.1194), "0.119");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fixed_step_orders),
        cmocka_unit_test(stability_intervals),
        cmocka_unit_test(error_falls_with_tolerance),
        cmocka_unit_test(rejected_tries_leave_the_state),
        cmocka_unit_test(steps_within_the_stability_limit),
        cmocka_unit_test(backends_agree_to_the_bit),
        cmocka_unit_test(emulated_gpu_agrees_to_the_bit),
        cmocka_unit_test(interrupt_stops_a_span),
        cmocka_unit_test(adapt_needs_a_pair),
        cmocka_unit_test(fixed_steps_blocked),
        cmocka_unit_test(reports_and_times),
        cmocka_unit_test(rate_format),
    };
    return cmocka_run_group_tests(tests, tu_dir_setup, tu_dir_teardown);
}
