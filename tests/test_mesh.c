/* test_mesh.c — the meshes beyond the uniform grid (compiler/mesh.c, docs/language.md "Meshes"),
 * against expectations of their own: the exact decay of a sine mode on smoothly stretched 1D and
 * 2D grids (convergence order 2 +- 0.2 over three resolutions), conservation of the integral (the
 * test's own sum of volume * value, and the integral monitor) over 1000 steps with no-flux walls
 * on cylindrical and spherical meshes with r0 = 0 and r0 > 0, the exact steady radial solutions
 * a + b ln r and a + b / r (second order), the listed widths against the same grid stretched, and
 * the CPU back end against the interpreter (the oracle) on each kind of mesh. */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "driver.h"
#include "solve.h"
#include "implicit.h"

/* Face j of n on [0, 1] stretched by q: (q^j - 1) / (q^n - 1). */
static double stretched_face(double q, int n, int j) { return (pow(q, j) - 1) / (pow(q, n) - 1); }

/* Largest error against exp(-dim pi^2 t) prod sin(pi x) on n x n (dim 2) or n cells stretched by
 * q0^(n0 / n): one smooth family of grids, Q = q^n fixed. */
static double sine_error(int dim, int n, int n0, double q0, double until)
{
    double q = pow(q0, (double)n0 / n), w0 = stretched_face(q, n, 1);
    char axes[256] = "", src[1024];
    if (dim == 2) snprintf(axes, sizeof axes, ", ny = %d, y = stretch(%.17g)", n, q);
    snprintf(src, sizeof src,
             "mesh grid(nx = %d, x = stretch(%.17g)%s)\nfield u = sin(pi*x)%s\neq dt(u) = lap(u)\non all: u = 0\n"
             "time dt = %.17g, until = %g\n", n, q, axes, dim == 2 ? "*sin(pi*y)" : "", 0.2 * w0 * w0 / dim, until);
    solved *r = solve_named("t.pde", src, dim == 2 ? "cpu" : "interp");
    double worst = 0, decay = exp(-dim * M_PI * M_PI * until);
    for (int64_t c = 0; c < r->cells; c++) {
        double exact = decay;
        int64_t idx[2] = {c % n, c / n};
        for (int a = 0; a < dim; a++)
            exact *= sin(M_PI * 0.5 * (stretched_face(q, n, (int)idx[a]) + stretched_face(q, n, (int)idx[a] + 1)));
        worst = fmax(worst, fabs(r->u[0][c] - exact));
    }
    solved_free(r);
    return worst;
}

static void check_order(const double *err, int n, const char *what)
{
    for (int i = 0; i + 1 < n; i++) {
        double order = log2(err[i] / err[i + 1]);
        printf("%s: error %.3e -> %.3e, order %.3f\n", what, err[i], err[i + 1], order);
        assert_true(fabs(order - 2) <= 0.2);
    }
}

static void stretched_1d_second_order(void **state)
{
    (void)state;
    double err[3];
    for (int i = 0; i < 3; i++) err[i] = sine_error(1, 20 << i, 20, 1.1, 0.05);
    check_order(err, 3, "stretched 1D");
}

static void stretched_2d_second_order(void **state)
{
    (void)state;
    double err[3];
    for (int i = 0; i < 3; i++) err[i] = sine_error(2, 12 << i, 12, 1.12, 0.02);
    check_order(err, 3, "stretched 2D");
}

/* Face j of a radial axis of n cells from r0 over L: uniform (q = 1), or `r = stretch(q)` by the
 * formula docs/language.md gives, r0 + L (q^j - 1) / (q^n - 1). */
static double radial_face(double r0, double L, int n, double q, int j)
{
    return q == 1 ? r0 + j * (L / n) : r0 + L * (pow(q, j) - 1) / (pow(q, n) - 1);
}

/* 1000 steps of diffusion with no-flux walls: the test's sum of V_i u_i, and the integral monitor,
 * keep their value to 1e-13 relative; the monitor is that sum. */
static void conserve(const char *mesh, int spherical, double r0, int n, double L, double q, const char *rhs)
{
    double wmin = q >= 1 ? radial_face(r0, L, n, q, 1) - r0 : r0 + L - radial_face(r0, L, n, q, n - 1);
    char src[512], stretch[64] = "";
    if (q != 1) snprintf(stretch, sizeof stretch, ", r = stretch(%.17g)", q);
    snprintf(src, sizeof src,
             "mesh %s(nr = %d, Lr = %g, r0 = %g%s)\nfield u = exp(-20*(r - %g)^2)\neq dt(u) = %s\n"
             "monitor total = integral(u), average = mean(u)\ntime dt = %.17g, steps = 1000\n",
             mesh, n, L, r0, stretch, r0 + 0.3 * L, rhs, 0.1 * wmin * wmin / (1 + r0 + L));
    solved *r = solve_named("t.pde", src, "interp");
    solved *c = solve_named("t.pde", src, "cpu");
    pj_program *p = compile_text(src);
    double sum1 = 0, vol = 0, sum0 = 0;
    for (int i = 0; i < n; i++) {
        double lo = radial_face(r0, L, n, q, i), hi = radial_face(r0, L, n, q, i + 1), c0 = 0.5 * (lo + hi);
        double v = spherical ? (hi * hi * hi - lo * lo * lo) / 3 : (hi * hi - lo * lo) / 2;
        sum1 += v * r->u[0][i];
        vol += v;
        sum0 += v * exp(-20 * pow(c0 - (r0 + 0.3 * L), 2));
        assert_true(memcmp(&r->u[0][i], &c->u[0][i], sizeof r->u[0][i]) == 0); /* the CPU gives the interpreter's bits */
    }
    printf("%s r0 = %g q = %g, %s: integral %.17g -> %.17g (monitor %.17g -> %.17g), drift %.2e\n", mesh, r0, q, rhs, sum0,
           sum1, r->mon0[0], r->mon1[0], fabs(r->mon1[0] - r->mon0[0]) / r->mon0[0]);
    assert_true(fabs(sum1 - sum0) <= 1e-13 * sum0);
    assert_true(fabs(r->mon1[0] - r->mon0[0]) <= 1e-13 * r->mon0[0]);
    assert_true(fabs(r->mon0[0] - sum0) <= 1e-13 * sum0);
    assert_true(fabs(r->mon1[1] - sum1 / vol) <= 1e-13 * sum1 / vol);
    assert_true(r->u[0][0] != r->u[0][1]); /* it moved */
    solved_free(r);
    solved_free(c);
    program_free(p);
}

static void radial_conservation(void **state)
{
    (void)state;
    const char *div = "div((1 + r)*grad(u))";
    conserve("cylindrical", 0, 0, 40, 1, 1, div);
    conserve("cylindrical", 0, 0.5, 40, 1, 1, div);
    conserve("spherical", 1, 0, 40, 1, 1, div);
    conserve("spherical", 1, 0.5, 40, 2, 1, div);
}

/* `r = stretch(q)` on radial meshes: refined toward the axis (q > 1) or the outer wall (q < 1). */
static void stretched_radial_conservation(void **state)
{
    (void)state;
    const char *div = "div((1 + r)*grad(u))";
    conserve("cylindrical", 0, 0, 40, 1, 1.05, div);
    conserve("cylindrical", 0, 0.5, 40, 1, 0.95, div);
    conserve("spherical", 1, 0, 40, 1, 1.04, div);
    conserve("spherical", 1, 0.5, 40, 2, 0.97, div);
    /* lap along a stretched axis: the areas, distances and volume folded into two coefficients */
    conserve("cylindrical", 0, 0, 40, 1, 1.05, "lap(u)");
    conserve("spherical", 1, 0.5, 40, 2, 0.97, "lap(u)");
}

/* lap on a 2D grid stretched along x and listed along y, no-flux walls: the test's sum of
 * w_i h_j u_ij keeps its value to 1e-13 relative over 1000 steps, the CPU gives the interpreter's bits. */
static void stretched_lap_conservation(void **state)
{
    (void)state;
    const double q = 1.08, dy[8] = {0.1, 0.15, 0.1, 0.05, 0.2, 0.1, 0.2, 0.1};
    const int nx = 24, ny = 8;
    double w0 = stretched_face(q, nx, 1), sum0 = 0, sum1 = 0, y = 0;
    char src[512];
    snprintf(src, sizeof src,
             "mesh grid(nx = %d, x = stretch(%.17g), dy = [0.1, 0.15, 0.1, 0.05, 0.2, 0.1, 0.2, 0.1])\n"
             "field u = exp(-10*((x - 0.3)^2 + (y - 0.6)^2))\neq dt(u) = lap(u)\ntime dt = %.17g, steps = 1000\n",
             nx, q, 0.2 * w0 * w0 / 2);
    solved *r = solve_named("t.pde", src, "interp"), *c = solve_named("t.pde", src, "cpu");
    for (int j = 0; j < ny; y += dy[j++])
        for (int i = 0; i < nx; i++) {
            double lo = stretched_face(q, nx, i), hi = stretched_face(q, nx, i + 1), v = (hi - lo) * dy[j];
            double xc = 0.5 * (lo + hi), yc = y + 0.5 * dy[j];
            sum0 += v * exp(-10 * ((xc - 0.3) * (xc - 0.3) + (yc - 0.6) * (yc - 0.6)));
            sum1 += v * r->u[0][j * nx + i];
            assert_true(memcmp(&r->u[0][j * nx + i], &c->u[0][j * nx + i], sizeof r->u[0][0]) == 0);
        }
    printf("stretched x, listed y, lap: integral %.17g -> %.17g, drift %.2e\n", sum0, sum1, fabs(sum1 - sum0) / sum0);
    assert_true(fabs(sum1 - sum0) <= 1e-13 * sum0);
    assert_true(r->u[0][0] != r->u[0][1]); /* it moved */
    solved_free(r);
    solved_free(c);
}

/* r-z: the volume r dr dz, no-flux walls all round (the axis included). */
static void axisymmetric_conservation(void **state)
{
    (void)state;
    const char *src = "mesh cylindrical(nr = 24, nz = 16, Lr = 1, Lz = 2)\n"
                      "field u = exp(-10*((r - 0.2)^2 + (z - 1.2)^2))\neq dt(u) = lap(u) + 0.5*div(grad(u))\n"
                      "monitor total = integral(u)\ntime dt = 0.0003, steps = 1000\n";
    solved *r = solve_named("t.pde", src, "interp");
    double dr = 1.0 / 24, dz = 2.0 / 16, sum = 0, sum0 = 0;
    for (int j = 0; j < 16; j++)
        for (int i = 0; i < 24; i++) {
            double v = ((i + 1) * (i + 1) - i * i) * dr * dr / 2 * dz, rc = (i + 0.5) * dr, zc = (j + 0.5) * dz;
            sum += v * r->u[0][j * 24 + i];
            sum0 += v * exp(-10 * ((rc - 0.2) * (rc - 0.2) + (zc - 1.2) * (zc - 1.2)));
        }
    printf("r-z: integral %.17g -> %.17g, monitor %.17g -> %.17g\n", sum0, sum, r->mon0[0], r->mon1[0]);
    assert_true(fabs(sum - sum0) <= 1e-13 * sum0);
    assert_true(fabs(r->mon1[0] - sum0) <= 1e-13 * sum0);
    solved_free(r);
}

/* Laplace between r = 1 (u = 1) and r = 2 (u = 0): 1 - ln r / ln 2 (cylindrical), 2 / r - 1
 * (spherical), reached by diffusion; error at the centres, second order. */
static void radial_laplace_exact(void **state)
{
    (void)state;
    for (int sph = 0; sph < 2; sph++) {
        double err[3];
        for (int k = 0; k < 3; k++) {
            int n = 8 << k;
            double dr = 1.0 / n;
            char src[512];
            snprintf(src, sizeof src,
                     "mesh %s(nr = %d, Lr = 1, r0 = 1)\nfield u = 0\neq dt(u) = lap(u)\non inner: u = 1\non outer: u = 0\n"
                     "time dt = %.17g, until = 4\n", sph ? "spherical" : "cylindrical", n, 0.25 * dr * dr);
            solved *r = solve_named("t.pde", src, "cpu");
            err[k] = 0;
            for (int i = 0; i < n; i++) {
                double c = 1 + (i + 0.5) * dr, exact = sph ? 2 / c - 1 : 1 - log(c) / log(2);
                err[k] = fmax(err[k], fabs(r->u[0][i] - exact));
            }
            solved_free(r);
        }
        check_order(err, 3, sph ? "spherical Laplace" : "cylindrical Laplace");
    }
}

/* A flux condition on a stretched side: u'' = 0, u(0) = 0, u'(1) = 1 has u = x, which the scheme
 * holds exactly on any grid: the steady state is x at the centres (the ghost across the right
 * side mirrors the last, widest cell). */
static void stretched_flux_condition(void **state)
{
    (void)state;
    int n = 16;
    double q = 1.15, w0 = stretched_face(q, n, 1);
    char src[512];
    snprintf(src, sizeof src, "mesh grid(nx = %d, x = stretch(%.17g))\nfield u = 0\neq dt(u) = lap(u)\n"
             "on left: u = 0\non right: dn(u) = 1\ntime dt = %.17g, until = 25\n", n, q, 0.25 * w0 * w0);
    solved *r = solve_named("t.pde", src, "cpu");
    double worst = 0;
    for (int i = 0; i < n; i++)
        worst = fmax(worst, fabs(r->u[0][i] - 0.5 * (stretched_face(q, n, i) + stretched_face(q, n, i + 1))));
    printf("u = x on a stretched grid: largest error %.3e\n", worst);
    assert_true(worst < 1e-9);
    solved_free(r);
}

/* dx = [...] lists the widths that stretch(q) gives: the same solution to rounding. */
static void listed_widths_match_stretch(void **state)
{
    (void)state;
    int n = 12;
    double q = 1.15;
    char list[1024] = "";
    for (int i = 0; i < n; i++) {
        size_t len = strlen(list);
        snprintf(list + len, sizeof list - len, "%s%.17g", i ? ", " : "", stretched_face(q, n, i + 1) - stretched_face(q, n, i));
    }
    const char *body = "field u = sin(pi*x) + x\neq dt(u) = lap(u) + x*dx\non left: u = 0\non right: dn(u) = 1 - pi\n"
                       "time dt = 0.00005, steps = 400\n";
    char a[2048], b[2048];
    snprintf(a, sizeof a, "mesh grid(nx = %d, x = stretch(%.17g))\n%s", n, q, body);
    snprintf(b, sizeof b, "mesh grid(dx = [%s])\n%s", list, body);
    solved *ra = solve_named("t.pde", a, "interp"), *rb = solve_named("t.pde", b, "interp");
    int64_t at;
    double d = field_diff(ra->u[0], rb->u[0], ra->cells, &at);
    printf("listed vs stretched: %.3e\n", d);
    assert_true(d < 1e-12);
    solved_free(ra);
    solved_free(rb);
}

/* The CPU back end computes what the interpreter does on every kind of mesh. */
static void cpu_matches_interpreter(void **state)
{
    (void)state;
    const char *srcs[] = {
        "mesh grid(nx = 20, ny = 9, x = stretch(1.07), dy = [0.1, 0.2, 0.1, 0.05, 0.1, 0.2, 0.1, 0.1, 0.3])\n"
        "field u = x*y + sin(3*x)\neq dt(u) = div((1 + x)*grad(u)) + 0.1*lap(u) + dx*dy\non left: u = 1\non top: dn(u) = 2\n"
        "monitor s = integral(u)\ntime dt = 0.00002, steps = 200\n",
        "mesh cylindrical(nr = 16, nz = 10, Lr = 1, Lz = 2)\nfield u = exp(-r^2 - z)\neq dt(u) = lap(u) + r*z*dr*dz\n"
        "on outer: u = 0\non top: dn(u) = 1\ntime dt = 0.0005, steps = 200\n",
        "mesh spherical(nr = 30, Lr = 2, r0 = 0.5)\nfield u = r\neq dt(u) = div(u*grad(u)) - u^2\non outer: u = 2\n"
        "time dt = 0.0005, steps = 300\n"};
    for (size_t i = 0; i < sizeof srcs / sizeof *srcs; i++) {
        solved *a = solve_named("t.pde", srcs[i], "interp"), *b = solve_named("t.pde", srcs[i], "cpu");
        int64_t at;
        double d = field_diff(a->u[0], b->u[0], a->cells, &at);
        printf("case %zu: cpu vs interp %.3e\n", i, d);
        assert_true(d <= 1e-12);
        if (a->mon1) assert_true(tu_reldiff(a->mon1[0], b->mon1[0]) <= 1e-12);
        solved_free(a);
        solved_free(b);
    }
}

/* --dump (CSV) gives each cell's own centre, and r for a radial mesh; --init reads it back. */
static void dump_has_the_centres(void **state)
{
    (void)state;
    char path[1024], *out = NULL;
    snprintf(path, sizeof path, "%s/s.pde", tu_dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "mesh grid(nx = 10, Lx = 2, x0 = 1, x = stretch(1.2))\nfield u = x\ntime dt = 0.001, steps = 1\n");
    fclose(f);
    assert_int_equal(tu_pdejit(&out, "run s.pde --dump s.csv"), 0);
    free(out);
    assert_int_equal(tu_pdejit(&out, "run s.pde --init s.csv --steps 1"), 0);
    free(out);
    snprintf(path, sizeof path, "%s/s.csv", tu_dir);
    char *csv = tu_read_file(path, NULL);
    assert_non_null(csv);
    assert_memory_equal(csv, "x,u\n", 4);
    const char *line = strchr(csv, '\n') + 1;
    for (int i = 0; i < 10; i++) {
        double x = strtod(line, NULL), want = 1 + 2 * 0.5 * (stretched_face(1.2, 10, i) + stretched_face(1.2, 10, i + 1));
        assert_true(fabs(x - want) < 1e-14);
        line = strchr(line, '\n') + 1;
    }
    free(csv);
    snprintf(path, sizeof path, "%s/c.pde", tu_dir);
    f = fopen(path, "w");
    fprintf(f, "mesh cylindrical(nr = 4, Lr = 2)\nfield u = r\ntime dt = 0.001, steps = 1\n");
    fclose(f);
    assert_int_equal(tu_pdejit(&out, "run c.pde --dump c.csv"), 0);
    free(out);
    snprintf(path, sizeof path, "%s/c.csv", tu_dir);
    csv = tu_read_file(path, NULL);
    assert_non_null(csv);
    assert_memory_equal(csv, "r,u\n0.25,", 9);
    free(csv);
    /* VTK: a rectilinear grid (.vtr) with the listed faces, named by the series' .pvd */
    snprintf(path, sizeof path, "%s/v.pde", tu_dir);
    f = fopen(path, "w");
    fprintf(f, "mesh grid(nx = 4, ny = 2, dx = [0.1, 0.2, 0.3, 0.4])\nfield u = x\ntime dt = 0.001, steps = 1\n"
               "output every = 0.001, format = vtk\n");
    fclose(f);
    assert_int_equal(tu_pdejit(&out, "run v.pde --out vo"), 0);
    free(out);
    char want[256];
    snprintf(want, sizeof want, "Name=\"x\" format=\"ascii\">0 %.17g %.17g %.17g %.17g<", 0.1, 0.1 + 0.2, 0.1 + 0.2 + 0.3,
             0.1 + 0.2 + 0.3 + 0.4);
    snprintf(path, sizeof path, "%s/vo/snapshot_000001.vtr", tu_dir);
    char *vtr = tu_read_file(path, NULL);
    assert_non_null(vtr);
    assert_non_null(strstr(vtr, "<RectilinearGrid WholeExtent=\"0 4 0 2 0 0\">"));
    assert_non_null(strstr(vtr, want));
    free(vtr);
    snprintf(path, sizeof path, "%s/vo/snapshots.pvd", tu_dir);
    char *pvd = tu_read_file(path, NULL);
    assert_non_null(pvd);
    assert_non_null(strstr(pvd, "file=\"snapshot_000001.vtr\""));
    free(pvd);
}

/* Backward Euler on a spherical mesh with a nonlinear term: first order in dt toward the explicit
 * solution of a much smaller step, and Newton converging in a few iterations a step (the exact
 * Jacobian carries the areas r^2 and the volumes). */
static void implicit_on_a_sphere(void **state)
{
    (void)state;
    char why[256];
    if (!implicit_available(why, sizeof why)) {
        printf("skipped: %s\n", why);
        return;
    }
    const char *body = "mesh spherical(nr = 24, Lr = 1, r0 = 0)\nfield u = exp(-20*r^2)\n"
                       "eq dt(u) = div((1 + r)*grad(u)) - u^2\non outer: u = 0.1\n";
    char src[512];
    snprintf(src, sizeof src, "%stime dt = 0.00001, steps = 2000\n", body);
    solved *ref = solve_named("t.pde", src, "cpu");
    double err[2];
    for (int k = 0; k < 2; k++) {
        double dt = 0.002 / (1 << k);
        snprintf(src, sizeof src, "%stime dt = %g, scheme = beuler\n", body, dt);
        api_sim a = api_sim_start("s.pde", src, NULL);
        char msg[512];
        pj_status rc = pj_sim_advance(a.sim, dt, 0.02, msg, sizeof msg);
        if (rc) fprintf(stderr, "%s\n", msg);
        assert_int_equal(rc, PJ_OK);
        double u[24];
        pj_solver_stats st;
        api_sim_end(&a, u, &st);
        err[k] = 0;
        for (int i = 0; i < 24; i++) err[k] = fmax(err[k], fabs(u[i] - ref->u[0][i]));
        printf("beuler dt = %g: error %.3e, %lld Newton iterations in %lld steps\n", dt, err[k], (long long)st.newton,
               (long long)st.steps);
        assert_true(st.newton <= 4 * st.steps);
    }
    double order = log2(err[0] / err[1]);
    printf("beuler order %.3f\n", order);
    assert_true(fabs(order - 1) < 0.15);
    solved_free(ref);
}

/* Temporal blocking (backends/host/tblock.c) forced on: the metric is in the kernels and the
 * coordinates are the mesh's, so the state is the unblocked one bit for bit. */
static void temporal_blocking_same_bits(void **state)
{
    (void)state;
    const char *srcs[] = {
        "mesh grid(nx = 30, ny = 40, x = stretch(1.05), y = stretch(0.97))\nfield u = sin(3*x)*y + dx\n"
        "on left: u = 1\non top: dn(u) = 2\neq dt(u) = lap(u) + x*dy\ntime dt = 0.00001, steps = 24, scheme = rk2\n",
        "mesh cylindrical(nr = 30, nz = 40, Lr = 1, Lz = 2)\nfield u = exp(-5*((r - 0.3)^2 + (z - 1)^2))\n"
        "on outer: u = 0.1\neq dt(u) = div((1 + r)*grad(u))\ntime dt = 0.0002, steps = 24\n"};
    for (size_t i = 0; i < sizeof srcs / sizeof *srcs; i++) {
        setenv("PDEJIT_TBLOCK", "off", 1);
        solved *a = solve_named("t.pde", srcs[i], "cpu");
        setenv("PDEJIT_TBLOCK", "on", 1);
        setenv("PDEJIT_TBLOCK_K", "4", 1);
        solved *b = solve_named("t.pde", srcs[i], "cpu");
        unsetenv("PDEJIT_TBLOCK");
        unsetenv("PDEJIT_TBLOCK_K");
        assert_memory_equal(a->u[0], b->u[0], sizeof(double) * (size_t)a->cells);
        solved_free(a);
        solved_free(b);
    }
}

/* A kernel that reads a metric table along x takes its odd x offsets from the load one cell
 * right at the previous x step (backends/cpu/llvm_ir_carry.c), and a 2D stage of more than 768
 * cells a row runs in x strips of 512 (backends/host/sim.c X_STRIP). Offsets -3 to 3, two
 * fields, rk2, 2D and 3D, odd row lengths (vector remainders, a last strip of 7 cells), whole
 * rows and 64-cell prefetch chunks, 1 and 2 threads, temporal blocking on and off: the CPU gives
 * the interpreter's bits. */
static void x_tables_same_bits(void **state)
{
    (void)state;
    const char *srcs[] = {
        "mesh grid(nx = 1031, ny = 6, x = stretch(1.001), Ly = 0.01)\nfield u = sin(9*x) + 100*y\non left: u = 1\n"
        "eq dt(u) = lap(u) + 0.1*(u[1, 0] - u[-1, 0])*u[-3, 1]\ntime dt = 0.0000002, steps = 6, scheme = rk2\n",
        "mesh grid(nx = 203, ny = 13, x = stretch(1.01), dy = [0.1, 0.2, 0.1, 0.05, 0.1, 0.2, 0.1, 0.1, 0.3, 0.1, 0.2, "
        "0.1, 0.2])\nfield u = sin(7*x)*y + 1, v = cos(5*x) + y\non left: u = 1\non top: dn(v) = 2\n"
        "eq dt(u) = lap(u) + 0.1*(u[3, 0] - u[-3, 0]) + 0.2*(u[2, 0] - u[-2, 0])*v[-1, 0]\n"
        "eq dt(v) = lap(v) + 0.3*(v[1, 0] - v[-1, 1])*u[-1, -1]\ntime dt = 0.000002, steps = 12, scheme = rk2\n",
        "mesh grid(nx = 77, ny = 6, nz = 5, x = stretch(0.98), Ly = 0.5, Lz = 0.4)\nfield u = exp(-9*(x - 0.4)^2)*(1 + y*z)\n"
        "on right: u = 0\neq dt(u) = lap(u) + u[1, 0, 0]*u[-1, 0, 1] - u[-1, 0, 0]*u[0, 0, -1]\n"
        "time dt = 0.00001, steps = 10\n"};
    const char *const tblock[] = {"off", "on"};
    for (size_t i = 0; i < sizeof srcs / sizeof *srcs; i++) {
        solved *r = solve(srcs[i], BE_INTERP, 0, 1, NULL);
        assert_int_equal(r->status, 0);
        for (int v = 0; v < 8; v++) {
            setenv("PDEJIT_TBLOCK", tblock[v & 1], 1);
            solved *c = solve(srcs[i], v & 2 ? BE_CPU_PREFETCH : BE_CPU, 0, v & 4 ? 2 : 1, NULL);
            unsetenv("PDEJIT_TBLOCK");
            assert_int_equal(c->status, 0);
            for (int f = 0; f < r->p->n_fields; f++)
                assert_memory_equal(r->u[f], c->u[f], sizeof(double) * (size_t)r->cells);
            solved_free(c);
        }
        assert_true(r->u[0][0] != r->u[0][1]); /* it moved */
        solved_free(r);
    }
}

/* FiPy's examples/convection/exponential1D/cylindricalMesh1D.py as FiPy states it: div(D grad(phi)
 * + u phi) = 0 on the annulus 1 < r < 2, phi = 0 inside, 1 outside, D = 1, u = 10, solved steady;
 * against its exact solution exp(u/D (r1 - r)) (Ei(u r0/D) - Ei(u r/D)) / (Ei(u r0/D) - Ei(u r1/D)):
 * second order, and within the doctest's atol = 1e-3 at nr = 200 (the faces take the mean of the
 * two cells where FiPy's term is exponentially weighted). */
static void fipy_cylindrical_convection_exact(void **state)
{
    (void)state;
    char why[256];
    if (!implicit_available(why, sizeof why)) {
        printf("skipped: %s\n", why);
        return;
    }
    double err[3], e0 = tu_expint_ei(10), e1 = tu_expint_ei(20);
    for (int k = 0; k < 3; k++) {
        int n = 50 << k;
        char src[512];
        snprintf(src, sizeof src, "mesh cylindrical(nr = %d, Lr = 1, r0 = 1)\nconst D = 1, u = 10\nfield phi = 0\n"
                 "eq dt(phi) = div(D*grad(phi) + u*phi)\non inner: phi = 0\non outer: phi = 1\nsteady\n", n);
        solved *r = solve_named("t.pde", src, "cpu");
        err[k] = 0;
        for (int i = 0; i < n; i++) {
            double c = 1 + (i + 0.5) / n, exact = exp(10 * (2 - c)) * (e0 - tu_expint_ei(10 * c)) / (e0 - e1);
            err[k] = fmax(err[k], fabs(r->u[0][i] - exact));
        }
        solved_free(r);
    }
    check_order(err, 3, "FiPy cylindricalMesh1D");
    assert_true(err[2] < 1e-3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(stretched_1d_second_order),  cmocka_unit_test(stretched_2d_second_order),
        cmocka_unit_test(radial_conservation), cmocka_unit_test(stretched_radial_conservation),
        cmocka_unit_test(stretched_lap_conservation), cmocka_unit_test(axisymmetric_conservation),
        cmocka_unit_test(radial_laplace_exact),       cmocka_unit_test(listed_widths_match_stretch),
        cmocka_unit_test(stretched_flux_condition),
        cmocka_unit_test(cpu_matches_interpreter),    cmocka_unit_test(dump_has_the_centres),
        cmocka_unit_test(implicit_on_a_sphere),       cmocka_unit_test(temporal_blocking_same_bits),
        cmocka_unit_test(x_tables_same_bits),
        cmocka_unit_test(fipy_cylindrical_convection_exact),
    };
    return cmocka_run_group_tests(tests, tu_dir_setup, tu_dir_teardown);
}
