/* test_llvm.c — the LLVM CPU back end and the multicore launcher against a scalar reference.
 *
 * The reference walks a kernel's nodes cell by cell with kir_eval_scalar (the semantics every
 * back end reproduces); the JIT result must match it cell by cell, halo cells included (they
 * must stay untouched), to 1e-12 relative in double (NaN where both are NaN) and 1e-5 in
 * single. Kernels: hand-written 1D/2D/3D stencils (a 5-point reaction-diffusion update), every
 * operation of kir_ops.h on special values, in-place updates (same and aliased buffers, which
 * must still vectorise), fast-math, and 500+ random expressions in few kernels of many outputs.
 * Threading with 1, 2, 3 threads must give identical bytes. */
#include "testutil.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_pool.h"
#include "kir.h"
#include "llvm_backend.h"

#define HALO 2

static llvm_jit *jit;
static int sym_counter;
static double worst_double, worst_single; /* largest relative difference seen */
static int large_ops;   /* llvm_options.large_ops of every build (0: the default) */

/* ---- grids ------------------------------------------------------------------------------- */

typedef struct grid {
    int dim, single, nbuf;
    int64_t n[3], stride[3], len, base;
    void **mem;    /* nbuf allocations of len elements */
    void **cell0;  /* each at cell (0,0,0) */
} grid;

static grid *grid_new(int dim, int64_t n0, int64_t n1, int64_t n2, int nbuf, int single)
{
    grid *g = calloc(1, sizeof *g);
    g->dim = dim;
    g->single = single;
    g->nbuf = nbuf;
    int64_t n[3] = {n0, dim > 1 ? n1 : 1, dim > 2 ? n2 : 1};
    int64_t hy = dim > 1 ? HALO : 0, hz = dim > 2 ? HALO : 0;
    memcpy(g->n, n, sizeof n);
    g->stride[0] = 1;
    g->stride[1] = n[0] + 2 * HALO + 3; /* padding: rows not contiguous */
    g->stride[2] = g->stride[1] * (n[1] + 2 * hy);
    g->len = g->stride[2] * (n[2] + 2 * hz);
    g->base = HALO + hy * g->stride[1] + hz * g->stride[2];
    size_t es = single ? sizeof(float) : sizeof(double);
    g->mem = calloc((size_t)nbuf, sizeof *g->mem);
    g->cell0 = calloc((size_t)nbuf, sizeof *g->cell0);
    for (int b = 0; b < nbuf; b++) {
        g->mem[b] = calloc((size_t)g->len, es);
        g->cell0[b] = (char *)g->mem[b] + (size_t)g->base * es;
    }
    return g;
}

static void grid_free(grid *g)
{
    for (int b = 0; b < g->nbuf; b++) free(g->mem[b]);
    free(g->mem);
    free(g->cell0);
    free(g);
}

static grid *grid_clone(const grid *s)
{
    grid *g = grid_new(s->dim, s->n[0], s->n[1], s->n[2], s->nbuf, s->single);
    size_t es = s->single ? sizeof(float) : sizeof(double);
    for (int b = 0; b < s->nbuf; b++) memcpy(g->mem[b], s->mem[b], (size_t)s->len * es);
    return g;
}

static double gget(const grid *g, int b, int64_t e)
{
    return g->single ? ((float *)g->mem[b])[e] : ((double *)g->mem[b])[e];
}

static void gset(grid *g, int b, int64_t e, double v)
{
    if (g->single) ((float *)g->mem[b])[e] = (float)v;
    else ((double *)g->mem[b])[e] = v;
}

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

static double rng_unit(uint64_t *s) { return (double)(rng_next(s) >> 11) * 0x1.0p-53; }

/* Mostly positive values in [0.1, 1.5], some negative, everywhere including the halo. */
static void grid_fill_random(grid *g, uint64_t seed)
{
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (int b = 0; b < g->nbuf; b++)
        for (int64_t e = 0; e < g->len; e++) {
            double v = 0.1 + 1.4 * rng_unit(&s);
            if (rng_unit(&s) < 0.15) v = -v;
            gset(g, b, e, v);
        }
}

static const double specials[] = {0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, NAN, INFINITY, -INFINITY,
                                  1e-310, 1e300, 0.7, -0.3, 2.0, 10.0, 1e-8, -1e5, 0.25, 100.5};
#define N_SPECIALS ((int)(sizeof specials / sizeof specials[0]))

static void grid_fill_specials(grid *g)
{
    for (int b = 0; b < g->nbuf; b++)
        for (int64_t e = 0; e < g->len; e++)
            gset(g, b, e, specials[(e * (b + 1) * 7 + b * 3 + e / N_SPECIALS) % N_SPECIALS]);
}

static kir_launch grid_launch(const grid *g, const double *param, void **bufs)
{
    kir_launch L;
    memset(&L, 0, sizeof L);
    L.buf = bufs ? bufs : g->cell0;
    L.param = param;
    L.t = 0.375;
    L.dt = 0.01;
    for (int a = 0; a < 3; a++) {
        L.n[a] = g->n[a];
        L.stride[a] = g->stride[a];
        L.h[a] = 0.1 * (a + 1) + 0.003;
        L.origin[a] = -0.5 + 0.25 * a;
    }
    return L;
}

static int64_t n_outer(const grid *g) { return g->n[g->dim - 1]; }

/* ---- the scalar reference ------------------------------------------------------------------ */

static double rnd(double v, int single) { return single ? (double)(float)v : v; }

static void ref_run(const kir_kernel *k, const kir_launch *L, int single)
{
    double *v = malloc(sizeof *v * (size_t)k->n_nodes);
    double *out = malloc(sizeof *out * (size_t)(k->n_outputs + 1));
    int64_t lo[3] = {0, 0, 0}, hi[3] = {L->n[0], L->n[1], L->n[2]};
    for (int64_t z = lo[2]; z < hi[2]; z++)
        for (int64_t y = lo[1]; y < hi[1]; y++)
            for (int64_t x = lo[0]; x < hi[0]; x++) {
                int64_t idx[3] = {x, y, z};
                int64_t cell = x + y * L->stride[1] + z * L->stride[2];
                for (int id = 0; id < k->n_nodes; id++) {
                    const kir_node *n = &k->nodes[id];
                    double a = n->arg[0] >= 0 ? v[n->arg[0]] : 0, b = n->arg[1] >= 0 ? v[n->arg[1]] : 0,
                           c = n->arg[2] >= 0 ? v[n->arg[2]] : 0;
                    switch (n->op) {
                    case KIR_CONST: v[id] = rnd(n->value, single); break;
                    case KIR_PARAM: v[id] = rnd(L->param[n->index], single); break;
                    case KIR_TIME: v[id] = rnd(L->t, single); break;
                    case KIR_DT: v[id] = rnd(L->dt, single); break;
                    case KIR_SPACING: v[id] = rnd(L->h[n->axis], single); break;
                    case KIR_COORD:
                        v[id] = rnd(L->origin[n->axis] +
                                        ((double)idx[n->axis] + 0.5 * (1 + n->half)) * L->h[n->axis],
                                    single);
                        break;
                    case KIR_EDGE: { /* the face after cell idx + off is a side of the mesh */
                        int ax = n->axis;
                        int64_t m = idx[ax] + n->off[ax] + L->first[ax];
                        v[id] = m == -1 || m == L->first[ax] + L->n[ax] + L->beyond[ax] - 1;
                        break;
                    }
                    case KIR_LOAD: {
                        int64_t e = cell + n->off[0] + n->off[1] * L->stride[1] + n->off[2] * L->stride[2];
                        const void *p = L->buf[n->slot * k->n_fields + n->index];
                        v[id] = single ? ((const float *)p)[e] : ((const double *)p)[e];
                        break;
                    }
                    default: v[id] = kir_eval_scalar((kir_op)n->op, a, b, c, single);
                    }
                }
                for (int o = 0; o < k->n_outputs; o++) out[o] = v[k->outputs[o].node];
                for (int o = 0; o < k->n_outputs; o++) {
                    void *p = L->buf[k->outputs[o].slot * k->n_fields + k->outputs[o].field];
                    if (single) ((float *)p)[cell] = (float)out[o];
                    else ((double *)p)[cell] = out[o];
                }
            }
    free(v);
    free(out);
}

/* ---- JIT helpers --------------------------------------------------------------------------- */

typedef struct built {
    kir_cpu_fn fn;
    llvm_loaded *h;
    char *ir;
    double ms;
} built;

static built build(const kir_kernel *k, int single, int fast)
{
    built b = {0};
    char sym[32], err[1024];
    snprintf(sym, sizeof sym, "pj_test_%d", sym_counter++);
    void *obj = NULL;
    size_t len = 0;
    llvm_options opt = {single, fast, large_ops, 1};
    llvm_times lt;
    int rc = llvm_compile(jit, k, &opt, sym, &obj, &len, &b.ir, &lt, err, sizeof err);
    b.ms = lt.total;
    if (rc) fprintf(stderr, "compile: %s\n", err);
    assert_int_equal(rc, 0);
    rc = llvm_load(jit, obj, len, sym, &b.fn, &b.h, err, sizeof err);
    if (rc) fprintf(stderr, "load: %s\n", err);
    assert_int_equal(rc, 0);
    free(obj);
    return b;
}

static void unbuild(built *b)
{
    llvm_unload(jit, b->h);
    free(b->ir);
}

/* Every element of every buffer (halo included) of the two grids agrees. */
static void compare(const grid *ref, const grid *got, double tol, const char *what)
{
    double worst = 0;
    long bad = 0;
    for (int b = 0; b < ref->nbuf; b++)
        for (int64_t e = 0; e < ref->len; e++) {
            double r = gget(ref, b, e), g = gget(got, b, e);
            double d = (isnan(r) != isnan(g)) ? INFINITY : tu_reldiff(r, g);
            if (d > worst) worst = d;
            if (getenv("PJ_TEST_EXACT") && d > 0 && d <= tol) /* debugging aid: list inexact cells */
                fprintf(stderr, "%s: inexact buffer %d element %ld: %.17g vs %.17g\n", what, b, (long)e, r, g);
            if (d > tol && bad++ < 5)
                fprintf(stderr, "%s: buffer %d element %ld: reference %.17g, JIT %.17g\n", what, b,
                        (long)e, r, g);
        }
    double *w = ref->single ? &worst_single : &worst_double;
    if (worst > *w) *w = worst;
    assert_int_equal(bad, 0);
}

/* Runs k on a copy of g with the JIT (through a pool when given) and with the reference. */
static void check_kernel(const kir_kernel *k, const grid *g, const double *param, int fast,
                         double tol, const char *what, cpu_pool *pool)
{
    built b = build(k, g->single, fast);
    double keep = worst_double; /* the statistics are of strict runs only */
    grid *r = grid_clone(g), *j = grid_clone(g);
    kir_launch Lr = grid_launch(r, param, NULL), Lj = grid_launch(j, param, NULL);
    ref_run(k, &Lr, g->single);
    if (pool) cpu_pool_run(pool, b.fn, &Lj, n_outer(j));
    else b.fn(&Lj, 0, n_outer(j));
    compare(r, j, tol, what);
    if (fast) worst_double = keep;
    grid_free(r);
    grid_free(j);
    unbuild(&b);
}

static int vectorised(const char *ir, int single)
{
    return strstr(ir, single ? "x float>" : "x double>") != NULL && !strstr(ir, "vector.memcheck");
}

/* ---- kernels ------------------------------------------------------------------------------- */

static const int O0[3] = {0, 0, 0};

/* Laplacian of (slot, field) at the cell, 2*dim+1 points. */
static int laplacian(kir_kernel *k, int slot, int field)
{
    int u = kir_load(k, slot, field, O0);
    int r = kir_op2(k, KIR_MUL, kir_const(k, -2.0 * k->dim), u);
    for (int a = 0; a < k->dim; a++)
        for (int s = -1; s <= 1; s += 2) {
            int o[3] = {0, 0, 0};
            o[a] = s;
            r = kir_op2(k, KIR_ADD, r, kir_load(k, slot, field, o));
        }
    for (int a = 0; a < k->dim; a++) {
        int h = kir_spacing(k, a);
        r = kir_op2(k, KIR_DIV, r, kir_op2(k, KIR_MUL, h, h));
    }
    return r;
}

/* Gray-Scott: u += dt (Du lap u - u v^2 + F (1 - u)), v += dt (Dv lap v + u v^2 - (F + k) v).
 * Reads slot 0, writes slot out_slot. */
static kir_kernel *reaction_diffusion(int dim, int out_slot)
{
    kir_kernel *k = kir_new(KIR_STAGE, dim, 2, 4, 2, "rd");
    int u = kir_load(k, 0, 0, O0), v = kir_load(k, 0, 1, O0);
    int uvv = kir_op2(k, KIR_MUL, u, kir_op2(k, KIR_MUL, v, v));
    int du = kir_op2(k, KIR_ADD, kir_op2(k, KIR_SUB, kir_op2(k, KIR_MUL, kir_param(k, 0), laplacian(k, 0, 0)), uvv),
                     kir_op2(k, KIR_MUL, kir_param(k, 2), kir_op2(k, KIR_SUB, kir_const(k, 1), u)));
    int dv = kir_op2(k, KIR_SUB, kir_op2(k, KIR_ADD, kir_op2(k, KIR_MUL, kir_param(k, 1), laplacian(k, 0, 1)), uvv),
                     kir_op2(k, KIR_MUL, kir_op2(k, KIR_ADD, kir_param(k, 2), kir_param(k, 3)), v));
    int dt = kir_leaf(k, KIR_DT);
    kir_add_output(k, out_slot, 0, kir_op2(k, KIR_ADD, u, kir_op2(k, KIR_MUL, dt, du)));
    kir_add_output(k, out_slot, 1, kir_op2(k, KIR_ADD, v, kir_op2(k, KIR_MUL, dt, dv)));
    kir_finish(k);
    return k;
}

static const double rd_params[4] = {0.16, 0.08, 0.035, 0.065};

static void stencils_1d_2d_3d(void **state)
{
    (void)state;
    int64_t sizes[3][3] = {{67, 1, 1}, {21, 9, 1}, {13, 6, 5}};
    for (int single = 0; single <= 1; single++)
        for (int dim = 1; dim <= 3; dim++) {
            kir_kernel *k = reaction_diffusion(dim, 1);
            grid *g = grid_new(dim, sizes[dim - 1][0], sizes[dim - 1][1], sizes[dim - 1][2], 4, single);
            grid_fill_random(g, (uint64_t)(dim + 10 * single));
            char what[64];
            snprintf(what, sizeof what, "reaction-diffusion %dD %s", dim, single ? "single" : "double");
            check_kernel(k, g, rd_params, 0, single ? 1e-5 : 1e-12, what, NULL);
            built b = build(k, single, 0);
            if (!vectorised(b.ir, single)) fprintf(stderr, "%s: not vectorised\n%s", what, b.ir);
            assert_true(vectorised(b.ir, single));
            if (dim == 2 && !single) printf("  [ info ] 2D reaction-diffusion kernel: compile %.1f ms\n", b.ms);
            unbuild(&b);
            grid_free(g);
            kir_free(k);
        }
}

/* Every operation of the table on special values (NaN, inf, -0, denormals), plus every leaf. */
static kir_kernel *all_ops_kernel(int dim)
{
    int nf = KIR_N_OPS + 18;
    kir_kernel *k = kir_new(KIR_STAGE, dim, nf, 2, 2, "ops");
    int op_p1[3] = {1, 0, 0}, op_m1[3] = {-1, 0, 0};
    if (dim > 1) op_p1[1] = -2;
    if (dim > 2) op_m1[2] = 1;
    int a = kir_load(k, 0, 0, O0), b = kir_load(k, 0, 1, op_p1), c = kir_load(k, 0, 2, op_m1);
    for (int op = 0; op < KIR_N_OPS; op++) {
        int ar = kir_ops[op].arity, node;
        if (ar == 0) continue;
        if (ar == 1) node = kir_op1(k, (kir_op)op, op == KIR_NOT || op == KIR_B2F ? kir_op2(k, KIR_LT, a, b) : a);
        else if (ar == 2)
            node = (op == KIR_AND || op == KIR_OR)
                       ? kir_op2(k, (kir_op)op, kir_op2(k, KIR_LT, a, b), kir_op2(k, KIR_GE, c, a))
                       : kir_op2(k, (kir_op)op, a, b);
        else node = kir_op3(k, (kir_op)op, kir_op2(k, KIR_NE, a, c), b, c);
        kir_add_output(k, 1, op, node);
    }
    int f = KIR_N_OPS;
    kir_add_output(k, 1, f++, kir_op2(k, KIR_ADD, kir_leaf(k, KIR_TIME), a));
    kir_add_output(k, 1, f++, kir_op2(k, KIR_MUL, kir_leaf(k, KIR_DT), a));
    kir_add_output(k, 1, f++, kir_op2(k, KIR_SUB, kir_param(k, 1), kir_spacing(k, dim - 1)));
    for (int half = -1; half <= 1; half++)
        for (int ax = 0; ax < dim; ax++)
            if (ax == dim - 1 || half == 0) kir_add_output(k, 1, f++, kir_coord(k, ax, half));
    for (int ax = 0; ax < dim; ax++) /* `boundary`: the mesh's low and high side along each axis */
        for (int off = -1; off <= 0; off++) kir_add_output(k, 1, f++, kir_edge(k, ax, off));
    kir_add_output(k, 1, f++, kir_const(k, 0.1)); /* an output that is a constant */
    kir_finish(k);
    return k;
}

static void every_op(void **state)
{
    (void)state;
    double param[2] = {1.0 / 3.0, -7.25};
    for (int single = 0; single <= 1; single++)
        for (int dim = 1; dim <= 3; dim++) {
            kir_kernel *k = all_ops_kernel(dim);
            char err[256];
            assert_int_equal(kir_verify(k, err, sizeof err), 0);
            grid *g = grid_new(dim, dim == 1 ? 97 : 11, 5, 3, 2 * k->n_fields, single);
            grid_fill_specials(g);
            char what[64];
            snprintf(what, sizeof what, "every op %dD %s", dim, single ? "single" : "double");
            check_kernel(k, g, param, 0, single ? 1e-5 : 1e-12, what, NULL);
            grid_fill_random(g, 77);
            check_kernel(k, g, param, 0, single ? 1e-5 : 1e-12, what, NULL);
            grid_free(g);
            kir_free(k);
        }
}

/* select / comparisons / logic driving the values. */
static void conditionals(void **state)
{
    (void)state;
    kir_kernel *k = kir_new(KIR_STAGE, 2, 3, 1, 2, "cond");
    int e[3] = {1, 0, 0}, n[3] = {0, 1, 0};
    int u = kir_load(k, 0, 0, O0), ue = kir_load(k, 0, 0, e), vn = kir_load(k, 0, 1, n);
    int up = kir_op2(k, KIR_GT, u, kir_const(k, 0)); /* upwind choice */
    int flux = kir_op3(k, KIR_SELECT, up, kir_op2(k, KIR_MUL, u, vn), kir_op2(k, KIR_MUL, ue, vn));
    int clamp = kir_op3(k, KIR_SELECT, kir_op2(k, KIR_OR, kir_op2(k, KIR_LT, flux, kir_const(k, -1)),
                                               kir_op1(k, KIR_NOT, kir_op2(k, KIR_EQ, flux, flux))),
                        kir_const(k, -1), flux);
    int heav = kir_op1(k, KIR_B2F, kir_op2(k, KIR_AND, up, kir_op2(k, KIR_LE, vn, kir_param(k, 0))));
    kir_add_output(k, 1, 0, clamp);
    kir_add_output(k, 1, 1, heav);
    kir_add_output(k, 1, 2, kir_op3(k, KIR_SELECT, kir_op1(k, KIR_F2B, heav), u, kir_op1(k, KIR_NEG, u)));
    kir_finish(k);
    double p = 0.6;
    for (int single = 0; single <= 1; single++) {
        grid *g = grid_new(2, 29, 7, 1, 6, single);
        grid_fill_random(g, 5);
        check_kernel(k, g, &p, 0, single ? 1e-5 : 1e-12, "conditionals", NULL);
        grid_fill_specials(g);
        check_kernel(k, g, &p, 0, single ? 1e-5 : 1e-12, "conditionals", NULL);
        grid_free(g);
    }
    kir_free(k);
}

/* In place: u = 0.5 u + 0.125 (v[e] + v[w] + v[n] + v[s]) written over u, and w = 0.25 (...)
 * written over w while another output reads w at the cell (so the loads of a cell must stay
 * before its stores: nothing tells LLVM the arrays differ). Either (a) the same (slot, field) is
 * read and written, or (b) slot 1's buffers are slot 0's arrays. Both must vectorise without
 * run-time alias checks. */
static kir_kernel *in_place_kernel(int dim, int out_slot)
{
    kir_kernel *k = kir_new(KIR_STAGE, dim, 4, 0, 2, "inplace");
    int u = kir_load(k, 0, 0, O0), w = kir_load(k, 0, 3, O0);
    int s = kir_const(k, 0);
    for (int a = 0; a < dim; a++)
        for (int d = -1; d <= 1; d += 2) {
            int o[3] = {0, 0, 0};
            o[a] = d;
            s = kir_op2(k, KIR_ADD, s, kir_load(k, 0, 1, o));
        }
    kir_add_output(k, out_slot, 3, kir_op2(k, KIR_MUL, kir_const(k, 0.25), s));
    kir_add_output(k, out_slot, 0, kir_op2(k, KIR_ADD, kir_op2(k, KIR_MUL, kir_const(k, 0.5), u),
                                           kir_op2(k, KIR_MUL, kir_const(k, 0.125), s)));
    kir_add_output(k, 1, 2, kir_op2(k, KIR_ADD, kir_op2(k, KIR_MUL, kir_const(k, 3), w), u));
    kir_add_output(k, 1, 1, kir_op1(k, KIR_EXP, u));
    kir_finish(k);
    return k;
}

static void in_place(void **state)
{
    (void)state;
    for (int single = 0; single <= 1; single++)
        for (int dim = 1; dim <= 3; dim++)
            for (int alias = 0; alias <= 1; alias++) {
                kir_kernel *k = in_place_kernel(dim, alias ? 1 : 0);
                built b = build(k, single, 0);
                if (!vectorised(b.ir, single)) fprintf(stderr, "in place %dD: not vectorised\n%s", dim, b.ir);
                assert_true(vectorised(b.ir, single));
                grid *g = grid_new(dim, 45, 7, 4, 8, single);
                grid_fill_random(g, 99 + (uint64_t)dim);
                grid *r = grid_clone(g), *j = grid_clone(g);
                void *br[8], *bj[8];
                memcpy(br, r->cell0, sizeof br);
                memcpy(bj, j->cell0, sizeof bj);
                if (alias) { /* slot 1 fields 0 and 3 are slot 0's arrays */
                    br[4] = br[0], br[7] = br[3];
                    bj[4] = bj[0], bj[7] = bj[3];
                }
                kir_launch Lr = grid_launch(r, NULL, br), Lj = grid_launch(j, NULL, bj);
                ref_run(k, &Lr, single);
                b.fn(&Lj, 0, n_outer(j));
                compare(r, j, single ? 1e-5 : 1e-12, alias ? "in place (aliased slots)" : "in place");
                grid_free(r);
                grid_free(j);
                grid_free(g);
                unbuild(&b);
                kir_free(k);
            }
}

/* An initial-value kernel: no loads, coordinates and params only, writes slot 0. */
static void init_kernel(void **state)
{
    (void)state;
    for (int dim = 1; dim <= 3; dim++) {
        kir_kernel *k = kir_new(KIR_INIT, dim, 2, 1, 1, "init");
        int r2 = kir_const(k, 0);
        for (int a = 0; a < dim; a++) {
            int x = kir_coord(k, a, 0);
            r2 = kir_op2(k, KIR_ADD, r2, kir_op2(k, KIR_MUL, x, x));
        }
        int bump = kir_op1(k, KIR_EXP, kir_op1(k, KIR_NEG, kir_op2(k, KIR_DIV, r2, kir_param(k, 0))));
        kir_add_output(k, 0, 0, bump);
        kir_add_output(k, 0, 1, kir_op1(k, KIR_TANH, kir_op2(k, KIR_SUB, kir_param(k, 0), r2)));
        kir_finish(k);
        double p = 0.3;
        for (int single = 0; single <= 1; single++) {
            grid *g = grid_new(dim, 40, 9, 5, 2, single);
            grid_fill_random(g, 8);
            check_kernel(k, g, &p, 0, single ? 1e-5 : 1e-12, "init", NULL);
            grid_free(g);
        }
        kir_free(k);
    }
}

static void fast_math(void **state)
{
    (void)state;
    kir_kernel *k = reaction_diffusion(2, 1);
    built b = build(k, 0, 1);
    assert_non_null(strstr(b.ir, "contract"));
    assert_true(vectorised(b.ir, 0));
    unbuild(&b);
    grid *g = grid_new(2, 33, 17, 1, 4, 0);
    grid_fill_random(g, 3);
    check_kernel(k, g, rd_params, 1, 1e-9, "fast-math", NULL);
    grid_free(g);
    kir_free(k);
}

/* Fast-math kernels call glibc's vector math library where the host has it: every math function
 * of the table through its libmvec variant agrees with the interpreter's libm to libmvec's few
 * ulp (double) or float accuracy, and the optimised IR calls the variants (_ZGV...). */
static void fast_math_vector_library(void **state)
{
    (void)state;
    const char *vm = llvm_jit_vecmath(jit);
    print_message("vector math: %s\n", vm);
    for (int dim = 1; dim <= 3; dim++) {
        kir_kernel *k = all_ops_kernel(dim);
        for (int single = 0; single <= 1; single++) {
            built b = build(k, single, 1);
            if (strcmp(vm, "none")) {
                assert_non_null(strstr(b.ir, "@_ZGV"));
                assert_non_null(strstr(b.ir, single ? "_tanhf(" : "_tanh("));
            }
            unbuild(&b);
            grid *g = grid_new(dim, dim == 1 ? 97 : 37, 6, 4, 2 * k->n_fields, single);
            grid_fill_random(g, 11 + dim);
            double p[2] = {0.3, -1.5};
            check_kernel(k, g, p, 1, single ? 1e-5 : 1e-13, "fast-math vector math", NULL);
            grid_free(g);
        }
        kir_free(k);
    }
}

/* ---- random kernels ------------------------------------------------------------------------ */

static const double rand_consts[] = {0.5, -1.25, 2.0, 3.0, 1e-3, 0.0, -0.0, 10.0, 0.1, 7.5};

static int rand_leaf(kir_kernel *k, uint64_t *s)
{
    int r = (int)(rng_next(s) % 100), nf = k->n_fields;
    if (r < 65) {
        int o[3] = {0, 0, 0};
        for (int a = 0; a < k->dim; a++) o[a] = (int)(rng_next(s) % 5) - 2;
        return kir_load(k, (int)(rng_next(s) % 2), (int)(rng_next(s) % (uint64_t)nf), o);
    }
    if (r < 77) return kir_const(k, rand_consts[rng_next(s) % 10]);
    if (r < 83) return kir_param(k, (int)(rng_next(s) % (uint64_t)k->n_params));
    if (r < 91) return kir_coord(k, (int)(rng_next(s) % (uint64_t)k->dim), (int)(rng_next(s) % 3) - 1);
    if (r < 94) return kir_spacing(k, (int)(rng_next(s) % (uint64_t)k->dim));
    if (r < 97) return kir_leaf(k, KIR_TIME);
    return kir_leaf(k, KIR_DT);
}

static int rand_expr(kir_kernel *k, uint64_t *s, int depth, int root_op)
{
    if (root_op < 0 && (depth == 0 || rng_next(s) % 100 < 30)) return rand_leaf(k, s);
    int op = root_op;
    while (op < 0) {
        op = (int)(rng_next(s) % KIR_N_OPS);
        if (kir_ops[op].arity == 0) op = -1;
    }
    int a[3] = {-1, -1, -1};
    for (int i = 0; i < kir_ops[op].arity; i++) a[i] = rand_expr(k, s, depth > 0 ? depth - 1 : 0, -1);
    if (op == KIR_B2F) a[0] = kir_as_b(k, a[0]); /* the builder converts every other operand */
    if (op == KIR_F2B) a[0] = kir_as_f(k, a[0]);
    switch (kir_ops[op].arity) {
    case 1: return kir_op1(k, (kir_op)op, a[0]);
    case 2: return kir_op2(k, (kir_op)op, a[0], a[1]);
    default: return kir_op3(k, (kir_op)op, a[0], a[1], a[2]);
    }
}

#define RAND_PER_KERNEL 24

/* Kernel number `index`: RAND_PER_KERNEL random expressions over slots 0 and 1 at offsets in
 * [-2, 2], written to slot 2; expression e has root operation number e (mod the non-leaf ops) so
 * every operation is covered. */
static kir_kernel *random_kernel(int index, int *expr_counter)
{
    int dim = 1 + index % 3, nf = RAND_PER_KERNEL;
    kir_kernel *k = kir_new(KIR_STAGE, dim, nf, 3, 3, "rand");
    uint64_t s = 0x1234567ull + (uint64_t)index * 7919;
    static int non_leaf[KIR_N_OPS], n_non_leaf;
    if (!n_non_leaf)
        for (int op = 0; op < KIR_N_OPS; op++)
            if (kir_ops[op].arity) non_leaf[n_non_leaf++] = op;
    for (int e = 0; e < RAND_PER_KERNEL; e++) {
        int root = non_leaf[(*expr_counter)++ % n_non_leaf];
        kir_add_output(k, 2, e, rand_expr(k, &s, 4, root));
    }
    kir_finish(k);
    return k;
}

static void random_kernels(void **state)
{
    (void)state;
    double param[3] = {0.75, -1.5, 2.25};
    int exprs = 0, kernels = 0;
    double ms = 0;
    for (int i = 0; exprs < 504; i++, kernels++) {
        kir_kernel *k = random_kernel(i, &exprs);
        int64_t n0 = 17 + i % 13;
        grid *g = grid_new(k->dim, n0, 6, 3, 3 * k->n_fields, 0);
        grid_fill_random(g, (uint64_t)i);
        built b = build(k, 0, 0);
        ms += b.ms;
        grid *r = grid_clone(g), *j = grid_clone(g);
        kir_launch Lr = grid_launch(r, param, NULL), Lj = grid_launch(j, param, NULL);
        ref_run(k, &Lr, 0);
        b.fn(&Lj, 0, n_outer(j));
        char what[64];
        snprintf(what, sizeof what, "random kernel %d (%dD)", i, k->dim);
        compare(r, j, 1e-12, what);
        if (i % 4 == 0) { /* single precision on a quarter of them */
            grid *gs = grid_new(k->dim, n0, 6, 3, 3 * k->n_fields, 1);
            grid_fill_random(gs, (uint64_t)i);
            check_kernel(k, gs, param, 0, 1e-5, what, NULL);
            grid_free(gs);
        }
        grid_free(r);
        grid_free(j);
        grid_free(g);
        unbuild(&b);
        kir_free(k);
    }
    printf("  [ info ] %d random expressions in %d kernels, mean compile %.1f ms; worst relative "
           "difference: double %.3g, single %.3g\n",
           exprs, kernels, ms / kernels, worst_double, worst_single);
}

/* ---- rows in chunks, prefetch, the non-finite flag ---------------------------------------- */

/* 2D/3D rows are walked in chunks of 512 bytes (64 doubles, 128 floats) when kir_launch.prefetch
 * is set, prefetching the next row ahead; otherwise in one piece. Both agree with the reference
 * for rows shorter than, equal to and longer than a chunk, with a partial last chunk. */
static void prefetch_chunks(void **state)
{
    (void)state;
    const int64_t lens[] = {1, 7, 63, 64, 65, 128, 129, 150, 257};
    for (int single = 0; single <= 1; single++)
        for (int dim = 2; dim <= 3; dim++) {
            kir_kernel *k = reaction_diffusion(dim, 1);
            built b = build(k, single, 0);
            assert_non_null(strstr(b.ir, "@llvm.prefetch"));
            assert_true(vectorised(b.ir, single));
            for (size_t i = 0; i < sizeof lens / sizeof *lens; i++) {
                grid *g = grid_new(dim, lens[i], 5, 3, 4, single);
                grid_fill_random(g, (uint64_t)(100 + i));
                grid *r = grid_clone(g);
                kir_launch Lr = grid_launch(r, rd_params, NULL);
                ref_run(k, &Lr, single);
                for (int pf = 0; pf <= 1; pf++) {
                    grid *j = grid_clone(g);
                    kir_launch L = grid_launch(j, rd_params, NULL);
                    L.prefetch = pf;
                    b.fn(&L, 0, n_outer(j));
                    char what[80];
                    snprintf(what, sizeof what, "%dD %s rows of %lld, prefetch %s", dim, single ? "single" : "double",
                             (long long)lens[i], pf ? "on" : "off");
                    compare(r, j, single ? 1e-5 : 1e-12, what);
                    grid_free(j);
                }
                grid_free(r);
                grid_free(g);
            }
            unbuild(&b);
            kir_free(k);
        }
}

/* u' = p0 * u: the flag is raised exactly when a stored value is NaN or infinite, whichever row
 * and chunk holds it (+inf and -inf in one row too), and left alone otherwise; in 1D, 2D, 3D,
 * single and double precision, with and without prefetching. */
static void nonfinite_flag(void **state)
{
    (void)state;
    for (int dim = 1; dim <= 3; dim++)
        for (int single = 0; single <= 1; single++) {
            kir_kernel *k = kir_new(KIR_STAGE, dim, 1, 2, 1, "scale");
            kir_add_output(k, 1, 0, kir_op2(k, KIR_MUL, kir_param(k, 0), kir_load(k, 0, 0, O0)));
            kir_finish(k);
            built b = build(k, single, 0);
            grid *g = grid_new(dim, 150, 4, 3, 2, single);
            grid_fill_random(g, 7);
            const double scale[1] = {0.5};
            int64_t row = g->stride[1], plane = g->stride[2];
            int64_t cells[][2] = {{-1, 0},
                                  {g->base + 3, 0},
                                  {g->base + 149 + (dim > 1 ? 3 * row : 0) + (dim > 2 ? 2 * plane : 0), 0},
                                  {g->base + 70, 1},  /* +inf and -inf in one row */
                                  {g->base + 100, 2}};
            for (size_t c = 0; c < sizeof cells / sizeof *cells; c++)
                for (int pf = 0; pf <= 1; pf++) {
                    grid *j = grid_clone(g);
                    int64_t e = cells[c][0];
                    if (e >= 0) {
                        gset(j, 0, e, cells[c][1] == 2 ? NAN : INFINITY);
                        if (cells[c][1] == 1) gset(j, 0, e + 5, -INFINITY);
                    }
                    int32_t flag = 0;
                    kir_launch L = grid_launch(j, scale, NULL);
                    L.nonfinite = &flag;
                    L.prefetch = pf;
                    b.fn(&L, 0, n_outer(j));
                    if (flag != (e >= 0))
                        fprintf(stderr, "%dD %s case %zu prefetch %d: flag %d\n", dim, single ? "single" : "double", c,
                                pf, flag);
                    assert_int_equal(flag, e >= 0);
                    grid_free(j);
                }
            grid_free(g);
            unbuild(&b);
            kir_free(k);
        }
}

/* ---- threads ------------------------------------------------------------------------------- */

static void threads_identical(void **state)
{
    (void)state;
    cpu_pool *pools[3] = {cpu_pool_create(1), cpu_pool_create(2), cpu_pool_create(3)};
    for (int dim = 1; dim <= 3; dim++) {
        kir_kernel *k = reaction_diffusion(dim, 1);
        built b = build(k, 0, 0);
        int64_t n0 = dim == 1 ? 1001 : dim == 2 ? 37 : 19;
        grid *g = grid_new(dim, n0, 23, 11, 4, 0);
        grid_fill_random(g, 42);
        grid *res[4];
        for (int t = 0; t <= 3; t++) {
            res[t] = grid_clone(g);
            kir_launch L = grid_launch(res[t], rd_params, NULL);
            for (int step = 0; step < 3; step++) { /* a few steps, swapping nothing: same input */
                if (t == 0) b.fn(&L, 0, n_outer(res[t]));
                else cpu_pool_run(pools[t - 1], b.fn, &L, n_outer(res[t]));
            }
        }
        for (int t = 1; t <= 3; t++)
            for (int bi = 0; bi < g->nbuf; bi++)
                assert_memory_equal(res[0]->mem[bi], res[t]->mem[bi], (size_t)g->len * sizeof(double));
        grid *r = grid_clone(g);
        kir_launch Lr = grid_launch(r, rd_params, NULL);
        ref_run(k, &Lr, 0);
        compare(r, res[2], 1e-12, "threads vs reference");
        grid_free(r);
        for (int t = 0; t <= 3; t++) grid_free(res[t]);
        grid_free(g);
        unbuild(&b);
        kir_free(k);
    }
    for (int i = 0; i < 3; i++) cpu_pool_destroy(pools[i]);
}

typedef struct cover {
    int *count;
    int64_t grain, n;
    int misaligned;
} cover;

static void cover_fn(void *ctx, int64_t begin, int64_t end)
{
    cover *c = ctx;
    if (begin % c->grain) c->misaligned = 1;
    for (int64_t i = begin; i < end; i++) c->count[i]++;
}

static void pool_ranges(void **state)
{
    (void)state;
    cpu_pool *p0 = cpu_pool_create(0);
    assert_true(cpu_pool_threads(p0) >= 1);
    cpu_pool *pools[4] = {NULL, cpu_pool_create(1), cpu_pool_create(3), p0};
    int64_t ns[] = {0, 1, 5, 16, 17, 100, 1001};
    int64_t grains[] = {1, 8, 16};
    for (int pi = 0; pi < 4; pi++)
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
            for (int gi = 0; gi < 3; gi++)
                for (int rep = 0; rep < 50; rep++) {
                    int64_t n = ns[ni];
                    cover c = {calloc((size_t)n + 1, sizeof(int)), grains[gi], n, 0};
                    cpu_pool_run_range(pools[pi], cover_fn, &c, n, c.grain, 1);
                    for (int64_t i = 0; i < n; i++) assert_int_equal(c.count[i], 1);
                    assert_int_equal(c.misaligned, 0);
                    free(c.count);
                }
    for (int pi = 1; pi < 4; pi++) cpu_pool_destroy(pools[pi]);
}

/* ---- load, unload, errors ------------------------------------------------------------------ */

static void load_unload_errors(void **state)
{
    (void)state;
    char err[512];
    assert_non_null(llvm_version_string());
    assert_true(strlen(llvm_jit_target(jit)) > 0);

    kir_kernel *k = reaction_diffusion(2, 1);
    void *obj = NULL;
    size_t len = 0;
    llvm_options opt = {0, 0, 0, 1};
    assert_int_equal(llvm_compile(jit, k, &opt, "pj_swap", &obj, &len, NULL, NULL, err, sizeof err), 0);

    /* the same symbol twice: one copy of the code, two handles */
    kir_cpu_fn f1, f2;
    llvm_loaded *h1, *h2;
    assert_int_equal(llvm_load(jit, obj, len, "pj_swap", &f1, &h1, err, sizeof err), 0);
    assert_int_equal(llvm_load(jit, obj, len, "pj_swap", &f2, &h2, err, sizeof err), 0);
    assert_ptr_equal(f1, f2);
    llvm_unload(jit, h1);
    grid *g = grid_new(2, 16, 8, 1, 4, 0);
    grid_fill_random(g, 1);
    kir_launch L = grid_launch(g, rd_params, NULL);
    f2(&L, 0, 8); /* still loaded */
    llvm_unload(jit, h2);
    /* hot swap: load again after the last unload */
    assert_int_equal(llvm_load(jit, obj, len, "pj_swap", &f1, &h1, err, sizeof err), 0);
    f1(&L, 0, 8);
    llvm_unload(jit, h1);
    llvm_unload(jit, NULL);

    /* a missing symbol, a bad object: errors, not crashes */
    assert_int_equal(llvm_load(jit, obj, len, "pj_not_there", &f1, &h1, err, sizeof err), -1);
    assert_true(strlen(err) > 0);
    char junk[256];
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (char)(i * 37 + 11);
    assert_int_equal(llvm_load(jit, junk, sizeof junk, "pj_junk", &f1, &h1, err, sizeof err), -1);
    assert_null(h1);
    free(obj);

    /* bad symbol, wrong kernel kind, invalid kernel */
    assert_int_equal(llvm_compile(jit, k, &opt, "bad\"name", &obj, &len, NULL, NULL, err, sizeof err), -1);
    kir_kernel *bc = kir_new(KIR_BC, 2, 1, 0, 1, "bc.left");
    kir_add_output(bc, 0, 0, kir_const(bc, 1));
    kir_finish(bc);
    assert_int_equal(llvm_compile(jit, bc, &opt, "pj_bc", &obj, &len, NULL, NULL, err, sizeof err), -1);
    assert_null(obj);
    kir_free(bc);
    kir_kernel *bad = kir_new(KIR_STAGE, 1, 1, 0, 1, "bad");
    int off[3] = {0, 1, 0}; /* y offset in a 1D kernel */
    kir_add_output(bad, 0, 0, kir_load(bad, 0, 0, off));
    kir_finish(bad);
    assert_int_equal(llvm_compile(jit, bad, &opt, "pj_bad", &obj, &len, NULL, NULL, err, sizeof err), -1);
    kir_free(bad);

    /* IR only, no object */
    char *ir = NULL;
    assert_int_equal(llvm_compile(jit, k, &opt, "pj_ir", NULL, NULL, &ir, NULL, err, sizeof err), 0);
    assert_non_null(strstr(ir, "define void @pj_ir"));
    free(ir);
    grid_free(g);
    kir_free(k);
}

/* llvm_compile on several threads at once with one JIT (hot swap compiles off the stepping
 * thread), and loads racing with them. */
typedef struct compile_job {
    const kir_kernel *k;
    int index, failures;
} compile_job;

static void *compile_thread(void *arg)
{
    compile_job *j = arg;
    for (int i = 0; i < 3; i++) {
        char sym[48], err[512];
        snprintf(sym, sizeof sym, "pj_conc_%d_%d", j->index, i);
        void *obj = NULL;
        size_t len = 0;
        kir_cpu_fn fn;
        llvm_loaded *h;
        if (llvm_compile(jit, j->k, &(llvm_options){i % 2, 0, 0, i % 3 == 0}, sym, &obj, &len, NULL, NULL, err, sizeof err) ||
            llvm_load(jit, obj, len, sym, &fn, &h, err, sizeof err))
            j->failures++;
        else
            llvm_unload(jit, h);
        free(obj);
    }
    return NULL;
}

static void concurrent_compiles(void **state)
{
    (void)state;
    kir_kernel *k = reaction_diffusion(3, 1);
    pthread_t th[3];
    compile_job jobs[3];
    for (int i = 0; i < 3; i++) {
        jobs[i] = (compile_job){k, i, 0};
        assert_int_equal(pthread_create(&th[i], NULL, compile_thread, &jobs[i]), 0);
    }
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(jobs[i].failures, 0);
    }
    kir_free(k);
}

/* ---- large kernels ------------------------------------------------------------------------- */

/* Kernels over llvm_options.large_ops operations are split into segment functions and compiled
 * with the lighter pipeline (llvm_backend.c). With the threshold lowered to a few operations,
 * every kernel of the tests above is split into many segments: each agrees with the interpreter
 * as before (stencils in 1D/2D/3D, every op, conditionals, in place with aliased slots, rows in
 * chunks with and without prefetching, longer than a segment's chunk, the non-finite flag,
 * random kernels), and the IR holds the segment functions. */
static void large_kernels_split(void **state)
{
    large_ops = 6;
    kir_kernel *k = reaction_diffusion(2, 1);
    built b = build(k, 0, 0);
    assert_non_null(strstr(b.ir, ".s0("));
    assert_non_null(strstr(b.ir, ".s2("));
    unbuild(&b);
    kir_free(k);
    stencils_1d_2d_3d(state);
    every_op(state);
    conditionals(state);
    in_place(state);
    prefetch_chunks(state);
    nonfinite_flag(state);
    large_ops = 24; /* segments of 8 operations: fewer functions to compile */
    random_kernels(state);
    large_ops = 0;
}

static int setup(void **state)
{
    (void)state;
    char err[512];
    jit = llvm_jit_create(err, sizeof err);
    if (!jit) fprintf(stderr, "%s\n", err);
    return jit ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    llvm_jit_destroy(jit);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(stencils_1d_2d_3d), cmocka_unit_test(every_op),
        cmocka_unit_test(conditionals),      cmocka_unit_test(in_place),
        cmocka_unit_test(init_kernel),       cmocka_unit_test(fast_math),         cmocka_unit_test(fast_math_vector_library),         cmocka_unit_test(random_kernels),
        cmocka_unit_test(prefetch_chunks),   cmocka_unit_test(nonfinite_flag),
        cmocka_unit_test(threads_identical), cmocka_unit_test(pool_ranges),
        cmocka_unit_test(load_unload_errors), cmocka_unit_test(concurrent_compiles),
        cmocka_unit_test(large_kernels_split),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
