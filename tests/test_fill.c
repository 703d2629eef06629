/* test_fill.c — the ghost fill of linear boundary conditions (backends/host/sim.c sim_fill_axis,
 * sim_fill.c sim_fill_linear): after sim_fill_ghosts, every ghost layer m of a face cell
 * satisfies the side's condition a (g + u)/2 + b (g - u)/d = c between the ghost g and its mirror
 * u inside, d = (2m - 1)h, with c evaluated at that face cell's centre; 3D with a different
 * spacing per axis, halo 1 and 2, Dirichlet, Neumann and Robin sides with c varying along the
 * face, double and single precision. Also sides whose a, b, c are the same on every face cell
 * (sim_fill.c's uniform path: a constant per side, each side's own), next to sides where c
 * differs at one face cell only (the last: that side must take the per-cell path). */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include "sim.h"
#include "solve.h"

#define NX 5
#define NY 4
#define NZ 3

static const double len[3] = {1.0, 2.0, 0.6};

/* The centre of the face cell of `side` through interior cell (i, j, k) */
static void face_point(int side, int i, int j, int k, double x[3])
{
    double h[3] = {len[0] / NX, len[1] / NY, len[2] / NZ};
    x[0] = (i + 0.5) * h[0];
    x[1] = (j + 0.5) * h[1];
    x[2] = (k + 0.5) * h[2];
    x[side / 2] = side % 2 ? len[side / 2] : 0; /* on the face */
}

/* x + y + z at the last face cell of a high side, less 0.01: only that cell lies above it */
static double last_cell_sum(int side)
{
    double x[3];
    face_point(side, NX - 1, NY - 1, NZ - 1, x);
    return x[0] + x[1] + x[2] - 0.01;
}

/* c of the problems' conditions at the face cell of `side` through interior cell (i, j, k):
 * mode 0 varying along every face, 1 a constant per side, 2 that constant on the low sides and
 * on the high sides but at their last face cell */
static double c_at(int mode, int side, int i, int j, int k)
{
    double x[3];
    face_point(side, i, j, k, x);
    if (mode == 0) return 1 + 0.1 * x[0] + 0.2 * x[1] + 0.3 * x[2];
    const double K = 1 + 0.5 * side;
    if (mode == 1 || side % 2 == 0) return K;
    return K + (x[0] + x[1] + x[2] > last_cell_sum(side) ? 0.5 : 0);
}

/* Each side's condition as (a, b) with c = c_at: left, right, bottom, top, back, front */
static const double ab[6][2] = {{1, 0}, {2, 0.5}, {0, 1}, {1, 0}, {3, -0.25}, {1, 0}};

static void check_fill(int halo2, int single, int mode)
{
    static const char *const side_name[6] = {"left", "right", "bottom", "top", "back", "front"};
    char src[2048];
    int at = snprintf(src, sizeof src,
                      "mesh grid(nx = %d, ny = %d, nz = %d, Lx = %g, Ly = %g, Lz = %g)\n"
                      "field u = 1 + x + 2*y*y + 3*z*x\n"
                      "eq dt(u) = %s\n",
                      NX, NY, NZ, len[0], len[1], len[2], halo2 ? "-0.001*lap(lap(u))" : "0.01*lap(u)");
    for (int side = 0; side < 6; side++) {
        at += snprintf(src + at, sizeof src - (size_t)at, "on %s: %g*u + %g*dn(u) = ", side_name[side], ab[side][0],
                       ab[side][1]);
        if (mode == 0) at += snprintf(src + at, sizeof src - (size_t)at, "1 + 0.1*x + 0.2*y + 0.3*z\n");
        else if (mode == 1 || side % 2 == 0) at += snprintf(src + at, sizeof src - (size_t)at, "%g\n", 1 + 0.5 * side);
        else
            at += snprintf(src + at, sizeof src - (size_t)at, "%g + 0.5*heaviside(x + y + z - %.17g)\n", 1 + 0.5 * side,
                           last_cell_sum(side));
    }
    snprintf(src + at, sizeof src - (size_t)at, "time dt = 0.001, steps = 1, scheme = euler\n");
    pj_program *p = compile_named("linear sides", src);
    char err[256] = "";
    sim_options o = {.single = single, .threads = 1};
    sim *s = sim_create(p, &o, err, sizeof err);
    if (!s) fail_msg("sim_create: %s", err);
    sim_init(s);
    sim_fill_ghosts(s, 0, 0);
    const kir_launch *L = sim_launch(s);
    const int H = halo2 ? 2 : 1, n[3] = {NX, NY, NZ};
    const double h[3] = {len[0] / NX, len[1] / NY, len[2] / NZ};
    const double tol = single ? 1e-5 : 1e-12;
    int checked = 0;
    for (int side = 0; side < 6; side++) {
        const int a = side / 2, hi = side % 2, b0 = a == 0 ? 1 : 0, b1 = a == 2 ? 1 : 2;
        for (int q = 0; q < n[b1]; q++)
            for (int r = 0; r < n[b0]; r++)
                for (int m = 1; m <= H; m++) {
                    int g[3], in[3];
                    g[b0] = in[b0] = r;
                    g[b1] = in[b1] = q;
                    g[a] = hi ? n[a] - 1 + m : -m;
                    in[a] = hi ? n[a] - m : m - 1;
                    int64_t og = g[0] + g[1] * L->stride[1] + g[2] * L->stride[2];
                    int64_t oi = in[0] + in[1] * L->stride[1] + in[2] * L->stride[2];
                    double gv = single ? ((const float *)L->buf[0])[og] : ((const double *)L->buf[0])[og];
                    double uv = single ? ((const float *)L->buf[0])[oi] : ((const double *)L->buf[0])[oi];
                    double d = (2 * m - 1) * h[a], c = c_at(mode, side, in[0], in[1], in[2]);
                    double lhs = ab[side][0] * (gv + uv) / 2 + ab[side][1] * (gv - uv) / d;
                    if (fabs(lhs - c) > tol * (1 + fabs(c) + fabs(ab[side][1] * gv / d)))
                        fail_msg("mode %d, halo %d, %s, %s side, cell (%d, %d, %d) layer %d: a(g+u)/2 + b(g-u)/d = %.17g, "
                                 "c = %.17g",
                                 mode, H, single ? "single" : "double", side_name[side], in[0], in[1], in[2], m, lhs, c);
                    checked++;
                }
    }
    assert_int_equal(checked, 2 * H * (NY * NZ + NX * NZ + NX * NY));
    sim_destroy(s);
    program_free(p);
}

static void linear_sides_hold(void **state)
{
    (void)state;
    for (int halo2 = 0; halo2 < 2; halo2++)
        for (int single = 0; single < 2; single++)
            for (int mode = 0; mode < 3; mode++) check_fill(halo2, single, mode);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(linear_sides_hold)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
