/* test_term_faces.c — face terms (pj_term_options.at = PJ_TERM_FACES, pj_term_eval_faces): face
 * values against loops written here over the cells and the ghosts the boundary treatment implies
 * (exact where the loop does the operations in the same order), boundary faces with zero flux
 * and periodic axes, the face layout of pj_term_face_count in 1D, 2D and 3D, agreement with the
 * div(...) of the same flux in a cell term, and every misuse a status with a message. */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pdejit.h"

static pj_term *make(const char *expr, int dim, const int64_t n[3], const double h[3], int n_fields,
                     const char *const *fields, const pj_term_boundary b[3], pj_term_at at, char **diag)
{
    pj_term_options o = {.dim = dim, .n_fields = n_fields, .fields = fields, .threads = 2, .at = at};
    for (int a = 0; a < 3; a++) {
        o.n[a] = n[a];
        o.h[a] = h[a];
        o.boundary[a] = b[a];
    }
    pj_term *t = NULL;
    pj_status st = pj_term_compile(expr, &o, &t, diag);
    if (st != PJ_OK) assert_null(t);
    return t;
}

static double value(int i) { return sin(0.7 * i) + 0.25 * i + 0.01 * i * i; }

/* cell (i, j) of an nx x ny array with a boundary treatment per axis: i, j may be -1 or n (a ghost) */
static double at2(const double *u, int64_t nx, int64_t ny, int64_t i, int64_t j, const pj_term_boundary b[3])
{
    if (i < 0) i = b[0] == PJ_TERM_PERIODIC ? i + nx : 0;
    if (i >= nx) i = b[0] == PJ_TERM_PERIODIC ? i - nx : nx - 1;
    if (j < 0) j = b[1] == PJ_TERM_PERIODIC ? j + ny : 0;
    if (j >= ny) j = b[1] == PJ_TERM_PERIODIC ? j - ny : ny - 1;
    return u[i + j * nx];
}

/* 2D, a zero-flux x axis and a periodic y axis: the normal gradient, the face average, L R harm,
 * `boundary` and the face centre, on every face of both axes */
static void faces_2d(void **state)
{
    (void)state;
    enum { NX = 7, NY = 5 };
    const char *fields[] = {"u", "d"};
    const pj_term_boundary b[3] = {PJ_TERM_ZERO_FLUX, PJ_TERM_PERIODIC, PJ_TERM_ZERO_FLUX};
    double u[NX * NY], d[NX * NY], h[3] = {0.1, 0.25, 1};
    for (int i = 0; i < NX * NY; i++) {
        u[i] = value(i);
        d[i] = 1 + 0.5 * cos(1.3 * i);
    }
    const double *in[] = {u, d};
    char err[256], *diag = NULL;
    pj_term *t = make("harm(d)*grad(u) + 1000*boundary + u - L(u)*R(d)", 2, (int64_t[3]){NX, NY}, h, 2, fields, b,
                      PJ_TERM_FACES, &diag);
    if (!t) fail_msg("%s", diag);
    assert_int_equal(pj_term_face_count(t, 0), (NX + 1) * NY);
    assert_int_equal(pj_term_face_count(t, 1), NX * (NY + 1));
    assert_int_equal(pj_term_face_count(t, 2), 0);
    double fx[(NX + 1) * NY], fy[NX * (NY + 1)];
    double *out[] = {fx, fy};
    assert_int_equal(pj_term_eval_faces(t, in, 0, out, err, sizeof err), PJ_OK);
    for (int axis = 0; axis < 2; axis++) {
        int64_t mx = NX + (axis == 0), my = NY + (axis == 1);
        for (int64_t j = 0; j < my; j++)
            for (int64_t i = 0; i < mx; i++) {
                /* face (i, j) along axis lies between the cell before it (L) and cell (i, j) (R) */
                int64_t li = i - (axis == 0), lj = j - (axis == 1);
                double ul = at2(u, NX, NY, li, lj, b), ur = at2(u, NX, NY, i, j, b);
                double dl = at2(d, NX, NY, li, lj, b), dr = at2(d, NX, NY, i, j, b);
                int side = b[axis] == PJ_TERM_ZERO_FLUX && (axis == 0 ? (i == 0 || i == NX) : (j == 0 || j == NY));
                double harm = 2 * dl * dr / (dl + dr), grad = (ur - ul) * (1 / h[axis]);
                double expect = harm * grad + 1000 * side + 0.5 * (ul + ur) - ul * dr;
                double got = (axis == 0 ? fx : fy)[i + j * mx];
                if (fabs(got - expect) > 1e-13 * (1 + fabs(expect)))
                    fail_msg("axis %d face (%d, %d): %.17g, expected %.17g", axis, (int)i, (int)j, got, expect);
            }
    }
    /* zero flux: no gradient through the x walls; periodic: face 0 and face NY are one face */
    pj_term_free(t);
    t = make("grad(u)", 2, (int64_t[3]){NX, NY}, h, 2, fields, b, PJ_TERM_FACES, &diag);
    assert_non_null(t);
    assert_int_equal(pj_term_eval_faces(t, in, 0, out, err, sizeof err), PJ_OK);
    for (int j = 0; j < NY; j++) {
        assert_true(fx[j * (NX + 1)] == 0 && fx[j * (NX + 1) + NX] == 0);
        assert_true(fx[j * (NX + 1) + 3] == (u[j * NX + 3] - u[j * NX + 2]) * (1 / h[0]));
    }
    for (int i = 0; i < NX; i++) {
        assert_true(fy[i] == fy[i + NY * NX]);
        assert_true(fy[i] == (u[i] - u[i + (NY - 1) * NX]) * (1 / h[1]));
    }
    pj_term_free(t);
    /* the face centre: along the axis (i)·h, across it the cell centre */
    t = make("x + 100*y", 2, (int64_t[3]){NX, NY}, h, 2, fields, b, PJ_TERM_FACES, &diag);
    assert_non_null(t);
    assert_int_equal(pj_term_eval_faces(t, in, 0, out, err, sizeof err), PJ_OK);
    for (int j = 0; j < NY; j++)
        for (int i = 0; i <= NX; i++)
            assert_true(fabs(fx[i + j * (NX + 1)] - (i * h[0] + 100 * (j + 0.5) * h[1])) < 1e-12);
    for (int j = 0; j <= NY; j++)
        for (int i = 0; i < NX; i++)
            assert_true(fabs(fy[i + j * NX] - ((i + 0.5) * h[0] + 100 * j * h[1])) < 1e-12);
    pj_term_free(t);
}

/* 1D and 3D layouts; a cell term's div(F) equals the difference of the face term F over h */
static void layouts_and_div(void **state)
{
    (void)state;
    const char *fields[] = {"u"};
    const pj_term_boundary zf[3] = {PJ_TERM_ZERO_FLUX, PJ_TERM_ZERO_FLUX, PJ_TERM_ZERO_FLUX};
    const pj_term_boundary mix[3] = {PJ_TERM_PERIODIC, PJ_TERM_ZERO_FLUX, PJ_TERM_PERIODIC};
    char err[256], *diag = NULL;
    enum { N = 9 };
    double u1[N], f1[N + 1];
    for (int i = 0; i < N; i++) u1[i] = value(i);
    const double *in1[] = {u1};
    double *out1[] = {f1};
    pj_term *t = make("R(u) - LL(u)", 1, (int64_t[3]){N}, (double[3]){0.5}, 1, fields, zf, PJ_TERM_FACES, &diag);
    assert_non_null(t);
    assert_int_equal(pj_term_face_count(t, 0), N + 1);
    assert_int_equal(pj_term_face_count(t, 1), 0);
    assert_int_equal(pj_term_eval_faces(t, in1, 0, out1, err, sizeof err), PJ_OK);
    for (int i = 0; i <= N; i++) {
        /* zero flux mirrors: ghost -1 is cell 0, ghost -2 cell 1; ghost N is cell N-1 */
        int r = i < N ? i : N - 1, ll = i - 2 >= 0 ? i - 2 : -(i - 2) - 1;
        assert_true(f1[i] == u1[r] - u1[ll]);
    }
    pj_term_free(t);

    enum { X = 4, Y = 3, Z = 5 };
    double u[X * Y * Z], fx[(X + 1) * Y * Z], fy[X * (Y + 1) * Z], fz[X * Y * (Z + 1)], div[X * Y * Z];
    for (int i = 0; i < X * Y * Z; i++) u[i] = value(i);
    const double *in[] = {u};
    double *out[] = {fx, fy, fz};
    const double h[3] = {0.5, 0.25, 2};
    const char *flux = "u*grad(u) + (u > 1 ? L(u) : R(u))";
    t = make(flux, 3, (int64_t[3]){X, Y, Z}, h, 1, fields, mix, PJ_TERM_FACES, &diag);
    assert_non_null(t);
    assert_int_equal(pj_term_face_count(t, 0), (X + 1) * Y * Z);
    assert_int_equal(pj_term_face_count(t, 1), X * (Y + 1) * Z);
    assert_int_equal(pj_term_face_count(t, 2), X * Y * (Z + 1));
    assert_int_equal(pj_term_eval_faces(t, in, 0, out, err, sizeof err), PJ_OK);
    pj_term_free(t);
    char cell[128];
    snprintf(cell, sizeof cell, "div(%s)", flux);
    t = make(cell, 3, (int64_t[3]){X, Y, Z}, h, 1, fields, mix, PJ_TERM_CELLS, &diag);
    assert_non_null(t);
    assert_int_equal(pj_term_face_count(t, 0), 0);
    assert_int_equal(pj_term_eval(t, in, 0, div, err, sizeof err), PJ_OK);
    pj_term_free(t);
    for (int k = 0; k < Z; k++)
        for (int j = 0; j < Y; j++)
            for (int i = 0; i < X; i++) {
                double e = (fx[(i + 1) + (X + 1) * (j + Y * k)] - fx[i + (X + 1) * (j + Y * k)]) / h[0] +
                           (fy[i + X * ((j + 1) + (Y + 1) * k)] - fy[i + X * (j + (Y + 1) * k)]) / h[1] +
                           (fz[i + X * (j + Y * (k + 1))] - fz[i + X * (j + Y * k)]) / h[2];
                double got = div[i + X * (j + Y * k)];
                if (fabs(got - e) > 1e-12 * (1 + fabs(e)))
                    fail_msg("cell (%d, %d, %d): %.17g vs %.17g", i, j, k, got, e);
            }
    /* periodic x and z: the first and last faces are one face */
    for (int k = 0; k < Z; k++)
        for (int j = 0; j < Y; j++) assert_true(fx[(X + 1) * (j + Y * k)] == fx[X + (X + 1) * (j + Y * k)]);
    for (int j = 0; j < Y; j++)
        for (int i = 0; i < X; i++) assert_true(fz[i + X * j] == fz[i + X * (j + Y * Z)]);
}

/* misuse: messages with the caret, the wrong evaluation call, internal names out of reach */
static void errors(void **state)
{
    (void)state;
    const char *fields[] = {"u"};
    const pj_term_boundary zf[3] = {PJ_TERM_ZERO_FLUX, PJ_TERM_ZERO_FLUX, PJ_TERM_ZERO_FLUX};
    const int64_t n[3] = {6, 4, 1};
    const double h[3] = {1, 1, 1};
    char err[256], *diag = NULL;
    assert_null(make("grad(u) + w", 2, n, h, 1, fields, zf, PJ_TERM_FACES, &diag));
    assert_string_equal(diag, "<term>:1:11: error: undefined name 'w'\n    grad(u) + w\n              ^\n1 error\n");
    free(diag);
    assert_null(make("grad(grad(u))", 2, n, h, 1, fields, zf, PJ_TERM_FACES, &diag));
    assert_non_null(strstr(diag, "<term>:1:6: error: grad() is a face quantity"));
    free(diag);
    /* the internal face calls exist only for face terms' generated text */
    assert_null(make("face_x0__(u)", 2, n, h, 1, fields, zf, PJ_TERM_CELLS, &diag));
    assert_non_null(strstr(diag, "<term>:1:1: error: unknown function 'face_x0__'"));
    free(diag);
    assert_null(make("face_x0__(u)", 2, n, h, 1, fields, zf, PJ_TERM_FACES, &diag));
    assert_non_null(strstr(diag, "<term>:1:1: error: face_x0__() is a cell quantity"));
    free(diag);
    const char *reserved[] = {"face__"};
    assert_null(make("u", 2, n, h, 1, reserved, zf, PJ_TERM_FACES, &diag));
    assert_non_null(strstr(diag, "'face__' is reserved"));
    free(diag);
    pj_term_options o = {.dim = 2, .n = {6, 4}, .h = {1, 1}, .n_fields = 1, .fields = fields, .at = (pj_term_at)7};
    pj_term *t = NULL;
    assert_int_equal(pj_term_compile("u", &o, &t, &diag), PJ_ERR_INPUT);
    assert_non_null(strstr(diag, "unknown term kind 7"));
    free(diag);

    double u[24] = {0}, fx[28], fy[30], cells[24];
    const double *in[] = {u};
    double *out[] = {fx, fy}, *half[] = {fx, NULL};
    t = make("grad(u)", 2, n, h, 1, fields, zf, PJ_TERM_FACES, &diag);
    assert_non_null(t);
    assert_int_equal(pj_term_eval(t, in, 0, cells, err, sizeof err), PJ_ERR_INPUT);
    assert_non_null(strstr(err, "call pj_term_eval_faces"));
    assert_int_equal(pj_term_jacobian(t, "u", in, 0, cells, err, sizeof err), PJ_ERR_INPUT);
    assert_non_null(strstr(err, "no derivative at the cell"));
    assert_int_equal(pj_term_eval_faces(t, in, 0, half, err, sizeof err), PJ_ERR_INPUT);
    assert_non_null(strstr(err, "axis y is NULL"));
    assert_int_equal(pj_term_eval_faces(t, in, 0, NULL, err, sizeof err), PJ_ERR_INPUT);
    assert_int_equal(pj_term_eval_faces(t, in, 0, out, err, sizeof err), PJ_OK);
    for (int i = 0; i < 28; i++) assert_true(fx[i] == 0);
    pj_term_free(t);
    t = make("lap(u)", 2, n, h, 1, fields, zf, PJ_TERM_CELLS, &diag);
    assert_non_null(t);
    assert_int_equal(pj_term_eval_faces(t, in, 0, out, err, sizeof err), PJ_ERR_INPUT);
    assert_non_null(strstr(err, "call pj_term_eval"));
    pj_term_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(faces_2d),
        cmocka_unit_test(layouts_and_div),
        cmocka_unit_test(errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
