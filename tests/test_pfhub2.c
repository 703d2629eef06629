/* test_pfhub2.c — PFHub benchmark 2 (https://pages.nist.gov/pfhub/benchmarks/benchmark2.ipynb;
 * Jokisaari et al., Comput. Mater. Sci. 126 (2017) 139): c and four order parameters.
 *
 *   pfhub2a_hand_against_energy   samples/pfhub2.pde (2a, periodic: the chemical potential and the
 *                                 driving forces derived by hand) against the same model written
 *                                 from its free energy (samples/pfhub2b.pde with periodic sides:
 *                                 pdejit's symbolic delta), every field at t = 5
 *   pfhub2b_against_c_loop        samples/pfhub2b.pde (2b, no-flux sides) on a reduced mesh against
 *                                 the benchmark's equations stepped by a plain C loop here (rk2,
 *                                 the mirror ghosts of a zero-flux wall), every field
 *   pfhub2b_energy_falls          the sample as shipped: its free energy falls at every monitor time,
 *                                 c is conserved
 *
 * No published PFHub number is compared: the references are the benchmark's equations, derived
 * by hand (the header of samples/pfhub2.pde) and written here independently of pdejit. */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pdejit.h"

static char *sample(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/samples/%s", PJ_SOURCE_DIR, name);
    char *text = tu_read_file(path, NULL);
    assert_non_null(text);
    return text;
}

static const char *const names[5] = {"c", "eta1", "eta2", "eta3", "eta4"};

/* Runs text on the cpu back end to t_end in steps of dt; the five fields into out (5 x cells). */
static void run(const char *text, double dt, double t_end, double *out)
{
    pj_problem *pr = NULL;
    char *diags = NULL, err[512] = "";
    if (pj_problem_compile("t.pde", text, strlen(text), &pr, &diags) != PJ_OK) fail_msg("%s", diags);
    free(diags);
    pj_sim_options o = {0};
    assert_int_equal(pj_backend_by_name("cpu", &o.backend), 0);
    pj_sim *s = NULL;
    if (pj_sim_create(pr, &o, &s, err, sizeof err) != PJ_OK) fail_msg("%s", err);
    if (pj_sim_advance(s, dt, t_end, err, sizeof err) != PJ_OK) fail_msg("%s", err);
    int64_t cells = pj_problem_cells(pr);
    for (int f = 0; f < 5; f++) assert_int_equal(pj_sim_get_field(s, names[f], out + f * cells), PJ_OK);
    pj_sim_free(s);
    pj_problem_free(pr);
}

static void pfhub2a_hand_against_energy(void **state)
{
    (void)state;
    char *hand = sample("pfhub2.pde"), *b = sample("pfhub2b.pde");
    char *energy = tu_replaced(b, "mesh grid(nx = 100, ny = 100, Lx = 200, Ly = 200)\n",
                               "mesh grid(nx = 100, ny = 100, Lx = 200, Ly = 200)\nperiodic x, y\n");
    enum { CELLS = 100 * 100 };
    double *u = malloc(sizeof *u * 5 * CELLS), *v = malloc(sizeof *v * 5 * CELLS);
    assert_true(u && v);
    run(hand, 0.005, 5, u);
    run(energy, 0.005, 5, v);
    double d = 0, moved = 0;
    for (int i = 0; i < 5 * CELLS; i++) d = fmax(d, fabs(u[i] - v[i]));
    for (int i = CELLS; i < 5 * CELLS; i++) moved = fmax(moved, fabs(u[i]));
    print_message("PFHub 2a at t = 5: hand-derived against delta(F, .): %.2e (eta up to %.3f)\n", d, moved);
    assert_true(d <= 1e-12);
    assert_true(moved > 0.5); /* the grains have grown from at most 0.1*(1 + 1 + 1.5)^2 ... */
    free(u);
    free(v);
    free(hand);
    free(b);
    free(energy);
}

/* The reference: the benchmark's equations with the derivatives by hand, rk2 (Heun), zero-flux
   walls as the mirror ghosts (ghost g <-> cell -g - 1), on an n x n mesh of cells h. */
enum { RN = 20 };
static const double rho2 = 2, ca = 0.3, cb = 0.7, kc = 3, ke = 3, Mc = 5, Le = 5, w = 1, alpha = 5;

static int mirror(int i) { return i < 0 ? -i - 1 : i >= RN ? 2 * RN - 1 - i : i; }
static double val(const double *u, int i, int j) { return u[mirror(j) * RN + mirror(i)]; }
static double lap(const double *u, int i, int j, double h)
{
    return (val(u, i + 1, j) + val(u, i - 1, j) + val(u, i, j + 1) + val(u, i, j - 1) - 4 * val(u, i, j)) / (h * h);
}
static double hfun(double e) { return e * e * e * (6 * e * e - 15 * e + 10); }

static void rhs(const double *U, double *F, double h)
{
    const double *c = U;
    double mu[(RN + 2) * (RN + 2)];
    for (int j = -1; j <= RN; j++) /* mu on the cells and one ghost layer, from c's two */
        for (int i = -1; i <= RN; i++) {
            double cc = val(c, i, j), hs = 0;
            for (int k = 1; k <= 4; k++) hs += hfun(val(U + k * RN * RN, i, j));
            mu[(j + 1) * (RN + 2) + i + 1] = 2 * rho2 * ((cc - ca) * (1 - hs) - (cb - cc) * hs) - kc * lap(c, i, j, h);
        }
    for (int j = 0; j < RN; j++)
        for (int i = 0; i < RN; i++) {
            const double *m = mu + (j + 1) * (RN + 2) + i + 1;
            F[j * RN + i] = Mc * (m[1] + m[-1] + m[RN + 2] + m[-(RN + 2)] - 4 * m[0]) / (h * h);
            double cc = c[j * RN + i], s2 = 0;
            for (int k = 1; k <= 4; k++) s2 += U[k * RN * RN + j * RN + i] * U[k * RN * RN + j * RN + i];
            for (int k = 1; k <= 4; k++) {
                const double *e = U + k * RN * RN;
                double x = e[j * RN + i];
                double df = rho2 * ((cb - cc) * (cb - cc) - (cc - ca) * (cc - ca)) * 30 * x * x * (x - 1) * (x - 1) +
                            w * (2 * x * (1 - x) * (1 - 2 * x) + 4 * alpha * x * (s2 - x * x));
                F[k * RN * RN + j * RN + i] = -Le * (df - ke * lap(e, i, j, h));
            }
        }
}

static void pfhub2b_against_c_loop(void **state)
{
    (void)state;
    const double h = 2, dt = 0.005;
    const int steps = 200;
    char *b = sample("pfhub2b.pde");
    char *text = tu_replaced(b, "mesh grid(nx = 100, ny = 100, Lx = 200, Ly = 200)", "mesh grid(nx = 20, ny = 20, Lx = 40, Ly = 40)");
    enum { CELLS = RN * RN };
    static double got[5 * CELLS], U[5 * CELLS], U1[5 * CELLS], F[5 * CELLS], U0[5 * CELLS];
    run(text, dt, steps * dt, got);
    for (int j = 0; j < RN; j++) /* the sample's initial values */
        for (int i = 0; i < RN; i++) {
            double x = (i + 0.5) * h, y = (j + 0.5) * h;
            U[j * RN + i] = 0.5 + 0.05 * (cos(0.105 * x) * cos(0.11 * y) + pow(cos(0.13 * x) * cos(0.087 * y), 2) +
                                          cos(0.025 * x - 0.15 * y) * cos(0.07 * x - 0.02 * y));
            for (int k = 1; k <= 4; k++) {
                double a = 0.01 * k;
                U[k * CELLS + j * RN + i] =
                    0.1 * pow(cos(a * x - 4) * cos((0.007 + a) * y) + cos((0.11 + a) * x) * cos((0.11 + a) * y) +
                                  1.5 * pow(cos((0.046 + 0.001 * k) * x + (0.0405 + 0.001 * k) * y) *
                                                cos((0.031 + 0.001 * k) * x - (0.004 + 0.001 * k) * y), 2), 2);
            }
        }
    memcpy(U0, U, sizeof U);
    for (int n = 0; n < steps; n++) {
        rhs(U, F, h);
        for (int i = 0; i < 5 * CELLS; i++) U1[i] = U[i] + dt * F[i];
        rhs(U1, F, h);
        for (int i = 0; i < 5 * CELLS; i++) U[i] = 0.5 * U[i] + 0.5 * (U1[i] + dt * F[i]);
    }
    double d = 0, moved = 0;
    for (int i = 0; i < 5 * CELLS; i++) {
        d = fmax(d, fabs(got[i] - U[i]));
        moved = fmax(moved, fabs(U[i] - U0[i]));
    }
    print_message("PFHub 2b, 20 x 20, t = %g: pdejit against the C loop %.2e (the fields moved %.3f)\n", steps * dt, d, moved);
    assert_true(d <= 1e-12);
    assert_true(moved > 0.05);
    free(b);
    free(text);
}

static void pfhub2b_energy_falls(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(tu_pdejit(&out, "run %s/samples/pfhub2b.pde --until 20 --out p2b --quiet", PJ_SOURCE_DIR), 0);
    free(out);
    char path[1024];
    snprintf(path, sizeof path, "%s/p2b/monitor.csv", tu_dir);
    char *mon = tu_read_file(path, NULL);
    assert_non_null(mon);
    assert_true(!strncmp(mon, "t,step,energy,mass\n", 19));
    double last = INFINITY, mass0 = NAN;
    int rows = 0;
    for (char *line = strchr(mon, '\n') + 1; *line; line = strchr(line, '\n') + 1, rows++) {
        double t, F, mass;
        long step;
        assert_int_equal(sscanf(line, "%lf,%ld,%lf,%lf", &t, &step, &F, &mass), 4);
        print_message("t = %4g: F = %.6f, mean c = %.15f\n", t, F, mass);
        assert_true(F < last);
        if (rows == 0) mass0 = mass;
        assert_true(fabs(mass - mass0) <= 1e-13);
        last = F;
    }
    assert_int_equal(rows, 3); /* t = 0, 10, 20 */
    free(mon);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pfhub2a_hand_against_energy),
        cmocka_unit_test(pfhub2b_against_c_loop),
        cmocka_unit_test(pfhub2b_energy_falls),
    };
    return cmocka_run_group_tests(tests, tu_dir_setup, tu_dir_teardown);
}
