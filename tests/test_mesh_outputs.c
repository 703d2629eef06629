/* test_mesh_outputs.c — what a run writes on meshes beyond the uniform grid (issue 29 item 5,
 * the outputs of items 2 and 3), through the command:
 *   - monitors: integral and mean weigh each cell by its volume, on listed and stretched grids
 *     (area, and the midpoint rule exact for a linear integrand), r-z, uniform and stretched
 *     (volume per radian, (r1^2 - r0^2)/2 Lz) and spheres ((r1^3 - r0^3)/3), and mean(r) against the test's own sum of
 *     r V over V; on the interpreter and the cpu back end;
 *   - checkpoints: a run stopped half way and resumed ends with the same dump and monitor.csv, byte
 *     for byte, as one never stopped, on a stretched grid and an r-z mesh; a checkpoint of one
 *     stretching is refused by a problem with another.
 * The .vtr/.pvtr files are tests/mpi_test.sh's and test_mesh's, the PNG label test_png's, Python's
 * coordinates python/tests/test_mesh.py's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

/* The monitors of row `row` (0: the first after the header) of DIR/monitor.csv, after t and step. */
static int monitor_row(const char *dir, int row, double *out, int n)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/monitor.csv", tu_dir, dir);
    char *csv = tu_read_file(path, NULL);
    assert_non_null(csv);
    const char *line = strchr(csv, '\n');
    for (int r = 0; line && r < row; r++) line = strchr(line + 1, '\n');
    assert_non_null(line);
    char *end = (char *)line + 1;
    strtod(end, &end); /* t */
    strtod(end + 1, &end); /* step */
    int got = 0;
    while (got < n && *end == ',') out[got++] = strtod(end + 1, &end);
    free(csv);
    return got;
}

static void monitors_use_the_cell_volumes(void **state)
{
    (void)state;
    /* r in [0, 2] on 7 cells: the test's own sum of r V / sum of V, V = (r+^3 - r-^3)/3 */
    double rv = 0, v = 0;
    for (int i = 0; i < 7; i++) {
        double a = 2.0 * i / 7, b = 2.0 * (i + 1) / 7, vol = (b * b * b - a * a * a) / 3;
        rv += 0.5 * (a + b) * vol;
        v += vol;
    }
    static const struct { const char *mesh, *monitors; int n; double want[4]; } cases[] = {
        /* 1.3 wide (Lx), 1.0 high (the listed widths): area, mean x = x0 + Lx/2, mean y, integral of x */
        {"grid(nx = 10, x = stretch(1.3), Lx = 1.3, x0 = -0.2, dy = [0.1, 0.3, 0.2, 0.4])",
         "a = integral(1 + 0*u), mx = mean(x), my = mean(y), ix = integral(x)", 4, {1.3, 0.45, 0.5, 0.45 * 1.3}},
        {"cylindrical(nr = 10, nz = 4, Lr = 2, Lz = 3, r0 = 0.5)", "a = integral(1 + 0*u), mz = mean(z)", 2,
         {(2.5 * 2.5 - 0.25) / 2 * 3, 1.5}},
        {"spherical(nr = 7, Lr = 2)", "a = integral(1 + 0*u), mr = mean(r)", 2, {8.0 / 3}},
        /* r from 0.2 to 1.2 stretched, z listed over 2 */
        {"cylindrical(nr = 10, Lr = 1, r0 = 0.2, r = stretch(1.2), dz = [0.1, 0.2, 0.3, 0.4, 0.3, 0.2, 0.3, 0.2])",
         "a = integral(1 + 0*u), mz = mean(z)", 2, {(1.2 * 1.2 - 0.04) / 2 * 2, 1}},
    };
    for (int c = 0; c < 4; c++)
        for (int be = 0; be < 2; be++) {
            char text[512], dir[32];
            snprintf(text, sizeof text, "mesh %s\nfield u = 1\neq dt(u) = 0\ntime dt = 0.5, until = 0.5\nmonitor every = 0.5, %s\n",
                     cases[c].mesh, cases[c].monitors);
            tu_write_file("m.pde", text);
            snprintf(dir, sizeof dir, "m%d%d", c, be);
            char *out;
            assert_int_equal(tu_pdejit(&out, "run m.pde -q --backend %s --out %s", be ? "cpu" : "interp", dir), 0);
            free(out);
            double got[4], want[4];
            memcpy(want, cases[c].want, sizeof want);
            if (c == 2) want[1] = rv / v;
            assert_int_equal(monitor_row(dir, 1, got, 4), cases[c].n);
            for (int i = 0; i < cases[c].n; i++) {
                if (fabs(got[i] - want[i]) > 1e-14 * fmax(1, fabs(want[i])))
                    fail_msg("%s, %s: monitor %d is %.17g, want %.17g", cases[c].mesh, be ? "cpu" : "interp", i, got[i], want[i]);
            }
        }
}

static void checkpoint_resumes_on_metric_meshes(void **state)
{
    (void)state;
    static const char *const meshes[2] = {
        "mesh grid(nx = 12, x = stretch(1.15), dy = [0.1, 0.3, 0.2, 0.4, 0.25])\n"
        "field u = exp(-3*((x - 0.4)^2 + (y - 0.5)^2))\non left: u = 1\non top: dn(u) = 0.5\n"
        "eq dt(u) = div((1 + x)*grad(u)) - 0.1*u\n",
        "mesh cylindrical(nr = 10, nz = 6, Lr = 1, Lz = 2)\nfield u = exp(-5*((r - 0.3)^2 + (z - 1)^2))\n"
        "on outer: u = 0.1\non top: dn(u) = 1\neq dt(u) = div((1 + r)*grad(u)) - 0.1*u*z\n"};
    for (int m = 0; m < 2; m++) {
        char text[1024];
        snprintf(text, sizeof text, "%stime dt = 0.0002, until = 0.02, scheme = rk3\nmonitor every = 0.005, s = integral(u)\n",
                 meshes[m]);
        tu_write_file("ck.pde", text);
        char *out;
        assert_int_equal(tu_pdejit(&out, "run ck.pde -q --out full%d --dump full%d.csv", m, m), 0);
        free(out);
        assert_int_equal(tu_pdejit(&out, "run ck.pde -q --out half%d --until 0.01 --checkpoint-every 0.01", m), 0);
        free(out);
        assert_int_equal(tu_pdejit(&out, "run ck.pde -q --out half%d --resume half%d/checkpoint.pjc --dump resumed%d.csv",
                                   m, m, m), 0);
        free(out);
        const char *pairs[2][2] = {{"full%d.csv", "resumed%d.csv"}, {"full%d/monitor.csv", "half%d/monitor.csv"}};
        for (int k = 0; k < 2; k++) {
            char a[1024], b[1024], na[64], nb[64];
            snprintf(na, sizeof na, pairs[k][0], m);
            snprintf(nb, sizeof nb, pairs[k][1], m);
            snprintf(a, sizeof a, "%s/%s", tu_dir, na);
            snprintf(b, sizeof b, "%s/%s", tu_dir, nb);
            size_t la, lb;
            char *ta = tu_read_file(a, &la), *tb = tu_read_file(b, &lb);
            assert_non_null(ta);
            assert_non_null(tb);
            if (la != lb || memcmp(ta, tb, la)) fail_msg("%s and %s differ", na, nb);
            free(ta);
            free(tb);
        }
    }
    /* the stretched grid's checkpoint, resumed by a problem whose stretching differs */
    char other[1024];
    snprintf(other, sizeof other, "%stime dt = 0.0002, until = 0.02, scheme = rk3\n", meshes[0]);
    char *at = strstr(other, "stretch(1.15)");
    memcpy(at, "stretch(1.20)", 13);
    tu_write_file("other.pde", other);
    char *out;
    assert_int_equal(tu_pdejit(&out, "run other.pde -q --resume half0/checkpoint.pjc --out other"), 2);
    assert_non_null(strstr(out, "half0/checkpoint.pjc: the checkpoint was written by another problem"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(monitors_use_the_cell_volumes),
        cmocka_unit_test(checkpoint_resumes_on_metric_meshes),
    };
    return cmocka_run_group_tests(tests, tu_dir_setup, tu_dir_teardown);
}
