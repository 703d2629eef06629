/* interp.c — the reference interpreter (see interp.h).
 *
 * One evaluator, three shapes of region: interior rows (stage and init kernels), boundary
 * faces (bc kernels) and a single scalar pass (params kernels). A block is up to INTERP_BLOCK
 * consecutive cells along one axis `va` starting at cell (i, j, k); every node gets a row of
 * values: uniform leaves (CONST, PARAM, TIME, DT, SPACING) are filled once per call, COORD and
 * LOAD per block, operations are one tight loop per node. In double precision a LOAD along x
 * reads the buffer in place (no copy) unless the node is stored directly by an output. */
#include "interp.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "noise.h"
#include "program.h"

typedef struct ev {
    const kir_kernel *k;
    const kir_launch *L;
    int single;
    int block;           /* the longest block a call evaluates: at most INTERP_BLOCK */
    double *vals;        /* [n_nodes][block] */
    const double **src;  /* per node: its row of values (into vals, or into a double buffer) */
    unsigned char *copy; /* per node: a LOAD that must be copied (stored by an output) */
} ev;


static int is_uniform(int op)
{
    return op == KIR_CONST || op == KIR_PARAM || op == KIR_TIME || op == KIR_DT || op == KIR_SPACING;
}

static double rnd(const ev *e, double v) { return e->single ? (double)(float)v : v; }

/* The scratch rows of one call, in one allocation, for blocks of up to `cells` cells (a call
   over a few cells of a large kernel, the stability check's, takes rows of that length, not
   INTERP_BLOCK's). Returns -1 when it cannot be had. */
static int ev_open(ev *e, const kir_kernel *k, const kir_launch *L, int single, int64_t cells)
{
    size_t nn = (size_t)(k->n_nodes ? k->n_nodes : 1);
    e->k = k;
    e->L = L;
    e->single = single;
    e->block = cells < 1 ? 1 : cells < INTERP_BLOCK ? (int)cells : INTERP_BLOCK;
    e->vals = malloc((sizeof *e->vals * (size_t)e->block + sizeof *e->src + 1) * nn);
    if (!e->vals) return -1;
    e->src = (const double **)(e->vals + nn * (size_t)e->block);
    e->copy = (unsigned char *)(e->src + nn);
    memset(e->copy, 0, nn);
    for (int o = 0; o < k->n_outputs; o++) e->copy[k->outputs[o].node] = 1;
    for (int id = 0; id < k->n_nodes; id++) {
        const kir_node *n = &k->nodes[id];
        double *row = e->vals + (size_t)id * (size_t)e->block;
        e->src[id] = row;
        if (!is_uniform(n->op)) continue;
        double v = 0;
        switch (n->op) {
        case KIR_CONST: v = n->value; break;
        case KIR_PARAM: v = L->param ? L->param[n->index] : NAN; break;
        case KIR_TIME: v = L->t; break;
        case KIR_DT: v = L->dt; break;
        case KIR_SPACING: v = L->h[n->axis]; break;
        default: break;
        }
        v = rnd(e, v);
        for (int c = 0; c < e->block; c++) row[c] = v;
    }
    return 0;
}

static void ev_close(ev *e) { free(e->vals); }

/* Loops of one operation over a block: A, B, C are the operands' rows, R the result's. In
 * single precision the operands (already floats) are converted and the operation is done in
 * float, exactly as kir_eval_scalar(..., 1) does. */
#define LOOP1(DEXPR, FEXPR)                                                                  \
    do {                                                                                     \
        if (!single)                                                                         \
            for (int c = 0; c < len; c++) { double a = A[c]; R[c] = (DEXPR); }              \
        else                                                                                 \
            for (int c = 0; c < len; c++) { float x = (float)A[c]; R[c] = (FEXPR); }        \
    } while (0)
#define LOOP2(DEXPR, FEXPR)                                                                  \
    do {                                                                                     \
        if (!single)                                                                         \
            for (int c = 0; c < len; c++) { double a = A[c], b = B[c]; R[c] = (DEXPR); }    \
        else                                                                                 \
            for (int c = 0; c < len; c++) {                                                  \
                float x = (float)A[c], y = (float)B[c];                                      \
                R[c] = (FEXPR);                                                              \
            }                                                                                \
    } while (0)
#define LOOP3(DEXPR, FEXPR)                                                                  \
    do {                                                                                     \
        if (!single)                                                                         \
            for (int c = 0; c < len; c++) {                                                  \
                double a = A[c], b = B[c], c3 = C[c];                                        \
                R[c] = (DEXPR);                                                              \
            }                                                                                \
        else                                                                                 \
            for (int c = 0; c < len; c++) {                                                  \
                float x = (float)A[c], y = (float)B[c], z = (float)C[c];                     \
                R[c] = (FEXPR);                                                              \
            }                                                                                \
    } while (0)
/* operations whose result is the same in both precisions (booleans, select) */
#define LOOPB1(EXPR) do { for (int c = 0; c < len; c++) { double a = A[c]; R[c] = (EXPR); } } while (0)
#define LOOPB2(EXPR)                                                                         \
    do { for (int c = 0; c < len; c++) { double a = A[c], b = B[c]; R[c] = (EXPR); } } while (0)

/* A libm function of the table (kir_ops.h) over a block: 1, or 0 when op is none. */
static int libm_block(kir_op op, int single, int len, const double *A, const double *B, const double *C,
                      double *R)
{
    switch (op) {
#define L0 return 0
#define L1(d, f, how) LOOP1(d(a), f(x)); return 1
#define L2(d, f, how) LOOP2(d(a, b), f(x, y)); return 1
#define L3(d, f, how) LOOP3(d(a, b, c3), f(x, y, z)); return 1
#define X(name, text, arity, type, libm, user, deriv) \
    case KIR_##name:                                  \
        libm;
        KIR_OPS(X)
#undef X
#undef L0
#undef L1
#undef L2
#undef L3
    case KIR_N_OPS: break;
    }
    return 0;
}

static void op_block(kir_op op, int single, int len, const double *A, const double *B,
                     const double *C, double *R)
{
    if (libm_block(op, single, len, A, B, C, R)) return;
    switch (op) {
    case KIR_NEG: LOOP1(-a, -x); break;
    case KIR_ADD: LOOP2(a + b, x + y); break;
    case KIR_SUB: LOOP2(a - b, x - y); break;
    case KIR_MUL: LOOP2(a * b, x * y); break;
    case KIR_DIV: LOOP2(a / b, x / y); break;
    case KIR_LT: LOOPB2(a < b); break;
    case KIR_LE: LOOPB2(a <= b); break;
    case KIR_GT: LOOPB2(a > b); break;
    case KIR_GE: LOOPB2(a >= b); break;
    case KIR_EQ: LOOPB2(a == b); break;
    case KIR_NE: LOOPB2(a != b); break;
    case KIR_AND: LOOPB2((a != 0) & (b != 0)); break;
    case KIR_OR: LOOPB2((a != 0) | (b != 0)); break;
    case KIR_NOT: LOOPB1(a == 0); break;
    case KIR_SELECT:
        for (int c = 0; c < len; c++) R[c] = A[c] != 0 ? B[c] : C[c];
        break;
    case KIR_B2F: LOOPB1(a != 0 ? 1.0 : 0.0); break;
    case KIR_F2B: LOOPB1(a != 0); break;
    default: /* leaves are handled by the caller */
        for (int c = 0; c < len; c++) R[c] = NAN;
        break;
    }
}

/* Evaluates every node over `len` cells starting at cell idx[], consecutive along axis va. */
static void ev_block(ev *e, const int64_t idx[3], int va, int len)
{
    const kir_kernel *k = e->k;
    const kir_launch *L = e->L;
    int single = e->single;
    int64_t e0 = idx[0] + idx[1] * L->stride[1] + idx[2] * L->stride[2];
    int64_t step = va == 0 ? 1 : L->stride[va];
    for (int id = 0; id < k->n_nodes; id++) {
        const kir_node *n = &k->nodes[id];
        double *R = e->vals + (size_t)id * (size_t)e->block;
        switch (n->op) {
        case KIR_CONST: case KIR_PARAM: case KIR_TIME: case KIR_DT: case KIR_SPACING:
            break;
        case KIR_COORD: {
            int a = n->axis;
            double o = L->origin[a], h = L->h[a], q = 0.5 * (1 + n->half);
            int64_t i0 = idx[a] + L->first[a]; /* the mesh index */
            if (a == va) {
                for (int c = 0; c < len; c++) R[c] = rnd(e, o + ((double)(i0 + c) + q) * h);
            } else {
                double v = rnd(e, o + ((double)i0 + q) * h);
                for (int c = 0; c < len; c++) R[c] = v;
            }
            break;
        }
        case KIR_RAND: {
            /* the global cell index of the cell at the node's offset, x fastest (noise.h) */
            int64_t cell[3], mesh_n[3];
            for (int a = 0; a < 3; a++) {
                cell[a] = idx[a] + n->off[a] + L->first[a];
                mesh_n[a] = L->first[a] + L->n[a] + L->beyond[a];
            }
            for (int c = 0; c < len; c++) {
                int64_t g = cell[0] + (va == 0 ? c : 0) +
                            mesh_n[0] * (cell[1] + (va == 1 ? c : 0) + mesh_n[1] * (cell[2] + (va == 2 ? c : 0)));
                R[c] = pj_noise_value(L->seed, g, L->step, L->stage, n->index, n->axis, single);
            }
            break;
        }
        case KIR_METRIC: { /* the table at the mesh index (NaN outside it) */
            int a = n->axis;
            int64_t g = idx[a] + n->off[a] + L->first[a];
            for (int c = 0; c < len; c++) R[c] = rnd(e, kir_metric_at(k->metric, a, n->index, g + (va == a ? c : 0)));
            break;
        }
        case KIR_EDGE: {
            int a = n->axis;
            int64_t last = L->first[a] + L->n[a] + L->beyond[a] - 1; /* of the mesh */
            for (int c = 0; c < len; c++) {
                int64_t i = idx[a] + (va == a ? c : 0) + n->off[a] + L->first[a];
                R[c] = i == -1 || i == last ? 1.0 : 0.0;
            }
            break;
        }
        case KIR_LOAD: {
            int64_t at = e0 + n->off[0] + n->off[1] * L->stride[1] + n->off[2] * L->stride[2];
            const void *b = L->buf[n->slot * k->n_fields + n->index];
            if (!single) {
                const double *p = (const double *)b + at;
                if (step == 1 && !e->copy[id]) {
                    e->src[id] = p;
                } else {
                    for (int c = 0; c < len; c++) R[c] = p[c * step];
                    e->src[id] = R;
                }
            } else {
                const float *p = (const float *)b + at;
                for (int c = 0; c < len; c++) R[c] = p[c * step];
            }
            break;
        }
        default: {
            const double *A = n->arg[0] >= 0 ? e->src[n->arg[0]] : NULL;
            const double *B = n->arg[1] >= 0 ? e->src[n->arg[1]] : NULL;
            const double *C = n->arg[2] >= 0 ? e->src[n->arg[2]] : NULL;
            op_block((kir_op)n->op, single, len, A, B, C, R);
            break;
        }
        }
    }
}

static void outer_range(const kir_launch *L, int dim, int64_t begin, int64_t end, int64_t lo[3],
                        int64_t hi[3])
{
    for (int a = 0; a < 3; a++) {
        lo[a] = 0;
        hi[a] = a < dim ? L->n[a] : 1;
    }
    lo[dim - 1] = begin;
    hi[dim - 1] = end;
}

/* Without scratch memory a stage cannot compute: its outputs become NaN and the non-finite flag
 * is raised, so a run that ignores the status still stops at its next NaN check. */
static int stage_without_memory(const kir_kernel *k, const kir_launch *L, int single, const int64_t lo[3],
                                const int64_t hi[3])
{
    for (int o = 0; o < k->n_outputs; o++) {
        void *b = L->buf[k->outputs[o].slot * k->n_fields + k->outputs[o].field];
        for (int64_t z = lo[2]; z < hi[2]; z++)
            for (int64_t y = lo[1]; y < hi[1]; y++)
                for (int64_t x = lo[0]; x < hi[0]; x++) {
                    int64_t at = x + y * L->stride[1] + z * L->stride[2];
                    if (single) ((float *)b)[at] = NAN;
                    else ((double *)b)[at] = NAN;
                }
    }
    if (L->nonfinite) __atomic_store_n(L->nonfinite, 1, __ATOMIC_RELAXED);
    return -1;
}

int interp_stage(const kir_kernel *k, const kir_launch *L, int single, int64_t begin, int64_t end)
{
    if (begin >= end || k->n_outputs == 0) return 0;
    int64_t lo[3], hi[3];
    outer_range(L, k->dim, begin, end, lo, hi);
    ev e;
    if (ev_open(&e, k, L, single, hi[0] - lo[0]) < 0) return stage_without_memory(k, L, single, lo, hi);
    for (int64_t z = lo[2]; z < hi[2]; z++)
        for (int64_t y = lo[1]; y < hi[1]; y++)
            for (int64_t x = lo[0]; x < hi[0]; x += INTERP_BLOCK) {
                int len = (int)(hi[0] - x < INTERP_BLOCK ? hi[0] - x : INTERP_BLOCK);
                int64_t idx[3] = {x, y, z};
                ev_block(&e, idx, 0, len);
                int64_t at = x + y * L->stride[1] + z * L->stride[2];
                int bad = 0;
                for (int o = 0; o < k->n_outputs; o++) {
                    const kir_output *out = &k->outputs[o];
                    const double *v = e.src[out->node];
                    void *b = L->buf[out->slot * k->n_fields + out->field];
                    if (!single) {
                        double *d = (double *)b + at;
                        for (int c = 0; c < len; c++) {
                            d[c] = v[c];
                            bad |= !(v[c] - v[c] == 0); /* NaN or infinite */
                        }
                    } else {
                        float *d = (float *)b + at;
                        for (int c = 0; c < len; c++) {
                            d[c] = (float)v[c];
                            bad |= !(d[c] - d[c] == 0);
                        }
                    }
                }
                if (bad && L->nonfinite) __atomic_store_n(L->nonfinite, 1, __ATOMIC_RELAXED);
            }
    ev_close(&e);
    return 0;
}

int interp_reduce(const kir_kernel *k, const kir_launch *L, int single, int64_t begin, int64_t end, double *const *part)
{
    if (begin >= end || k->n_outputs == 0) return 0;
    ev e;
    if (ev_open(&e, k, L, single, INTERP_BLOCK) < 0) {
        for (int o = 0; o < k->n_outputs; o++)
            for (int64_t q = begin; q < end; q++) part[o][q] = NAN;
        return -1;
    }
    int dim = k->dim, no = k->n_outputs;
    double acc[64][KIR_REDUCE_LANES];
    for (int64_t q = begin; q < end; q++) {
        int64_t lo[3], hi[3];
        outer_range(L, dim, q, q + 1, lo, hi);
        if (dim == 1) { /* a block of cells */
            lo[0] = q * KIR_REDUCE_BLOCK_1D;
            hi[0] = lo[0] + KIR_REDUCE_BLOCK_1D < L->n[0] ? lo[0] + KIR_REDUCE_BLOCK_1D : L->n[0];
        }
        for (int o0 = 0; o0 < no; o0 += 64) { /* outputs in groups of 64: acc stays on the stack */
            int o1 = no - o0 < 64 ? no : o0 + 64;
            for (int o = o0; o < o1; o++)
                for (int l = 0; l < KIR_REDUCE_LANES; l++) acc[o - o0][l] = kir_reduce_identity(k->outputs[o].slot);
            for (int64_t z = lo[2]; z < hi[2]; z++)
                for (int64_t y = lo[1]; y < hi[1]; y++)
                    for (int64_t x = lo[0]; x < hi[0]; x += INTERP_BLOCK) {
                        int len = (int)(hi[0] - x < INTERP_BLOCK ? hi[0] - x : INTERP_BLOCK);
                        int64_t idx[3] = {x, y, z};
                        ev_block(&e, idx, 0, len);
                        int lane0 = (int)((x - lo[0]) % KIR_REDUCE_LANES);
                        for (int o = o0; o < o1; o++) {
                            const double *v = e.src[k->outputs[o].node];
                            int op = k->outputs[o].slot;
                            double *a = acc[o - o0];
                            for (int c = 0; c < len; c++) {
                                int l = (lane0 + c) % KIR_REDUCE_LANES;
                                a[l] = kir_reduce_combine(op, a[l], single ? (double)(float)v[c] : v[c]);
                            }
                        }
                    }
            for (int o = o0; o < o1; o++) {
                double r = acc[o - o0][0];
                for (int l = 1; l < KIR_REDUCE_LANES; l++) r = kir_reduce_combine(k->outputs[o].slot, r, acc[o - o0][l]);
                part[o][q] = r;
            }
        }
    }
    ev_close(&e);
    return 0;
}

int interp_init(const kir_kernel *k, const kir_launch *L, int single)
{
    return interp_stage(k, L, single, 0, L->n[k->dim - 1]);
}

static void face_axes(int side, int *a, int *b0, int *b1)
{
    *a = side / 2;
    *b0 = *a == 0 ? 1 : 0;
    *b1 = *a == 2 ? 1 : 2;
}

int64_t interp_face_cells(const kir_launch *L, int side)
{
    int a, b0, b1;
    face_axes(side, &a, &b0, &b1);
    return L->n[b0] * L->n[b1];
}

int interp_bc(const kir_kernel *k, const kir_launch *L, int single, double *out)
{
    int a, b0, b1;
    face_axes(k->side, &a, &b0, &b1);
    int64_t nb0 = b0 < k->dim ? L->n[b0] : 1, nb1 = b1 < k->dim ? L->n[b1] : 1;
    int64_t nface = interp_face_cells(L, k->side);
    ev e;
    if (ev_open(&e, k, L, single, nb0) < 0) { /* NaN coefficients: NaN ghosts, caught by the run */
        for (size_t c = 0; c < (size_t)k->n_outputs * (size_t)nface; c++) out[c] = NAN;
        return -1;
    }
    for (int64_t q = 0; q < nb1; q++)
        for (int64_t p0 = 0; p0 < nb0; p0 += INTERP_BLOCK) {
            int len = (int)(nb0 - p0 < INTERP_BLOCK ? nb0 - p0 : INTERP_BLOCK);
            int64_t idx[3];
            idx[a] = (k->side & 1) ? L->n[a] - 1 : 0;
            idx[b0] = p0;
            idx[b1] = q;
            ev_block(&e, idx, b0, len);
            for (int o = 0; o < k->n_outputs; o++) {
                const double *v = e.src[k->outputs[o].node];
                double *d = out + (size_t)o * (size_t)nface + (size_t)(p0 + q * nb0);
                for (int c = 0; c < len; c++) d[c] = v[c];
            }
        }
    ev_close(&e);
    return 0;
}

