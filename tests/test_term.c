/* test_term.c — text-defined terms on the caller's arrays (pj_term_*): values against loops
 * written here (exact where the loop does the same operations in the same order), both boundary
 * treatments, the derivative at the cell against its closed form, params, the kernel cache, and
 * every bad argument a status with a message. */
#include "testutil.h"
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pdejit.h"

static pj_term *make(const char *expr, int dim, const int64_t n[3], const double h[3], int n_fields,
                     const char *const *fields, int n_params, const char *const *params, const double *values,
                     pj_term_boundary b, char **diag)
{
    pj_term_options o = {.dim = dim, .n_fields = n_fields, .fields = fields, .n_params = n_params, .params = params,
                         .param_values = values, .threads = 2};
    for (int a = 0; a < 3; a++) {
        o.n[a] = n[a];
        o.h[a] = h[a];
        o.boundary[a] = b;
    }
    pj_term *t = NULL;
    pj_status st = pj_term_compile(expr, &o, &t, diag);
    if (st != PJ_OK) assert_null(t);
    return t;
}

static double value(int i) { return sin(0.7 * i) + 0.25 * i; }

/* 1D, zero flux: u[1] - u[-1] mirrors at the walls; lap(u) is the 3-point stencil over h^2 */
static void zero_flux_1d(void **state)
{
    (void)state;
    enum { N = 50 };
    const char *fields[] = {"u"};
    double u[N], out[N], h = 0.1;
    for (int i = 0; i < N; i++) u[i] = value(i);
    const double *in[] = {u};
    char err[256], *diag = NULL;
    pj_term *t = make("u[1] - u[-1]", 1, (int64_t[3]){N}, (double[3]){h}, 1, fields, 0, NULL, NULL,
                      PJ_TERM_ZERO_FLUX, &diag);
    assert_non_null(t);
    assert_int_equal(pj_term_eval(t, in, 0, out, err, sizeof err), PJ_OK);
    for (int i = 0; i < N; i++) {
        double r = u[i + 1 < N ? i + 1 : i], l = u[i > 0 ? i - 1 : i];
        assert_true(out[i] == r - l);
    }
    pj_term_free(t);
    t = make("lap(u)", 1, (int64_t[3]){N}, (double[3]){h}, 1, fields, 0, NULL, NULL, PJ_TERM_ZERO_FLUX, &diag);
    assert_non_null(t);
    assert_int_equal(pj_term_eval(t, in, 0, out, err, sizeof err), PJ_OK);
    for (int i = 0; i < N; i++) {
        double r = u[i + 1 < N ? i + 1 : i], l = u[i > 0 ? i - 1 : i];
        assert_true(fabs(out[i] - (r - 2 * u[i] + l) / (h * h)) < 1e-12 * (1 + fabs(out[i])));
    }
    pj_term_free(t);
}

/* 2D periodic, two fields, a param, a conditional; coordinates at cell centres */
static void periodic_2d_params(void **state)
{
    (void)state;
    enum { NX = 7, NY = 5 };
    const char *fields[] = {"u", "v"}, *params[] = {"k"};
    double k = 3, u[NX * NY], v[NX * NY], out[NX * NY];
    for (int i = 0; i < NX * NY; i++) {
        u[i] = value(i);
        v[i] = value(3 * i + 1);
    }
    const double *in[] = {u, v};
    char err[256], *diag = NULL;
    pj_term *t = make("u[1, 0] + k*v[0, -1] + (u > 0.5 ? x : y)", 2, (int64_t[3]){NX, NY}, (double[3]){0.5, 0.25}, 2,
                      fields, 1, params, &k, PJ_TERM_PERIODIC, &diag);
    assert_non_null(t);
    for (int round = 0; round < 2; round++) {
        assert_int_equal(pj_term_eval(t, in, 0, out, err, sizeof err), PJ_OK);
        for (int j = 0; j < NY; j++)
            for (int i = 0; i < NX; i++) {
                int c = i + NX * j;
                /* a product added is one fused multiply-add (kir_finish) */
                double expect = fma(k, v[i + NX * ((j + NY - 1) % NY)], u[(i + 1) % NX + NX * j]) +
                                (u[c] > 0.5 ? (i + 0.5) * 0.5 : (j + 0.5) * 0.25);
                assert_true(out[c] == expect);
            }
        k = -1.5; /* a param change, no recompile */
        assert_int_equal(pj_term_set_param(t, "k", k), PJ_OK);
    }
    assert_int_equal(pj_term_set_param(t, "nope", 1), PJ_ERR_INPUT);
    /* the output may be an input */
    assert_int_equal(pj_term_eval(t, in, 0, out, err, sizeof err), PJ_OK);
    assert_int_equal(pj_term_eval(t, in, 0, u, err, sizeof err), PJ_OK);
    assert_memory_equal(u, out, sizeof out);
    pj_term_free(t);
}

/* A term is F itself, the sign of a zero included: its rhs kernel runs, not a stage U + dt*F
 * (which gave +0 for -0), in place (1D, 2D) and through copies (3D) */
static void exactly_f(void **state)
{
    (void)state;
    enum { N = 64 };
    const char *fields[] = {"u", "v"};
    double u[N], v[N], out[N];
    for (int i = 0; i < N; i++) {
        u[i] = value(i);
        v[i] = i % 3 ? -0.0 : value(2 * i);
    }
    const double *in[] = {u, v};
    char err[256], *diag = NULL;
    static const int64_t sizes[3][3] = {{N, 1, 1}, {16, 4, 1}, {4, 4, 4}};
    for (int dim = 1; dim <= 3; dim++) {
        pj_term *t = make("-(u*0) + u*v", dim, sizes[dim - 1], (double[3]){0.5, 0.5, 0.5}, 2, fields, 0, NULL, NULL,
                          PJ_TERM_ZERO_FLUX, &diag);
        assert_non_null(t);
        assert_int_equal(pj_term_eval(t, in, 0, out, err, sizeof err), PJ_OK);
        for (int i = 0; i < N; i++) {
            double expect = -(u[i] * 0) + u[i] * v[i];
            assert_true(out[i] == expect);
            assert_int_equal(signbit(out[i]), signbit(expect));
        }
        pj_term_free(t);
    }
}

/* d term / d field at the cell: closed forms (the neighbours of lap are other cells) */
static void jacobian_at_cell(void **state)
{
    (void)state;
    enum { N = 40 };
    const char *fields[] = {"u", "v"}, *params[] = {"k"};
    double k = 2, h = 0.5, u[N], v[N], du[N], dv[N];
    for (int i = 0; i < N; i++) {
        u[i] = value(i);
        v[i] = value(i + 7);
    }
    const double *in[] = {u, v};
    char err[256], *diag = NULL;
    pj_term *t = make("k*u*u*v + lap(u) + exp(v[1])", 1, (int64_t[3]){N}, (double[3]){h}, 2, fields, 1, params, &k,
                      PJ_TERM_ZERO_FLUX, &diag);
    assert_non_null(t);
    assert_int_equal(pj_term_jacobian(t, "u", in, 0, du, err, sizeof err), PJ_OK);
    assert_int_equal(pj_term_jacobian(t, "v", in, 0, dv, err, sizeof err), PJ_OK);
    for (int i = 0; i < N; i++) {
        assert_true(fabs(du[i] - (2 * k * u[i] * v[i] - 2 / (h * h))) < 1e-12);
        assert_true(fabs(dv[i] - k * u[i] * u[i]) < 1e-12); /* v[1] is another cell */
    }
    assert_int_equal(pj_term_jacobian(t, "w", in, 0, du, err, sizeof err), PJ_ERR_INPUT);
    assert_non_null(strstr(err, "no input 'w'"));
    pj_term_free(t);
    /* no dependence on v: zero */
    t = make("u*u", 1, (int64_t[3]){N}, (double[3]){h}, 2, fields, 0, NULL, NULL, PJ_TERM_ZERO_FLUX, &diag);
    assert_int_equal(pj_term_jacobian(t, "v", in, 0, dv, err, sizeof err), PJ_OK);
    for (int i = 0; i < N; i++) assert_true(dv[i] == 0);
    pj_term_free(t);
}

/* The trial markers (ab/ID.run, cache.h) in the kernel cache folder of this test. */
static int trial_markers(void)
{
    const char *top = getenv("PDEJIT_CACHE_DIR");
    assert_non_null(top);
    int n = 0;
    DIR *d = opendir(top);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));) {
        if (strlen(e->d_name) != 2) continue;
        char sub[4096];
        snprintf(sub, sizeof sub, "%s/%s", top, e->d_name);
        DIR *s = opendir(sub);
        for (struct dirent *f; s && (f = readdir(s));) {
            size_t len = strlen(f->d_name);
            n += len > 4 && !strcmp(f->d_name + len - 4, ".run");
        }
        if (s) closedir(s);
    }
    closedir(d);
    return n;
}

/* A kernel loaded from the cache is on trial until it ran (cache.h): the first evaluation ends
 * the trial, so a process that exits without freeing its terms leaves no marker behind (the next
 * process would take the entry for one that crashed, set it aside and compile it again). */
static void cache_trial_ends_after_eval(void **state)
{
    (void)state;
    const char *fields[] = {"u"};
    int64_t n[3] = {8};
    double h[3] = {1}, u[8], out[8], du[8];
    for (int i = 0; i < 8; i++) u[i] = value(i);
    const double *in[] = {u};
    char *diag = NULL, err[256];
    pj_term *a = make("u*u*u - 31.5*u[1]", 1, n, h, 1, fields, 0, NULL, NULL, PJ_TERM_ZERO_FLUX, &diag);
    assert_non_null(a);
    assert_int_equal(pj_term_jacobian(a, "u", in, 0, du, err, sizeof err), PJ_OK); /* fills the cache */
    pj_term_free(a);
    assert_int_equal(trial_markers(), 0);
    pj_term *b = make("u*u*u - 31.5*u[1]", 1, n, h, 1, fields, 0, NULL, NULL, PJ_TERM_ZERO_FLUX, &diag);
    assert_non_null(b);
    assert_int_equal(pj_term_from_cache(b), 1);
    assert_int_equal(trial_markers(), 1); /* the stage kernel, loaded, not run yet */
    assert_int_equal(pj_term_eval(b, in, 0, out, err, sizeof err), PJ_OK);
    assert_int_equal(trial_markers(), 0);
    assert_true(out[0] == u[0] * u[0] * u[0] - 31.5 * u[1]);
    assert_int_equal(pj_term_jacobian(b, "u", in, 0, du, err, sizeof err), PJ_OK); /* its kernel from the cache */
    assert_int_equal(trial_markers(), 0);
    assert_true(fabs(du[3] - 3 * u[3] * u[3]) <= 1e-14 * fabs(du[3]));
    pj_term_free(b);
}

static void cached_and_errors(void **state)
{
    (void)state;
    const char *fields[] = {"u"}, *two[] = {"u", "u"}, *bad[] = {"2u"}, *reserved[] = {"term__"};
    int64_t n[3] = {8};
    double h[3] = {1}, u[8] = {0}, out[8];
    char *diag = NULL, err[256];
    /* compiled once: a second term of the same expression loads the kernel from the disk cache */
    pj_term *a = make("u*u + 17.25", 1, n, h, 1, fields, 0, NULL, NULL, PJ_TERM_ZERO_FLUX, &diag);
    pj_term *b = make("u*u + 17.25", 1, n, h, 1, fields, 0, NULL, NULL, PJ_TERM_ZERO_FLUX, &diag);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(pj_term_from_cache(b), 1);
    const double *in[] = {u}, *none[] = {NULL};
    assert_int_equal(pj_term_eval(b, none, 0, out, err, sizeof err), PJ_ERR_INPUT);
    assert_int_equal(pj_term_eval(b, in, 0, NULL, err, sizeof err), PJ_ERR_INPUT);
    assert_int_equal(pj_term_eval(b, in, 0, out, err, sizeof err), PJ_OK);
    assert_true(out[3] == 17.25);
    pj_term_free(a);
    pj_term_free(b);

    assert_null(make("lap(u) + w", 1, n, h, 1, fields, 0, NULL, NULL, PJ_TERM_ZERO_FLUX, &diag));
    assert_string_equal(diag, "<term>:1:10: error: undefined name 'w'\n    lap(u) + w\n             ^\n1 error\n");
    free(diag);
    pj_term_options o = {.dim = 1, .n = {8}, .h = {1}, .n_fields = 1, .fields = fields,
                         .definitions = "func f(s) = s*(1 - s)\nfunc g(s) = q\n"};
    pj_term *t = NULL;
    assert_int_equal(pj_term_compile("f(u)", &o, &t, &diag), PJ_ERR_INPUT);
    assert_non_null(strstr(diag, "<definitions>:2:13: error: undefined name 'q'"));
    free(diag);
    o.definitions = "func f(s) = s*(1 - s)";
    assert_int_equal(pj_term_compile("f(u)", &o, &t, &diag), PJ_OK);
    u[2] = 0.5;
    assert_int_equal(pj_term_eval(t, in, 0, out, err, sizeof err), PJ_OK);
    assert_true(out[2] == 0.25 && out[1] == 0);
    pj_term_free(t);

    struct { const char *const *fields; int nf; double h; int dim; const char *msg; } cases[] = {
        {two, 2, 1, 1, "'u' is given twice"},
        {bad, 1, 1, 1, "'2u' is not a name for a field"},
        {reserved, 1, 1, 1, "'term__' is reserved"},
        {fields, 1, 0, 1, "the spacing along x must be a positive number"},
        {fields, 1, NAN, 1, "the spacing along x must be a positive number"},
        {fields, 0, 1, 1, "a term needs at least one input field"},
        {fields, 1, 1, 4, "the grid must have 1, 2 or 3 axes, not 4"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        pj_term_options oc = {.dim = cases[c].dim, .n = {8, 8, 8}, .h = {cases[c].h, 1, 1}, .n_fields = cases[c].nf,
                              .fields = cases[c].fields};
        assert_int_equal(pj_term_compile("u", &oc, &t, &diag), PJ_ERR_INPUT);
        assert_null(t);
        assert_non_null(diag);
        assert_non_null(strstr(diag, cases[c].msg));
        free(diag);
    }
    /* a stencil wider than the grid */
    assert_null(make("u[2] + u[-2]", 1, (int64_t[3]){1}, h, 1, fields, 0, NULL, NULL, PJ_TERM_ZERO_FLUX, &diag));
    assert_non_null(diag);
    free(diag);
    assert_int_equal(pj_term_compile(NULL, &o, &t, NULL), PJ_ERR_INPUT);
}

/* In place (runtime/term.c): 1D and 2D kernels read halo-0 inputs from the caller's arrays and
 * write `out` directly, 2D a row at a time, inputs with neighbours through windows of rows.
 * Against loops written here, with rows long enough for the in-place path and short ones that
 * copy, one and three threads, and out aliasing an input read in place and one read through a
 * window (then copied whole). */
static void in_place_rows(void **state)
{
    (void)state;
    const char *fields[] = {"u", "v", "w"};
    for (int nx = 31; nx <= 70; nx += 39)
        for (int threads = 1; threads <= 3; threads += 2) {
            const int64_t ny = 61, cells = nx * ny; /* several windows of rows, and threads from 4096 cells */
            double *u = malloc(sizeof(double) * (size_t)cells), *v = malloc(sizeof(double) * (size_t)cells);
            double *w = malloc(sizeof(double) * (size_t)cells), *out = malloc(sizeof(double) * (size_t)cells);
            double *expect = malloc(sizeof(double) * (size_t)cells);
            assert_non_null(u && v && w && out && expect);
            for (int64_t i = 0; i < cells; i++) {
                u[i] = value((int)i);
                v[i] = 1 + 0.5 * value((int)(3 * i));
                w[i] = 2 - value((int)(7 * i));
            }
            pj_term_options o = {.dim = 2, .n = {nx, ny}, .h = {1, 1}, .n_fields = 3, .fields = fields,
                                 .threads = threads, .boundary = {PJ_TERM_PERIODIC, PJ_TERM_ZERO_FLUX}};
            pj_term *t = NULL;
            char *diag = NULL, err[256];
            assert_int_equal(pj_term_compile("u[1, 0] - u[0, -1] + v*w + 0.5*w[0, 2]", &o, &t, &diag), PJ_OK);
            const double *in[] = {u, v, w};
            for (int64_t j = 0; j < ny; j++)
                for (int64_t i = 0; i < nx; i++) {
                    double r = u[(i + 1) % nx + j * nx], d = u[i + (j > 0 ? j - 1 : 0) * nx];
                    int64_t j2 = j + 2 < ny ? j + 2 : 2 * ny - 1 - (j + 2); /* zero flux: the mirror */
                    expect[i + j * nx] = fma(0.5, w[i + j2 * nx], fma(v[i + j * nx], w[i + j * nx], r - d));
                }
            assert_int_equal(pj_term_eval(t, in, 0, out, err, sizeof err), PJ_OK);
            for (int64_t i = 0; i < cells; i++) assert_true(out[i] == expect[i]);
            /* out is v (read in place) */
            double *vc = malloc(sizeof(double) * (size_t)cells);
            assert_non_null(vc);
            memcpy(vc, v, sizeof(double) * (size_t)cells);
            const double *in_v[] = {u, vc, w};
            assert_int_equal(pj_term_eval(t, in_v, 0, vc, err, sizeof err), PJ_OK);
            for (int64_t i = 0; i < cells; i++) assert_true(vc[i] == expect[i]);
            /* out is u (read through its ghosted copy) */
            memcpy(vc, u, sizeof(double) * (size_t)cells);
            const double *in_u[] = {vc, v, w};
            assert_int_equal(pj_term_eval(t, in_u, 0, vc, err, sizeof err), PJ_OK);
            for (int64_t i = 0; i < cells; i++) assert_true(vc[i] == expect[i]);
            pj_term_free(t);
            free(vc);
            free(u);
            free(v);
            free(w);
            free(out);
            free(expect);
        }
    /* 1D */
    enum { N = 50 };
    double u[N], v[N], out[N];
    for (int i = 0; i < N; i++) {
        u[i] = value(i);
        v[i] = value(2 * i);
    }
    pj_term_options o = {.dim = 1, .n = {N}, .h = {1}, .n_fields = 2, .fields = fields, .threads = 2};
    pj_term *t = NULL;
    char *diag = NULL, err[256];
    assert_int_equal(pj_term_compile("u[-1]*v", &o, &t, &diag), PJ_OK);
    const double *in[] = {u, v};
    assert_int_equal(pj_term_eval(t, in, 0, out, err, sizeof err), PJ_OK);
    for (int i = 0; i < N; i++) assert_true(out[i] == u[i > 0 ? i - 1 : 0] * v[i]);
    pj_term_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(zero_flux_1d),
        cmocka_unit_test(periodic_2d_params),
        cmocka_unit_test(exactly_f),
        cmocka_unit_test(jacobian_at_cell),
        cmocka_unit_test(cached_and_errors),
        cmocka_unit_test(cache_trial_ends_after_eval),
        cmocka_unit_test(in_place_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
