/* sim_fill.c — the ghost fill of a linear boundary condition along one axis without decisions
 * per cell (sim_fill_axis's common case: Dirichlet, Neumann, Robin sides in double precision),
 * and the span arithmetic the fills share (which lines a fill covers, which face cell a line's
 * coefficients come from).
 *
 * sim_fill_axis's general loop decides per ghost cell (side, rule, hook, coefficient outputs,
 * face index through two calls) what sim_fill_linear decides per side and per line; the value
 * of each ghost cell is the same expression of the same numbers (the same bits). On a 256³
 * Dirichlet Gray-Scott run the general loop took a sixth of the time of a blocked step (the
 * tiles of tblock.c fill the x and y ghosts of every stage's rows).
 *
 * A side whose a, b, c have the same bits on every face cell (a constant condition such as
 * u = 0; sim_coef_uniform tells, once per computation of the coefficients) goes further: its
 * a/2 - b/d and a/2 + b/d are computed once per layer (the same operations on the same numbers)
 * and the lines are filled by a loop with no face index and no loads of coefficients, over
 * contiguous cells where the lines run along x (the y and z fills). */
#include "sim_impl.h"
#include "interp.h"
#include <string.h>

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

void sim_span_range(const sim *s, const sim_fill_span *sp, int b, int64_t *lo, int64_t *hi)
{
    if (b == s->st.p->dim - 1) {
        *lo = sp->q0;
        *hi = sp->q1;
    } else if (b == 1 && sp->m1 > sp->m0) {
        *lo = sp->m0;
        *hi = sp->m1;
    } else if (b == 0 && sp->x1 > sp->x0) {
        *lo = sp->x0;
        *hi = sp->x1;
    } else {
        *lo = s->st.g.lo[b];
        *hi = s->st.g.lo[b] + s->st.g.ext[b];
    }
}

int64_t sim_face_index(const sim *s, const sim_fill_span *sp, int b, int64_t q)
{
    if (b != s->st.p->dim - 1) return clamp64(q, 0, s->st.g.n[b] - 1);
    int64_t m = q + sp->off, N = s->st.g.n[b];
    if (sp->wrap) return ((m % N) + N) % N;
    return clamp64(m, 0, N - 1);
}

/* One side's ghost layer m (1..H from the face) over the lines [r0, r1) x [q0, q1) of axes
 * b0, b1: g = (c - u (a/2 - b/d)) / (a/2 + b/d), u the interior cell mirrored about the face at
 * distance d, a, b, c the face cell's coefficients (NULL: 0), as sim_fill_axis computes it. */
typedef struct lin_side {
    const double *ca, *cb, *cc; /* the coefficient arrays (one value per face cell) or NULL */
    int64_t g, in;              /* the ghost's and its mirror's index along the axis */
    double d;
} lin_side;

static void fill_lines(const sim *s, const sim_fill_span *sp, double *u, const lin_side *ls, int a, int b0, int b1,
                       const int64_t rq[4])
{
    const int64_t st = s->L.stride[a], sb0 = s->L.stride[b0], sb1 = s->L.stride[b1], n0 = s->st.g.n[b0];
    const int wrap0 = b0 == s->st.p->dim - 1; /* 2D, x: the lines are rows of the (tiled) last axis */
    const double d = ls->d;
    for (int64_t q = rq[2]; q < rq[3]; q++) {
        const int64_t fq = n0 * sim_face_index(s, sp, b1, q);
        double *line = u + q * sb1;
        for (int64_t r = rq[0]; r < rq[1]; r++) {
            const int64_t fc = (wrap0 ? sim_face_index(s, sp, b0, r) : clamp64(r, 0, n0 - 1)) + fq;
            const double ca = ls->ca ? ls->ca[fc] : 0, cb = ls->cb ? ls->cb[fc] : 0, cc = ls->cc ? ls->cc[fc] : 0;
            const double v = line[r * sb0 + ls->in * st];
            line[r * sb0 + ls->g * st] = (cc - v * (ca / 2 - cb / d)) / (ca / 2 + cb / d);
        }
    }
}

void sim_coef_uniform(sim *s, int side)
{
    const kir_kernel *k = s->st.p->bc_kernel[side];
    const int64_t nface = interp_face_cells(&s->L, side);
    s->coef_uni[side] = 0;
    for (int o = 0; o < k->n_outputs && o < 64; o++) {
        const double *c = s->coef[side] + o * nface;
        int64_t i = 1;
        while (i < nface && !memcmp(&c[i], &c[0], sizeof c[0])) i++; /* bits: -0 and 0 differ */
        if (i >= nface) s->coef_uni[side] |= (uint64_t)1 << o;
    }
}

/* fill_lines for a side with the same coefficients on every face cell: A = a/2 - b/d and
 * B = a/2 + b/d of the layer, C = c. */
static void fill_uniform(const sim *s, double *u, const lin_side *ls, const double abc[3], int a, int b0, int b1,
                         const int64_t rq[4])
{
    const int64_t st = s->L.stride[a], sb0 = s->L.stride[b0], sb1 = s->L.stride[b1];
    const double A = abc[0] / 2 - abc[1] / ls->d, B = abc[0] / 2 + abc[1] / ls->d, C = abc[2];
    for (int64_t q = rq[2]; q < rq[3]; q++) {
        double *dst = u + q * sb1 + ls->g * st;
        const double *src = u + q * sb1 + ls->in * st;
        if (sb0 == 1)
            for (int64_t r = rq[0]; r < rq[1]; r++) dst[r] = (C - src[r] * A) / B;
        else
            for (int64_t r = rq[0]; r < rq[1]; r++) dst[r * sb0] = (C - src[r * sb0] * A) / B;
    }
}

/* Whether output o (-1: absent) of side's coefficients cf is the same on every face cell. */
static int uniform_out(const sim *s, int side, const double *cf, int o)
{
    return o < 0 || (cf == s->coef[side] && o < 64 && (s->coef_uni[side] >> o & 1));
}

int sim_fill_linear(sim *s, int f, void *b, int a, const double *cf[2], const sim_fill_span *sp)
{
    const int H = s->st.g.H, last = s->st.p->dim - 1, b0 = a == 0 ? 1 : 0, b1 = a == 2 ? 1 : 2;
    const int64_t n = a == last ? sp->n_last : s->st.g.n[a];
    if (s->single || n < H) return 0; /* n < H: a mirror would be a ghost */
    int sides = 0;
    for (int hi = 0; hi < 2; hi++) {
        const int side = 2 * a + hi;
        if (s->st.plan.set.hook[side] || s->st.plan.set.exchanged[side]) continue; /* left alone */
        if (a == last && !(sp->sides & (1 << hi))) continue;                      /* not the span's */
        if (s->st.plan.rule[f * 6 + side] != GHOST_LINEAR) return 0;
        if (H >= 2 && s->coef_out[f][side][3] >= 0) return 0; /* lap(u) = c2: reads its own ghosts */
        sides |= 1 << hi;
    }
    const int64_t nface = s->st.g.n[b0] * s->st.g.n[b1];
    int64_t rq[4];
    sim_span_range(s, sp, b0, &rq[0], &rq[1]);
    sim_span_range(s, sp, b1, &rq[2], &rq[3]);
    for (int hi = 0; hi < 2; hi++) {
        if (!(sides >> hi & 1)) continue;
        const int *oi = s->coef_out[f][2 * a + hi];
        const double *C = cf[hi];
        lin_side ls = {oi[0] >= 0 ? C + oi[0] * nface : NULL, oi[1] >= 0 ? C + oi[1] * nface : NULL,
                       oi[2] >= 0 && !s->st.plan.set.homogeneous ? C + oi[2] * nface : NULL, 0, 0, 0};
        const int side = 2 * a + hi;
        const int uni = uniform_out(s, side, C, oi[0]) && uniform_out(s, side, C, oi[1]) &&
                        (!ls.cc || uniform_out(s, side, C, oi[2]));
        const double abc[3] = {ls.ca ? ls.ca[0] : 0, ls.cb ? ls.cb[0] : 0, ls.cc ? ls.cc[0] : 0};
        for (int m = 1; m <= H; m++) {
            ls.g = hi ? n - 1 + m : -m;
            ls.in = hi ? n - m : m - 1;
            ls.d = (2 * m - 1) * s->L.h[a];
            if (uni) fill_uniform(s, b, &ls, abc, a, b0, b1, rq);
            else fill_lines(s, sp, b, &ls, a, b0, b1, rq);
        }
    }
    return 1;
}
