/* test_cuda.c — the CUDA back end: codegen, NVRTC, the driver wrapper.
 *
 *   compile   hand-built kernels (reaction-diffusion in 1D/2D/3D, every op of the table,
 *             conditionals, offsets, in place, leaves; single and double) and 512 random
 *             expressions batched into 8 kernels compile with NVRTC for sm_80 and sm_90; so do
 *             the boundary fill and NaN-check kernels. Skipped only when NVRTC is missing.
 *   refuse    codegen says why it will not generate (limits, kinds, names); NVRTC errors carry
 *             the log; an unknown architecture falls back to PTX.
 *   emulated  the generated source compiled as C++ on the host (a few lines map blockIdx,
 *             atomicMin ...) and run thread by thread: every result equals the scalar
 *             reference (kir_eval_scalar) bit for bit, fills and checks included. This is how
 *             the semantics are tested on a machine without a GPU.
 *   gpu       the same cases launched on device 0 and compared with the reference (bit for bit
 *             for the correctly rounded ops, within a tolerance for libm functions); device
 *             memory is released. Skipped, with the reason, when no device opens.
 * compile and gpu need NVRTC or a device: they are a ctest entry of their own (test_cuda --device:
 * test_cuda_device), SKIPPED (exit 77) when neither is here.
 *   no device cuda_device_open reports why (library missing, stub) instead of crashing.
 *
 * The oracle is one reference evaluator below, written from kir.h, not from the codegen. */
#include "testutil.h"
#include "gpu_emu/cuda_on_host.h"
#include "cuda_codegen.h"
#include "cuda_driver.h"
#include "noise.h"
#include "kir.h"
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static cuda_nvrtc *g_nv;
static char g_nv_reason[512];

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#define NEED_NVRTC()                                                             \
    do {                                                                         \
        if (!g_nv) {                                                             \
            print_message("skipped: NVRTC not found (%s)\n", g_nv_reason);      \
            skip();                                                              \
        }                                                                        \
    } while (0)

/* ---- random numbers ----------------------------------------------------------------------- */

typedef struct rng { uint64_t s; } rng;
static uint64_t rnext(rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static double runif(rng *r) { return (double)(rnext(r) >> 11) * 0x1.0p-53; }
static int rint_below(rng *r, int n) { return (int)(rnext(r) % (uint64_t)n); }

/* ---- kernels ------------------------------------------------------------------------------ */

static const int O0[3] = {0, 0, 0};

static int load_at(kir_kernel *k, int slot, int field, int dx, int dy, int dz)
{
    int off[3] = {dx, dy, dz};
    return kir_load(k, slot, field, off);
}

/* sum over axes of (u[+1] - 2u + u[-1]) / h^2 */
static int laplacian(kir_kernel *k, int field)
{
    int u = kir_load(k, 0, field, O0), sum = -1;
    for (int a = 0; a < k->dim; a++) {
        int p[3] = {0, 0, 0}, m[3] = {0, 0, 0};
        p[a] = 1;
        m[a] = -1;
        int d2 = kir_op2(k, KIR_SUB, kir_op2(k, KIR_ADD, kir_load(k, 0, field, p), kir_load(k, 0, field, m)),
                         kir_op2(k, KIR_MUL, kir_const(k, 2.0), u));
        int h = kir_spacing(k, a);
        d2 = kir_op2(k, KIR_DIV, d2, kir_op2(k, KIR_MUL, h, h));
        sum = sum < 0 ? d2 : kir_op2(k, KIR_ADD, sum, d2);
    }
    return sum;
}

/* Gray-Scott: u' = Du lap u - u v^2 + F (1 - u), v' = Dv lap v + u v^2 - (F + k) v; params
 * Du Dv F k; slot 1 = slot 0 + dt * rhs. */
static kir_kernel *k_gray_scott(int dim)
{
    kir_kernel *k = kir_new(KIR_STAGE, dim, 2, 4, 2, "gray_scott");
    int u = kir_load(k, 0, 0, O0), v = kir_load(k, 0, 1, O0);
    int uvv = kir_op2(k, KIR_MUL, u, kir_op2(k, KIR_MUL, v, v));
    int F = kir_param(k, 2), kk = kir_param(k, 3), dt = kir_leaf(k, KIR_DT);
    int du = kir_op2(k, KIR_ADD, kir_op2(k, KIR_SUB, kir_op2(k, KIR_MUL, kir_param(k, 0), laplacian(k, 0)), uvv),
                     kir_op2(k, KIR_MUL, F, kir_op2(k, KIR_SUB, kir_const(k, 1.0), u)));
    int dv = kir_op2(k, KIR_SUB, kir_op2(k, KIR_ADD, kir_op2(k, KIR_MUL, kir_param(k, 1), laplacian(k, 1)), uvv),
                     kir_op2(k, KIR_MUL, kir_op2(k, KIR_ADD, F, kk), v));
    kir_add_output(k, 1, 0, kir_op2(k, KIR_ADD, u, kir_op2(k, KIR_MUL, dt, du)));
    kir_add_output(k, 1, 1, kir_op2(k, KIR_ADD, v, kir_op2(k, KIR_MUL, dt, dv)));
    kir_finish(k);
    return k;
}

/* Fisher-KPP with a nonlinear diffusivity and a source in space and time. */
static kir_kernel *k_reaction_diffusion(int dim)
{
    kir_kernel *k = kir_new(KIR_STAGE, dim, 1, 2, 2, "rd");
    int u = kir_load(k, 0, 0, O0);
    int D = kir_op2(k, KIR_MUL, kir_param(k, 0), kir_op1(k, KIR_EXP, kir_op1(k, KIR_NEG, u)));
    int src = kir_op1(k, KIR_SIN, kir_op2(k, KIR_ADD, kir_coord(k, 0, 0), kir_leaf(k, KIR_TIME)));
    int r = kir_op2(k, KIR_MUL, kir_param(k, 1), kir_op2(k, KIR_MUL, u, kir_op2(k, KIR_SUB, kir_const(k, 1), u)));
    int rhs = kir_op2(k, KIR_ADD, kir_op2(k, KIR_ADD, kir_op2(k, KIR_MUL, D, laplacian(k, 0)), r), src);
    kir_add_output(k, 1, 0, kir_op2(k, KIR_ADD, u, kir_op2(k, KIR_MUL, kir_leaf(k, KIR_DT), rhs)));
    kir_finish(k);
    return k;
}

/* One output per operation of the table: inputs u (0.1..0.9), v (0.2..2), w (= u at about half
 * of the cells) in slot 0, fields 0..2; the outputs in slot 1. 64 fields x 2 slots = the limit. */
static kir_kernel *k_every_op(int dim)
{
    kir_kernel *k = kir_new(KIR_STAGE, dim, 64, 2, 2, "every_op");
    int u = kir_load(k, 0, 0, O0), v = kir_load(k, 0, 1, O0), w = kir_load(k, 0, 2, O0);
    int out = 0;
    for (int op = 0; op < KIR_N_OPS; op++) {
        int node;
        switch ((kir_op)op) {
        case KIR_CONST: node = kir_const(k, 0.1); break;
        case KIR_PARAM: node = kir_param(k, 1); break;
        case KIR_TIME: case KIR_DT: node = kir_leaf(k, (kir_op)op); break;
        case KIR_SPACING: node = kir_spacing(k, dim - 1); break;
        case KIR_COORD: node = kir_coord(k, dim - 1, -1); break;
        case KIR_LOAD: node = load_at(k, 0, 1, -1, 0, 0); break;
        case KIR_RAND: node = kir_rand(k, 3, 1, (const int[3]){dim > 1 ? 0 : 1, dim > 1 ? -1 : 0, 0}); break;
        case KIR_EDGE: node = kir_edge(k, dim - 1, -1); break;
        case KIR_METRIC: { /* a table of distinct values along the last axis, read one cell below */
            kir_metric *m = kir_metric_new();
            if (!m || kir_metric_axis(m, dim - 1, 4096) < 0) return NULL;
            for (int64_t i = 0; i < m->len[dim - 1]; i++) m->tab[dim - 1][KIR_MT_INVVOL][i] = 0.25 + 0.001 * (double)i;
            kir_metric_seal(m);
            node = kir_metric_node(k, m, dim - 1, KIR_MT_INVVOL, -1);
            kir_metric_unref(m);
            break;
        }
        case KIR_AND: case KIR_OR:
            node = kir_op2(k, (kir_op)op, kir_op2(k, KIR_LT, u, kir_const(k, 0.5)), kir_op2(k, KIR_GT, v, kir_const(k, 1)));
            break;
        case KIR_NOT: node = kir_op1(k, KIR_NOT, kir_op2(k, KIR_LT, u, kir_const(k, 0.5))); break;
        case KIR_SELECT: node = kir_op3(k, KIR_SELECT, kir_op2(k, KIR_LT, u, kir_const(k, 0.5)), v, w); break;
        case KIR_FMA: node = kir_op3(k, KIR_FMA, u, v, kir_op1(k, KIR_NEG, w)); break;
        case KIR_B2F: node = kir_op1(k, KIR_B2F, kir_op2(k, KIR_LE, u, w)); break;
        case KIR_F2B: node = kir_op1(k, KIR_F2B, kir_op1(k, KIR_FLOOR, kir_op2(k, KIR_MUL, u, kir_const(k, 2)))); break;
        case KIR_N_OPS: continue;
        default:
            if (kir_ops[op].arity == 1) node = kir_op1(k, (kir_op)op, u);
            else if (kir_ops[op].type == KIR_B) node = kir_op2(k, (kir_op)op, u, w);
            else node = kir_op2(k, (kir_op)op, u, v);
        }
        kir_add_output(k, 1, out++, node);
    }
    kir_finish(k);
    return k;
}

/* Conditionals: NaN in comparisons (every one false but NE), nested selects, logic. */
static kir_kernel *k_conditionals(int dim)
{
    kir_kernel *k = kir_new(KIR_STAGE, dim, 8, 1, 2, "conditionals");
    int u = kir_load(k, 0, 0, O0), v = kir_load(k, 0, 1, O0);
    int nan_or = kir_op1(k, KIR_SQRT, kir_op2(k, KIR_SUB, u, kir_const(k, 0.5))); /* NaN below 0.5 */
    kir_add_output(k, 1, 0, kir_op2(k, KIR_LT, nan_or, v));
    kir_add_output(k, 1, 1, kir_op2(k, KIR_NE, nan_or, nan_or));
    kir_add_output(k, 1, 2, kir_op2(k, KIR_EQ, nan_or, nan_or));
    kir_add_output(k, 1, 3, kir_op1(k, KIR_NOT, kir_op2(k, KIR_GE, nan_or, kir_const(k, 0))));
    int c1 = kir_op2(k, KIR_GT, u, kir_param(k, 0));
    int c2 = kir_op2(k, KIR_OR, kir_op2(k, KIR_LT, v, kir_const(k, 1)), kir_op1(k, KIR_NOT, c1));
    int sel = kir_op3(k, KIR_SELECT, c1, kir_op3(k, KIR_SELECT, c2, u, v), kir_op1(k, KIR_NEG, v));
    kir_add_output(k, 1, 4, sel);
    /* heaviside-like: select on a number (F2B inserted) */
    kir_add_output(k, 1, 5, kir_op3(k, KIR_SELECT, kir_op2(k, KIR_SUB, u, v), kir_const(k, 1), kir_const(k, -1)));
    kir_add_output(k, 1, 6, kir_op2(k, KIR_MUL, kir_op1(k, KIR_B2F, kir_op2(k, KIR_AND, c1, c2)), u));
    kir_add_output(k, 1, 7, kir_op3(k, KIR_SELECT, kir_op2(k, KIR_LE, u, v), kir_const(k, INFINITY), kir_const(k, -0.0)));
    kir_finish(k);
    return k;
}

/* Loads far from the cell along every axis (halo 3). */
static kir_kernel *k_offsets(int dim)
{
    kir_kernel *k = kir_new(KIR_STAGE, dim, 2, 0, 2, "offsets");
    int acc = kir_load(k, 0, 0, O0);
    int offs[][3] = {{3, 0, 0}, {-3, 0, 0}, {0, 2, 0}, {0, -3, 1}, {1, 1, -2}, {-2, 3, 3}, {2, -1, -3}};
    for (size_t i = 0; i < sizeof offs / sizeof *offs; i++) {
        int o[3];
        for (int a = 0; a < 3; a++) o[a] = a < dim ? offs[i][a] : 0;
        int l = kir_load(k, 0, (int)(i % 2), o);
        acc = kir_op2(k, KIR_ADD, kir_op2(k, KIR_MUL, acc, kir_const(k, 0.75)), l);
    }
    kir_add_output(k, 1, 0, acc);
    kir_add_output(k, 1, 1, kir_op2(k, KIR_SUB, load_at(k, 0, 1, dim > 0 ? -1 : 0, 0, 0), acc));
    kir_finish(k);
    return k;
}

/* In place: u = u + dt * (lap v) reads and writes slot 0 field 0 (only at the cell). */
static kir_kernel *k_in_place(int dim)
{
    kir_kernel *k = kir_new(KIR_STAGE, dim, 2, 0, 1, "in_place");
    int u = kir_load(k, 0, 0, O0);
    kir_add_output(k, 0, 0, kir_op2(k, KIR_ADD, u, kir_op2(k, KIR_MUL, kir_leaf(k, KIR_DT), laplacian(k, 1))));
    kir_finish(k);
    return k;
}

/* Every leaf: coordinates at several half offsets, time, dt, spacing, params. */
static kir_kernel *k_leaves(int dim)
{
    kir_kernel *k = kir_new(KIR_STAGE, dim, 16, 3, 1, "leaves");
    int out = 0;
    for (int a = 0; a < dim; a++)
        for (int half = -1; half <= 2; half++) kir_add_output(k, 0, out++, kir_coord(k, a, half));
    kir_add_output(k, 0, out++, kir_leaf(k, KIR_TIME));
    kir_add_output(k, 0, out++, kir_op2(k, KIR_MUL, kir_leaf(k, KIR_DT), kir_spacing(k, 0)));
    kir_add_output(k, 0, out++, kir_op2(k, KIR_ADD, kir_param(k, 2), kir_const(k, 1e-7)));
    kir_finish(k);
    return k;
}

/* An init kernel: values from coordinates and params. */
static kir_kernel *k_init(int dim)
{
    kir_kernel *k = kir_new(KIR_INIT, dim, 1, 1, 1, "init");
    int r2 = -1;
    for (int a = 0; a < dim; a++) {
        int x = kir_op2(k, KIR_SUB, kir_coord(k, a, 0), kir_const(k, 0.5));
        r2 = r2 < 0 ? kir_op2(k, KIR_MUL, x, x) : kir_op2(k, KIR_ADD, r2, kir_op2(k, KIR_MUL, x, x));
    }
    kir_add_output(k, 0, 0, kir_op1(k, KIR_EXP, kir_op1(k, KIR_NEG, kir_op2(k, KIR_DIV, r2, kir_param(k, 0)))));
    kir_finish(k);
    return k;
}

/* ---- random kernels ----------------------------------------------------------------------- */

static const kir_op exact_ops[] = {KIR_NEG, KIR_ADD, KIR_SUB, KIR_MUL, KIR_DIV, KIR_LT, KIR_LE, KIR_GT,
                                   KIR_GE, KIR_EQ, KIR_NE, KIR_AND, KIR_OR, KIR_NOT, KIR_SELECT,
                                   KIR_B2F, KIR_F2B, KIR_ABS, KIR_SQRT, KIR_FLOOR, KIR_CEIL};

static int rand_leaf(kir_kernel *k, rng *r)
{
    int dim = k->dim;
    switch (rint_below(r, 10)) {
    case 0: {
        static const double c[] = {0, 1, -1, 0.5, 2, 3, -0.25, 1e-3};
        return rint_below(r, 3) ? kir_const(k, c[rint_below(r, 8)]) : kir_const(k, (runif(r) - 0.5) * 8);
    }
    case 1: return kir_param(k, rint_below(r, k->n_params));
    case 2: return kir_leaf(k, rint_below(r, 2) ? KIR_TIME : KIR_DT);
    case 3: return kir_spacing(k, rint_below(r, dim));
    case 4: return kir_coord(k, rint_below(r, dim), rint_below(r, 5) - 2);
    default: {
        int off[3] = {0, 0, 0};
        for (int a = 0; a < dim; a++) off[a] = rint_below(r, 5) - 2;
        return kir_load(k, 0, rint_below(r, 8), off);
    }
    }
}

static int rand_expr(kir_kernel *k, rng *r, int depth, int exact_only)
{
    if (depth == 0 || rint_below(r, 5) == 0) return rand_leaf(k, r);
    kir_op op;
    if (exact_only) op = exact_ops[rint_below(r, (int)(sizeof exact_ops / sizeof *exact_ops))];
    else op = (kir_op)(KIR_NEG + rint_below(r, KIR_RAND - KIR_NEG)); /* the operations: NEG up to RAND, a leaf */
    int a = rand_expr(k, r, depth - 1, exact_only);
    /* kir_op1 converts operands for every op but the conversions themselves */
    if (op == KIR_B2F) a = kir_as_b(k, a);
    if (op == KIR_F2B) a = kir_as_f(k, a);
    switch (kir_ops[op].arity) {
    case 1: return kir_op1(k, op, a);
    case 2: return kir_op2(k, op, a, rand_expr(k, r, depth - 1, exact_only));
    default: {
        int b = rand_expr(k, r, depth - 1, exact_only);
        return kir_op3(k, op, a, b, rand_expr(k, r, depth - 1, exact_only));
    }
    }
}

#define RAND_OUTPUTS 64
/* RAND_OUTPUTS random expressions (depth <= 4) over 8 input fields, 3 params. */
static kir_kernel *k_random(uint64_t seed, int dim, int exact_only)
{
    char name[32];
    snprintf(name, sizeof name, "random%llu", (unsigned long long)seed);
    kir_kernel *k = kir_new(KIR_STAGE, dim, RAND_OUTPUTS, 3, 2, name);
    rng r = {seed * 7919 + 17};
    for (int i = 0; i < RAND_OUTPUTS; i++) kir_add_output(k, 1, i, rand_expr(k, &r, 4, exact_only));
    kir_finish(k);
    return k;
}

/* ---- boundary-condition kernels ----------------------------------------------------------- */

/* Side `side` of a dim-D mesh with 3 fields: field 2 linear, a = 1 + x_other^2, b = p0 * (1 + u0)
 * (u0 = field 0 at the boundary cell, one cell along the other axis), c = sin(face coordinate) + t.
 * COORD along the side's axis has half = -1 / +1 (the face), as the compiler writes it. */
static kir_kernel *k_bc(int dim, int side)
{
    kir_kernel *k = kir_new(KIR_BC, dim, 3, 1, 1, "bc");
    k->side = side;
    int axis = side / 2, other = dim > 1 ? (axis + 1) % dim : axis, face = side % 2 ? 1 : -1;
    int xo = other == axis ? kir_coord(k, axis, face) : kir_coord(k, other, 0);
    int off[3] = {0, 0, 0};
    if (dim > 1) off[other] = 1;
    int u0 = kir_load(k, 0, 0, off);
    kir_add_output(k, 0, 2, kir_op2(k, KIR_ADD, kir_const(k, 1), kir_op2(k, KIR_MUL, xo, xo)));
    kir_add_output(k, 1, 2, kir_op2(k, KIR_MUL, kir_param(k, 0), kir_op2(k, KIR_ADD, kir_const(k, 1), u0)));
    kir_add_output(k, 2, 2, kir_op2(k, KIR_ADD, kir_op1(k, KIR_SIN, kir_coord(k, axis, face)), kir_leaf(k, KIR_TIME)));
    /* field 1 on odd sides: Dirichlet-like (b missing = 0), c missing on even sides */
    kir_add_output(k, 0, 1, kir_const(k, 2));
    if (side % 2) kir_add_output(k, 2, 1, kir_op2(k, KIR_MUL, kir_const(k, 3), kir_coord(k, axis, face + 2)));
    kir_add_output(k, 0, 2, kir_const(k, 1e9)); /* a second a for field 2: the first counts */
    kir_finish(k);
    return k;
}

/* ---- the mesh and the reference ----------------------------------------------------------- */

typedef struct layout {
    int dim;
    int64_t n[3], g[3], stride[3], total, base;
} layout;

static layout make_layout(int dim, const int64_t n[3], const int64_t g[3])
{
    layout L;
    memset(&L, 0, sizeof L);
    L.dim = dim;
    for (int a = 0; a < 3; a++) {
        L.n[a] = a < dim ? n[a] : 1;
        L.g[a] = a < dim ? g[a] : 0;
    }
    L.stride[0] = 1;
    L.stride[1] = L.n[0] + 2 * L.g[0];
    L.stride[2] = L.stride[1] * (L.n[1] + 2 * L.g[1]);
    L.total = L.stride[2] * (L.n[2] + 2 * L.g[2]);
    L.base = L.g[0] + L.g[1] * L.stride[1] + L.g[2] * L.stride[2];
    return L;
}

static int64_t at(const layout *L, const int64_t idx[3])
{
    return L->base + idx[0] + idx[1] * L->stride[1] + idx[2] * L->stride[2];
}

/* Host arrays, one per (slot, field), in the kernel's precision. */
typedef struct mesh {
    layout L;
    int single, n_bufs;
    void **host;        /* n_bufs arrays of L.total elements */
    double param[8], t, dt, h[3], origin[3];
} mesh;

static double mget(const mesh *m, int b, int64_t i)
{
    return m->single ? (double)((float *)m->host[b])[i] : ((double *)m->host[b])[i];
}

static void mset(mesh *m, int b, int64_t i, double v)
{
    if (m->single) ((float *)m->host[b])[i] = (float)v;
    else ((double *)m->host[b])[i] = v;
}

static size_t esize(const mesh *m) { return m->single ? sizeof(float) : sizeof(double); }

static mesh *mesh_new(int dim, const int64_t n[3], const int64_t g[3], int n_bufs, int single, rng *r,
                      double lo, double hi)
{
    mesh *m = calloc(1, sizeof *m);
    m->L = make_layout(dim, n, g);
    m->single = single;
    m->n_bufs = n_bufs;
    m->host = calloc((size_t)n_bufs, sizeof *m->host);
    for (int b = 0; b < n_bufs; b++) {
        m->host[b] = malloc((size_t)m->L.total * esize(m));
        for (int64_t i = 0; i < m->L.total; i++) mset(m, b, i, lo + (hi - lo) * runif(r));
    }
    for (int i = 0; i < 8; i++) m->param[i] = 0.25 + 0.5 * runif(r);
    m->t = 0.375;
    m->dt = 0.01;
    for (int a = 0; a < 3; a++) {
        m->h[a] = 1.0 / (double)(m->L.n[a] + 1) * (1 + 0.1 * a);
        m->origin[a] = -0.25 * a + 0.125;
    }
    return m;
}

static mesh *mesh_copy(const mesh *src)
{
    mesh *m = malloc(sizeof *m);
    *m = *src;
    m->host = calloc((size_t)m->n_bufs, sizeof *m->host);
    for (int b = 0; b < m->n_bufs; b++) {
        m->host[b] = malloc((size_t)m->L.total * esize(m));
        memcpy(m->host[b], src->host[b], (size_t)m->L.total * esize(m));
    }
    return m;
}

static void mesh_free(mesh *m)
{
    if (!m) return;
    for (int b = 0; b < m->n_bufs; b++) free(m->host[b]);
    free(m->host);
    free(m);
}

/* rand()'s key and counter in these launches (compiler/noise.h): the step's high bits used */
#define RAND_SEED 0x5eed0000beefull
#define RAND_STEP 0x1234567890ll
#define RAND_STAGE 2

/* Evaluates every node of k at cell idx. bc_axis >= 0: a boundary kernel on that side (loads
 * clamped as cuda_codegen.h says). */
static void ref_eval(const kir_kernel *k, const mesh *m, const int64_t idx[3], int bc_axis, double *val)
{
    int single = m->single;
    const layout *L = &m->L;
    for (int id = 0; id < k->n_nodes; id++) {
        const kir_node *n = &k->nodes[id];
        double v;
        switch ((kir_op)n->op) {
        case KIR_CONST: v = n->value; break;
        case KIR_PARAM: v = m->param[n->index]; break;
        case KIR_TIME: v = m->t; break;
        case KIR_DT: v = m->dt; break;
        case KIR_SPACING: v = m->h[n->axis]; break;
        case KIR_COORD: {
            v = m->origin[n->axis] + ((double)idx[n->axis] + (0.5 + 0.5 * n->half)) * m->h[n->axis];
            break;
        }
        case KIR_EDGE: {
            int64_t i = idx[n->axis] + n->off[n->axis];
            v = i == -1 || i == L->n[n->axis] - 1 ? 1 : 0;
            break;
        }
        case KIR_METRIC: v = kir_metric_at(k->metric, n->axis, n->index, idx[n->axis] + n->off[n->axis]); break;
        case KIR_RAND: {
            int64_t c[3];
            for (int a = 0; a < 3; a++) c[a] = idx[a] + n->off[a];
            v = pj_noise_value(RAND_SEED, c[0] + L->n[0] * (c[1] + L->n[1] * c[2]), RAND_STEP, RAND_STAGE, n->index,
                                n->axis, single);
            break;
        }
        case KIR_LOAD: {
            int64_t c[3];
            for (int a = 0; a < 3; a++) {
                c[a] = idx[a] + n->off[a];
                if (bc_axis >= 0) {
                    int64_t lo = a == bc_axis ? 0 : -L->g[a], hi = L->n[a] - 1 + (a == bc_axis ? 0 : L->g[a]);
                    c[a] = c[a] < lo ? lo : c[a] > hi ? hi : c[a];
                }
            }
            v = mget(m, n->slot * k->n_fields + n->index, at(L, c));
            break;
        }
        default: {
            double x[3] = {0, 0, 0};
            for (int j = 0; j < kir_ops[n->op].arity; j++) x[j] = val[n->arg[j]];
            v = kir_eval_scalar((kir_op)n->op, x[0], x[1], x[2], single);
        }
        }
        /* the kernel's precision: every F value is a float in single */
        val[id] = single && n->type == KIR_F ? (double)(float)v : v;
    }
}

static void ref_stage(const kir_kernel *k, mesh *m)
{
    double *val = malloc(sizeof *val * (size_t)(k->n_nodes + 1));
    int64_t idx[3];
    for (idx[2] = 0; idx[2] < m->L.n[2]; idx[2]++)
        for (idx[1] = 0; idx[1] < m->L.n[1]; idx[1]++)
            for (idx[0] = 0; idx[0] < m->L.n[0]; idx[0]++) {
                ref_eval(k, m, idx, -1, val);
                for (int i = 0; i < k->n_outputs; i++) {
                    const kir_output *o = &k->outputs[i];
                    mset(m, o->slot * k->n_fields + o->field, at(&m->L, idx), val[o->node]);
                }
            }
    free(val);
}

/* The fill of one side, written from its definition (loops, not threads). */
static void ref_fill(const kir_kernel *bc, mesh *m, int n_fields, int side, const cuda_bc_kind *kinds)
{
    const layout *L = &m->L;
    int axis = side / 2, high = side % 2;
    double *val = malloc(sizeof *val * (size_t)((bc ? bc->n_nodes : 0) + 1));
    int coef[64 * 3];
    for (int i = 0; i < n_fields * 3; i++) coef[i] = -1;
    for (int i = bc ? bc->n_outputs - 1 : -1; i >= 0; i--) /* the first output counts */
        coef[bc->outputs[i].field * 3 + bc->outputs[i].slot] = bc->outputs[i].node;
    int64_t lo[3], hi[3];
    for (int a = 0; a < 3; a++) {
        lo[a] = -L->g[a];
        hi[a] = L->n[a] - 1 + L->g[a];
    }
    lo[axis] = hi[axis] = high ? L->n[axis] - 1 : 0;
    int64_t idx[3];
    for (int64_t mm = 1; mm <= L->g[axis]; mm++)
        for (idx[2] = lo[2]; idx[2] <= hi[2]; idx[2]++)
            for (idx[1] = lo[1]; idx[1] <= hi[1]; idx[1]++)
                for (idx[0] = lo[0]; idx[0] <= hi[0]; idx[0]++) {
                    if (bc) { /* at the face cell: the other axes clamped to the interior */
                        int64_t fc[3];
                        for (int a = 0; a < 3; a++) fc[a] = idx[a] < 0 ? 0 : idx[a] >= L->n[a] ? L->n[a] - 1 : idx[a];
                        ref_eval(bc, m, fc, axis, val);
                    }
                    int64_t gi[3], ii[3], pi[3];
                    memcpy(gi, idx, sizeof gi);
                    memcpy(ii, idx, sizeof ii);
                    gi[axis] += high ? mm : -mm;
                    ii[axis] += high ? -(mm - 1) : mm - 1;
                    memcpy(pi, gi, sizeof pi);
                    pi[axis] += high ? -L->n[axis] : L->n[axis];
                    for (int f = 0; f < n_fields; f++) {
                        double res;
                        if (kinds[f] == CUDA_BC_NONE) continue;
                        if (kinds[f] == CUDA_BC_PERIODIC) res = mget(m, f, at(L, pi));
                        else if (kinds[f] == CUDA_BC_MIRROR) res = mget(m, f, at(L, ii));
                        else {
                            double ca = coef[f * 3] >= 0 ? val[coef[f * 3]] : 0;
                            double cb = coef[f * 3 + 1] >= 0 ? val[coef[f * 3 + 1]] : 0;
                            double cc = coef[f * 3 + 2] >= 0 ? val[coef[f * 3 + 2]] : 0;
                            /* in double in both precisions, as sim_fill_ghosts */
                            double d = (double)(2 * mm - 1) * m->h[axis], u = mget(m, f, at(L, ii));
                            res = (cc - u * (ca / 2 - cb / d)) / (ca / 2 + cb / d);
                        }
                        mset(m, f, at(L, gi), res);
                    }
                }
    free(val);
}

/* ---- where kernels run: the host emulation or the GPU ------------------------------------- */

typedef struct runner {
    cuda_device *dev;     /* NULL: emulated on the host */
    char *tmpdir;         /* emulation: sources and shared objects */
    int n_built;
    double build_s;
} runner;

static const char emu_prelude[] =
    "// host emulation of the few CUDA names pdejit's generated code uses\n" PJ_CUDA_ON_HOST_PRELUDE
    "#line 1 \"generated.cu\"\n";

static const char emu_runner[] =
    "\ntemplate <class T> static void pj_emu(void (*f)(T), const void *arg, const unsigned *grid, const unsigned *block)\n"
    "{\n"
    "    T a; memcpy(&a, arg, sizeof a);\n"
    "    blockDim = {block[0], block[1], block[2]};\n"
    "    for (unsigned bz = 0; bz < grid[2]; bz++) for (unsigned by = 0; by < grid[1]; by++)\n"
    "    for (unsigned bx = 0; bx < grid[0]; bx++) for (unsigned tz = 0; tz < block[2]; tz++)\n"
    "    for (unsigned ty = 0; ty < block[1]; ty++) for (unsigned tx = 0; tx < block[0]; tx++) {\n"
    "        blockIdx = {bx, by, bz}; threadIdx = {tx, ty, tz}; f(a);\n"
    "    }\n"
    "}\n"
    "extern \"C\" void pj_emu_run(const void *arg, const unsigned *grid, const unsigned *block)\n"
    "{ pj_emu(%s, arg, grid, block); }\n";

static int have_cxx(void)
{
    static int known = -1;
    if (known < 0) known = tu_run("c++ --version >/dev/null", NULL) == 0;
    return known;
}

static void rn_init_emu(runner *rn)
{
    memset(rn, 0, sizeof *rn);
    rn->tmpdir = tu_tempdir("cuda-emu");
    assert_non_null(rn->tmpdir);
}

static void rn_done(runner *rn)
{
    if (rn->tmpdir) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", rn->tmpdir);
        tu_run(cmd, NULL);
        free(rn->tmpdir);
    }
}

static uint64_t rn_alloc(runner *rn, size_t bytes)
{
    if (!rn->dev) return (uint64_t)(uintptr_t)malloc(bytes);
    char err[512];
    cuda_ptr p = 0;
    int rc = cuda_mem_alloc(rn->dev, bytes, &p, err, sizeof err);
    if (rc) print_error("%s\n", err);
    assert_int_equal(rc, 0);
    return p;
}

static void rn_free(runner *rn, uint64_t p)
{
    if (!rn->dev) {
        free((void *)(uintptr_t)p);
        return;
    }
    char err[512];
    int rc = cuda_mem_free(rn->dev, p, err, sizeof err);
    if (rc) print_error("%s\n", err);
    assert_int_equal(rc, 0);
}

static void rn_put(runner *rn, uint64_t dst, const void *src, size_t bytes)
{
    if (!rn->dev) {
        memcpy((void *)(uintptr_t)dst, src, bytes);
        return;
    }
    char err[512];
    int rc = cuda_memcpy_htod(rn->dev, dst, src, bytes, err, sizeof err);
    if (rc) print_error("%s\n", err);
    assert_int_equal(rc, 0);
}

static void rn_get(runner *rn, void *dst, uint64_t src, size_t bytes)
{
    if (!rn->dev) {
        memcpy(dst, (const void *)(uintptr_t)src, bytes);
        return;
    }
    char err[512];
    int rc = cuda_memcpy_dtoh(rn->dev, dst, src, bytes, err, sizeof err);
    if (rc) print_error("%s\n", err);
    assert_int_equal(rc, 0);
}

/* Compiles src and runs kernel `name` once over grid x block with one by-value argument. */
static void rn_launch(runner *rn, const char *src, const char *name, const void *arg, size_t arg_size,
                      const unsigned grid[3], const unsigned block[3])
{
    if (!rn->dev) {
        char path[512], so[512], cmd[1400];
        snprintf(path, sizeof path, "%s/%s_%d.cpp", rn->tmpdir, name, rn->n_built);
        snprintf(so, sizeof so, "%s/%s_%d.so", rn->tmpdir, name, rn->n_built);
        rn->n_built++;
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(emu_prelude, f);
        fputs(src, f);
        fprintf(f, emu_runner, name);
        fclose(f);
        snprintf(cmd, sizeof cmd, "c++ -std=c++17 -O1 -ffp-contract=off -fno-fast-math -shared -fPIC -w -o '%s' '%s'",
                 so, path);
        double t0 = now_s();
        char *out = NULL;
        int rc = tu_run(cmd, &out);
        rn->build_s += now_s() - t0;
        if (rc) print_error("emulation build failed:\n%s\n", out);
        free(out);
        assert_int_equal(rc, 0);
        void *lib = dlopen(so, RTLD_NOW | RTLD_LOCAL);
        if (!lib) print_error("%s\n", dlerror());
        assert_non_null(lib);
        void (*run)(const void *, const unsigned *, const unsigned *);
        void *sym = dlsym(lib, "pj_emu_run");
        assert_non_null(sym);
        memcpy(&run, &sym, sizeof sym);
        run(arg, grid, block);
        dlclose(lib);
        return;
    }
    char err[4096];
    void *image = NULL;
    size_t len = 0;
    int is_cubin = 0;
    char *log = NULL;
    int rc = cuda_nvrtc_compile(g_nv, src, name, cuda_device_cc(rn->dev), 0, &image, &len, &is_cubin, &log,
                                err, sizeof err);
    free(log);
    if (rc) print_error("%s\n", err);
    assert_int_equal(rc, 0);
    cuda_module *mod = cuda_module_load(rn->dev, image, err, sizeof err);
    free(image);
    if (!mod) print_error("%s\n", err);
    assert_non_null(mod);
    cuda_function fn = NULL;
    rc = cuda_module_function(mod, name, &fn, err, sizeof err);
    if (rc) print_error("%s\n", err);
    assert_int_equal(rc, 0);
    rc = cuda_launch_struct(rn->dev, fn, grid, block, arg, arg_size, err, sizeof err);
    if (!rc) rc = cuda_synchronize(rn->dev, err, sizeof err);
    if (rc) print_error("%s\n", err);
    cuda_module_unload(mod);
    assert_int_equal(rc, 0);
}

/* Device copies of every buffer of a mesh, and the argument that points at them. */
typedef struct dev_mesh {
    uint64_t *ptr;
    cuda_args args;
} dev_mesh;

static void dev_mesh_up(runner *rn, const mesh *m, dev_mesh *dm)
{
    size_t bytes = (size_t)m->L.total * esize(m);
    dm->ptr = calloc((size_t)m->n_bufs, sizeof *dm->ptr);
    void **addr = calloc((size_t)m->n_bufs, sizeof *addr);
    for (int b = 0; b < m->n_bufs; b++) {
        dm->ptr[b] = rn_alloc(rn, bytes);
        rn_put(rn, dm->ptr[b], m->host[b], bytes);
        addr[b] = (void *)(uintptr_t)(dm->ptr[b] + (uint64_t)m->L.base * esize(m));
    }
    kir_launch l = {.buf = addr, .param = m->param, .t = m->t, .dt = m->dt, .seed = RAND_SEED, .step = RAND_STEP,
                    .stage = RAND_STAGE};
    for (int a = 0; a < 3; a++) {
        l.n[a] = m->L.n[a];
        l.stride[a] = m->L.stride[a];
        l.h[a] = m->h[a];
        l.origin[a] = m->origin[a];
    }
    char err[256];
    assert_int_equal(cuda_args_from_launch(&dm->args, &l, m->n_bufs, 8, m->L.g, err, sizeof err), 0);
    free(addr);
}

static void dev_mesh_down(runner *rn, mesh *m, dev_mesh *dm)
{
    for (int b = 0; b < m->n_bufs; b++) rn_get(rn, m->host[b], dm->ptr[b], (size_t)m->L.total * esize(m));
}

static void dev_mesh_free(runner *rn, const mesh *m, dev_mesh *dm)
{
    for (int b = 0; b < m->n_bufs; b++) rn_free(rn, dm->ptr[b]);
    free(dm->ptr);
}

/* Compares every element of every buffer (ghosts included: nothing else may change). exact:
 * bit for bit (NaN = NaN); else within tol, for at least min_frac of the elements. */
static void compare_meshes(const mesh *got, const mesh *want, const char *what, int exact, double tol,
                           double min_frac)
{
    int64_t bad = 0, total = 0;
    for (int b = 0; b < got->n_bufs; b++)
        for (int64_t i = 0; i < got->L.total; i++) {
            double g = mget(got, b, i), w = mget(want, b, i);
            total++;
            int ok;
            if (exact) ok = (isnan(g) && isnan(w)) || (g == w && signbit(g) == signbit(w));
            else ok = tu_reldiff(g, w) <= tol || fabs(g - w) <= tol || (isinf(g) && isinf(w) && g == w);
            if (!ok) {
                if (bad < 5)
                    print_message("%s: buffer %d element %lld: got %.17g want %.17g\n", what, b, (long long)i, g, w);
                bad++;
            }
        }
    if (exact) assert_int_equal(bad, 0);
    else if ((double)(total - bad) < min_frac * (double)total) {
        print_error("%s: %lld of %lld elements differ\n", what, (long long)bad, (long long)total);
        fail();
    }
}

static void sizes_for(int dim, int64_t n[3])
{
    static const int64_t s[3][3] = {{37, 1, 1}, {19, 13, 1}, {11, 7, 5}};
    memcpy(n, s[dim - 1], sizeof s[0]);
}

/* Runs stage kernel k on a random mesh and compares with the reference. */
static void run_stage_case(runner *rn, const kir_kernel *k, int single, double lo, double hi, int exact,
                           double tol, double min_frac, uint64_t seed)
{
    char err[512];
    cuda_options opt = {single, 0, NULL};
    char *src = cuda_codegen(k, &opt, "pj_test_stage", err, sizeof err);
    if (!src) print_error("%s\n", err);
    assert_non_null(src);
    int halo[3];
    kir_halo_axes(k, halo);
    int64_t n[3], g[3];
    sizes_for(k->dim, n);
    for (int a = 0; a < 3; a++) g[a] = halo[a] + (a == 1); /* extra y ghost: strides are not n + 2*halo */
    rng r = {seed};
    int nb = k->n_slots * k->n_fields;
    mesh *m = mesh_new(k->dim, n, g, nb, single, &r, lo, hi);
    if (!strcmp(k->name, "every_op")) /* w = u at about half of the cells */
        for (int64_t i = 0; i < m->L.total; i++)
            if (runif(&r) < 0.5) mset(m, 2, i, mget(m, 0, i));
    mesh *want = mesh_copy(m);
    ref_stage(k, want);
    dev_mesh dm;
    dev_mesh_up(rn, m, &dm);
    unsigned grid[3], block[3];
    assert_int_equal(cuda_stage_dims(k->dim, m->L.n, grid, block), 0);
    rn_launch(rn, src, "pj_test_stage", &dm.args, sizeof dm.args, grid, block);
    dev_mesh_down(rn, m, &dm);
    dev_mesh_free(rn, m, &dm);
    char what[96];
    snprintf(what, sizeof what, "%s %dD %s on the %s", k->name, k->dim, single ? "single" : "double",
             rn->dev ? "GPU" : "emulation");
    compare_meshes(m, want, what, exact, tol, min_frac);
    mesh_free(m);
    mesh_free(want);
    free(src);
}

/* Fills every side (x, then y, then z) of a mesh of 3 fields: periodic, mirror, linear. */
static void run_fill_case(runner *rn, int dim, int single, int exact, double tol)
{
    int64_t n[3] = {9, 7, 5}, g[3] = {2, 3, 1};
    rng r = {1234 + (uint64_t)dim};
    mesh *m = mesh_new(dim, n, g, 3, single, &r, -1, 1);
    mesh *want = mesh_copy(m);
    dev_mesh dm;
    dev_mesh_up(rn, m, &dm);
    char err[512];
    cuda_options opt = {single, 0, NULL};
    for (int side = 0; side < 2 * dim; side++) {
        cuda_bc_kind kinds[3] = {side / 2 == 0 ? CUDA_BC_PERIODIC : CUDA_BC_MIRROR,
                                 side % 2 ? CUDA_BC_LINEAR : CUDA_BC_MIRROR, CUDA_BC_LINEAR};
        if (side == 3) kinds[0] = CUDA_BC_NONE;
        kir_kernel *bc = k_bc(dim, side);
        char *src = cuda_codegen_bc_fill(bc, dim, 3, side, kinds, &opt, "pj_test_fill", err, sizeof err);
        if (!src) print_error("%s\n", err);
        assert_non_null(src);
        ref_fill(bc, want, 3, side, kinds);
        unsigned grid[3], block[3];
        assert_int_equal(cuda_bc_fill_dims(&dm.args, side, grid, block), 0);
        rn_launch(rn, src, "pj_test_fill", &dm.args, sizeof dm.args, grid, block);
        free(src);
        kir_free(bc);
    }
    dev_mesh_down(rn, m, &dm);
    dev_mesh_free(rn, m, &dm);
    char what[96];
    snprintf(what, sizeof what, "fill %dD %s on the %s", dim, single ? "single" : "double",
             rn->dev ? "GPU" : "emulation");
    compare_meshes(m, want, what, exact, tol, 1.0);
    mesh_free(m);
    mesh_free(want);
}

/* NaN and Inf among finite values, one NaN in a ghost cell (ignored). */
static void run_check_case(runner *rn, int dim, int single)
{
    int64_t n[3], g[3] = {1, 2, 1};
    sizes_for(dim, n);
    rng r = {99};
    mesh *m = mesh_new(dim, n, g, 1, single, &r, -1, 1);
    char err[256];
    char *src = cuda_codegen_nan_check(dim, single, "pj_test_check", err, sizeof err);
    assert_non_null(src);
    uint64_t res = rn_alloc(rn, sizeof(int64_t));
    for (int round = 0; round < 2; round++) {
        int64_t idx[3] = {-1, 0, 0}, expect = INT64_MAX;
        mset(m, 0, at(&m->L, idx), NAN); /* a ghost */
        if (round == 1) {
            int64_t i1[3] = {m->L.n[0] - 2, m->L.n[1] - 1, m->L.n[2] - 1};
            int64_t i2[3] = {3, m->L.n[1] / 2, m->L.n[2] / 2};
            int64_t i3[3] = {m->L.n[0] - 1, m->L.n[1] / 2, m->L.n[2] / 2};
            mset(m, 0, at(&m->L, i1), NAN);
            mset(m, 0, at(&m->L, i2), -INFINITY);
            mset(m, 0, at(&m->L, i3), NAN);
            expect = i2[0] + m->L.n[0] * (i2[1] + m->L.n[1] * i2[2]);
        }
        dev_mesh dm;
        dev_mesh_up(rn, m, &dm);
        int64_t init = INT64_MAX, got = 0;
        rn_put(rn, res, &init, sizeof init);
        cuda_check_args ca = {.buf = dm.args.buf[0], .result = res};
        for (int a = 0; a < 3; a++) {
            ca.n[a] = dm.args.n[a];
            ca.stride[a] = dm.args.stride[a];
        }
        unsigned grid[3], block[3];
        assert_int_equal(cuda_stage_dims(dim, ca.n, grid, block), 0);
        rn_launch(rn, src, "pj_test_check", &ca, sizeof ca, grid, block);
        rn_get(rn, &got, res, sizeof got);
        dev_mesh_free(rn, m, &dm);
        assert_int_equal(got, expect);
    }
    rn_free(rn, res);
    free(src);
    mesh_free(m);
}

/* ---- the cases ---------------------------------------------------------------------------- */

typedef kir_kernel *(*maker)(int dim);
static const struct { const char *name; maker make; double lo, hi; int exact_on_gpu; } hand[] = {
    {"gray_scott", k_gray_scott, 0, 1, 1},
    {"rd", k_reaction_diffusion, 0, 1, 0},
    {"every_op", k_every_op, 0.1, 0.9, 0},
    {"conditionals", k_conditionals, 0, 1.5, 1},
    {"offsets", k_offsets, -1, 1, 1},
    {"in_place", k_in_place, -1, 1, 1},
    {"leaves", k_leaves, 0, 1, 1},
    {"init", k_init, 0, 1, 0},
};
#define N_HAND (int)(sizeof hand / sizeof *hand)

static double g_cold_s = -1;

/* Compiles src for sm_80 and sm_90; returns the seconds spent. */
static double compile_both(const char *src, const char *what, int fast_math)
{
    double total = 0;
    static const int sms[2] = {80, 90};
    for (int i = 0; i < 2; i++) {
        void *image = NULL;
        size_t len = 0;
        int is_cubin = -1;
        char *log = NULL, err[4096];
        double t0 = now_s();
        int rc = cuda_nvrtc_compile(g_nv, src, "pj_kernel", sms[i], fast_math, &image, &len, &is_cubin, &log, err,
                                    sizeof err);
        double dt = now_s() - t0;
        if (g_cold_s < 0) g_cold_s = dt;
        total += dt;
        if (rc) print_error("%s for sm_%d: %s\n", what, sms[i], err);
        assert_int_equal(rc, 0);
        assert_true(len > 0);
        assert_int_equal(is_cubin, 1);
        if (log && strstr(log, "warning")) print_message("%s: %s\n", what, log);
        free(image);
        free(log);
    }
    return total;
}

static void compile_hand_built(void **state)
{
    (void)state;
    NEED_NVRTC();
    double total = 0;
    int count = 0;
    for (int h = 0; h < N_HAND; h++)
        for (int dim = 1; dim <= 3; dim++) {
            if (h >= 2 && dim == 1 && strcmp(hand[h].name, "offsets")) continue; /* keep it short */
            kir_kernel *k = hand[h].make(dim);
            char err[512];
            assert_int_equal(kir_verify(k, err, sizeof err), 0);
            for (int single = 0; single <= 1; single++) {
                cuda_options opt = {single, h == 1, NULL};
                char *src = cuda_codegen(k, &opt, "pj_kernel", err, sizeof err);
                if (!src) print_error("%s: %s\n", hand[h].name, err);
                assert_non_null(src);
                /* the source says what it is, and uses the precision's names */
                assert_non_null(strstr(src, "extern \"C\" __global__ void pj_kernel(const pj_args a)"));
                char hex[33];
                kir_hash_hex(k, hex);
                assert_non_null(strstr(src, hex));
                if (!strcmp(hand[h].name, "every_op")) {
                    assert_non_null(strstr(src, single ? "expf(" : "exp("));
                    assert_non_null(strstr(src, single ? "atan2f(" : "atan2("));
                    assert_null(strstr(src, "if (v")); /* selects, no branches on data */
                    if (!single) assert_null(strstr(src, "expf("));
                }
                char what[64];
                snprintf(what, sizeof what, "%s %dD %s", hand[h].name, dim, single ? "single" : "double");
                total += compile_both(src, what, opt.fast_math);
                count += 2;
                free(src);
            }
            kir_free(k);
        }
    print_message("NVRTC %s: cold first compile %.0f ms; hand-built kernels: %d compiles, %.0f ms each\n",
                  cuda_nvrtc_version(g_nv), g_cold_s * 1e3, count, total / count * 1e3);
}

static void compile_random(void **state)
{
    (void)state;
    NEED_NVRTC();
    double total = 0;
    int kernels = 0, exprs = 0, nodes = 0;
    for (uint64_t seed = 1; seed <= 8; seed++) {
        kir_kernel *k = k_random(seed, 1 + (int)(seed % 3), 0);
        char err[512];
        assert_int_equal(kir_verify(k, err, sizeof err), 0);
        cuda_options opt = {(int)(seed % 2), seed == 8, NULL};
        char *src = cuda_codegen(k, &opt, "pj_kernel", err, sizeof err);
        if (!src) print_error("%s\n", err);
        assert_non_null(src);
        char what[64];
        snprintf(what, sizeof what, "random kernel %llu", (unsigned long long)seed);
        total += compile_both(src, what, opt.fast_math);
        kernels += 2;
        exprs += k->n_outputs;
        nodes += k->n_nodes;
        free(src);
        kir_free(k);
    }
    assert_true(exprs >= 500);
    print_message("random: %d expressions (%d nodes) in %d kernels: %.0f ms per compile (sm_80 + sm_90)\n", exprs,
                  nodes, kernels / 2, total / kernels * 1e3);
}

static void compile_fill_and_check(void **state)
{
    (void)state;
    NEED_NVRTC();
    char err[512];
    double total = 0;
    int count = 0;
    for (int dim = 1; dim <= 3; dim++)
        for (int single = 0; single <= 1; single++) {
            cuda_options opt = {single, 0, NULL};
            for (int side = 0; side < 2 * dim; side++) {
                cuda_bc_kind kinds[3] = {CUDA_BC_PERIODIC, CUDA_BC_MIRROR, CUDA_BC_LINEAR};
                kir_kernel *bc = k_bc(dim, side);
                char *src = cuda_codegen_bc_fill(bc, dim, 3, side, kinds, &opt, "pj_fill", err, sizeof err);
                if (!src) print_error("%s\n", err);
                assert_non_null(src);
                if (side == 0 && dim == 2) assert_non_null(strstr(src, "left (x low)"));
                total += compile_both(src, "fill", 0);
                count += 2;
                free(src);
                kir_free(bc);
            }
            /* no linear field: no bc kernel needed */
            cuda_bc_kind kinds2[2] = {CUDA_BC_PERIODIC, CUDA_BC_NONE};
            char *src = cuda_codegen_bc_fill(NULL, dim, 2, 2 * dim - 1, kinds2, &opt, "pj_fill", err, sizeof err);
            assert_non_null(src);
            total += compile_both(src, "fill periodic", 0);
            count += 2;
            free(src);
            src = cuda_codegen_nan_check(dim, single, "pj_check", err, sizeof err);
            assert_non_null(src);
            assert_non_null(strstr(src, "atomicMin"));
            total += compile_both(src, "nan check", 0);
            count += 2;
            free(src);
        }
    print_message("fill and check kernels: %d compiles, %.0f ms each\n", count, total / count * 1e3);
}

static void codegen_refuses(void **state)
{
    (void)state;
    char err[512];
    cuda_options opt = {0, 0, NULL};
    /* too many buffers */
    kir_kernel *k = kir_new(KIR_STAGE, 2, 65, 1, 2, "big");
    kir_add_output(k, 1, 64, kir_load(k, 0, 64, O0));
    kir_finish(k);
    err[0] = 0;
    assert_null(cuda_codegen(k, &opt, "big", err, sizeof err));
    assert_non_null(strstr(err, "130 buffers"));
    kir_free(k);
    /* too many params */
    k = kir_new(KIR_STAGE, 1, 1, CUDA_MAX_PARAMS + 1, 1, "params");
    kir_add_output(k, 0, 0, kir_param(k, CUDA_MAX_PARAMS));
    kir_finish(k);
    assert_null(cuda_codegen(k, &opt, "params", err, sizeof err));
    assert_non_null(strstr(err, "129 params"));
    kir_free(k);
    /* a bc kernel is not a per-cell kernel; a bad name; a broken kernel */
    k = k_bc(2, 0);
    assert_null(cuda_codegen(k, &opt, "bc", err, sizeof err));
    assert_non_null(strstr(err, "cuda_codegen_bc_fill"));
    cuda_bc_kind kinds[3] = {CUDA_BC_MIRROR, CUDA_BC_LINEAR, CUDA_BC_LINEAR};
    assert_null(cuda_codegen_bc_fill(k, 2, 3, 1, kinds, &opt, "f", err, sizeof err)); /* wrong side */
    assert_non_null(strstr(err, "side"));
    assert_null(cuda_codegen_bc_fill(NULL, 2, 3, 0, kinds, &opt, "f", err, sizeof err));
    assert_null(cuda_codegen_bc_fill(k, 2, 3, 4, kinds, &opt, "f", err, sizeof err)); /* no z in 2D */
    kir_free(k);
    k = kir_new(KIR_BC, 1, 1, 0, 1, "bc");
    kir_add_output(k, 2, 0, kir_const(k, 1)); /* c only */
    kir_finish(k);
    cuda_bc_kind one = CUDA_BC_LINEAR;
    assert_null(cuda_codegen_bc_fill(k, 1, 1, 0, &one, &opt, "f", err, sizeof err));
    assert_non_null(strstr(err, "neither a nor b"));
    kir_free(k);
    k = k_gray_scott(2);
    assert_null(cuda_codegen(k, &opt, "2bad", err, sizeof err));
    assert_null(cuda_codegen(k, &opt, "a-b", err, sizeof err));
    k->nodes[k->n_nodes - 1].arg[0] = k->n_nodes; /* operand after its user */
    assert_null(cuda_codegen(k, &opt, "ok", err, sizeof err));
    assert_non_null(strstr(err, "operand"));
    kir_free(k);
    assert_null(cuda_codegen_nan_check(4, 0, "c", err, sizeof err));
    /* the limits of a launch description */
    cuda_args a;
    kir_launch l = {0};
    assert_int_equal(cuda_args_from_launch(&a, &l, CUDA_MAX_BUFS + 1, 0, NULL, err, sizeof err), -1);
}

static void literals_are_exact(void **state)
{
    (void)state;
    char err[256];
    kir_kernel *k = kir_new(KIR_INIT, 1, 8, 0, 1, "lit");
    double vals[8] = {0.1, 1e300, -0.0, 3, INFINITY, -INFINITY, NAN, 1e-310};
    for (int i = 0; i < 8; i++) kir_add_output(k, 0, i, kir_const(k, vals[i]));
    kir_finish(k);
    cuda_options opt = {0, 0, NULL};
    char *src = cuda_codegen(k, &opt, "lit", err, sizeof err);
    assert_non_null(src);
    assert_non_null(strstr(src, "= 0.10000000000000001;"));
    assert_non_null(strstr(src, "= -0.0;"));
    assert_non_null(strstr(src, "= 3.0;"));
    assert_non_null(strstr(src, "__longlong_as_double(0x7ff0000000000000LL)"));
    free(src);
    opt.single = 1;
    src = cuda_codegen(k, &opt, "lit", err, sizeof err);
    assert_non_null(strstr(src, "= 0.100000001f;"));
    assert_non_null(strstr(src, "__int_as_float(0x7f800000)")); /* 1e300 rounds to inf */
    assert_null(strstr(src, "const double v"));
    if (g_nv) compile_both(src, "literals", 0);
    free(src);
    kir_free(k);
}

static void nvrtc_errors_and_ptx(void **state)
{
    (void)state;
    NEED_NVRTC();
    void *image = NULL;
    size_t len = 0;
    int is_cubin = -1;
    char *log = NULL, err[2048];
    assert_true(cuda_nvrtc_has_cubin(g_nv, 80));
    assert_true(cuda_nvrtc_has_cubin(g_nv, 90));
    int rc = cuda_nvrtc_compile(g_nv, "extern \"C\" __global__ void f() { undeclared_thing(); }", "f", 90, 0, &image,
                                &len, &is_cubin, &log, err, sizeof err);
    assert_int_equal(rc, -1);
    assert_null(image);
    assert_non_null(log);
    assert_non_null(strstr(err, "NVRTC_ERROR_COMPILATION"));
    assert_non_null(strstr(err, "(f.cu, sm_90)"));
    assert_non_null(strstr(err, "undeclared_thing"));
    free(log);
    /* an architecture newer than this NVRTC knows: PTX for the newest it knows */
    rc = cuda_nvrtc_compile(g_nv, "extern \"C\" __global__ void f(float *p) { p[0] = 1; }", "f", 999, 1, &image, &len,
                            &is_cubin, NULL, err, sizeof err);
    if (rc) print_error("%s\n", err);
    assert_int_equal(rc, 0);
    assert_int_equal(is_cubin, 0);
    assert_non_null(strstr((char *)image, ".entry f"));
    assert_int_equal(strlen((char *)image) + 1, len); /* PTX: len counts the NUL */
    free(image);
    /* older than it knows: an error, not a crash */
    rc = cuda_nvrtc_compile(g_nv, "extern \"C\" __global__ void f() {}", "f", 20, 0, &image, &len, &is_cubin, NULL, err,
                            sizeof err);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err, "cannot compile for compute capability 2.0"));
}

/* The semantics without a GPU: the generated source run on the host. */
static void emulated_runs(void **state)
{
    (void)state;
    if (!have_cxx()) {
        print_message("skipped: no C++ compiler for the emulated runs\n");
        skip();
    }
    runner rn;
    rn_init_emu(&rn);
    int cases = 0;
    for (int h = 0; h < N_HAND; h++)
        for (int dim = 1; dim <= 3; dim++)
            for (int single = 0; single <= 1; single++) {
                if ((h + dim + single) % 2 && strcmp(hand[h].name, "gray_scott")) continue; /* half of them */
                kir_kernel *k = hand[h].make(dim);
                run_stage_case(&rn, k, single, hand[h].lo, hand[h].hi, 1, 0, 1, 77 + (uint64_t)h);
                kir_free(k);
                cases++;
            }
    for (uint64_t seed = 1; seed <= 4; seed++) {
        kir_kernel *k = k_random(seed, 1 + (int)(seed % 3), 0);
        run_stage_case(&rn, k, (int)(seed % 2), -2, 2, 1, 0, 1, seed);
        kir_free(k);
        cases++;
    }
    for (int dim = 1; dim <= 3; dim++)
        for (int single = 0; single <= 1; single++) {
            run_fill_case(&rn, dim, single, 1, 0);
            run_check_case(&rn, dim, single);
            cases += 2;
        }
    print_message("emulated: %d cases agree with the reference bit for bit (%d host builds, %.1f s)\n", cases,
                  rn.n_built, rn.build_s);
    rn_done(&rn);
}

static void gpu_runs(void **state)
{
    (void)state;
    char reason[512] = "";
    cuda_device *d = cuda_device_open(0, reason, sizeof reason);
    if (!d) {
        print_message("skipped: no GPU: %s\n", reason);
        skip();
    }
    if (!g_nv) {
        cuda_device_close(d);
        print_message("skipped: NVRTC not found (%s)\n", g_nv_reason);
        skip();
    }
    char err[512];
    size_t free0 = 0, total0 = 0;
    assert_int_equal(cuda_mem_info(d, &free0, &total0, err, sizeof err), 0);
    print_message("GPU: %s, compute capability %d.%d, %d SMs, driver %d, %zu MiB free\n", cuda_device_name(d),
                  cuda_device_cc(d) / 10, cuda_device_cc(d) % 10, cuda_device_sm_count(d),
                  cuda_device_driver_version(d), free0 >> 20);
    runner rn = {.dev = d};
    for (int h = 0; h < N_HAND; h++)
        for (int dim = 1; dim <= 3; dim++)
            for (int single = 0; single <= 1; single++) {
                kir_kernel *k = hand[h].make(dim);
                int exact = hand[h].exact_on_gpu;
                run_stage_case(&rn, k, single, hand[h].lo, hand[h].hi, exact, single ? 1e-5 : 1e-13, 1.0,
                               77 + (uint64_t)h);
                kir_free(k);
            }
    /* random: correctly rounded ops bit for bit; all ops within a tolerance for most values
     * (libm and CUDA's math library differ by a few ulp, which chaotic expressions amplify) */
    for (uint64_t seed = 1; seed <= 4; seed++) {
        kir_kernel *k = k_random(100 + seed, 1 + (int)(seed % 3), 1);
        run_stage_case(&rn, k, (int)(seed % 2), -2, 2, 1, 0, 1, seed);
        kir_free(k);
        k = k_random(seed, 1 + (int)(seed % 3), 0);
        run_stage_case(&rn, k, (int)(seed % 2), -2, 2, 0, seed % 2 ? 1e-3 : 1e-9, 0.9, seed);
        kir_free(k);
    }
    for (int dim = 1; dim <= 3; dim++)
        for (int single = 0; single <= 1; single++) {
            run_fill_case(&rn, dim, single, 0, single ? 1e-5 : 1e-13);
            run_check_case(&rn, dim, single);
        }
    /* timing with events: a 3D stage over 128^3 cells */
    {
        kir_kernel *k = k_gray_scott(3);
        cuda_options opt = {0, 0, NULL};
        char *src = cuda_codegen(k, &opt, "pj_gs", err, sizeof err);
        void *image = NULL;
        size_t len = 0;
        int is_cubin = 0;
        assert_int_equal(cuda_nvrtc_compile(g_nv, src, "pj_gs", cuda_device_cc(d), 0, &image, &len, &is_cubin, NULL,
                                            err, sizeof err), 0);
        cuda_module *mod = cuda_module_load(d, image, err, sizeof err);
        assert_non_null(mod);
        cuda_function fn;
        assert_int_equal(cuda_module_function(mod, "pj_gs", &fn, err, sizeof err), 0);
        int64_t n[3] = {128, 128, 128}, g[3] = {1, 1, 1};
        layout L = make_layout(3, n, g);
        size_t bytes = (size_t)L.total * sizeof(double);
        cuda_ptr p[4];
        cuda_args a;
        memset(&a, 0, sizeof a);
        for (int b = 0; b < 4; b++) {
            assert_int_equal(cuda_mem_alloc(d, bytes, &p[b], err, sizeof err), 0);
            assert_int_equal(cuda_memset8(d, p[b], 0, bytes, err, sizeof err), 0);
            a.buf[b] = p[b] + (uint64_t)L.base * sizeof(double);
        }
        for (int i = 0; i < 3; i++) {
            a.n[i] = L.n[i];
            a.stride[i] = L.stride[i];
            a.h[i] = 0.01;
        }
        a.dt = 1e-3;
        unsigned grid[3], block[3];
        assert_int_equal(cuda_stage_dims(3, L.n, grid, block), 0);
        cuda_event *e0 = cuda_event_create(d, err, sizeof err), *e1 = cuda_event_create(d, err, sizeof err);
        assert_non_null(e0);
        assert_non_null(e1);
        assert_int_equal(cuda_launch_struct(d, fn, grid, block, &a, sizeof a, err, sizeof err), 0); /* warm */
        assert_int_equal(cuda_event_record(e0, err, sizeof err), 0);
        for (int rep = 0; rep < 20; rep++)
            assert_int_equal(cuda_launch_struct(d, fn, grid, block, &a, sizeof a, err, sizeof err), 0);
        assert_int_equal(cuda_event_record(e1, err, sizeof err), 0);
        float ms = 0;
        assert_int_equal(cuda_event_elapsed(e0, e1, &ms, err, sizeof err), 0);
        print_message("gray-scott 3D 128^3 double: %.3f ms per step, %.2f G cell updates/s\n", ms / 20,
                      128.0 * 128 * 128 * 20 / (ms * 1e-3) / 1e9);
        cuda_event_destroy(e0);
        cuda_event_destroy(e1);
        for (int b = 0; b < 4; b++) assert_int_equal(cuda_mem_free(d, p[b], err, sizeof err), 0);
        cuda_module_unload(mod);
        free(image);
        free(src);
        kir_free(k);
    }
    /* a bad launch is an error with the call's name, not a crash */
    {
        cuda_ptr p = 0;
        assert_int_equal(cuda_mem_alloc(d, 64, &p, err, sizeof err), 0);
        char dst[8];
        assert_int_equal(cuda_memcpy_dtoh(d, dst, p + (1ull << 40), 8, err, sizeof err), -1);
        assert_non_null(strstr(err, "cuMemcpyDtoH"));
        assert_int_equal(cuda_mem_free(d, p, err, sizeof err), 0);
    }
    int n_allocs = -1;
    assert_int_equal(cuda_device_live_bytes(d, &n_allocs), 0);
    assert_int_equal(n_allocs, 0);
    size_t free1 = 0, total1 = 0;
    assert_int_equal(cuda_mem_info(d, &free1, &total1, err, sizeof err), 0);
    print_message("GPU memory free before %zu MiB, after %zu MiB\n", free0 >> 20, free1 >> 20);
    assert_true(free1 + (64u << 20) >= free0);
    cuda_device_close(d);
}

/* Without a usable driver, opening a device says why. */
static void device_reason(void **state)
{
    (void)state;
    char reason[512] = "";
    cuda_device *d = cuda_device_open(0, reason, sizeof reason);
    if (d) {
        print_message("a device is present: %s\n", cuda_device_name(d));
        cuda_device_close(d);
    } else {
        print_message("cuda_device_open: %s\n", reason);
        assert_true(strstr(reason, "not found") || strstr(reason, "stub") || strstr(reason, "no CUDA device") ||
                    strstr(reason, "cu"));
    }
    /* the toolkit's stub driver, where the toolkit has one */
    static const char stub[] = "/usr/local/cuda/lib64/stubs/libcuda.so";
    if (access(stub, R_OK) == 0) {
        setenv("PDEJIT_LIBCUDA", stub, 1);
        reason[0] = 0;
        d = cuda_device_open(0, reason, sizeof reason);
        unsetenv("PDEJIT_LIBCUDA");
        assert_null(d);
        assert_string_equal(reason, "the CUDA driver is a stub (cuInit returned 34)");
    }
    setenv("PDEJIT_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
    d = cuda_device_open(0, reason, sizeof reason);
    unsetenv("PDEJIT_LIBCUDA");
    assert_null(d);
    assert_non_null(strstr(reason, "not found (no NVIDIA driver)"));
    /* NVRTC under a name that does not exist */
    setenv("PDEJIT_NVRTC", "/nonexistent/libnvrtc.so", 1);
    cuda_nvrtc *nv = cuda_nvrtc_open(reason, sizeof reason);
    unsetenv("PDEJIT_NVRTC");
    if (nv) cuda_nvrtc_close(nv); /* found under another name */
}

static void launch_dims(void **state)
{
    (void)state;
    unsigned grid[3], block[3];
    int64_t n1[3] = {1000, 1, 1}, n2[3] = {100, 30, 1}, n3[3] = {33, 9, 9};
    assert_int_equal(cuda_stage_dims(1, n1, grid, block), 0);
    assert_int_equal(grid[0] * block[0] >= 1000 && grid[1] == 1 && grid[2] == 1, 1);
    assert_int_equal(cuda_stage_dims(2, n2, grid, block), 0);
    assert_true(grid[0] * block[0] >= 100 && grid[1] * block[1] >= 30 && grid[2] == 1);
    assert_int_equal(cuda_stage_dims(3, n3, grid, block), 0);
    assert_true(grid[0] * block[0] >= 33 && grid[1] * block[1] >= 9 && grid[2] * block[2] >= 9);
    int64_t huge[3] = {10, 1ll << 30, 1};
    assert_int_equal(cuda_stage_dims(2, huge, grid, block), -1);
    cuda_args a;
    memset(&a, 0, sizeof a);
    a.n[0] = 10; a.n[1] = 20; a.n[2] = 1;
    a.ghost[0] = 2; a.ghost[1] = 3;
    assert_int_equal(cuda_bc_fill_dims(&a, 0, grid, block), 0);
    assert_true(grid[0] * block[0] >= 2 * 26);
    assert_int_equal(cuda_bc_fill_dims(&a, 3, grid, block), 0);
    assert_true(grid[0] * block[0] >= 3 * 14);
}

static int group_setup(void **state)
{
    (void)state;
    double t0 = now_s();
    g_nv = cuda_nvrtc_open(g_nv_reason, sizeof g_nv_reason);
    if (g_nv) print_message("NVRTC %s loaded in %.0f ms\n", cuda_nvrtc_version(g_nv), (now_s() - t0) * 1e3);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    cuda_nvrtc_close(g_nv);
    g_nv = NULL;
    return 0;
}

/* test_cuda --here (ctest: test_cuda): codegen, its refusals and the emulated runs. test_cuda
 * --device (ctest: test_cuda_device): what needs NVRTC, or exit 77 (ctest: SKIPPED) without it.
 * test_cuda --gpu (ctest: test_cuda_gpu): what needs device 0, or exit 77 without one, so that a
 * machine with NVRTC and no GPU reports the GPU runs SKIPPED rather than Passed. Without an
 * argument (bench/gpu-check.sh): all. */
int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    int run_here = !*mode || !strcmp(mode, "--here"), run_nvrtc = !*mode || !strcmp(mode, "--device"),
        run_gpu = !*mode || !strcmp(mode, "--gpu");
    const struct CMUnitTest here[] = {
        cmocka_unit_test(codegen_refuses),
        cmocka_unit_test(literals_are_exact),
        cmocka_unit_test(launch_dims),
        cmocka_unit_test(emulated_runs),
        cmocka_unit_test(device_reason),
    };
    const struct CMUnitTest nvrtc[] = {
        cmocka_unit_test(compile_hand_built),
        cmocka_unit_test(compile_random),
        cmocka_unit_test(compile_fill_and_check),
        cmocka_unit_test(nvrtc_errors_and_ptx),
    };
    const struct CMUnitTest gpu[] = {
        cmocka_unit_test(gpu_runs),
    };
    int failed = 0, ran = 0;
    if (run_here) failed += cmocka_run_group_tests_name("test_cuda", here, group_setup, group_teardown), ran++;
    char nv_reason[512], dev_reason[512];
    cuda_nvrtc *nv = run_nvrtc ? cuda_nvrtc_open(nv_reason, sizeof nv_reason) : NULL;
    cuda_device *d = run_gpu ? cuda_device_open(0, dev_reason, sizeof dev_reason) : NULL;
    cuda_nvrtc_close(nv);
    cuda_device_close(d);
    if (run_nvrtc && !nv) printf("SKIPPED: the NVRTC cases: NVRTC not found (%s)\n", nv_reason);
    else if (run_nvrtc) failed += cmocka_run_group_tests_name("test_cuda --device", nvrtc, group_setup, group_teardown), ran++;
    if (run_gpu && !d) printf("SKIPPED: the cases on a GPU: no GPU: %s\n", dev_reason);
    else if (run_gpu) failed += cmocka_run_group_tests_name("test_cuda --gpu", gpu, group_setup, group_teardown), ran++;
    return failed ? failed : ran ? 0 : 77;
}
