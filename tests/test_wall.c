/* test_wall.c — `boundary` and `wall(u)` in face context: which faces are sides of the mesh (not
 * periodic ones), on every host back end; samples/convection_inflow.pde, the exponential scheme
 * written with them, against the analytical steady state (FiPy's exponential1D example, and an
 * inflow from the left through --set); the same flux without them misses by FiPy's 6.65e-3. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine.h"
#include "program.h"
#include "testutil.h"

#define SAMPLE PJ_SOURCE_DIR "/samples/convection_inflow.pde"

static pj_program *compile_ok(const char *text)
{
    diag d;
    diag_init(&d, "wall.pde", text, strlen(text));
    pj_program *p = compile_problem("wall.pde", text, strlen(text), &d, NULL);
    if (!p) fail_msg("%s", d.log);
    diag_free(&d);
    return p;
}

static char *compile_errors(const char *text)
{
    diag d;
    diag_init(&d, "wall.pde", text, strlen(text));
    pj_program *p = compile_problem("wall.pde", text, strlen(text), &d, NULL);
    assert_null(p);
    char *log = strdup(d.log ? d.log : "");
    diag_free(&d);
    return log;
}

/* Field 0 after `steps` steps of the file's dt (malloc'd). */
static double *run(const pj_program *p, const char *be, int steps)
{
    char err[1024];
    engine_options o = {.threads = 2};
    engine *e = engine_create(engine_backend(be), p, &o, NULL, err, sizeof err);
    if (!e) fail_msg("%s: %s", be, err);
    assert_int_equal(engine_init(e, err, sizeof err), 0);
    for (int s = 0; s < steps; s++) assert_int_equal(engine_step(e, p->dt, err, sizeof err), 0);
    double *u = malloc(sizeof *u * (size_t)engine_cells(e));
    assert_int_equal(engine_get_field(e, 0, u, err, sizeof err), 0);
    engine_destroy(e);
    return u;
}

/* div(boundary) is -1/h in the first cell along a non-periodic axis, +1/h in the last, 0 elsewhere
 * and everywhere along a periodic axis: one euler step of dt = 1 from 0 shows it, exactly. */
static void boundary_faces(void **state)
{
    (void)state;
    pj_program *p = compile_ok("mesh grid(nx = 7, ny = 5, Lx = 7, Ly = 10)\nfield u = 0\n"
                               "eq dt(u) = div(boundary)\nperiodic y\ntime dt = 1, steps = 1, scheme = euler\n");
    const char *be[] = {"interp", "cpu"};
    for (int b = 0; b < 2; b++) {
        double *u = run(p, be[b], 1);
        for (int j = 0; j < 5; j++)
            for (int i = 0; i < 7; i++) {
                double want = i == 0 ? -1 : i == 6 ? 1 : 0; /* h = 1 along x; y periodic: nothing */
                if (u[i + 7 * j] != want) fail_msg("%s: cell (%d, %d): %g, want %g", be[b], i, j, u[i + 7 * j], want);
            }
        free(u);
    }
    program_free(p);
    /* a 3D mesh, every axis: the sides along z too, nested in a flux at a neighbour */
    p = compile_ok("mesh grid(nx = 4, ny = 3, nz = 5)\nfield u = 0\nflux B(u) = boundary\n"
                   "eq dt(u) = div(B(u)) + 0*u[0, 0, 1]\ntime dt = 1, steps = 1, scheme = euler\n");
    double *ref = run(p, "interp", 1), *cpu = run(p, "cpu", 1);
    assert_memory_equal(ref, cpu, sizeof(double) * 60);
    /* h = 1/n per axis: (-1 at the low side + 1 at the high side) * n */
    assert_true(ref[0] == -4 - 3 - 5);
    assert_true(ref[3 + 4 * 2 + 12 * 4] == 4 + 3 + 5);
    assert_true(ref[1 + 4 * 1 + 12 * 2] == 0);
    free(ref);
    free(cpu);
    program_free(p);
}

/* The sample reaches FiPy's analytical solution to rounding, the interpreter and the JIT to the
 * same bits. */
static void sample_matches_fipy(void **state)
{
    (void)state;
    char *text = tu_read_file(SAMPLE, NULL);
    assert_non_null(text);
    pj_program *p = compile_ok(text);
    int steps = (int)llround(p->until / p->dt);
    double *ref = run(p, "interp", steps), *cpu = run(p, "cpu", steps);
    assert_memory_equal(ref, cpu, sizeof(double) * 10);
    double worst = 0;
    for (int i = 0; i < 10; i++) {
        double x = i + 0.5, exact = (1 - exp(-10 * x)) / (1 - exp(-100));
        worst = fmax(worst, fabs(ref[i] - exact));
    }
    print_message("convection_inflow: largest difference from the analytical solution %.3g\n", worst);
    assert_true(worst < 1e-12); /* FiPy's doctest: allclose(rtol = 1e-10, atol = 1e-10) */
    free(ref);
    free(cpu);
    program_free(p);
    free(text);
}

/* Reads column 2 (u) of a 1D dump. */
static int read_dump(const char *path, double *x, double *u, int max)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[256];
    int n = 0;
    assert_non_null(fgets(line, sizeof line, f));
    while (n < max && fgets(line, sizeof line, f) && sscanf(line, "%lf,%lf", &x[n], &u[n]) == 2) n++;
    fclose(f);
    return n;
}

/* The run's --dump with the given options; the largest difference from exact(x). */
static double dump_error(const char *opts, double (*exact)(double))
{
    char cmd[2048], path[700];
    snprintf(path, sizeof path, "%s/d.csv", tu_dir);
    snprintf(cmd, sizeof cmd, "%s run %s --quiet --out none --dump '%s' %s", PJ_BINARY, SAMPLE, path, opts);
    char *out = NULL;
    int rc = tu_run(cmd, &out);
    if (rc) fail_msg("%s: %s", cmd, out);
    free(out);
    double x[64], u[64], worst = 0;
    int n = read_dump(path, x, u, 64);
    assert_int_equal(n, 10);
    for (int i = 0; i < n; i++) worst = fmax(worst, fabs(u[i] - exact(x[i])));
    return worst;
}

static double inflow_left(double x) /* Pe = 10, L = 1, u(0) = 1, u(1) = 0 */
{
    return (exp(10 * x) - exp(10)) / (1 - exp(10));
}

/* An inflow from the left (w = 1, D = 0.1, Lx = 1 through --set: u(0) = 1 flows in), on the
 * interpreter and the JIT. */
static void inflow_from_the_left(void **state)
{
    (void)state;
    const char *be[] = {"--backend interp", "--backend cpu"};
    for (int b = 0; b < 2; b++) {
        char opts[256];
        snprintf(opts, sizeof opts, "%s --set w=1 --set D=0.1 --set Lx=1 --set uleft=1 --set uright=0", be[b]);
        double e = dump_error(opts, inflow_left);
        print_message("inflow from the left (%s): largest difference %.3g\n", be[b], e);
        assert_true(e < 1e-12);
    }
}

/* Without them — the ghost cell's value in the exponential flux on the sides — the steady state
 * misses the analytical one by 6.65e-3 (the figure FiPy's comparison found). */
static void without_wall_it_misses(void **state)
{
    (void)state;
    char *text = tu_read_file(SAMPLE, NULL);
    assert_non_null(text);
    char *flux = strstr(text, "flux F(u) = boundary");
    assert_non_null(flux);
    char *end = strchr(flux, '\n');
    char plain[4096];
    snprintf(plain, sizeof plain, "%.*sflux F(u) = J(L(u), R(u), dx)%s", (int)(flux - text), text, end);
    pj_program *p = compile_ok(plain);
    double *u = run(p, "cpu", (int)llround(p->until / p->dt));
    double worst = 0;
    for (int i = 0; i < 10; i++) worst = fmax(worst, fabs(u[i] - (1 - exp(-10 * (i + 0.5))) / (1 - exp(-100))));
    print_message("the same flux with the ghost cells: largest difference %.4g\n", worst);
    assert_true(fabs(worst - 6.65e-3) < 5e-5);
    free(u);
    program_free(p);
    free(text);
}

static void refused_outside_faces(void **state)
{
    (void)state;
    char *log = compile_errors("mesh grid(nx = 8)\nfield u = 0\neq dt(u) = boundary\n");
    assert_non_null(strstr(log, "wall.pde:3:12: error: 'boundary' is a face quantity: use it inside div(...) or a flux"));
    free(log);
    log = compile_errors("mesh grid(nx = 8)\nfield u = 0\neq dt(u) = wall(u)\n");
    assert_non_null(strstr(log, "wall.pde:3:12: error: wall() is a face quantity: use it inside div(...) or a flux"));
    free(log);
    log = compile_errors("mesh grid(nx = 8)\nparam boundary = 1\nfield u = 0\n");
    assert_non_null(strstr(log, "wall.pde:2:7: error:"));
    free(log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(boundary_faces),
        cmocka_unit_test(sample_matches_fipy),
        cmocka_unit_test(inflow_from_the_left),
        cmocka_unit_test(without_wall_it_misses),
        cmocka_unit_test(refused_outside_faces),
    };
    return cmocka_run_group_tests(tests, tu_dir_setup, tu_dir_teardown);
}
