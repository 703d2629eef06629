/* test_sim.c — the simulation driver (steppers, ghost fill, params, NaN checks) and the
 * writers, on small programs built by hand with the kir builder and scheme_lower(). */
#include "testutil.h"
#include <math.h>
#include <png.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <dirent.h>
#include "grid.h"
#include "interp.h"
#include "kir.h"
#include "scheme.h"
#include "sim.h"
#include "writers.h"

/* ---- building programs by hand ----------------------------------------------------------- */

typedef enum rhs_kind { RHS_DECAY, RHS_FORCED, RHS_DIFFUSION, RHS_GRAY_SCOTT } rhs_kind;

typedef struct tctx { rhs_kind kind; int dim; } tctx;

static int lap(kir_kernel *k, int dim, int slot, int f)
{
    int here[3] = {0, 0, 0}, sum = kir_const(k, 0);
    int u = kir_load(k, slot, f, here);
    for (int a = 0; a < dim; a++) {
        int p[3] = {0, 0, 0}, m[3] = {0, 0, 0};
        p[a] = 1;
        m[a] = -1;
        int h = kir_spacing(k, a);
        int d2 = kir_op2(k, KIR_SUB, kir_op2(k, KIR_ADD, kir_load(k, slot, f, p), kir_load(k, slot, f, m)),
                         kir_op2(k, KIR_MUL, kir_const(k, 2), u));
        sum = kir_op2(k, KIR_ADD, sum, kir_op2(k, KIR_DIV, d2, kir_op2(k, KIR_MUL, h, h)));
    }
    return sum;
}

static int rhs(void *ctx, kir_kernel *k, int slot, int f)
{
    tctx *c = ctx;
    int here[3] = {0, 0, 0};
    switch (c->kind) {
    case RHS_DECAY: return kir_op1(k, KIR_NEG, kir_load(k, slot, f, here));
    case RHS_FORCED: /* -u + cos(t): the stage times matter */
        return kir_op2(k, KIR_SUB, kir_op1(k, KIR_COS, kir_leaf(k, KIR_TIME)), kir_load(k, slot, f, here));
    case RHS_DIFFUSION: return kir_op2(k, KIR_MUL, kir_param(k, 0), lap(k, c->dim, slot, f));
    case RHS_GRAY_SCOTT: {
        /* du = Du lap u - u v^2 + F (1 - u);  dv = Dv lap v + u v^2 - (F + k) v */
        int u = kir_load(k, slot, 0, here), v = kir_load(k, slot, 1, here);
        int uvv = kir_op2(k, KIR_MUL, u, kir_op2(k, KIR_MUL, v, v));
        int F = kir_param(k, 2), K = kir_param(k, 3);
        if (f == 0)
            return kir_op2(k, KIR_ADD, kir_op2(k, KIR_SUB, kir_op2(k, KIR_MUL, kir_param(k, 0), lap(k, c->dim, slot, 0)), uvv),
                           kir_op2(k, KIR_MUL, F, kir_op2(k, KIR_SUB, kir_const(k, 1), u)));
        return kir_op2(k, KIR_SUB, kir_op2(k, KIR_ADD, kir_op2(k, KIR_MUL, kir_param(k, 1), lap(k, c->dim, slot, 1)), uvv),
                       kir_op2(k, KIR_MUL, kir_op2(k, KIR_ADD, F, K), v));
    }
    }
    return -1;
}

static char *xstrdup(const char *s)
{
    char *d = malloc(strlen(s) + 1);
    strcpy(d, s);
    return d;
}

/* A program on a grid of n cells over length len (origin 0), every field with an equation,
 * Neumann-0 boundaries, params from names/values (no params kernel), init all zero. */
static pj_program *tp_new(int dim, const int64_t n[3], const double len[3], int n_fields, rhs_kind kind,
                          pj_scheme scheme, int halo, int n_params, const char *const *pnames,
                          const double *pvalues)
{
    pj_program *p = calloc(1, sizeof *p);
    p->filename = xstrdup("test.pde");
    p->dim = dim;
    for (int a = 0; a < 3; a++) {
        p->n[a] = a < dim ? n[a] : 1;
        p->length[a] = a < dim ? len[a] : 1;
    }
    p->n_fields = n_fields;
    p->field_names = calloc((size_t)n_fields, sizeof(char *));
    p->field_has_eq = calloc((size_t)n_fields, sizeof(int));
    p->field_halo = calloc((size_t)n_fields, sizeof(int));
    static const char *fnames[] = {"u", "v", "w"};
    for (int f = 0; f < n_fields; f++) {
        p->field_names[f] = xstrdup(fnames[f]);
        p->field_has_eq[f] = 1;
        p->field_halo[f] = halo;
    }
    p->halo = halo;
    p->n_params = n_params;
    p->param_names = calloc((size_t)(n_params + 1), sizeof(char *));
    p->param_values = calloc((size_t)(n_params + 1), sizeof(double));
    for (int i = 0; i < n_params; i++) {
        p->param_names[i] = xstrdup(pnames[i]);
        p->param_values[i] = pvalues[i];
    }
    p->bc = calloc((size_t)n_fields, sizeof *p->bc);
    p->scheme = scheme;
    p->dt = 0.01;
    p->until = -1;
    p->steps = -1;
    tctx c = {kind, dim};
    p->rhs = kir_new(KIR_RHS, dim, n_fields, n_params, 2, "rhs");
    for (int f = 0; f < n_fields; f++) kir_add_output(p->rhs, 1, f, rhs(&c, p->rhs, 0, f));
    kir_finish(p->rhs);
    assert_int_equal(scheme_lower(p), 0);
    for (int s = 0; s < p->n_stages; s++) {
        char err[200];
        assert_int_equal(kir_verify(p->stages[s].kernel, err, sizeof err), 0);
    }
    return p;
}

/* writers_field_fn over a sim */
static int sim_field_of(void *obj, int f, double *out, char *err, size_t err_len)
{
    (void)err;
    (void)err_len;
    sim_get_field(obj, f, out);
    return 0;
}

static void tp_free(pj_program *p)
{
    free(p->filename);
    for (int f = 0; f < p->n_fields; f++) free(p->field_names[f]);
    for (int i = 0; i < p->n_params; i++) free(p->param_names[i]);
    free(p->field_names);
    free(p->field_has_eq);
    free(p->field_halo);
    free(p->param_names);
    free(p->param_values);
    kir_free(p->params_kernel);
    kir_free(p->init);
    kir_free(p->rhs);
    for (int s = 0; s < p->n_stages; s++) kir_free(p->stages[s].kernel);
    free(p->stages);
    for (int s = 0; s < 6; s++) kir_free(p->bc_kernel[s]);
    free(p->bc);
    free(p->output_fields);
    free(p);
}

/* init: every field = value */
static void tp_init_const(pj_program *p, double value)
{
    kir_kernel *k = kir_new(KIR_INIT, p->dim, p->n_fields, p->n_params, 1, "init");
    for (int f = 0; f < p->n_fields; f++) kir_add_output(k, 0, f, kir_const(k, value));
    kir_finish(k);
    p->init = k;
}

/* A linear bc a*u + b*dn(u) = c on side for field f, with node builders for a, b, c. Builds up
 * the side's KIR_BC kernel (one kernel per side, all fields). */
typedef int (*coef_fn)(kir_kernel *k, int side);

static void tp_bc(pj_program *p, int f, int side, double a, double b, double c, coef_fn cf, int constant)
{
    kir_kernel *k = p->bc_kernel[side];
    if (!k) {
        k = kir_new(KIR_BC, p->dim, p->n_fields, p->n_params, 3, "bc");
        k->side = side;
        p->bc_kernel[side] = k;
    }
    kir_add_output(k, 0, f, kir_const(k, a));
    kir_add_output(k, 1, f, kir_const(k, b));
    kir_add_output(k, 2, f, cf ? kir_op2(k, KIR_ADD, kir_const(k, c), cf(k, side)) : kir_const(k, c));
    kir_finish(k);
    p->bc[f][side].kind = PJ_BC_LINEAR;
    p->bc[f][side].constant = constant;
}

static sim *mk_sim(const pj_program *p, int single, int threads)
{
    sim_options o = {.single = single, .threads = threads};
    char err[256] = "";
    sim *s = sim_create(p, &o, err, sizeof err);
    if (!s) fprintf(stderr, "sim_create: %s\n", err);
    assert_non_null(s);
    return s;
}

/* value of field f, slot, at cell (i,j,k), ghosts included */
static double at(sim *s, int slot, int f, int64_t i, int64_t j, int64_t k)
{
    const kir_launch *L = sim_launch(s);
    const pj_program *p = sim_program(s);
    const double *b = L->buf[slot * p->n_fields + f];
    return b[i + j * L->stride[1] + k * L->stride[2]];
}

/* ---- time stepping ----------------------------------------------------------------------- */

static double decay_error(pj_scheme scheme, int nsteps, rhs_kind kind)
{
    int64_t n[3] = {1, 1, 1};
    double len[3] = {1, 1, 1};
    pj_program *p = tp_new(1, n, len, 1, kind, scheme, 1, 0, NULL, NULL);
    tp_init_const(p, 1.0);
    sim *s = mk_sim(p, 0, 1);
    sim_init(s);
    for (int i = 0; i < nsteps; i++) sim_step(s, 1.0 / nsteps);
    double u;
    sim_get_field(s, 0, &u);
    assert_true(fabs(sim_time(s) - 1.0) < 1e-12);
    assert_int_equal(sim_steps(s), nsteps);
    sim_destroy(s);
    tp_free(p);
    double exact = kind == RHS_DECAY ? exp(-1.0) : (cos(1.0) + sin(1.0)) / 2 + exp(-1.0) / 2;
    return fabs(u - exact);
}

static void ode_orders(void **state)
{
    (void)state;
    /* du/dt = -u, and du/dt = -u + cos(t) (which checks each stage's time) */
    for (int kind = RHS_DECAY; kind <= RHS_FORCED; kind++)
        for (int sch = PJ_EULER; sch <= PJ_RK4; sch++) {
            double e1 = decay_error((pj_scheme)sch, 10, (rhs_kind)kind);
            double e2 = decay_error((pj_scheme)sch, 20, (rhs_kind)kind);
            double order = log2(e1 / e2);
            if (fabs(order - (sch + 1)) > 0.2)
                fprintf(stderr, "%s: errors %g %g, order %.3f\n", scheme_name((pj_scheme)sch), e1, e2, order);
            assert_true(fabs(order - (sch + 1)) <= 0.2);
        }
}

static double sum(const double *v, int64_t n)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += v[i];
    return s;
}

/* Diffusion with zero-flux (mirror) walls conserves the total. */
static void diffusion_conserves(void **state)
{
    (void)state;
    const char *pn[] = {"D"};
    double pv[] = {0.5};
    for (int dim = 1; dim <= 3; dim++) {
        int64_t n[3] = {64, 24, 10};
        double len[3] = {1, 0.5, 1};
        pj_program *p = tp_new(dim, n, len, 1, RHS_DIFFUSION, PJ_RK3, 1, 1, pn, pv);
        sim *s = mk_sim(p, 0, 2);
        sim_init(s);
        int64_t cells = sim_cells(s);
        double *u = malloc(sizeof *u * (size_t)cells);
        srand(3);
        for (int64_t i = 0; i < cells; i++) u[i] = (double)rand() / RAND_MAX;
        sim_set_field(s, 0, u);
        double before = sum(u, cells), h = 1.0 / 64; /* the smallest spacing */
        for (int i = 0; i < 200; i++) sim_step(s, 0.15 * h * h / 0.5);
        sim_get_field(s, 0, u);
        double after = sum(u, cells);
        assert_true(tu_reldiff(before, after) < 1e-12);
        /* and it did diffuse: the spread shrank */
        double lo = 1, hi = 0;
        for (int64_t i = 0; i < cells; i++) lo = fmin(lo, u[i]), hi = fmax(hi, u[i]);
        assert_true(hi - lo < 0.9);
        free(u);
        sim_destroy(s);
        tp_free(p);
    }
}

/* The same run in float and in double agree to float accuracy; threads change nothing. */
static void single_and_threads(void **state)
{
    (void)state;
    const char *pn[] = {"D"};
    double pv[] = {1.0};
    int64_t n[3] = {80, 70, 1};
    double len[3] = {1, 1, 1};
    pj_program *p = tp_new(2, n, len, 1, RHS_DIFFUSION, PJ_RK2, 1, 1, pn, pv);
    tp_bc(p, 0, 0, 1, 0, 1, NULL, 1); /* left: u = 1 */
    int64_t cells = 80 * 70;
    double *u0 = malloc(sizeof(double) * (size_t)cells), *r[3];
    for (int64_t i = 0; i < cells; i++) u0[i] = sin(0.01 * (double)i);
    int conf[3][2] = {{0, 1}, {0, 2}, {1, 2}};
    for (int c = 0; c < 3; c++) {
        sim *s = mk_sim(p, conf[c][0], conf[c][1]);
        sim_init(s);
        sim_set_field(s, 0, u0);
        for (int i = 0; i < 50; i++) sim_step(s, 2e-5);
        r[c] = malloc(sizeof(double) * (size_t)cells);
        sim_get_field(s, 0, r[c]);
        sim_destroy(s);
    }
    assert_memory_equal(r[0], r[1], sizeof(double) * (size_t)cells);
    double worst = 0;
    for (int64_t i = 0; i < cells; i++) worst = fmax(worst, fabs(r[2][i] - r[0][i]));
    assert_true(worst < 1e-5);
    assert_true(worst > 0); /* it really ran in float */
    for (int c = 0; c < 3; c++) free(r[c]);
    free(u0);
    tp_free(p);
}

/* Grids large enough that each thread's range is cut into several pieces (cpu_pool.c: about
 * 16384 cells each), in 1D (pieces on 16-cell boundaries), 2D and 3D: 1, 2, 3 and 4 threads give
 * the same bytes (each cell computed once, by the same arithmetic, whoever computes it). */
static void threads_in_pieces(void **state)
{
    (void)state;
    const char *pn[] = {"D"};
    double pv[] = {1.0};
    int64_t sizes[3][3] = {{200003, 1, 1}, {301, 433, 1}, {41, 37, 89}};
    for (int dim = 1; dim <= 3; dim++) {
        double len[3] = {1, 1, 1};
        pj_program *p = tp_new(dim, sizes[dim - 1], len, 1, RHS_DIFFUSION, PJ_RK2, 1, 1, pn, pv);
        tp_bc(p, 0, 0, 1, 0, 1, NULL, 1); /* low x: u = 1 */
        double *r[4] = {NULL};
        int64_t cells = 0;
        for (int t = 1; t <= 4; t++) {
            sim *s = mk_sim(p, 0, t);
            sim_init(s);
            cells = sim_cells(s);
            double *u = malloc(sizeof *u * (size_t)cells);
            for (int64_t i = 0; i < cells; i++) u[i] = sin(0.001 * (double)i);
            sim_set_field(s, 0, u);
            for (int i = 0; i < 4; i++) sim_step(s, 1e-9);
            sim_get_field(s, 0, u);
            r[t - 1] = u;
            sim_destroy(s);
        }
        for (int t = 2; t <= 4; t++) assert_memory_equal(r[0], r[t - 1], sizeof(double) * (size_t)cells);
        for (int t = 0; t < 4; t++) free(r[t]);
        tp_free(p);
    }
}

/* ---- ghost fill -------------------------------------------------------------------------- */

static int coord_face(kir_kernel *k, int side)
{
    /* the face coordinate along the side's axis plus t */
    return kir_op2(k, KIR_ADD, kir_coord(k, side / 2, (side & 1) ? 1 : -1), kir_leaf(k, KIR_TIME));
}

static void ghosts_1d(void **state)
{
    (void)state;
    int64_t n[3] = {4, 1, 1};
    double len[3] = {1, 1, 1};
    double u[4] = {1, 2, 3, 4};
    /* left Dirichlet u = 2, right Neumann dn(u) = 0.5, halo 2, h = 0.25 */
    pj_program *p = tp_new(1, n, len, 1, RHS_DECAY, PJ_EULER, 2, 0, NULL, NULL);
    tp_bc(p, 0, 0, 1, 0, 2, NULL, 1);
    tp_bc(p, 0, 1, 0, 1, 0.5, NULL, 1);
    sim *s = mk_sim(p, 0, 1);
    sim_init(s);
    sim_set_field(s, 0, u);
    sim_fill_ghosts(s, 0, 0);
    assert_true(at(s, 0, 0, -1, 0, 0) == 3);
    assert_true(at(s, 0, 0, -2, 0, 0) == 2);
    assert_true(at(s, 0, 0, 4, 0, 0) == 4.125);
    assert_true(at(s, 0, 0, 5, 0, 0) == 3.375);
    sim_destroy(s);
    tp_free(p);

    /* left Robin 2u + 0.5 dn(u) = 1: ghosts 2/3 and 1/5; right Dirichlet u = x_face + t */
    p = tp_new(1, n, len, 1, RHS_DECAY, PJ_EULER, 2, 0, NULL, NULL);
    tp_bc(p, 0, 0, 2, 0.5, 1, NULL, 1);
    tp_bc(p, 0, 1, 1, 0, 0, coord_face, 0);
    s = mk_sim(p, 0, 1);
    sim_init(s);
    sim_set_field(s, 0, u);
    sim_fill_ghosts(s, 0, 0.5);
    assert_true(fabs(at(s, 0, 0, -1, 0, 0) - 2.0 / 3) < 1e-15);
    assert_true(fabs(at(s, 0, 0, -2, 0, 0) - 0.2) < 1e-15);
    assert_true(at(s, 0, 0, 4, 0, 0) == -1);  /* 2*1.5 - 4 */
    assert_true(at(s, 0, 0, 5, 0, 0) == 0);   /* 2*1.5 - 3 */
    sim_fill_ghosts(s, 0, 1.5);                /* time dependent: re-evaluated */
    assert_true(at(s, 0, 0, 4, 0, 0) == 1);
    sim_destroy(s);
    tp_free(p);

    /* periodic, then the default mirror */
    for (int per = 1; per >= 0; per--) {
        p = tp_new(1, n, len, 1, RHS_DECAY, PJ_EULER, 2, 0, NULL, NULL);
        if (per) {
            p->bc[0][0].kind = p->bc[0][1].kind = PJ_BC_PERIODIC;
            p->periodic[0] = 1;
        }
        s = mk_sim(p, 0, 1);
        sim_init(s);
        sim_set_field(s, 0, u);
        sim_fill_ghosts(s, 0, 0);
        double want[2][4] = {{1, 2, 4, 3}, {4, 3, 1, 2}}; /* ghosts -1 -2 4 5 */
        assert_true(at(s, 0, 0, -1, 0, 0) == want[per][0]);
        assert_true(at(s, 0, 0, -2, 0, 0) == want[per][1]);
        assert_true(at(s, 0, 0, 4, 0, 0) == want[per][2]);
        assert_true(at(s, 0, 0, 5, 0, 0) == want[per][3]);
        sim_destroy(s);
        tp_free(p);
    }
}

static int coord_x(kir_kernel *k, int side) { (void)side; return kir_coord(k, 0, 0); }

static void ghosts_2d(void **state)
{
    (void)state;
    int64_t n[3] = {3, 3, 1};
    double len[3] = {3, 3, 1};
    double u[9];
    for (int j = 0; j < 3; j++)
        for (int i = 0; i < 3; i++) u[i + 3 * j] = 1 + i + 10 * j;

    /* halo 1: left u = 0, right and bottom mirror, top u = x (cell centre along the face) */
    pj_program *p = tp_new(2, n, len, 1, RHS_DECAY, PJ_EULER, 1, 0, NULL, NULL);
    tp_bc(p, 0, 0, 1, 0, 0, NULL, 1);
    tp_bc(p, 0, 3, 1, 0, 0, coord_x, 1);
    sim *s = mk_sim(p, 0, 1);
    sim_init(s);
    sim_set_field(s, 0, u);
    sim_fill_ghosts(s, 0, 0);
    double left[3] = {-1, -11, -21}, right[3] = {3, 13, 23};
    for (int j = 0; j < 3; j++) {
        assert_true(at(s, 0, 0, -1, j, 0) == left[j]);
        assert_true(at(s, 0, 0, 3, j, 0) == right[j]);
    }
    double bottom[5] = {-1, 1, 2, 3, 3}, top[5] = {22, -20, -19, -18, -18}; /* i = -1 .. 3 */
    for (int i = -1; i <= 3; i++) {
        assert_true(at(s, 0, 0, i, -1, 0) == bottom[i + 1]);
        assert_true(at(s, 0, 0, i, 3, 0) == top[i + 1]);
    }
    sim_destroy(s);
    tp_free(p);

    /* halo 2: periodic x, bottom u = 0, top mirror */
    p = tp_new(2, n, len, 1, RHS_DECAY, PJ_EULER, 2, 0, NULL, NULL);
    p->bc[0][0].kind = p->bc[0][1].kind = PJ_BC_PERIODIC;
    p->periodic[0] = 1;
    tp_bc(p, 0, 2, 1, 0, 0, NULL, 1);
    s = mk_sim(p, 0, 1);
    sim_init(s);
    sim_set_field(s, 0, u);
    sim_fill_ghosts(s, 0, 0);
    assert_true(at(s, 0, 0, -1, 1, 0) == 13);
    assert_true(at(s, 0, 0, -2, 1, 0) == 12);
    assert_true(at(s, 0, 0, 3, 1, 0) == 11);
    assert_true(at(s, 0, 0, 4, 1, 0) == 12);
    assert_true(at(s, 0, 0, -2, -2, 0) == -12);
    assert_true(at(s, 0, 0, -1, -1, 0) == -3);
    assert_true(at(s, 0, 0, 3, -2, 0) == -11);
    assert_true(at(s, 0, 0, 4, 4, 0) == 12);
    assert_true(at(s, 0, 0, 1, 3, 0) == 22);
    assert_true(at(s, 0, 0, 1, 4, 0) == 12);
    sim_destroy(s);
    tp_free(p);

    /* fully periodic: every ghost is the interior cell modulo n */
    p = tp_new(2, n, len, 1, RHS_DECAY, PJ_EULER, 2, 0, NULL, NULL);
    for (int side = 0; side < 4; side++) p->bc[0][side].kind = PJ_BC_PERIODIC;
    p->periodic[0] = p->periodic[1] = 1;
    s = mk_sim(p, 0, 1);
    sim_init(s);
    sim_set_field(s, 0, u);
    sim_fill_ghosts(s, 0, 0);
    for (int j = -2; j < 5; j++)
        for (int i = -2; i < 5; i++) assert_true(at(s, 0, 0, i, j, 0) == u[(i + 3) % 3 + 3 * ((j + 3) % 3)]);
    sim_destroy(s);
    tp_free(p);
}

/* 3D, halo 2: periodic y; every other side mirrors, z bottom is Dirichlet u = 0 */
static void ghosts_3d(void **state)
{
    (void)state;
    int64_t n[3] = {3, 4, 2};
    double len[3] = {1, 1, 1};
    double u[24];
    for (int k = 0; k < 2; k++)
        for (int j = 0; j < 4; j++)
            for (int i = 0; i < 3; i++) u[i + 3 * j + 12 * k] = 1 + i + 10 * j + 100 * k;
    pj_program *p = tp_new(3, n, len, 1, RHS_DECAY, PJ_EULER, 2, 0, NULL, NULL);
    p->bc[0][2].kind = p->bc[0][3].kind = PJ_BC_PERIODIC;
    p->periodic[1] = 1;
    tp_bc(p, 0, 4, 1, 0, 0, NULL, 1);
    sim *s = mk_sim(p, 0, 1);
    sim_init(s);
    sim_set_field(s, 0, u);
    sim_fill_ghosts(s, 0, 0);
    for (int k = -2; k < 4; k++)
        for (int j = -2; j < 6; j++)
            for (int i = -2; i < 5; i++) {
                /* x mirrors, y wraps, z: back negates (Dirichlet 0), front mirrors */
                int ii = i < 0 ? -1 - i : i > 2 ? 5 - i : i;
                int jj = (j + 4) % 4;
                int kk = k < 0 ? -1 - k : k > 1 ? 3 - k : k;
                double want = u[ii + 3 * jj + 12 * kk] * (k < 0 ? -1 : 1);
                assert_true(at(s, 0, 0, i, j, k) == want);
            }
    sim_destroy(s);
    tp_free(p);
}

/* ---- params, runner, NaN ----------------------------------------------------------------- */

static void params(void **state)
{
    (void)state;
    const char *pn[] = {"a", "b"};
    double pv[] = {1, 2};
    int64_t n[3] = {4, 1, 1};
    double len[3] = {1, 1, 1};
    pj_program *p = tp_new(1, n, len, 1, RHS_DIFFUSION, PJ_EULER, 1, 2, pn, pv);
    kir_kernel *k = kir_new(KIR_PARAMS, 1, 1, 2, 0, "params");
    kir_add_output(k, 0, 0, kir_const(k, 1));
    kir_add_output(k, 0, 1, kir_op2(k, KIR_MUL, kir_const(k, 2), kir_param(k, 0)));
    kir_finish(k);
    p->params_kernel = k;
    sim *s = mk_sim(p, 0, 1);
    assert_true(sim_params(s)[0] == 1 && sim_params(s)[1] == 2);
    assert_int_equal(sim_set_param(s, "a", 3), 0);
    assert_true(sim_params(s)[1] == 6);
    assert_int_equal(sim_set_param(s, "b", 1), 0);
    assert_int_equal(sim_set_param(s, "a", 5), 0);
    assert_true(sim_params(s)[0] == 5 && sim_params(s)[1] == 1);
    assert_int_equal(sim_set_param(s, "nope", 1), -1);
    sim_destroy(s);
    tp_free(p);
}

typedef struct counting { atomic_int calls; int single; const pj_program *p; } counting;
static void count_runner(void *ctx, int stage, const kir_launch *L, int64_t b, int64_t e)
{
    counting *c = ctx;
    atomic_fetch_add(&c->calls, 1);
    interp_stage(c->p->stages[stage].kernel, L, c->single, b, e);
}

static void stage_runner(void **state)
{
    (void)state;
    const char *pn[] = {"D"};
    double pv[] = {1};
    int64_t n[3] = {100, 100, 1};
    double len[3] = {1, 1, 1};
    pj_program *p = tp_new(2, n, len, 1, RHS_DIFFUSION, PJ_RK4, 1, 1, pn, pv);
    tp_init_const(p, 0);
    tp_bc(p, 0, 0, 1, 0, 1, NULL, 1);
    double *r[2];
    counting c = {.single = 0, .p = p};
    atomic_init(&c.calls, 0);
    for (int run = 0; run < 2; run++) {
        sim *s = mk_sim(p, 0, 2);
        if (run) sim_set_stage_runner(s, count_runner, &c);
        sim_init(s);
        for (int i = 0; i < 5; i++) sim_step(s, 1e-5);
        r[run] = malloc(sizeof(double) * 10000);
        sim_get_field(s, 0, r[run]);
        sim_destroy(s);
    }
    assert_true(atomic_load(&c.calls) >= 20);
    assert_memory_equal(r[0], r[1], sizeof(double) * 10000);
    assert_true(r[0][0] > 0); /* the left wall heats */
    free(r[0]);
    free(r[1]);
    tp_free(p);
}

static void nan_report(void **state)
{
    (void)state;
    int64_t n[3] = {5, 4, 1};
    double len[3] = {5, 2, 1};
    pj_program *p = tp_new(2, n, len, 2, RHS_DECAY, PJ_RK2, 1, 0, NULL, NULL);
    tp_init_const(p, 1);
    sim *s = mk_sim(p, 0, 1);
    sim_init(s);
    sim_step(s, 0.1);
    sim_nan_report r;
    assert_int_equal(sim_check_finite(s, &r), 0);
    double v[20];
    sim_get_field(s, 1, v);
    v[4 + 5 * 3] = INFINITY; /* later in scan order */
    v[3 + 5 * 2] = NAN;
    sim_set_field(s, 1, v);
    assert_int_equal(sim_check_finite(s, &r), 1);
    assert_int_equal(r.field, 1);
    assert_int_equal(r.cell[0], 3);
    assert_int_equal(r.cell[1], 2);
    assert_int_equal(r.cell[2], 0);
    assert_true(r.x[0] == 3.5 && r.x[1] == 1.25);
    assert_true(isnan(r.value));
    assert_int_equal(r.step, 1);
    assert_true(r.t == 0.1);
    sim_destroy(s);
    tp_free(p);
}

static void bad_programs(void **state)
{
    (void)state;
    int64_t n[3] = {1, 1, 1};
    double len[3] = {1, 1, 1};
    pj_program *p = tp_new(1, n, len, 1, RHS_DECAY, PJ_EULER, 2, 0, NULL, NULL);
    char err[200] = "";
    sim_options o = {.threads = 1};
    assert_null(sim_create(p, &o, err, sizeof err)); /* 1 cell, halo 2 */
    assert_non_null(strstr(err, "ghost"));
    p->halo = 1;
    p->bc[0][0].kind = PJ_BC_LINEAR; /* no bc kernel */
    assert_null(sim_create(p, &o, err, sizeof err));
    assert_non_null(strstr(err, "bc kernel"));
    tp_free(p);
}

/* ---- writers ----------------------------------------------------------------------------- */

static writers_frame frame_2d(double *u, double *v, const char **names, const double **data)
{
    writers_frame fr;
    memset(&fr, 0, sizeof fr);
    fr.dim = 2;
    fr.n[0] = 3;
    fr.n[1] = 2;
    fr.n[2] = 1;
    fr.h[0] = 1;
    fr.h[1] = 0.5;
    fr.origin[0] = 1;
    fr.origin[1] = -1;
    for (int j = 0; j < 2; j++)
        for (int i = 0; i < 3; i++) {
            u[i + 3 * j] = i + 10 * j + 0.1;
            v[i + 3 * j] = 1.0 / 3 * (i + 1);
        }
    names[0] = "u";
    names[1] = "v";
    data[0] = u;
    data[1] = v;
    fr.names = names;
    fr.data = data;
    fr.n_fields = 2;
    fr.t = 0.25;
    return fr;
}

static int no_temp_files(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int ok = 1;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".tmp.")) ok = 0;
    closedir(d);
    return ok;
}

static void csv_format(void **state)
{
    (void)state;
    double u[6], v[6];
    const char *names[2];
    const double *data[2];
    writers_frame fr = frame_2d(u, v, names, data);
    char *dir = tu_tempdir("csv"), path[300], err[300];
    snprintf(path, sizeof path, "%s/dump.csv", dir);
    assert_int_equal(writers_csv(path, &fr, err, sizeof err), 0);
    char *text = tu_read_file(path, NULL);
    assert_non_null(text);
    const char *want =
        "x,y,u,v\n"
        "1.5,-0.75,0.10000000000000001,0.33333333333333331\n"
        "2.5,-0.75,1.1000000000000001,0.66666666666666663\n"
        "3.5,-0.75,2.1000000000000001,1\n"
        "1.5,-0.25,10.1,0.33333333333333331\n"
        "2.5,-0.25,11.1,0.66666666666666663\n"
        "3.5,-0.25,12.1,1\n";
    assert_string_equal(text, want);
    /* every value reads back exactly */
    char *line = strchr(text, '\n') + 1;
    for (int c = 0; c < 6; c++) {
        char *endp;
        strtod(line, &endp);
        strtod(endp + 1, &endp);
        assert_true(strtod(endp + 1, &endp) == u[c]);
        assert_true(strtod(endp + 1, &endp) == v[c]);
        line = endp + 1;
    }
    free(text);
    assert_true(no_temp_files(dir));
    /* errors are returned, with errno's text */
    snprintf(path, sizeof path, "%s/missing/dump.csv", dir);
    assert_int_equal(writers_csv(path, &fr, err, sizeof err), -1);
    assert_non_null(strstr(err, "No such file"));
    snprintf(path, sizeof path, "rm -rf %s", dir);
    assert_int_equal(tu_run(path, NULL), 0);
    free(dir);
}

static void png_roundtrip(void **state)
{
    (void)state;
    double u[8 * 5];
    for (int j = 0; j < 5; j++)
        for (int i = 0; i < 8; i++) u[i + 8 * j] = j + 0.01 * i;
    u[7] = NAN;
    const char *names[1] = {"u"};
    const double *data[1] = {u};
    writers_frame fr = {2, {8, 5, 1}, {1, 1, 1}, {0, 0, 0}, 0, 1, names, data, {0, 0, 0}, NULL};
    char *dir = tu_tempdir("png"), path[300], err[300];
    snprintf(path, sizeof path, "%s/u.png", dir);
    assert_int_equal(writers_png(path, &fr, 0, NULL, err, sizeof err), 0);
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    assert_true(png_image_begin_read_from_file(&img, path));
    /* 8 x 5 cells at 64 pixels a cell (512 across) below a 30-pixel header, 8 from the left, above
       the 30-pixel axes caption */
    assert_true(img.width > 512 + 8 + 8 + 24);
    assert_int_equal(img.height, 30 + 5 * 64 + 30);
    img.format = PNG_FORMAT_RGB;
    unsigned char *pix = malloc(PNG_IMAGE_SIZE(img));
    assert_true(png_image_finish_read(&img, NULL, pix, 0, NULL));
    size_t W = img.width;
#define PX(x, y) (pix + ((size_t)(y) * W + (size_t)(x)) * 3)
    /* top row: j = 4, near the maximum (yellow); bottom left: the minimum (dark purple) */
    unsigned char *tl = PX(8, 30), *bl = PX(8 + 63, 30 + 319), *nan_px = PX(8 + 7 * 64 + 5, 30 + 300);
    assert_true(tl[0] > 0xe0 && tl[1] > 0xd0 && tl[2] < 0x40);
    assert_int_equal(bl[0], 0x44);
    assert_int_equal(bl[1], 0x01);
    assert_int_equal(bl[2], 0x54);
    assert_int_equal(nan_px[0], 128);
    assert_memory_equal(PX(8 + 63, 30 + 63), tl, 3);
#undef PX
    free(pix);
    snprintf(path, sizeof path, "rm -rf %s", dir);
    assert_int_equal(tu_run(path, NULL), 0);
    free(dir);
}

static int b64val(char c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

/* decodes one base64 block of exactly `chars` characters into out; returns bytes */
static size_t b64dec(const char *s, size_t chars, unsigned char *out)
{
    size_t n = 0;
    for (size_t i = 0; i + 4 <= chars; i += 4) {
        int v[4];
        for (int q = 0; q < 4; q++) v[q] = s[i + q] == '=' ? 0 : b64val(s[i + q]);
        uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        out[n++] = (unsigned char)(w >> 16);
        if (s[i + 2] != '=') out[n++] = (unsigned char)(w >> 8);
        if (s[i + 3] != '=') out[n++] = (unsigned char)w;
    }
    return n;
}

/* Well-formed enough: every tag closes in order, attributes quoted, nothing outside. */
static int xml_balanced(const char *s)
{
    const char *stack[32];
    size_t lens[32];
    int depth = 0, seen_root = 0;
    while (*s) {
        if (*s != '<') {
            if (depth == 0 && *s != '\n' && *s != ' ') return 0;
            s++;
            continue;
        }
        if (s[1] == '?') {
            s = strstr(s, "?>");
            if (!s) return 0;
            s += 2;
            continue;
        }
        const char *end = strchr(s, '>');
        if (!end) return 0;
        int quotes = 0;
        for (const char *q = s; q < end; q++) quotes += *q == '"';
        if (quotes % 2) return 0;
        if (s[1] == '/') {
            size_t l = strcspn(s + 2, " >");
            if (depth == 0 || lens[depth - 1] != l || strncmp(stack[depth - 1], s + 2, l)) return 0;
            depth--;
        } else if (end[-1] != '/') {
            if (depth == 32 || (depth == 0 && seen_root)) return 0;
            stack[depth] = s + 1;
            lens[depth++] = strcspn(s + 1, " />");
            seen_root = 1;
        }
        s = end + 1;
    }
    return depth == 0 && seen_root;
}

static void vti_and_series(void **state)
{
    (void)state;
    double u[6], v[6];
    const char *names[2];
    const double *data[2];
    writers_frame fr = frame_2d(u, v, names, data);
    char *dir = tu_tempdir("vtk"), path[400], err[300];
    snprintf(path, sizeof path, "%s/a.vti", dir);
    assert_int_equal(writers_vti(path, &fr, err, sizeof err), 0);
    char *text = tu_read_file(path, NULL);
    assert_true(xml_balanced(text));
    assert_non_null(strstr(text, "WholeExtent=\"0 3 0 2 0 0\""));
    assert_non_null(strstr(text, "Origin=\"1 -1 0\""));
    assert_non_null(strstr(text, "Spacing=\"1 0.5 1\""));
    /* field v: UInt64 header (48 bytes) in its own block, then the data */
    const char *p = strstr(text, "Name=\"v\"");
    assert_non_null(p);
    p = strchr(p, '>') + 1;
    while (*p == ' ' || *p == '\n') p++;
    unsigned char hdr[9], bytes[64];
    assert_int_equal(b64dec(p, 12, hdr), 8);
    uint64_t nbytes;
    memcpy(&nbytes, hdr, 8);
    assert_int_equal(nbytes, 48);
    assert_int_equal(b64dec(p + 12, 64, bytes), 48);
    assert_memory_equal(bytes, v, 48);
    free(text);

    /* a series of two snapshots in every format */
    snprintf(path, sizeof path, "%s/out/deeper", dir);
    writers_series *ws = writers_series_open(path, PJ_FMT_CSV | PJ_FMT_VTK | PJ_FMT_PNG, err, sizeof err);
    assert_non_null(ws);
    fr.t = 0;
    assert_int_equal(writers_series_write(ws, &fr, err, sizeof err), 0);
    fr.t = 0.5;
    assert_int_equal(writers_series_write(ws, &fr, err, sizeof err), 0);
    assert_int_equal(writers_series_count(ws), 2);
    writers_series_close(ws);
    const char *files[] = {"snapshot_000000.csv", "snapshot_000001.csv", "snapshot_000001.vti",
                           "u_000001.png", "v_000000.png", "snapshots.pvd"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(path, sizeof path, "%s/out/deeper/%s", dir, files[i]);
        char *t = tu_read_file(path, NULL);
        assert_non_null(t);
        free(t);
    }
    snprintf(path, sizeof path, "%s/out/deeper/snapshots.csv", dir);
    text = tu_read_file(path, NULL);
    assert_string_equal(text, "snapshot,t\n0,0\n1,0.5\n");
    free(text);
    snprintf(path, sizeof path, "%s/out/deeper/snapshots.pvd", dir);
    text = tu_read_file(path, NULL);
    assert_true(xml_balanced(text));
    assert_non_null(strstr(text, "timestep=\"0.5\" group=\"\" part=\"0\" file=\"snapshot_000001.vti\""));
    free(text);
    snprintf(path, sizeof path, "%s/out/deeper", dir);
    assert_true(no_temp_files(path));
    snprintf(path, sizeof path, "rm -rf %s", dir);
    assert_int_equal(tu_run(path, NULL), 0);
    free(dir);
}

/* A frame of a sim, written as CSV: the --dump path end to end. */
static void dump_from_sim(void **state)
{
    (void)state;
    int64_t n[3] = {4, 1, 1};
    double len[3] = {2, 1, 1};
    pj_program *p = tp_new(1, n, len, 2, RHS_DECAY, PJ_EULER, 1, 0, NULL, NULL);
    tp_init_const(p, 0.5);
    sim *s = mk_sim(p, 1, 1);
    sim_init(s);
    writers_frame fr;
    char err[200], *dir = tu_tempdir("dump"), path[300];
    int only_v[1] = {1};
    assert_int_equal(writers_frame_build(&fr, sim_program(s), sim_launch(s), sim_time(s), only_v, 1, sim_field_of, s, err,
                                         sizeof err),
                     0);
    snprintf(path, sizeof path, "%s/d.csv", dir);
    assert_int_equal(writers_csv(path, &fr, err, sizeof err), 0);
    writers_frame_free(&fr);
    char *text = tu_read_file(path, NULL);
    assert_string_equal(text, "x,v\n0.25,0.5\n0.75,0.5\n1.25,0.5\n1.75,0.5\n");
    free(text);
    snprintf(path, sizeof path, "rm -rf %s", dir);
    assert_int_equal(tu_run(path, NULL), 0);
    free(dir);
    sim_destroy(s);
    tp_free(p);
}

/* ---- speed ------------------------------------------------------------------------------- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* Gray-Scott on 256x256, rk2: cells per second of one stage through the interpreter, printed
 * (bench/ measures; here 20 steps run and the state stays finite). */
static void speed(void **state)
{
    (void)state;
    const char *pn[] = {"Du", "Dv", "F", "k"};
    double pv[] = {2e-5, 1e-5, 0.04, 0.06};
    int64_t n[3] = {256, 256, 1};
    double len[3] = {1, 1, 1};
    pj_program *p = tp_new(2, n, len, 2, RHS_GRAY_SCOTT, PJ_RK2, 1, 4, pn, pv);
    tp_init_const(p, 0.5);
    for (int threads = 1; threads <= 2; threads++) {
        for (int single = 0; single < 2; single++) {
            sim *s = mk_sim(p, single, threads);
            sim_init(s);
            sim_step(s, 1.0); /* warm up */
            /* a fixed amount of work, timed for the message only (no loop or assert on the clock) */
            int steps = 20;
            double t0 = now();
            for (int k = 0; k < steps; k++) sim_step(s, 1.0);
            double t1 = now();
            double rate = (double)steps * p->n_stages * 65536 / (t1 - t0);
            printf("interp Gray-Scott 256x256 (%d nodes/stage) %s, %d thread%s: %.1f M cell-stages/s\n",
                   p->stages[0].kernel->n_nodes, single ? "float" : "double", threads,
                   threads > 1 ? "s" : "", rate / 1e6);
            sim_nan_report r;
            assert_int_equal(sim_check_finite(s, &r), 0);
            sim_destroy(s);
        }
    }
    tp_free(p);
}

/* grid_memory_check, the one comparison every back end makes before it allocates: fits or not,
 * and the numbers in decimal units with one decimal (GB, MB, kB), " on the device" where given;
 * grid_host_memory_available takes $PDEJIT_MEMORY_AVAILABLE over /proc/meminfo. */
static void memory_check_says_the_numbers(void **state)
{
    (void)state;
    char err[256] = "";
    assert_int_equal(grid_memory_check(12, 3.2e9, 38.4e9, NULL, err, sizeof err), 0);
    assert_string_equal(err, "");
    assert_int_equal(grid_memory_check(12, 3.2e9, 22.9e9, NULL, err, sizeof err), -1);
    assert_string_equal(err, "the problem needs 38.4 GB (12 buffers of 3.2 GB); 22.9 GB are available");
    assert_int_equal(grid_memory_check(1, 5e6, 2.5e6, " on the device", err, sizeof err), -1);
    assert_string_equal(err, "the problem needs 5.0 MB (1 buffer of 5.0 MB); 2.5 MB are available on the device");
    assert_int_equal(grid_memory_check(4, 1e3, -5, NULL, err, sizeof err), -1);
    assert_string_equal(err, "the problem needs 4.0 kB (4 buffers of 1.0 kB); 0.0 kB are available");
    setenv("PDEJIT_MEMORY_AVAILABLE", "1.5e9", 1);
    assert_true(grid_host_memory_available() == 1.5e9);
    unsetenv("PDEJIT_MEMORY_AVAILABLE");
    double here = grid_host_memory_available();
    assert_true(here > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ode_orders),    cmocka_unit_test(diffusion_conserves),
        cmocka_unit_test(single_and_threads), cmocka_unit_test(threads_in_pieces),
        cmocka_unit_test(ghosts_1d),
        cmocka_unit_test(ghosts_2d),     cmocka_unit_test(ghosts_3d),
        cmocka_unit_test(params),
        cmocka_unit_test(memory_check_says_the_numbers),
        cmocka_unit_test(stage_runner),  cmocka_unit_test(nan_report),
        cmocka_unit_test(bad_programs),  cmocka_unit_test(csv_format),
        cmocka_unit_test(png_roundtrip), cmocka_unit_test(vti_and_series),
        cmocka_unit_test(dump_from_sim), cmocka_unit_test(speed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
