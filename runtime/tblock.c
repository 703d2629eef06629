/* tblock.c — temporal blocking: several explicit steps per sweep over the state (sim_step_n).
 *
 * When the state exceeds the last-level cache, a step's speed is capped by one sweep's memory
 * traffic. Here the mesh is cut into bands of rows of the last axis (y in 2D, z in 3D), and each
 * band takes K steps at once in scratch buffers of its own that stay in the cache:
 *
 *   copy rows [a - R, b + R) of slot 0 into the scratch (R = K * stages * H; a periodic last
 *   axis wraps, a mesh side with a condition clips the range and keeps the ghost rows beyond)
 *   for each step, each stage: fill the scratch's ghost cells as sim_fill_ghosts would (the
 *   plan's axis order; along the last axis only at a mesh side), run the stage kernel over the
 *   rows still valid (the range shrinks by H per stage except at a mesh side); swap slots
 *   copy rows [a, b) of the result into slot 1 of the sim (nobody reads it during the block)
 *
 * then slots 0 and 1 are swapped once. Every cell is computed by the same kernel from the same
 * values with the same launch (t, dt, step and stage of its stage, `first` and `beyond` of the
 * rows it covers, so coordinates, `boundary` and rand() are the mesh's), so the state is bit
 * for bit what K calls of sim_step give; the other slots hold other values. The bands run on
 * the sim's threads, each thread in its own scratch.
 *
 * It applies to explicit schemes on 2D and 3D meshes held whole by one sim (no block of a
 * decomposed run), without ghost hooks or exchanges, whose last axis is periodic for every
 * field or for none; it is chosen (mode 0) when every buffer together exceeds the last-level
 * cache. $PDEJIT_TBLOCK (off, on, auto), $PDEJIT_TBLOCK_K and $PDEJIT_TBLOCK_ROWS force it and
 * its sizes (tests, benchmarks); see sim_set_tblock. */
#include <stdlib.h>
#include <string.h>
#include "interp.h"
#include "sim_impl.h"

#define TB_ALIGN 64
#define TB_MAX_K 16

typedef struct tb_set {
    int busy;              /* claimed by a running band */
    void **mem;            /* [nbuf] allocations */
    void **z;              /* [nbuf] cell (0, 0, row 0 of the band's range) */
    void **cur;            /* [nbuf] z as the slots are swapped */
    void **bufs;           /* [nbuf] what a launch reads: cur moved to a piece's first row */
    void **fb;             /* [n_fields] the buffers a ghost fill works on */
} tb_set;

struct tblock {
    int nsets, nbuf;
    int64_t rows_cap;      /* rows (ghosts excluded) each scratch buffer holds */
    tb_set *set;
    double *cf_mem;        /* the boundary coefficients of every stage of a block, per side */
    size_t cf_cap;
    const double *(*cf)[6]; /* [stage of the block][side] */
    int cf_stages;
};

void tblock_free(struct tblock *tb)
{
    if (!tb) return;
    for (int i = 0; i < tb->nsets; i++) {
        tb_set *st = &tb->set[i];
        if (st->mem)
            for (int b = 0; b < tb->nbuf; b++) free(st->mem[b]);
        free(st->mem);
        free(st->z);
        free(st->cur);
        free(st->bufs);
        free(st->fb);
    }
    free(tb->set);
    free(tb->cf_mem);
    free(tb->cf);
    free(tb);
}

void sim_set_tblock(sim *s, int mode, int k, int rows)
{
    s->tb_mode = mode < 0 ? -1 : mode > 0 ? 1 : 0;
    s->tb_k = k > 0 ? k : 0;
    s->tb_rows = rows > 0 ? rows : 0;
}

/* 1 when the program and the sim allow blocking at all. */
static int tb_applies(const sim *s)
{
    const pj_program *p = s->p;
    if (p->dim < 2 || PJ_SCHEME_IMPLICIT(p->scheme) || p->n_stages < 1 || p->n_slots < 2) return 0;
    if (s->plan.set.exchange) return 0;
    for (int side = 0; side < 6; side++)
        if (s->plan.set.hook[side] || s->plan.set.exchanged[side]) return 0;
    for (int a = 0; a < 3; a++)
        if (s->g.first[a] || s->g.beyond[a]) return 0;
    for (int side = 0; side < 2 * p->dim; side++) { /* coefficients that read the fields: not ahead */
        const kir_kernel *k = s->coef[side] ? p->bc_kernel[side] : NULL;
        for (int i = 0; k && i < k->n_nodes; i++)
            if (k->nodes[i].op == KIR_LOAD) return 0;
    }
    int last = p->dim - 1, periodic = 0, other = 0;
    for (int f = 0; f < p->n_fields; f++)
        for (int hi = 0; hi < 2; hi++) {
            if (s->plan.rule[f * 6 + 2 * last + hi] == GHOST_PERIODIC) periodic = 1;
            else other = 1;
        }
    return !(periodic && other);
}

/* The steps per sweep and rows per band for a block of at most n steps: 0 when blocking does
 * not apply or pay. Auto: every buffer together beyond the last-level cache; each thread's
 * scratch about a quarter of the cache, the band at least 8 times the rows recomputed. */
static int tb_choose(const sim *s, int64_t n, int64_t *rows)
{
    if (s->tb_mode < 0 || n < 2 || !tb_applies(s)) return 0;
    const pj_program *p = s->p;
    int last = p->dim - 1, H = s->g.H, S = p->n_stages;
    int64_t N = s->g.n[last];
    double plane = (double)s->L.stride[last] * (double)s->esz, nbuf = (double)s->nbuf;
    int K = s->tb_k;
    int64_t B = s->tb_rows;
    if (s->tb_mode == 0) {
        double state = plane * (double)s->g.ext[last] * nbuf;
        if (state <= (double)sim_cache_bytes()) return 0;
    }
    if (!K || !B) {
        double budget = (double)sim_cache_bytes() / (4.0 * s->threads);
        int64_t total = (int64_t)(budget / (plane * nbuf));
        int k = (int)(total / (10 * S * H));
        if (k > TB_MAX_K) k = TB_MAX_K;
        if (!K) K = k;
        if (!B) B = total - 2 * (int64_t)K * S * H - 2 * H;
    }
    if (K > n) K = (int)n;
    if (B > N) B = N;
    if (K < 2 || B < 1) return 0;
    if (s->tb_mode == 0 && B < 4 * (int64_t)K * S * H) return 0; /* too much recomputed */
    *rows = B;
    return K;
}

/* Scratch for bands of up to `rows` rows plus R on each side, one set per thread. */
static int tb_reserve(sim *s, int64_t rows)
{
    const pj_program *p = s->p;
    int last = p->dim - 1, H = s->g.H;
    struct tblock *tb = s->tb;
    if (tb && tb->rows_cap >= rows && tb->nsets == s->threads && tb->nbuf == s->nbuf) return 0;
    tblock_free(tb);
    s->tb = tb = calloc(1, sizeof *tb);
    if (!tb) return -1;
    tb->nsets = s->threads;
    tb->nbuf = s->nbuf;
    tb->rows_cap = rows;
    tb->set = calloc((size_t)tb->nsets, sizeof *tb->set);
    if (!tb->set) return -1;
    int64_t st = s->L.stride[last];
    size_t bytes = (size_t)((rows + 2 * H) * st) * s->esz;
    bytes = (bytes + TB_ALIGN - 1) / TB_ALIGN * TB_ALIGN;
    for (int i = 0; i < tb->nsets; i++) {
        tb_set *set = &tb->set[i];
        set->mem = calloc((size_t)s->nbuf, sizeof *set->mem);
        set->z = calloc((size_t)s->nbuf, sizeof *set->z);
        set->cur = calloc((size_t)s->nbuf, sizeof *set->cur);
        set->bufs = calloc((size_t)s->nbuf, sizeof *set->bufs);
        set->fb = calloc((size_t)p->n_fields, sizeof *set->fb);
        if (!set->mem || !set->z || !set->cur || !set->bufs || !set->fb) return -1;
        for (int b = 0; b < s->nbuf; b++) {
            /* the layout of a whole-mesh buffer with rows+2H planes: cell (0,0,0) at origin_off */
            set->mem[b] = aligned_alloc(TB_ALIGN, bytes);
            if (!set->mem[b]) return -1;
            memset(set->mem[b], 0, bytes);
            set->z[b] = (char *)set->mem[b] + (size_t)s->g.origin_off * s->esz;
        }
    }
    return 0;
}

/* The boundary coefficients of each of the block's `stages` stage runs (times ts[q]), for every
 * side with a linear condition: what sim_fill_ghosts would compute before that stage. The
 * launch they are evaluated with is the sim's as it would be then (before[q]). */
static int tb_coefs(sim *s, int stages, const double *ts, const kir_launch *before)
{
    struct tblock *tb = s->tb;
    const pj_program *p = s->p;
    size_t need = 0;
    for (int side = 0; side < 2 * p->dim; side++)
        if (s->coef[side] && !s->coef_const[side])
            need += (size_t)stages * (size_t)(p->bc_kernel[side]->n_outputs ? p->bc_kernel[side]->n_outputs : 1) *
                    (size_t)interp_face_cells(&s->L, side);
    if (tb->cf_stages < stages) {
        free(tb->cf);
        tb->cf = calloc((size_t)stages, sizeof *tb->cf);
        if (!tb->cf) return -1;
        tb->cf_stages = stages;
    }
    if (need > tb->cf_cap) {
        free(tb->cf_mem);
        tb->cf_mem = malloc(sizeof(double) * need);
        if (!tb->cf_mem) {
            tb->cf_cap = 0;
            return -1;
        }
        tb->cf_cap = need;
    }
    double *at = tb->cf_mem;
    for (int q = 0; q < stages; q++)
        for (int side = 0; side < 6; side++) {
            tb->cf[q][side] = NULL;
            if (side >= 2 * p->dim || !s->coef[side]) continue;
            if (s->coef_const[side]) {
                tb->cf[q][side] = sim_side_coefs(s, side, ts[q]);
                continue;
            }
            kir_launch bl = before[q];
            bl.t = ts[q];
            interp_bc(p->bc_kernel[side], &bl, s->single, at);
            tb->cf[q][side] = at;
            at += (size_t)(p->bc_kernel[side]->n_outputs ? p->bc_kernel[side]->n_outputs : 1) *
                  (size_t)interp_face_cells(&s->L, side);
        }
    return 0;
}

typedef struct tb_job {
    sim *s;
    int K;
    int64_t B, N;
    int periodic;
    double dt;
    const double *ts;      /* [K * stages] each stage's time */
    const kir_launch *L0;  /* the sim's launch at the block's start */
} tb_job;

static int64_t wrap(int64_t m, int64_t N) { return ((m % N) + N) % N; }

/* Start of plane (row in 2D) r of a buffer whose cell (0,0,0) is z. */
static char *plane(const sim *s, void *z, int64_t r)
{
    int last = s->p->dim - 1;
    int64_t st = s->L.stride[last], P = s->g.origin_off - s->g.ghost[last] * st;
    return (char *)z + (r * st - P) * (int64_t)s->esz;
}

static void tb_band(tb_job *j, tb_set *set, int64_t a, int64_t b)
{
    sim *s = j->s;
    const pj_program *p = s->p;
    const int nf = p->n_fields, last = p->dim - 1, H = s->g.H, S = p->n_stages;
    const int64_t N = j->N, R = (int64_t)j->K * S * H, st = s->L.stride[last];
    const size_t plane_bytes = (size_t)st * s->esz;
    int64_t lo, hi;
    int at_lo = 0, at_hi = 0;
    if (j->periodic) {
        lo = a - R;
        hi = b + R;
    } else {
        lo = a - R > 0 ? a - R : 0;
        hi = b + R < N ? b + R : N;
        at_lo = lo == 0;
        at_hi = hi == N;
    }
    const int64_t E = hi - lo;
    for (int f = 0; f < nf; f++)
        for (int64_t r = 0; r < E; r++)
            memcpy(plane(s, set->z[f], r), plane(s, s->buf[f], j->periodic ? wrap(lo + r, N) : lo + r), plane_bytes);
    for (int i = 0; i < s->nbuf; i++) set->cur[i] = set->z[i];
    sim_fill_span span = {E, -H, E + H, lo, j->periodic, (at_lo ? 1 : 0) | (at_hi ? 2 : 0)};
    kir_launch L = *j->L0;
    L.buf = set->bufs;
    L.prefetch = 0;
    for (int k = 0; k < j->K; k++) {
        for (int i = 0; i < S; i++) {
            const int q = k * S + i;
            const pj_stage *sg = &p->stages[i];
            for (int f = 0; f < nf; f++) set->fb[f] = set->cur[(p->field_has_eq[f] ? sg->read_slot : 0) * nf + f];
            for (int x = 0; x < p->dim; x++) {
                int ax = s->plan.axis_order[x];
                const double *cf[2] = {s->tb->cf[q][2 * ax], s->tb->cf[q][2 * ax + 1]};
                for (int f = 0; f < nf; f++) sim_fill_axis(s, f, set->fb[f], ax, cf, &span);
            }
            L.t = j->ts[q];
            L.dt = j->dt;
            L.step = j->L0->step + k;
            L.stage = i + 1;
            int64_t c_lo = at_lo ? 0 : (int64_t)(q + 1) * H, c_hi = at_hi ? E : E - (int64_t)(q + 1) * H;
            for (int64_t r = c_lo; r < c_hi;) {
                int64_t m = j->periodic ? wrap(lo + r, N) : lo + r;
                int64_t len = c_hi - r < N - m ? c_hi - r : N - m;
                for (int x = 0; x < s->nbuf; x++) set->bufs[x] = (char *)set->cur[x] + r * (int64_t)plane_bytes;
                L.first[last] = m;
                L.n[last] = len;
                L.beyond[last] = N - m - len;
                if (s->runner) s->runner(s->runner_ctx, i, &L, 0, len);
                else interp_stage(sg->kernel, &L, s->single, 0, len);
                r += len;
            }
        }
        if (p->swap_after_step)
            for (int f = 0; f < nf; f++) {
                if (!p->field_has_eq[f]) continue;
                void *t = set->cur[f];
                set->cur[f] = set->cur[nf + f];
                set->cur[nf + f] = t;
            }
    }
    for (int f = 0; f < nf; f++) {
        if (!p->field_has_eq[f]) continue;
        for (int64_t m = a; m < b; m++) memcpy(plane(s, s->buf[nf + f], m), plane(s, set->cur[f], m - lo), plane_bytes);
    }
}

static void tb_range(void *ctx, int64_t begin, int64_t end)
{
    tb_job *j = ctx;
    struct tblock *tb = j->s->tb;
    tb_set *set = NULL;
    for (int i = 0; !set; i = (i + 1) % tb->nsets) /* one free set per running thread */
        if (!__atomic_exchange_n(&tb->set[i].busy, 1, __ATOMIC_ACQUIRE)) set = &tb->set[i];
    for (int64_t band = begin; band < end; band++) {
        int64_t a = band * j->B, b = a + j->B < j->N ? a + j->B : j->N;
        tb_band(j, set, a, b);
    }
    __atomic_store_n(&set->busy, 0, __ATOMIC_RELEASE);
}

/* K steps of dt in one sweep of bands of B rows. 0, or -1 out of memory (nothing stepped). */
static int tb_run(sim *s, double dt, int K, int64_t B)
{
    const pj_program *p = s->p;
    const int S = p->n_stages, nf = p->n_fields, last = p->dim - 1;
    const int64_t R = (int64_t)K * S * s->g.H;
    if (tb_reserve(s, B + 2 * R) < 0) return -1;
    double *ts = malloc(sizeof *ts * (size_t)(K * S));
    kir_launch *before = malloc(sizeof *before * (size_t)(K * S));
    if (!ts || !before) {
        free(ts);
        free(before);
        return -1;
    }
    /* the times and launches sim_step would have: t advanced by adding dt step after step */
    kir_launch L = s->L;
    double t = s->t;
    for (int k = 0; k < K; k++) {
        for (int i = 0; i < S; i++) {
            before[k * S + i] = L;
            ts[k * S + i] = t + p->stages[i].t_frac * dt;
            L.t = ts[k * S + i];
            L.dt = dt;
            L.step = s->steps + k;
            L.stage = i + 1;
        }
        t += dt;
    }
    if (tb_coefs(s, K * S, ts, before) < 0) {
        free(ts);
        free(before);
        return -1;
    }
    kir_launch L0 = s->L;
    L0.step = s->steps;
    int periodic = s->plan.rule[2 * last] == GHOST_PERIODIC;
    tb_job j = {s, K, B, s->g.n[last], periodic, dt, ts, &L0};
    int64_t bands = (j.N + B - 1) / B;
    if (!s->pool || s->threads < 2) tb_range(&j, 0, bands);
    else cpu_pool_run_range(s->pool, tb_range, &j, bands, 1, (B + 2 * R) * (sim_cells(s) / j.N) * K * S);
    for (int f = 0; f < nf; f++) { /* the new state is in slot 1 */
        if (!p->field_has_eq[f]) continue;
        void *m = s->mem[f]; s->mem[f] = s->mem[nf + f]; s->mem[nf + f] = m;
        m = s->buf[f]; s->buf[f] = s->buf[nf + f]; s->buf[nf + f] = m;
    }
    for (int k = 0; k < K; k++) s->t += dt;
    s->steps += K;
    s->L.t = s->t;
    s->L.dt = dt;
    s->L.step = s->steps - 1;
    s->L.stage = S;
    free(ts);
    free(before);
    return 0;
}

int sim_step_n(sim *s, double dt, int64_t n)
{
    while (n > 0) {
        if (s->failed) return -1;
        int64_t B = 0;
        int K = tb_choose(s, n, &B);
        if (K >= 2 && tb_run(s, dt, K, B) == 0) {
            n -= K;
            continue;
        }
        if (sim_step(s, dt) < 0) return -1;
        n--;
    }
    return 0;
}

int sim_tblock_steps(const sim *s, int64_t n)
{
    int64_t B = 0;
    return tb_choose(s, n, &B);
}
