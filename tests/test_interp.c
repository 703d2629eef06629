/* test_interp.c — the reference interpreter against a per-cell walk of kir_eval_scalar.
 *
 * The expectation is computed independently, one cell at a time: leaves as kir.h defines
 * them, every operation through kir_eval_scalar(op, a, b, c, single), in double and in float;
 * the interpreter (blocks of cells, node by node) must agree bit for bit. */
#include "testutil.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "interp.h"
#include "kir.h"

#define NF 2
#define NP 2
#define HALO 2

/* A small grid of buffers with ghost cells: [slot * NF + field]. */
typedef struct grid {
    int dim, single;
    int64_t n[3], stride[3], off;
    size_t elems;
    void *mem[2 * NF];
    void *buf[2 * NF];
    double param[NP];
    kir_launch L;
} grid;

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static double urand(void) { return (double)(next() >> 11) / 9007199254740992.0; }
static int irand(int n) { return (int)(next() % (uint64_t)n); }

static void grid_init(grid *g, int dim, const int64_t n[3], int single)
{
    memset(g, 0, sizeof *g);
    g->dim = dim;
    g->single = single;
    int64_t ext[3];
    for (int a = 0; a < 3; a++) {
        g->n[a] = a < dim ? n[a] : 1;
        ext[a] = a < dim ? g->n[a] + 2 * HALO : 1;
    }
    int64_t row = ext[0] + 3; /* odd padding on purpose */
    g->stride[0] = 1;
    g->stride[1] = row;
    g->stride[2] = row * ext[1];
    g->elems = (size_t)(row * ext[1] * ext[2]);
    g->off = HALO + (dim > 1 ? HALO * g->stride[1] : 0) + (dim > 2 ? HALO * g->stride[2] : 0);
    size_t esz = single ? sizeof(float) : sizeof(double);
    for (int b = 0; b < 2 * NF; b++) {
        g->mem[b] = malloc(g->elems * esz);
        for (size_t e = 0; e < g->elems; e++) {
            double v = urand() * 4 - 2;
            if (single) ((float *)g->mem[b])[e] = (float)v;
            else ((double *)g->mem[b])[e] = v;
        }
        g->buf[b] = (char *)g->mem[b] + (size_t)g->off * esz;
    }
    g->param[0] = 0.75;
    g->param[1] = -1.5;
    g->L.buf = g->buf;
    g->L.param = g->param;
    g->L.t = 0.3;
    g->L.dt = 0.01;
    for (int a = 0; a < 3; a++) {
        g->L.n[a] = g->n[a];
        g->L.stride[a] = g->stride[a];
        g->L.h[a] = 0.1 * (a + 1);
        g->L.origin[a] = -0.5 + a;
    }
}

static void grid_free(grid *g)
{
    for (int b = 0; b < 2 * NF; b++) free(g->mem[b]);
}

static double get(const grid *g, int b, int64_t at)
{
    return g->single ? ((float *)g->buf[b])[at] : ((double *)g->buf[b])[at];
}

/* The oracle: every node of k at cell (i,j,k) through kir_eval_scalar, reading buffers bufs. */
static double ref_node(const kir_kernel *k, const grid *g, void *const *bufs, const int64_t c[3],
                       double *v, int upto)
{
    int s = g->single;
    for (int id = 0; id <= upto; id++) {
        const kir_node *n = &k->nodes[id];
        double a = n->arg[0] >= 0 ? v[n->arg[0]] : 0, b = n->arg[1] >= 0 ? v[n->arg[1]] : 0,
               cc = n->arg[2] >= 0 ? v[n->arg[2]] : 0, r;
        switch (n->op) {
        case KIR_CONST: r = n->value; break;
        case KIR_PARAM: r = g->param[n->index]; break;
        case KIR_TIME: r = g->L.t; break;
        case KIR_DT: r = g->L.dt; break;
        case KIR_SPACING: r = g->L.h[n->axis]; break;
        case KIR_COORD:
            r = g->L.origin[n->axis] + ((double)c[n->axis] + 0.5 + 0.5 * n->half) * g->L.h[n->axis];
            break;
        case KIR_LOAD: {
            int64_t at = (c[0] + n->off[0]) + (c[1] + n->off[1]) * g->stride[1] +
                         (c[2] + n->off[2]) * g->stride[2];
            const void *p = bufs[n->slot * NF + n->index];
            r = s ? ((const float *)p)[at] : ((const double *)p)[at];
            break;
        }
        default: r = kir_eval_scalar((kir_op)n->op, a, b, cc, s); break;
        }
        v[id] = s ? (double)(float)r : r;
    }
    return v[upto];
}

static int same(double a, double b) { return (isnan(a) && isnan(b)) || a == b; }

/* A random kernel: loads of slot 0 at offsets up to HALO, every kind of leaf, random ops. */
static kir_kernel *random_kernel(int dim, int n_ops)
{
    kir_kernel *k = kir_new(KIR_STAGE, dim, NF, NP, 2, "random");
    int pool[256], np = 0;
    for (int i = 0; i < 6; i++) {
        int off[3] = {0, 0, 0};
        for (int a = 0; a < dim; a++) off[a] = irand(2 * HALO + 1) - HALO;
        pool[np++] = kir_load(k, 0, irand(NF), off);
    }
    pool[np++] = kir_param(k, 0);
    pool[np++] = kir_param(k, 1);
    pool[np++] = kir_leaf(k, KIR_TIME);
    pool[np++] = kir_leaf(k, KIR_DT);
    pool[np++] = kir_const(k, 0.0);
    pool[np++] = kir_const(k, 1.0 / 3.0);
    pool[np++] = kir_const(k, -2.5);
    for (int a = 0; a < dim; a++) {
        pool[np++] = kir_spacing(k, a);
        pool[np++] = kir_coord(k, a, irand(3) - 1);
    }
    for (int i = 0; i < n_ops && np < 250; i++) {
        kir_op op = (kir_op)(KIR_NEG + irand(KIR_RAND - KIR_NEG)); /* the operations: NEG up to RAND, a leaf */
        int x = pool[np - 1 - irand(np < 12 ? np : 12)], y = pool[irand(np)], z = pool[irand(np)];
        int ar = kir_ops[op].arity, r;
        if (op == KIR_B2F || op == KIR_F2B) ar = 1;
        if (ar == 1) r = op == KIR_B2F ? kir_as_f(k, kir_as_b(k, x)) : op == KIR_F2B ? kir_as_b(k, x) : kir_op1(k, op, x);
        else if (ar == 2) r = kir_op2(k, op, x, y);
        else r = kir_op3(k, op, x, y, z);
        pool[np++] = r;
    }
    kir_add_output(k, 1, 0, pool[np - 1]);
    kir_add_output(k, 1, 1, pool[np - 1 - irand(8)]);
    if (irand(2)) kir_add_output(k, 1, 1, pool[irand(6)]); /* a bare load as an output */
    kir_finish(k);
    char err[200];
    assert_int_equal(kir_verify(k, err, sizeof err), 0);
    return k;
}

static void check_against_walk(const kir_kernel *k, grid *g, void *const *before)
{
    double *v = malloc(sizeof *v * (size_t)k->n_nodes);
    for (int64_t z = 0; z < g->n[2]; z++)
        for (int64_t y = 0; y < g->n[1]; y++)
            for (int64_t x = 0; x < g->n[0]; x++) {
                int64_t c[3] = {x, y, z}, at = x + y * g->stride[1] + z * g->stride[2];
                for (int o = 0; o < k->n_outputs; o++) {
                    const kir_output *out = &k->outputs[o];
                    /* with two outputs to one buffer the last one wins */
                    int last = 1;
                    for (int o2 = o + 1; o2 < k->n_outputs; o2++)
                        if (k->outputs[o2].slot == out->slot && k->outputs[o2].field == out->field) last = 0;
                    if (!last) continue;
                    double want = ref_node(k, g, before, c, v, out->node);
                    double got = get(g, out->slot * NF + out->field, at);
                    if (!same(want, got)) {
                        fprintf(stderr, "%s cell (%lld,%lld,%lld) output %d: want %.17g got %.17g\n",
                                g->single ? "float" : "double", (long long)x, (long long)y,
                                (long long)z, o, want, got);
                        kir_print(k, stderr, NULL, NULL);
                        fail();
                    }
                }
            }
    free(v);
}

static void random_kernels(void **state)
{
    (void)state;
    static const int64_t sizes[3][3] = {{300, 1, 1}, {37, 5, 1}, {9, 4, 3}};
    for (int trial = 0; trial < 120; trial++) {
        int dim = 1 + trial % 3, single = (trial / 3) % 2;
        kir_kernel *k = random_kernel(dim, 10 + irand(40));
        grid g;
        grid_init(&g, dim, sizes[dim - 1], single);
        /* slot 0 is only read, so the walk may read it after the run */
        int64_t nout = g.n[dim - 1];
        interp_stage(k, &g.L, single, 0, nout / 2);
        interp_stage(k, &g.L, single, nout / 2, nout);
        check_against_walk(k, &g, g.buf);
        grid_free(&g);
        kir_free(k);
    }
}

/* Outputs written in place: slot 1 is read at offset 0 and written; one output is a bare load
 * of a buffer another output overwrites. */
static void in_place(void **state)
{
    (void)state;
    for (int single = 0; single < 2; single++) {
        kir_kernel *k = kir_new(KIR_STAGE, 2, NF, NP, 2, "inplace");
        int here[3] = {0, 0, 0}, e[3] = {1, 0, 0}, n[3] = {0, -1, 0};
        int u1 = kir_load(k, 1, 0, here);
        int rhs = kir_op2(k, KIR_SUB, kir_load(k, 0, 0, e), kir_load(k, 0, 1, n));
        kir_add_output(k, 1, 0, kir_op2(k, KIR_ADD, u1, kir_op2(k, KIR_MUL, kir_leaf(k, KIR_DT), rhs)));
        kir_add_output(k, 1, 1, u1); /* must see slot 1 field 0 as it was */
        kir_finish(k);
        grid g;
        const int64_t sz[3] = {200, 6, 1};
        grid_init(&g, 2, sz, single);
        size_t esz = single ? 4 : 8;
        void *copy[2 * NF], *cbuf[2 * NF];
        for (int b = 0; b < 2 * NF; b++) {
            copy[b] = malloc(g.elems * esz);
            memcpy(copy[b], g.mem[b], g.elems * esz);
            cbuf[b] = (char *)copy[b] + (size_t)g.off * esz;
        }
        interp_stage(k, &g.L, single, 0, g.n[1]);
        check_against_walk(k, &g, cbuf);
        for (int b = 0; b < 2 * NF; b++) free(copy[b]);
        grid_free(&g);
        kir_free(k);
    }
}

/* A BC kernel on the top side of a 2D grid: a = 1, b = x (cell centre), c = y_face * t + p0. */
static void bc_kernel(void **state)
{
    (void)state;
    for (int single = 0; single < 2; single++) {
        kir_kernel *k = kir_new(KIR_BC, 2, NF, NP, 3, "bc.top");
        k->side = 3;
        kir_add_output(k, 0, 1, kir_const(k, 1));
        kir_add_output(k, 1, 1, kir_coord(k, 0, 0));
        kir_add_output(k, 2, 1, kir_op2(k, KIR_ADD, kir_op2(k, KIR_MUL, kir_coord(k, 1, 1), kir_leaf(k, KIR_TIME)),
                                        kir_param(k, 0)));
        kir_finish(k);
        grid g;
        const int64_t sz[3] = {150, 7, 1};
        grid_init(&g, 2, sz, single);
        assert_int_equal(interp_face_cells(&g.L, 3), 150);
        assert_int_equal(interp_face_cells(&g.L, 0), 7);
        double *out = malloc(sizeof(double) * 3 * 150);
        interp_bc(k, &g.L, single, out);
        double tol = single ? 1e-6 : 1e-15;
        for (int i = 0; i < 150; i++) {
            double x = -0.5 + (i + 0.5) * 0.1, yface = 0.5 + 7 * 0.2;
            assert_true(out[i] == 1.0);
            assert_true(tu_reldiff(out[150 + i], x) < tol);
            assert_true(tu_reldiff(out[300 + i], yface * 0.3 + 0.75) < tol);
        }
        free(out);
        grid_free(&g);
        kir_free(k);
    }
}

/* p0 = 3, p1 = 2*p0, p2 = p1 + p0, evaluated in order; user-set values are kept. */
static void params_kernel(void **state)
{
    (void)state;
    kir_kernel *k = kir_new(KIR_PARAMS, 1, 0, 3, 0, "params");
    kir_add_output(k, 0, 0, kir_const(k, 3));
    kir_add_output(k, 0, 1, kir_op2(k, KIR_MUL, kir_const(k, 2), kir_param(k, 0)));
    kir_add_output(k, 0, 2, kir_op2(k, KIR_ADD, kir_param(k, 1), kir_param(k, 0)));
    kir_finish(k);
    double p[3] = {0, 0, 0};
    kir_eval_params(k, p, NULL);
    assert_true(p[0] == 3 && p[1] == 6 && p[2] == 9);
    unsigned char fixed[3] = {1, 0, 0};
    p[0] = 5;
    kir_eval_params(k, p, fixed);
    assert_true(p[0] == 5 && p[1] == 10 && p[2] == 15);
    unsigned char fixed1[3] = {0, 1, 0};
    p[1] = 7;
    kir_eval_params(k, p, fixed1);
    assert_true(p[0] == 3 && p[1] == 7 && p[2] == 10);
    kir_free(k);
}

/* An init kernel writes slot 0 of every interior cell and nothing else. */
static void init_kernel(void **state)
{
    (void)state;
    kir_kernel *k = kir_new(KIR_INIT, 2, NF, NP, 1, "init");
    int x = kir_coord(k, 0, 0), y = kir_coord(k, 1, 0);
    kir_add_output(k, 0, 1, kir_op3(k, KIR_SELECT, kir_op2(k, KIR_LT, x, kir_const(k, 0)), y, kir_const(k, 7)));
    kir_finish(k);
    grid g;
    const int64_t sz[3] = {20, 9, 1};
    grid_init(&g, 2, sz, 0);
    double ghost = get(&g, 1, -1);
    interp_init(k, &g.L, 0);
    for (int j = 0; j < 9; j++)
        for (int i = 0; i < 20; i++) {
            double xc = -0.5 + (i + 0.5) * 0.1, yc = 0.5 + (j + 0.5) * 0.2;
            assert_true(get(&g, 1, i + j * g.stride[1]) == (xc < 0 ? yc : 7));
        }
    assert_true(get(&g, 1, -1) == ghost);
    grid_free(&g);
    kir_free(k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(random_kernels), cmocka_unit_test(in_place), cmocka_unit_test(bc_kernel),
        cmocka_unit_test(params_kernel), cmocka_unit_test(init_kernel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
