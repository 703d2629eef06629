/* test_facegrad.c — the full gradient on faces, gradx(u) grady(u) gradz(u) (docs/language.md
 * section 6; contract section 9), against independent expectations:
 *
 *   faces_against_loops         every component on every face of a face term (2D: zero-flux x,
 *                               periodic y; 3D: periodic x and z, zero-flux y), boundary faces and
 *                               their corner ghosts included, against loops written here over the
 *                               cells and the ghosts the boundary treatment implies
 *   second_order_on_faces       on a smooth field, the face values against the exact gradient at
 *                               the face centres: the error falls 4x per halving of h (periodic,
 *                               and zero-flux walls whose corner ghosts the tangential parts read)
 *   second_order_with_dirichlet div(normal(grady(u), gradx(u))) = 2 u_xy in one Euler step, with
 *                               u = 0 on every wall, and with periodic x and walls on y: 4x per
 *                               halving, boundary cells (which read the corner ghosts) included
 *   dendrite_stays_symmetric    samples/pfhub3.pde (fourfold anisotropy, theta = atan2(grady,
 *                               gradx)) from its seed in the corner: symmetric about the diagonal
 *                               to round-off after 333 explicit steps, interpreter and CPU
 *   implicit_where_gradient_is_zero  the same with a seed that is exactly 1 inside and -1 outside
 *                               (a zero gradient on most faces): the derived Jacobian finite in
 *                               every row and equal to PETSc's finite differences; bdf2 at 33x the
 *                               explicit step converges every step and stays symmetric */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "implicit.h"
#include "pdejit.h"
#include "program.h"
#include "sim.h"
#include "solve.h"

/* The implicit solver of a test's host sim (implicit.h takes a simulation: a state and its executor). */
static implicit_solver *implicit_on_sim(sim *s, const char *options, char *err, size_t len)
{
    simulation m = {&sim_exec_ops, s, sim_get_state(s)};
    return implicit_create(&m, options, err, len);
}

/* ---- face terms -------------------------------------------------------------------------- */

static pj_term *face_term(const char *expr, int dim, const int64_t n[3], const double h[3], const pj_term_boundary b[3])
{
    static const char *const fields[] = {"u"};
    pj_term_options o = {.dim = dim, .n_fields = 1, .fields = fields, .threads = 2, .at = PJ_TERM_FACES};
    for (int a = 0; a < 3; a++) {
        o.n[a] = n[a];
        o.h[a] = h[a];
        o.boundary[a] = b[a];
    }
    pj_term *t = NULL;
    char *diag = NULL;
    if (pj_term_compile(expr, &o, &t, &diag) != PJ_OK) fail_msg("%s: %s", expr, diag ? diag : "?");
    free(diag);
    return t;
}

/* u at cell c (each index may be -1 or n: a ghost; two of them: a corner ghost): zero flux
 * mirrors the cell next to the wall, periodic wraps, axis by axis as the ghost fill does */
static double at3(const double *u, const int64_t n[3], int64_t c[3], const pj_term_boundary b[3])
{
    int64_t i[3];
    for (int a = 0; a < 3; a++) {
        i[a] = c[a];
        if (i[a] < 0) i[a] = b[a] == PJ_TERM_PERIODIC ? i[a] + n[a] : 0;
        if (i[a] >= n[a]) i[a] = b[a] == PJ_TERM_PERIODIC ? i[a] - n[a] : n[a] - 1;
    }
    return u[i[0] + n[0] * (i[1] + n[1] * i[2])];
}

/* The expected component `comp` on the face (f[0], f[1], f[2]) normal to `axis` (between the cell
 * before it along axis, L, and the cell f, R). */
static double expected(const double *u, const int64_t n[3], const double h[3], const pj_term_boundary b[3], int axis,
                       int comp, const int64_t f[3])
{
    int64_t R[3] = {f[0], f[1], f[2]}, L[3] = {f[0], f[1], f[2]};
    L[axis]--;
    if (comp == axis) return (at3(u, n, R, b) - at3(u, n, L, b)) / h[axis];
    double d = 0;
    for (int side = 0; side < 2; side++) {
        int64_t up[3], down[3];
        memcpy(up, side ? R : L, sizeof up);
        memcpy(down, side ? R : L, sizeof down);
        up[comp]++;
        down[comp]--;
        d += at3(u, n, up, b) - at3(u, n, down, b);
    }
    return d / (4 * h[comp]);
}

static double value(int64_t i) { return sin(0.7 * (double)i) + 0.25 * (double)i + 0.01 * (double)(i * i); }

/* Every component of the gradient on every face of a dim-D grid against expected(). */
static void check_components(int dim, const int64_t n[3], const double h[3], const pj_term_boundary b[3])
{
    int64_t cells = n[0] * n[1] * n[2];
    double *u = malloc(sizeof *u * (size_t)cells);
    for (int64_t i = 0; i < cells; i++) u[i] = value(i);
    const double *in[] = {u};
    static const char *const names[] = {"gradx(u)", "grady(u)", "gradz(u)"};
    int64_t checked = 0, boundary = 0;
    for (int comp = 0; comp < dim; comp++) {
        pj_term *t = face_term(names[comp], dim, n, h, b);
        double *out[3] = {NULL, NULL, NULL};
        for (int a = 0; a < dim; a++) out[a] = malloc(sizeof(double) * (size_t)pj_term_face_count(t, a));
        char err[256];
        assert_int_equal(pj_term_eval_faces(t, in, 0, out, err, sizeof err), PJ_OK);
        for (int a = 0; a < dim; a++) {
            int64_t m[3] = {n[0], n[1], n[2]};
            m[a]++;
            for (int64_t k = 0; k < m[2]; k++)
                for (int64_t j = 0; j < m[1]; j++)
                    for (int64_t i = 0; i < m[0]; i++) {
                        int64_t f[3] = {i, j, k};
                        double e = expected(u, n, h, b, a, comp, f), got = out[a][i + m[0] * (j + m[1] * k)];
                        if (!(fabs(got - e) <= 1e-13 * (1 + fabs(e))))
                            fail_msg("%dD %s on face (%lld, %lld, %lld) along %c: %.17g, expected %.17g", dim, names[comp],
                                     (long long)i, (long long)j, (long long)k, "xyz"[a], got, e);
                        checked++;
                        boundary += f[a] == 0 || f[a] == n[a];
                    }
        }
        for (int a = 0; a < dim; a++) free(out[a]);
        pj_term_free(t);
    }
    printf("%dD: %lld face values (%lld on boundary faces) as expected\n", dim, (long long)checked, (long long)boundary);
    free(u);
}

static void faces_against_loops(void **state)
{
    (void)state;
    const pj_term_boundary b2[3] = {PJ_TERM_ZERO_FLUX, PJ_TERM_PERIODIC, PJ_TERM_ZERO_FLUX};
    check_components(2, (int64_t[3]){7, 5, 1}, (double[3]){0.1, 0.25, 1}, b2);
    const pj_term_boundary b3[3] = {PJ_TERM_PERIODIC, PJ_TERM_ZERO_FLUX, PJ_TERM_PERIODIC};
    check_components(3, (int64_t[3]){4, 3, 5}, (double[3]){0.5, 0.25, 2}, b3);
}

/* The largest error of gradx and grady over every face of an n x n grid of [0, L]^2 against the
 * exact gradient (gx, gy) of u at the face centres. */
typedef double (*fn2)(double x, double y);
static double face_error(int64_t n, double L, const pj_term_boundary b[3], fn2 u, fn2 gx, fn2 gy)
{
    int64_t N[3] = {n, n, 1};
    double h[3] = {L / (double)n, L / (double)n, 1};
    double *v = malloc(sizeof *v * (size_t)(n * n));
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < n; i++) v[i + n * j] = u(((double)i + 0.5) * h[0], ((double)j + 0.5) * h[1]);
    const double *in[] = {v};
    double worst = 0;
    for (int comp = 0; comp < 2; comp++) {
        pj_term *t = face_term(comp ? "grady(u)" : "gradx(u)", 2, N, h, b);
        double *out[2];
        for (int a = 0; a < 2; a++) out[a] = malloc(sizeof(double) * (size_t)pj_term_face_count(t, a));
        char err[256];
        assert_int_equal(pj_term_eval_faces(t, in, 0, out, err, sizeof err), PJ_OK);
        for (int a = 0; a < 2; a++) {
            int64_t mx = n + (a == 0), my = n + (a == 1);
            for (int64_t j = 0; j < my; j++)
                for (int64_t i = 0; i < mx; i++) {
                    double x = ((double)i + (a == 0 ? 0 : 0.5)) * h[0], y = ((double)j + (a == 1 ? 0 : 0.5)) * h[1];
                    double e = comp ? gy(x, y) : gx(x, y);
                    worst = fmax(worst, fabs(out[a][i + mx * j] - e));
                }
        }
        for (int a = 0; a < 2; a++) free(out[a]);
        pj_term_free(t);
    }
    free(v);
    return worst;
}

static double per_u(double x, double y) { return sin(x) * cos(2 * y); }
static double per_gx(double x, double y) { return cos(x) * cos(2 * y); }
static double per_gy(double x, double y) { return -2 * sin(x) * sin(2 * y); }
static double wall_u(double x, double y) { return cos(x) * cos(2 * y); }
static double wall_gx(double x, double y) { return -sin(x) * cos(2 * y); }
static double wall_gy(double x, double y) { return -2 * cos(x) * sin(2 * y); }

/* Errors at n = 16, 32, 64, 128; each ratio of successive errors must be 4 (second order) within
 * 10 %. */
static void expect_second_order(const char *what, const double err[4])
{
    printf("%s: errors %.3e %.3e %.3e %.3e, ratios %.3f %.3f %.3f\n", what, err[0], err[1], err[2], err[3],
           err[0] / err[1], err[1] / err[2], err[2] / err[3]);
    for (int i = 0; i < 3; i++) {
        double r = err[i] / err[i + 1];
        if (!(r > 3.6 && r < 4.4)) fail_msg("%s: error ratio %.3f from n = %d to %d, not about 4", what, r, 16 << i, 32 << i);
    }
}

static void second_order_on_faces(void **state)
{
    (void)state;
    const pj_term_boundary per[3] = {PJ_TERM_PERIODIC, PJ_TERM_PERIODIC, PJ_TERM_ZERO_FLUX};
    const pj_term_boundary zf[3] = {PJ_TERM_ZERO_FLUX, PJ_TERM_ZERO_FLUX, PJ_TERM_ZERO_FLUX};
    double ep[4], ew[4];
    for (int i = 0; i < 4; i++) {
        int64_t n = 16 << i;
        ep[i] = face_error(n, 2 * M_PI, per, per_u, per_gx, per_gy);
        /* cos(x) cos(2y) on [0, pi]^2 has dn(u) = 0 on every wall: the mirror ghosts are its own */
        ew[i] = face_error(n, M_PI, zf, wall_u, wall_gx, wall_gy);
    }
    expect_second_order("sin(x)cos(2y), periodic, gradx and grady on every face", ep);
    expect_second_order("cos(x)cos(2y), zero-flux walls, gradx and grady on every face", ew);
}

/* ---- problems ------------------------------------------------------------------------------- */

/* v after one Euler step of dt from 0: dt * div(normal(grady(u), gradx(u))) = dt * 2 u_xy. */
static double cross_error(int n, int periodic_x)
{
    char src[1024];
    snprintf(src, sizeof src,
             "mesh grid(nx = %d, ny = %d, Lx = %s, Ly = pi)\n"
             "field u = sin(x)*sin(2*y), v = 0\n"
             "eq dt(u) = 0\n"
             "eq dt(v) = div(normal(grady(u), gradx(u)))\n"
             "%s\n"
             "time dt = 1e-5, steps = 1, scheme = euler\n",
             n, n, periodic_x ? "2*pi" : "pi", periodic_x ? "periodic x\non bottom, top: u = 0" : "on all: u = 0");
    solved *s = solve(src, BE_INTERP, 0, 1, NULL);
    assert_int_equal(s->status, 0);
    double worst = 0;
    for (int64_t c = 0; c < s->cells; c++) {
        double x = s->x[0][c], y = s->x[1][c];
        worst = fmax(worst, fabs(s->u[1][c] / 1e-5 - 4 * cos(x) * cos(2 * y)));
    }
    solved_free(s);
    return worst;
}

static void second_order_with_dirichlet(void **state)
{
    (void)state;
    double walls[4], mixed[4];
    for (int i = 0; i < 4; i++) {
        walls[i] = cross_error(16 << i, 0);
        mixed[i] = cross_error(16 << i, 1);
    }
    expect_second_order("div(normal(grady(u), gradx(u))) = 2 u_xy, u = 0 on every wall", walls);
    expect_second_order("div(normal(grady(u), gradx(u))) = 2 u_xy, periodic x, u = 0 on bottom and top", mixed);
}

/* samples/pfhub3.pde with its time statement replaced by `time_line`, when init is not NULL the
 * initial phi replaced by it, when n is not 0 on n x n cells, and with `extra` (NULL: nothing)
 * added; no monitors or outputs (malloc'd). */
static char *dendrite(const char *time_line, const char *init, int n, const char *extra)
{
    char *src = tu_read_file(PJ_SOURCE_DIR "/samples/pfhub3.pde", NULL);
    assert_non_null(src);
    size_t cap = strlen(src) + 1024;
    char *out = calloc(1, cap);
    assert_non_null(out);
    for (char *line = strtok(src, "\n"); line; line = strtok(NULL, "\n")) {
        char buf[512];
        if (!strncmp(line, "time ", 5)) {
            snprintf(buf, sizeof buf, "%s", time_line);
        } else if (!strncmp(line, "mesh ", 5) && n) {
            snprintf(buf, sizeof buf, "mesh grid(nx = %d, ny = %d, Lx = %g, Ly = %g)", n, n, 0.4 * n, 0.4 * n);
        } else if (!strncmp(line, "field phi", 9) && init) {
            snprintf(buf, sizeof buf, "field phi = %s, u = -0.3", init);
        } else if (!strncmp(line, "output", 6) || !strncmp(line, "monitor", 7)) {
            continue;
        } else {
            snprintf(buf, sizeof buf, "%s", line);
        }
        strcat(out, buf);
        strcat(out, "\n");
    }
    if (extra) strcat(out, extra);
    free(src);
    return out;
}

/* max |f(i, j) - f(j, i)| over the cells of a square grid, for each field: the largest */
static double asymmetry(const solved *s)
{
    int64_t n = s->p->n[0];
    assert_true(s->p->n[1] == n);
    double worst = 0;
    for (int f = 0; f < s->p->n_fields; f++)
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < n; i++) {
                double a = s->u[f][i + n * j], b = s->u[f][j + n * i];
                if (!isfinite(a)) fail_msg("field %d at (%lld, %lld): %g", f, (long long)i, (long long)j, a);
                worst = fmax(worst, fabs(a - b));
            }
    return worst;
}

/* How far the solid (phi > 0) reaches along the x axis and along the diagonal, from the corner. */
static void reach(const solved *s, double *axis, double *diagonal)
{
    int64_t n = s->p->n[0];
    double h = s->p->length[0] / (double)n;
    *axis = *diagonal = 0;
    for (int64_t i = 0; i < n; i++) {
        if (s->u[0][i] > 0) *axis = ((double)i + 0.5) * h;
        if (s->u[0][i + n * i] > 0) *diagonal = ((double)i + 0.5) * h * sqrt(2.0);
    }
}

static void dendrite_stays_symmetric(void **state)
{
    (void)state;
    char *src = dendrite("time dt = 0.003, until = 1, scheme = euler", NULL, 0, NULL);
    static const backend_kind be[] = {BE_INTERP, BE_CPU};
    for (int k = 0; k < 2; k++) {
        solved *s = solve(src, be[k], 0, 2, NULL);
        assert_int_equal(s->status, 0);
        double asym = asymmetry(s), ax, dg;
        reach(s, &ax, &dg);
        printf("pfhub3, %s, t = %g: max |f(i, j) - f(j, i)| = %.3g; the solid reaches %.2f along x, %.2f along "
               "the diagonal\n", k ? "cpu" : "interp", s->t, asym, ax, dg);
        assert_true(asym <= 1e-14);
        solved_free(s);
    }
    free(src);
}

/* The derived Jacobian of the dendrite on n x n cells (`extra` added) at the initial state
 * phi = init against PETSc's finite differences (one-sided, a column at a time). */
static jacobian_check dendrite_jacobian(const char *init, int n, const char *extra)
{
    char *src = dendrite("time dt = 0.1, until = 1, scheme = bdf2", init, n, extra);
    diag d;
    diag_init(&d, "t.pde", src, strlen(src));
    pj_program *p = compile_problem("t.pde", src, strlen(src), &d, NULL);
    if (!p) fail_msg("%s", d.log);
    diag_free(&d);
    char err[512];
    sim_options so = {.threads = 1};
    sim *s = sim_create(p, &so, err, sizeof err);
    assert_non_null(s);
    sim_init(s);
    implicit_solver *q = implicit_on_sim(s, NULL, err, sizeof err);
    if (!q) fail_msg("%s", err);
    jacobian_check r;
    if (implicit_check_jacobian(q, 0, 1e-5, &r, err, sizeof err)) fail_msg("%s", err);
    printf("pfhub3, %d x %d%s, phi = %s: %lld Jacobian rows, %lld with every entry finite, %lld disagree with finite "
           "differences (worst of the others %.2g)\n", n, n, extra ? ", periodic" : "", init, (long long)r.rows, (long long)r.compared,
           (long long)r.disagree, r.worst);
    assert_true(r.rows == 2 * n * n);
    implicit_destroy(q);
    sim_destroy(s);
    program_free(p);
    free(src);
    return r;
}

static void implicit_where_gradient_is_zero(void **state)
{
    (void)state;
    if (!implicit_available(NULL, 0)) {
        print_message("SKIPPED: no implicit solver in this build\n");
        skip();
    }
    /* a smooth state: every row as the differences have it (the tangential parts, their corner
       ghosts folded onto the cells the zero-flux walls mirror) */
    jacobian_check r = dendrite_jacobian("0.3*sin(x)*cos(y)", 12, NULL);
    assert_true(r.compared == r.rows && r.disagree == 0);
    /* exactly 1 inside r < 7, -1 beyond r = 9: the gradient is zero on most faces and cells, and
       every row is finite (atan2(0, 0) has derivative 0). F is not differentiable there: its
       directional derivative depends on the direction. Perturbing one cell moves a zero gradient
       along an axis, and a(theta) is the same along every axis (fourfold, theta0 = 0) and at theta =
       atan2(0, 0) = 0: on periodic axes the one-sided differences agree with every row */
    const char *init = "max(-1, min(1, 8 - sqrt(x^2 + y^2)))";
    r = dendrite_jacobian(init, 24, "periodic x, y\n");
    assert_true(r.compared == r.rows && r.disagree == 0);
    /* beside a zero-flux wall the mirror ghost moves with its cell, which turns the gradient on the
       wall's neighbouring faces off the axes: there (and only there) they disagree. 12 x 12 cells,
       all inside r < 7: every row finite, the disagreeing ones wall rows */
    r = dendrite_jacobian(init, 12, NULL);
    assert_true(r.compared == r.rows);
    assert_true(r.disagree <= 2 * 4 * 11);
    /* bdf2 at 33x the explicit step (0.003) to t = 2 */
    char *src = dendrite("time dt = 0.1, until = 2, scheme = bdf2", init, 0, NULL);
    solved *run = solve(src, BE_CPU, 0, 1, NULL);
    if (run->status) fail_msg("bdf2: %s", run->err);
    double asym = asymmetry(run), ax, dg;
    reach(run, &ax, &dg);
    printf("pfhub3 with bdf2 at dt = 0.1 from that seed, t = %g: max |f(i, j) - f(j, i)| = %.3g; the solid "
           "reaches %.2f along x, %.2f along the diagonal\n", run->t, asym, ax, dg);
    assert_true(fabs(run->t - 2) < 1e-12);
    assert_true(asym <= 1e-8);
    solved_free(run);
    free(src);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(faces_against_loops),
        cmocka_unit_test(second_order_on_faces),
        cmocka_unit_test(second_order_with_dirichlet),
        cmocka_unit_test(dendrite_stays_symmetric),
        cmocka_unit_test(implicit_where_gradient_is_zero),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
