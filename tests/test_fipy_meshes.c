/* test_fipy_meshes.c — FiPy's examples on cylindrical and spherical meshes as pdejit problems
 * (the samples in samples/fipy: exponential1D/cylindricalMesh1D, cylindricalMesh1DNonUniform,
 * exponential2D/cylindricalMesh2D, cylindricalMesh2DNonUniform, and the same problem on a
 * SphericalGrid1D), each against its exact solution: within FiPy's doctest atol = 1e-3 at FiPy's
 * 100 cells, second order (2 +- 0.2) from 100 to 200 cells. Also: the interpreter (the oracle)
 * against the CPU back end and the emulated GPU on the non-uniform radial widths, and FiPy's dr
 * array listed (dr = [...]) against stretch(Rratio). Steady solves need PETSc; without it the
 * samples are marched in time to their steady state instead (explicit, 100 cells only). FiPy
 * itself runs them in tests/fipy_meshes_test.sh. */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "driver.h"
#include "solve.h"
#include "implicit.h"

#define ATOL 1e-3 /* FiPy's doctest: var.allclose(analyticalArray, atol=1e-3) */

static const double r0 = 1, r1 = 2, k = 10; /* the annulus or shell, u / D */

/* FiPy's exact solution of div(D grad(phi) + u phi) = 0 on the annulus, phi(r0) = 0, phi(r1) = 1. */
static double exact_cylindrical(double r)
{
    double e0 = tu_expint_ei(k * r0), e1 = tu_expint_ei(k * r1);
    return exp(k * (r1 - r)) * (e0 - tu_expint_ei(k * r)) / (e0 - e1);
}

/* On the shell r^2 (phi' + k phi) is constant: phi = c g(r) + a exp(-k r), g = k Ei(k r) exp(-k r) - 1/r. */
static double shell_g(double r) { return k * tu_expint_ei(k * r) * exp(-k * r) - 1 / r; }

static double exact_spherical(double r)
{
    double g0 = shell_g(r0), g1 = shell_g(r1), e0 = exp(-k * r0), e1 = exp(-k * r1), det = g0 * e1 - g1 * e0;
    double c = -e0 / det, a = g0 / det; /* c g0 + a e0 = 0, c g1 + a e1 = 1 */
    return c * shell_g(r) + a * exp(-k * r);
}

static const struct {
    const char *name;
    int nonuniform;
    double (*exact)(double);
} samples[] = {
    {"cylindrical_mesh_1d", 0, exact_cylindrical},
    {"cylindrical_mesh_1d_nonuniform", 1, exact_cylindrical},
    {"cylindrical_mesh_2d", 0, exact_cylindrical},
    {"cylindrical_mesh_2d_nonuniform", 1, exact_cylindrical},
    {"spherical_mesh_1d", 0, exact_spherical},
};

/* Sample `i` on nr cells, its `steady` line replaced by `time_line` unless that is NULL. */
static char *sample_text(int i, int nr, const char *time_line)
{
    char path[512], cells[64];
    snprintf(path, sizeof path, "%s/samples/fipy/%s.pde", PJ_SOURCE_DIR, samples[i].name);
    char *text = tu_read_file(path, NULL);
    assert_non_null(text);
    snprintf(cells, sizeof cells, "\nconst r0 = 1, r1 = 2, nr = %d\n", nr);
    char *src = tu_replaced(text, "\nconst r0 = 1, r1 = 2, nr = 100\n", cells);
    free(text);
    if (!time_line) return src;
    text = tu_replaced(src, "\nsteady\n", time_line);
    free(src);
    return text;
}

/* The problem src (nr cells) solved on `backend`: its field, and the cell centres along r in *rc. */
static double *solve_text(const char *name, const char *src, int nr, const char *backend, double **rc)
{
    solved *s = solve_named(name, src, backend);
    assert_int_equal(s->cells, nr);
    double *u = s->u[0];
    s->u[0] = NULL; /* taken, with the centres */
    if (rc) {
        *rc = s->x[0];
        s->x[0] = NULL;
    }
    solved_free(s);
    return u;
}

/* Sample `i` on nr cells solved steady, or (steady 0) marched to its steady state. */
static double *solve_sample(int i, int nr, int steady, const char *backend, double **rc)
{
    char march[128]; /* the slowest mode decays as exp(-(pi^2 + k^2/4) t): gone by t = 1 */
    double w = samples[i].nonuniform ? r0 * (pow(r1 / r0, 1.0 / nr) - 1) : (r1 - r0) / nr;
    snprintf(march, sizeof march, "\ntime dt = %.17g, until = 1\n", 0.2 * w * w);
    char *src = sample_text(i, nr, steady ? NULL : march);
    double *u = solve_text(samples[i].name, src, nr, backend, rc);
    free(src);
    return u;
}

static double worst_error(int i, int nr, int steady, const char *backend)
{
    double *rc, *u = solve_sample(i, nr, steady, backend, &rc), worst = 0;
    for (int c = 0; c < nr; c++) worst = fmax(worst, fabs(u[c] - samples[i].exact(rc[c])));
    free(u);
    free(rc);
    return worst;
}

static void samples_match_exact_solutions(void **state)
{
    (void)state;
    char why[256];
    int steady = implicit_available(why, sizeof why);
    if (!steady) printf("no steady solves here (%s): the samples are marched to their steady state\n", why);
    for (size_t i = 0; i < sizeof samples / sizeof *samples; i++) {
        double e100 = worst_error((int)i, 100, steady, "cpu");
        printf("%s: largest error %.3e at 100 cells (atol %g)", samples[i].name, e100, ATOL);
        assert_true(e100 <= ATOL);
        if (steady) {
            double e200 = worst_error((int)i, 200, steady, "cpu"), order = log2(e100 / e200);
            printf(", %.3e at 200: order %.3f", e200, order);
            assert_true(fabs(order - 2) <= 0.2);
        }
        printf("\n");
    }
}

/* The interpreter, the oracle, and the CPU back end solve the same equations: the same field to
 * the solver's tolerance (steady) or to rounding (marched). */
static void cpu_matches_interpreter(void **state)
{
    (void)state;
    char why[256];
    int steady = implicit_available(why, sizeof why);
    for (size_t i = 0; i < sizeof samples / sizeof *samples; i++) {
        if (!steady && i != 1) continue; /* marching is slow on the interpreter: one sample */
        double *a = solve_sample((int)i, 100, steady, "interp", NULL), *b = solve_sample((int)i, 100, steady, "cpu", NULL);
        double worst = 0;
        for (int c = 0; c < 100; c++) worst = fmax(worst, fabs(a[c] - b[c]));
        printf("%s: interpreter against cpu %.3e\n", samples[i].name, worst);
        assert_true(worst <= 1e-10);
        free(a);
        free(b);
    }
}

/* Non-uniform radial widths on every back end, explicitly (the GPU runs no steady solves): the
 * stretched cylindrical samples and the spherical one stretched, 300 rk2 steps from phi = 0; the
 * CPU within 1e-12 of the interpreter, the GPU in its host emulation (tests/gpu_emu/) equal to it
 * bit for bit. */
static void radial_widths_on_every_back_end(void **state)
{
    (void)state;
    char why[512];
    char *dir = tu_gpu_emulation_build(why, sizeof why);
    if (!dir) printf("the emulated GPU is skipped: %s\n", why);
    const char *steps = "\ntime dt = 0.00001, steps = 300, scheme = rk2\n";
    static const int which[] = {1, 3, 4}; /* the stretched samples, and the spherical one stretched */
    for (int j = 0; j < 3; j++) {
        int i = which[j];
        char *src = sample_text(i, 100, steps);
        if (!samples[i].nonuniform) { /* the spherical shell with cells 1.01x wider outward */
            char *s = tu_replaced(src, "r0 = r0)", "r0 = r0, r = stretch(1.01))");
            free(src);
            src = s;
        }
        double *a = solve_text("radial.pde", src, 100, "interp", NULL), *b = solve_text("radial.pde", src, 100, "cpu", NULL);
        int64_t at;
        double d = field_diff(a, b, 100, &at);
        printf("%s%s: cpu against the interpreter %.3e", samples[i].name, samples[i].nonuniform ? "" : ", stretched", d);
        assert_true(d <= 1e-12);
        if (dir) {
            tu_gpu_emulation_use(dir);
            double *g = solve_text("radial.pde", src, 100, "cuda", NULL);
            tu_gpu_emulation_use(NULL);
            printf(", the emulated GPU: %s", memcmp(a, g, sizeof(double) * 100) ? "different bits" : "the same bits");
            assert_memory_equal(a, g, sizeof(double) * 100);
            free(g);
        }
        printf("\n");
        free(a);
        free(b);
        free(src);
    }
    if (dir) {
        char cmd[4200];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        tu_run(cmd, NULL);
        free(dir);
    }
}

/* FiPy's dr array itself, listed (`dr = [...]`): r0 (Rratio - 1) Rratio^i, the same faces as
 * stretch(Rratio) to rounding, so the same field to the solver's tolerance (explicit steps without
 * PETSc). */
static void listed_radial_widths_match_stretch(void **state)
{
    (void)state;
    char why[256];
    int steady = implicit_available(why, sizeof why);
    const char *time_line = steady ? NULL : "\ntime dt = 0.00001, steps = 2000\n";
    char *src = sample_text(1, 100, time_line), widths[4096] = "dr = [";
    double q = pow(r1 / r0, 1.0 / 100);
    for (int i = 0; i < 100; i++) {
        size_t n = strlen(widths);
        snprintf(widths + n, sizeof widths - n, "%s%.17g", i ? ", " : "", r0 * (q - 1) * pow(q, i));
    }
    strcat(widths, "], r0 = r0)");
    char *listed = tu_replaced(src, "nr = nr, Lr = r1 - r0, r0 = r0, r = stretch(Rratio))", widths);
    double *a = solve_text("stretched.pde", src, 100, "cpu", NULL), *b = solve_text("listed.pde", listed, 100, "cpu", NULL);
    double worst = 0;
    for (int c = 0; c < 100; c++) worst = fmax(worst, fabs(a[c] - b[c]));
    printf("FiPy's dr listed against stretch(Rratio): %.3e\n", worst);
    assert_true(worst <= 1e-10);
    free(a);
    free(b);
    free(src);
    free(listed);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(samples_match_exact_solutions),
        cmocka_unit_test(cpu_matches_interpreter),
        cmocka_unit_test(radial_widths_on_every_back_end),
        cmocka_unit_test(listed_radial_widths_match_stretch),
    };
    return cmocka_run_group_tests(tests, tu_dir_setup, tu_dir_teardown);
}
