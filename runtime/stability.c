/* stability.c — the explicit stability check: is dt within the limit of an explicit scheme for
 * the linearised right-hand side at the current state?
 *
 * The Jacobian dF/dU is the program's (program_jacobian: the symbolic derivative of its rhs kernel,
 * derive.h), run on a scratch simulation (engine.h, engine_eval; the interpreter, or from
 * CHECK_JIT_CELLS cells the cpu back end's compiled kernel) holding the state. Every row's
 * entries, each moved onto the interior cell
 * it stands for (a ghost cell's entry onto the cell its boundary rule reads, times d ghost / d
 * that cell, as the implicit solver's Jacobian does), are assembled for spectral.c, whose Ritz
 * values give the limit (docs/language.md, "The explicit stability check"). Gershgorin's discs
 * are the fallback (a Jacobian too large to assemble, an estimate that fails) and the bound a
 * real spectrum keeps where it is the larger limit: row i's disc has centre J_ii and radius
 * r_i = sum of |J_ij|, j != i; the leftmost point of any disc, -rho with rho = max_i (r_i - J_ii),
 * bounds how far the spectrum reaches into the left half plane; growth (a positive J_ii) does not
 * count against dt, decay does. Along the negative real axis an explicit scheme is stable up to
 * dt * rho <= beta: 2 for euler and rk2, 2.51 for rk3, 2.79 for rk4. The check refuses
 * dt > (1 + 1e-6) * limit.
 *
 * Cost: the state is read where the run holds it (a copy gathered in mesh order only over MPI,
 * on a device or in single precision) into bands along the last axis, each a scratch simulation
 * of CHECK_SCRATCH_BYTES at most (its halo's rows beyond it; its sides on the mesh's sides take
 * their conditions). The Jacobian kernel's entries (one value per stencil point and field) are
 * never held for a whole band: check_rows runs the kernel over a chunk of the band's own cells at
 * a time (CHECK_CHUNK_BYTES of entries: rows, lines of y, or cells of x) and reduces the chunk at
 * once. Cells whose entries all stay inside the mesh are summed an entry at a time (Gershgorin
 * alone), only the others fold and merge their entries; with the spectral estimate every cell
 * goes through folded_row. Any split gives the same limit, to the bit (tests/test_stability.c).
 * Before (bands of 64 MiB of entry buffers, in fresh pages, their halo's stencils computed too):
 * 12-13 s of a 512x512x128 Gray-Scott run's start against 2 s now (docs/performance.md). */
#include "stability.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "derive.h"
#include "diag.h"
#include "grid.h"
#include "spectral.h"

static double beta_of(pj_scheme s)
{
    switch (s) {
    case PJ_EULER: return 2.0;
    case PJ_RK2: return 2.0;
    case PJ_RK3: return 2.5127453266183286;
    case PJ_RK4: return 2.785293563405282;
    /* the embedded pairs step with their higher-order solution: rk23's is a 3-stage third-order
       scheme (rk3's polynomial), rk45's 1 + z + ... + z^5/120 + z^6/600 (tests/test_stability.c) */
    case PJ_RK23: return 2.5127453266183286;
    case PJ_RK45: return 3.306567892634946;
    default: return INFINITY;
    }
}

/* A band's scratch simulation holds about this many bytes of the state, its ghost fill and alpha
   (3 buffers a field); a larger mesh is taken in bands along its last axis. */
#define CHECK_SCRATCH_BYTES ((double)(256 << 20))

/* The check's work grows with the Jacobian's entries per cell, which grow with the square of the
   number of fields when every field is coupled to every other (a sum over all the fields of a
   multi-phase-field model): beyond this many the check is not made (1000 such fields: a million
   entries, 20 s of CPU for the estimate) and the run says so. */
#define CHECK_MAX_ENTRIES 200000.0

/* The Jacobian's entries of one chunk of cells (check_rows): about this many bytes, in the
   second-level cache while they are reduced; with many entries a cell, at least CHECK_CHUNK_CELLS
   cells' (a launch costs about a cell's evaluation of the kernel: 300 coupled fields, 91 000
   entries a cell, 32^2 cells, check a cell at a time in 4 s, 8 in 0.9 s, 32 in 1.6 s, where the
   interpreter's rows for that kernel no longer come back from the allocator; 1.6 s before). */
#define CHECK_CHUNK_BYTES ((double)(512 << 10))
#define CHECK_CHUNK_CELLS 8.0

/* From this many cells the Jacobian kernel is compiled (the cpu back end, its kernel cached as
   any other) rather than interpreted: the interpreter's ~30 ns a cell against a compile of a few
   tens of ms. The same kernel either way: the limit is the same to the bit. */
#define CHECK_JIT_CELLS ((int64_t)1 << 20)

/* The Jacobian entries per cell of rhs kernel k at most: per output, the distinct loads it
   reaches (a load reached only through a piecewise-constant op counts too). -1 when counting
   would take more than about 300 MB. */
static double entries_bound(const kir_kernel *k)
{
    int n_loads = 0;
    for (int id = 0; id < k->n_nodes; id++) n_loads += k->nodes[id].op == KIR_LOAD;
    size_t words = ((size_t)n_loads + 63) / 64;
    if ((double)k->n_outputs * n_loads <= CHECK_MAX_ENTRIES) return (double)k->n_outputs * n_loads;
    if ((double)k->n_nodes * (double)words > 4e7) return -1;
    uint64_t *reach = calloc((size_t)k->n_nodes * words, sizeof *reach);
    if (!reach) return -1;
    int load = 0;
    for (int id = 0; id < k->n_nodes; id++) { /* operands come before the nodes that use them */
        uint64_t *r = reach + (size_t)id * words;
        const kir_node *nd = &k->nodes[id];
        if (nd->op == KIR_LOAD) {
            r[load / 64] |= (uint64_t)1 << (load % 64);
            load++;
        }
        for (int j = 0; j < 3; j++)
            if (nd->arg[j] >= 0)
                for (size_t w = 0; w < words; w++) r[w] |= reach[(size_t)nd->arg[j] * words + w];
    }
    double n = 0;
    for (int o = 0; o < k->n_outputs; o++)
        for (size_t w = 0; w < words; w++) n += __builtin_popcountll(reach[(size_t)k->outputs[o].node * words + w]);
    free(reach);
    return n;
}

static int limit_of_state(engine *e, double budget, int spectral, const double *gathered, double *limit, char *err,
                          size_t len);

int stability_limit(engine *e, double *limit, char *err, size_t len)
{
    return stability_limit_within(e, CHECK_SCRATCH_BYTES, limit, err, len);
}

int stability_limit_within(engine *e, double budget, double *limit, char *err, size_t len)
{
    const pj_program *p = engine_program(e);
    *limit = INFINITY;
    if (PJ_SCHEME_IMPLICIT(p->scheme) || !p->rhs || !p->rhs->n_outputs) return 0;
    if (engine_processes(e) == 1) return limit_of_state(e, budget, 1, NULL, limit, err, len);
    /* over MPI: the state gathered on rank 0, which finds the limit and tells the others */
    int root = engine_rank(e) == 0;
    size_t cells = (size_t)engine_cells(e);
    double *gathered = root ? malloc(sizeof *gathered * cells * (size_t)p->n_fields) : NULL;
    if (engine_agree(e, root && !gathered, err, len)) {
        free(gathered);
        return -1;
    }
    for (int f = 0; f < p->n_fields; f++)
        if (engine_get_field(e, f, root ? gathered + (size_t)f * cells : NULL, err, len) < 0) {
            free(gathered);
            return -1;
        }
    double found[2] = {0, INFINITY};
    if (root) {
        found[0] = limit_of_state(e, budget, 1, gathered, &found[1], err, len);
        free(gathered);
    }
    engine_bcast(e, found, sizeof found);
    *limit = found[1];
    return (int)found[0];
}

/* One Jacobian entry of a row, its column moved onto the interior cell it stands for. */
typedef struct folded { int field; int64_t pos[3]; double v; } folded;

typedef struct check {
    const pj_program *p;       /* the run's program */
    pj_program q;              /* the scratch simulations' program: p with slots for the entries */
    const pj_jacobian *jac;    /* p's Jacobian: its kernel and entries */
    const double *state;       /* every field's cells in mesh order, one field after another (or view) */
    const double *params;      /* the run's values (--set), not the file's */
    double t;
    folded *row;               /* one row's entries */
    const grid_layout *g;      /* the band's scratch simulation: its layout */
    void **buf;                /* and its buffers (host addresses: slot * n_fields + field; the
                                  entries' slots point into scratch, check_rows) */
    int merge_always;          /* entries of one row may share a column unmoved (loads of two slots) */
    double rho;
    spectral_matrix *sm;       /* NULL, or every row's entries go here too (spectral.h) */
    int64_t cells;             /* the mesh's cells: rows are field * cells + cell */
    double *scratch;           /* the entries of a chunk of cells (check_rows) */
    double chunk_bytes;        /* their size (CHECK_CHUNK_BYTES), or the budget where it is less */
    size_t scratch_len;
    double *alpha;             /* a band's ghost_alpha, kept for the next */
    size_t alpha_len;
    const engine_view *view;   /* NULL, or [n_fields] the run's own fields, read in place (2D, 3D on the host) */
    double *band;              /* a band's rows of one field, kept for the next */
    size_t band_len;
} check;

static int by_column(const void *a, const void *b)
{
    const folded *x = a, *y = b;
    if (x->field != y->field) return x->field < y->field ? -1 : 1;
    for (int i = 2; i >= 0; i--)
        if (x->pos[i] != y->pos[i]) return x->pos[i] < y->pos[i] ? -1 : 1;
    return 0;
}

/* Row [r0, r1) of the Jacobian at cell (i, j, k) of the scratch s (its entries at c->buf):
   its disc's leftmost point, negated (radius - centre), with every entry moved onto the mesh's
   cell it stands for (a ghost's through alpha) and the entries on one cell added. */
static double folded_row(check *c, const double *alpha, int r0, int r1, int64_t i, int64_t j, int64_t k)
{
    const pj_program *p = c->p;
    const grid_layout *g = c->g;
    int nf = p->n_fields, row_field = c->jac->entries[r0].out_field, n = 0, moved = c->merge_always;
    int64_t cell = i + j * g->stride[1] + k * g->stride[2];
    int64_t here[3] = {i + g->first[0], j + g->first[1], k + g->first[2]}; /* in the mesh */
    for (int e = r0; e < r1; e++) {
        const derive_entry *d = &c->jac->entries[e];
        if (!p->field_has_eq[d->field]) continue; /* a coefficient does not evolve */
        double v = ((const double *)c->buf[2 * nf + e])[cell];
        int64_t at[3] = {i + d->off[0], j + d->off[1], k + d->off[2]}; /* in the scratch */
        int ghost = 0;
        for (int a = 0; a < p->dim; a++) ghost |= at[a] < 0 || at[a] >= g->n[a];
        if (ghost)
            v *= alpha[(size_t)d->field * g->elems +
                       (size_t)(g->origin_off + at[0] + at[1] * g->stride[1] + at[2] * g->stride[2])];
        folded *x = &c->row[n++];
        x->field = d->field;
        x->v = v;
        x->pos[1] = x->pos[2] = 0;
        for (int a = 0; a < p->dim; a++) { /* the mesh's cell it stands for */
            int64_t m = p->n[a], q = at[a] + g->first[a];
            if (q < 0 || q >= m) {
                moved = 1;
                if (p->periodic[a]) q = ((q % m) + m) % m;
                else q = q < 0 ? -q - 1 : 2 * m - 1 - q;
            }
            x->pos[a] = q;
        }
        moved |= ghost;
        if (c->sm) /* each entry as it is: spectral_limit adds those on one place in one order */
            spectral_add(c->sm, row_field * c->cells + here[0] + p->n[0] * (here[1] + p->n[1] * here[2]),
                         x->field * c->cells + x->pos[0] + p->n[0] * (x->pos[1] + p->n[1] * x->pos[2]), x->v);
    }
    if (moved && n > 1) { /* entries landing on one cell add up */
        qsort(c->row, (size_t)n, sizeof *c->row, by_column);
        int m = 0;
        for (int q = 1; q < n; q++)
            if (by_column(&c->row[m], &c->row[q])) c->row[++m] = c->row[q];
            else c->row[m].v += c->row[q].v;
        n = m + 1;
    }
    double centre = 0, radius = 0;
    for (int q = 0; q < n; q++) {
        const folded *x = &c->row[q];
        if (x->field == row_field && x->pos[0] == here[0] && x->pos[1] == here[1] && x->pos[2] == here[2])
            centre += x->v;
        else
            radius += fabs(x->v);
    }
    return radius - centre;
}

/* A ghost cell is alpha * (its mirror or periodic partner) + beta: alpha from two fills of slot
   0 of the scratch s (interior 0, then 1; before the state is set there: slot 1 is never touched), so that a ghost's entry lands on the cell it stands
   for (a Dirichlet wall's ghost -u0 cancels part of the centre, as it does in the scheme). alpha
   holds n_fields buffers of the layout's elems. 0, or -1 with a message. */
static int ghost_alpha(check *c, engine *s, double *alpha, char *err, size_t len)
{
    const pj_program *p = c->p;
    const grid_layout *g = c->g;
    int nf = p->n_fields;
    size_t elems = g->elems;
    for (int pass = 0; pass < 2; pass++) {
        for (int f = 0; f < nf; f++) {
            if (!p->field_has_eq[f]) continue;
            double *b = (double *)c->buf[f] - g->origin_off;
            for (size_t e = 0; e < elems; e++) b[e] = 0;
            if (pass)
                for (int64_t k = 0; k < g->n[2]; k++)
                    for (int64_t j = 0; j < g->n[1]; j++)
                        for (int64_t i = 0; i < g->n[0]; i++)
                            b[g->origin_off + i + j * g->stride[1] + k * g->stride[2]] = 1;
        }
        if (engine_fill(s, 0, c->t, err, len) < 0) return -1;
        for (int f = 0; f < nf; f++) {
            if (!p->field_has_eq[f]) continue;
            const double *b = (const double *)c->buf[f] - g->origin_off;
            double *a = alpha + (size_t)f * elems;
            for (size_t e = 0; e < elems; e++) a[e] = pass ? b[e] - a[e] : b[e];
        }
    }
    return 0;
}

/* The end of the Jacobian row (entries of one output) that starts at entry r0, within `beyond`. */
static int row_end(const check *c, int r0, int beyond)
{
    int r1 = r0;
    while (r1 < beyond && c->jac->entries[r1].output == c->jac->entries[r0].output) r1++;
    return r1;
}

/* The box of cells [blo, bhi) among the scratch's [lo, hi) whose entries of row [r0, r1) all lie on
   cells of the mesh and of the scratch: each entry its own column, summed an entry at a time
   (reduce_cells). 0 when there is none (or every cell must be folded: merged columns, the
   spectral estimate, which takes every entry). */
static int row_box(const check *c, int r0, int r1, const int64_t lo[3], const int64_t hi[3], int64_t blo[3], int64_t bhi[3])
{
    const pj_program *p = c->p;
    const grid_layout *g = c->g;
    int64_t reach[3] = {0, 0, 0};
    for (int e = r0; e < r1; e++)
        for (int a = 0; a < 3; a++) {
            int64_t o = c->jac->entries[e].off[a] < 0 ? -c->jac->entries[e].off[a] : c->jac->entries[e].off[a];
            if (o > reach[a]) reach[a] = o;
        }
    int box = !c->merge_always && !c->sm;
    for (int a = 0; a < 3; a++) {
        int64_t m = a < p->dim ? p->n[a] : 1;
        blo[a] = lo[a] > reach[a] - g->first[a] ? lo[a] : reach[a] - g->first[a];
        if (blo[a] < reach[a]) blo[a] = reach[a];
        bhi[a] = hi[a] < m - g->first[a] - reach[a] ? hi[a] : m - g->first[a] - reach[a];
        if (bhi[a] > g->n[a] - reach[a]) bhi[a] = g->n[a] - reach[a];
        box &= blo[a] < bhi[a];
    }
    if (!box)
        for (int a = 0; a < 3; a++) blo[a] = bhi[a] = 0;
    return box;
}

/* A band's pass (check_rows): the Jacobian kernel over a chunk of the band's own cells at a time
   (not its halo's, whose stencils are not used), its entries into scratch (no buffer of the
   band's size per entry), each chunk reduced at once. */
typedef struct check_stream {
    check *c;
    const double *alpha;
    int64_t lo[3], hi[3];      /* the band's own cells in the scratch simulation */
    int64_t (*box)[2][3];      /* [Jacobian row] its box (blo, bhi), as in check_band; empty: none */
    int *row_first;            /* [Jacobian row + 1] the row's entries */
    int n_rows;
    double *scratch;           /* [n_jac][what a chunk holds] */
    size_t scratch_len;        /* doubles in all */
    int64_t chunk, row_elems;  /* rows of the last axis a launch, cells a row (the layout's stride) */
    int64_t jchunk, ichunk;    /* 0, or lines of y a launch (3D, a plane at a time), or cells of x (a line) */
    void **bufs;               /* the launch's buffers: the entries' into scratch */
    double *line;              /* [2 * cells of a line of x] a box line's radii and centres */
} check_stream;

/* The Jacobian rows of cells [lo, hi) of the scratch into c->rho, their entries at c->buf. */
static void reduce_cells(check_stream *st, const int64_t lo[3], const int64_t hi[3])
{
    check *c = st->c;
    const pj_program *p = c->p;
    const int nf = p->n_fields;
    for (int r = 0; r < st->n_rows; r++) {
        int r0 = st->row_first[r], r1 = st->row_first[r + 1], row_field = c->jac->entries[r0].out_field;
        const int64_t *blo = st->box[r][0], *bhi = st->box[r][1];
        for (int64_t k = lo[2]; k < hi[2]; k++)
            for (int64_t j = lo[1]; j < hi[1]; j++) {
                /* the box's cells of this line within [lo, hi): [i0, i1), else none (i0 = i1 = hi) */
                int64_t i0 = blo[0] > lo[0] ? blo[0] : lo[0], i1 = bhi[0] < hi[0] ? bhi[0] : hi[0];
                if (!(j >= blo[1] && j < bhi[1] && k >= blo[2] && k < bhi[2]) || i0 >= i1) i0 = i1 = hi[0];
                int64_t at = j * c->g->stride[1] + k * c->g->stride[2];
                for (int64_t i = lo[0]; i < hi[0]; i++) {
                    if (i == i0) i = i1; /* the box's cells of this line: below */
                    if (i >= hi[0]) break;
                    double v = folded_row(c, st->alpha, r0, r1, i, j, k);
                    if (v > c->rho) c->rho = v; /* NaN never wins: the check then says nothing */
                }
                if (i0 >= i1) continue;
                /* the box's cells: each entry its own column, added an entry at a time */
                double *radius = st->line, *centre = st->line + (i1 - i0);
                for (int64_t i = 0; i < i1 - i0; i++) radius[i] = centre[i] = 0;
                for (int e = r0; e < r1; e++) {
                    const derive_entry *d = &c->jac->entries[e];
                    if (!p->field_has_eq[d->field]) continue;
                    const double *x = (const double *)c->buf[2 * nf + e] + at + i0;
                    if (d->field == row_field && !d->off[0] && !d->off[1] && !d->off[2])
                        for (int64_t i = 0; i < i1 - i0; i++) centre[i] += x[i];
                    else
                        for (int64_t i = 0; i < i1 - i0; i++) radius[i] += fabs(x[i]);
                }
                for (int64_t i = 0; i < i1 - i0; i++) {
                    double v = radius[i] - centre[i];
                    if (v > c->rho) c->rho = v;
                }
            }
    }
}

/* exec_rows_fn: rows [begin, end) of the last axis, of the band's own (st->lo to st->hi), in
   chunks of at most about CHECK_CHUNK_BYTES of entries: st->chunk rows at a time, or where one
   row (a 3D plane) has more, st->jchunk lines of y of a plane, or where one line has more (many
   entries a cell), st->ichunk cells of a line; a launch covers its chunk alone (its x and y
   ranges and the bases moved, as tblock.c's tiles do). Entry e of the chunk's cell (i, j, z) is
   at scratch + e * per + (i - i0) + (j - j0) * stride[1] + (z - z0) * stride[last]. */
static void check_rows(void *ctx, exec_kernel_fn run, void *run_ctx, const kir_launch *L, int64_t begin, int64_t end)
{
    check_stream *st = ctx;
    check *c = st->c;
    const pj_program *p = c->p;
    const int nf = p->n_fields, last = p->dim - 1, n_jac = c->jac->n, nbuf = c->q.n_slots * nf; /* the scratch's */
    if (begin < st->lo[last]) begin = st->lo[last];
    if (end > st->hi[last]) end = st->hi[last];
    const int64_t nx = L->n[0], ny = p->dim == 3 ? L->n[1] : 1, s1 = p->dim == 3 ? L->stride[1] : 0;
    const int64_t zc = st->jchunk || st->ichunk ? 1 : st->chunk;              /* rows a chunk */
    const int64_t jc = st->ichunk ? 1 : st->jchunk ? st->jchunk : ny;        /* lines of y (3D) */
    const int64_t ic = st->ichunk ? st->ichunk : nx;                         /* cells of x */
    const size_t per = st->scratch_len / (size_t)n_jac; /* doubles an entry */
    kir_launch l = *L;
    l.buf = st->bufs;
    l.prefetch = 0;
    l.step = 0; /* as engine_run (sim_eval) launches it on the scratch simulation */
    l.stage = 1;
    for (int64_t z0 = begin; z0 < end; z0 += zc) {
        int64_t z1 = z0 + zc < end ? z0 + zc : end;
        for (int64_t j0 = 0; j0 < ny; j0 += jc)
            for (int64_t i0 = 0; i0 < nx; i0 += ic) {
                int64_t jn = j0 + jc < ny ? jc : ny - j0, in = i0 + ic < nx ? ic : nx - i0;
                uintptr_t shift = (uintptr_t)(i0 + j0 * s1) * sizeof(double); /* the launch starts at (i0, j0) */
                for (int b = 0; b < nbuf; b++) st->bufs[b] = (void *)((uintptr_t)L->buf[b] + shift);
                for (int e = 0; e < n_jac; e++) {
                    uintptr_t base = (uintptr_t)(st->scratch + (size_t)e * per) - (uintptr_t)(z0 * st->row_elems) * sizeof(double);
                    st->bufs[2 * nf + e] = (void *)base;
                    c->buf[2 * nf + e] = (void *)(base - shift);
                }
                l.first[0] = L->first[0] + i0;
                l.n[0] = in;
                l.beyond[0] = L->beyond[0] + (nx - i0 - in);
                if (p->dim == 3) {
                    l.first[1] = L->first[1] + j0;
                    l.n[1] = jn;
                    l.beyond[1] = L->beyond[1] + (ny - j0 - jn);
                }
                run(run_ctx, &l, z0, z1);
                int64_t lo[3], hi[3];
                memcpy(lo, st->lo, sizeof lo);
                memcpy(hi, st->hi, sizeof hi);
                if (lo[0] < i0) lo[0] = i0;
                if (hi[0] > i0 + in) hi[0] = i0 + in;
                if (p->dim == 3 && lo[1] < j0) lo[1] = j0;
                if (p->dim == 3 && hi[1] > j0 + jn) hi[1] = j0 + jn;
                lo[last] = z0;
                hi[last] = z1;
                reduce_cells(st, lo, hi);
            }
    }
}

/* Band s (its own cells [lo, hi)) by check_rows: the rows' boxes, scratch for a chunk of rows of
   every entry (c->scratch, kept for the next band), the Jacobian kernel shaped by check_rows. */
static int stream_band(check *c, engine *s, const double *alpha, const int64_t lo[3], const int64_t hi[3], char *err,
                       size_t len)
{
    const pj_program *p = c->p;
    const int nf = p->n_fields, last = p->dim - 1, n_jac = c->jac->n;
    if (n_jac == 0) return 0; /* nothing depends on the state: no disc */
    check_stream st = {.c = c, .alpha = alpha, .row_elems = c->g->stride[last]};
    memcpy(st.lo, lo, sizeof st.lo);
    memcpy(st.hi, hi, sizeof st.hi);
    int rc = -1;
    st.row_first = malloc(sizeof *st.row_first * (size_t)(n_jac + 1));
    st.box = malloc(sizeof *st.box * (size_t)(n_jac + 1));
    st.bufs = malloc(sizeof *st.bufs * (size_t)(2 * nf + n_jac));
    st.line = malloc(sizeof *st.line * 2 * (size_t)(c->g->n[0] > 0 ? c->g->n[0] : 1));
    if (!st.row_first || !st.box || !st.bufs || !st.line) goto oom;
    for (int r0 = 0; r0 < n_jac; r0 = st.row_first[++st.n_rows]) {
        st.row_first[st.n_rows] = r0;
        int r1 = row_end(c, r0, n_jac);
        row_box(c, r0, r1, lo, hi, st.box[st.n_rows][0], st.box[st.n_rows][1]);
        st.row_first[st.n_rows + 1] = r1;
    }
    /* the chunks (check_rows): rows of the last axis, else lines of y (3D), else cells of x */
    double cell = (double)n_jac * sizeof(double);
    st.chunk = (int64_t)(c->chunk_bytes / (cell * (double)st.row_elems));
    if (st.chunk < 1 && last == 2) st.jchunk = (int64_t)(c->chunk_bytes / (cell * (double)c->g->stride[1]));
    if (st.chunk < 1 && st.jchunk < 1 && last > 0) {
        st.jchunk = 0;
        st.ichunk = (int64_t)(c->chunk_bytes / cell);
        if (st.ichunk < 1) st.ichunk = 1;
    }
    if (st.chunk < 1) st.chunk = 1;
    size_t need = (size_t)n_jac * (size_t)(st.ichunk ? st.ichunk : st.jchunk ? st.jchunk * c->g->stride[1] : st.chunk * st.row_elems);
    if (c->scratch_len < need) {
        free(c->scratch);
        c->scratch_len = 0;
        if (!(c->scratch = malloc(sizeof *c->scratch * need))) goto oom;
        c->scratch_len = need;
    }
    st.scratch = c->scratch;
    st.scratch_len = need;
    if (engine_eval(s, PJ_KERNEL_JACOBIAN, c->t, c->p->dt, check_rows, &st, err, len) == 0) rc = 0;
    goto done;
oom:
    diag_set(err, len, "out of memory");
done:
    free(st.row_first);
    free(st.box);
    free(st.bufs);
    free(st.line);
    return rc;
}

/* Rows [b0, b1) of the last axis: a scratch simulation holds them and the halo's rows on each
   side (wrapped on a periodic axis), whose own stencils are not used; the sides of the mesh among
   its sides are filled by their conditions as in the run. */
static int check_band(check *c, int64_t b0, int64_t b1, char *err, size_t len)
{
    const pj_program *p = c->p;
    int nf = p->n_fields, last = p->dim - 1, H = p->halo > 0 ? p->halo : 1;
    int64_t N = p->n[last];
    int whole = b0 == 0 && b1 == N;
    int64_t e0 = whole ? 0 : p->periodic[last] ? b0 - H : (b0 - H > 0 ? b0 - H : 0);
    int64_t e1 = whole ? N : p->periodic[last] ? b1 + H : (b1 + H < N ? b1 + H : N);
    grid_block block = {{0, 0, 0}, {1, 1, 1}};
    ghost_settings ghosts = {0};
    for (int a = 0; a < p->dim; a++) block.n[a] = p->n[a];
    block.first[last] = e0;
    block.n[last] = e1 - e0;
    ghosts.exchanged[2 * last] = e0 != 0 || (!whole && p->periodic[last]);     /* no rule: rows held */
    ghosts.exchanged[2 * last + 1] = e1 != N || (!whole && p->periodic[last]);
    pj_kernel_id jk = PJ_KERNEL_JACOBIAN;
    engine_options so = {.threads = 1, .block = whole ? NULL : &block, .kernels = &jk, .n_kernels = 1};
    if (!whole) so.ghosts = ghosts;
    int rc = -1;
    double *alpha = NULL;
    engine *s = engine_create(engine_backend(c->cells >= CHECK_JIT_CELLS ? "cpu" : "interp"), &c->q, &so, NULL, err, len);
    if (!s) goto done; /* its buffers are zero, its clock at 0: every field is set below */
    const grid_layout *g = c->g = engine_layout(s);
    c->buf = malloc(sizeof *c->buf * (size_t)(c->q.n_slots * nf + c->jac->n));
    if (!c->buf) {
        diag_set(err, len, "out of memory");
        goto done;
    }
    for (int b = 0; b < c->q.n_slots * nf; b++) {
        engine_view v;
        if (engine_view_buffer(s, b, &v) < 0) {
            diag_set(err, len, "the stability check's scratch simulation has no buffer %d", b);
            goto done;
        }
        c->buf[b] = v.data;
    }
    if (c->params) engine_set_param_values(s, c->params); /* one evaluation, not one a param */
    /* each ghost cell's share of the cell it stands for (ghost_alpha, in slot 0 before the state) */
    size_t elems = g->elems;
    if (c->alpha_len < elems * (size_t)nf) { /* kept for the next band: no fresh pages each band */
        free(c->alpha);
        c->alpha_len = 0;
        if (!(c->alpha = malloc(sizeof *c->alpha * elems * (size_t)nf))) {
            diag_set(err, len, "out of memory");
            goto done;
        }
        c->alpha_len = elems * (size_t)nf;
    }
    alpha = c->alpha;
    if (ghost_alpha(c, s, alpha, err, len) < 0) goto done;
    int64_t plane = 1; /* cells per row of the last axis */
    for (int a = 0; a < last; a++) plane *= p->n[a];
    /* the band's rows of each field: from the state gathered in mesh order (a run of it where the
       band does not wrap), or from the run's own buffers (c->view) through a buffer kept for the next band */
    int wraps = e0 < 0 || e1 > N, copy = wraps || c->view;
    size_t band_cells = (size_t)(plane * (e1 - e0));
    if (copy && c->band_len < band_cells) {
        free(c->band);
        c->band_len = 0;
        if (!(c->band = malloc(sizeof *c->band * band_cells))) {
            diag_set(err, len, "out of memory");
            goto done;
        }
        c->band_len = band_cells;
    }
    for (int f = 0; f < nf; f++) {
        const double *from = copy ? c->band : c->state + ((size_t)f * (size_t)N + (size_t)e0) * (size_t)plane;
        for (int64_t r = e0; copy && r < e1; r++) {
            int64_t m = (r % N + N) % N; /* the mesh's row */
            double *to = c->band + (r - e0) * plane;
            if (!c->view) {
                memcpy(to, c->state + ((size_t)f * (size_t)N + (size_t)m) * (size_t)plane, sizeof *to * (size_t)plane);
                continue;
            }
            const engine_view *v = &c->view[f];
            const double *row = (const double *)v->data + m * v->stride[last];
            if (last == 1) memcpy(to, row, sizeof *to * (size_t)p->n[0]);
            else
                for (int64_t j = 0; j < p->n[1]; j++) memcpy(to + j * p->n[0], row + j * v->stride[1], sizeof *to * (size_t)p->n[0]);
        }
        if (engine_set_field(s, f, from, err, len) < 0) goto done;
    }
    int64_t lo[3] = {0, 0, 0}, hi[3] = {g->n[0], g->n[1], g->n[2]};
    lo[last] = b0 - e0;
    hi[last] = b1 - e0;
    rc = stream_band(c, s, alpha, lo, hi, err, len);
done:

    free(c->buf);
    c->buf = NULL;
    engine_destroy(s);
    return rc;
}

/* The bands' rows: as many as the budget allows (the whole mesh when it fits) for what a band
   holds, 3 n_fields buffers (the state, its ghost fill, alpha; the entries are a chunk's at a
   time, check_rows). */
static int plan_check(check *c, double budget, int64_t *band_rows)
{
    const pj_program *p = c->p;
    int nf = p->n_fields, last = p->dim - 1, H = p->halo > 0 ? p->halo : 1;
    int64_t N = p->n[last];
    double row_bytes = sizeof(double);
    for (int a = 0; a < last; a++) row_bytes *= (double)(p->n[a] + 2 * H + 8);
    int n_jac = c->jac->n, longest = 0;
    for (int e = 0, e1; e < n_jac; e = e1)
        if ((e1 = row_end(c, e, n_jac)) - e > longest) longest = e1 - e;
    double rows = floor(budget / (row_bytes * 3.0 * nf)) - 4 * H;
    if (rows < 1) rows = 1;
    *band_rows = rows >= (double)N ? N : (int64_t)rows;
    c->q.n_slots = 2; /* the state and a fill: the entries (slots 2 on, buffer 2 nf + e) are check_rows' */
    if (c->q.n_stages > 1) c->q.n_stages = 1; /* no stage runs here: the first (reading slot 0) for the layout */
    c->row = malloc(sizeof *c->row * (size_t)(longest + 1));
    return c->row ? 0 : -1;
}

int stability_gershgorin_within(engine *e, double budget, double *limit, char *err, size_t len)
{
    const pj_program *p = engine_program(e);
    *limit = INFINITY;
    if (PJ_SCHEME_IMPLICIT(p->scheme) || !p->rhs || !p->rhs->n_outputs) return 0;
    return limit_of_state(e, budget, 0, NULL, limit, err, len);
}

static int limit_of_state(engine *e, double budget, int spectral, const double *gathered, double *limit, char *err,
                          size_t len)
{
    const pj_program *p = engine_program(e);
    double bound = entries_bound(p->rhs);
    if (bound > CHECK_MAX_ENTRIES) {
        diag_set(err, len,
                 "the stability check was not made: the Jacobian has up to %.0f entries per cell (the check takes "
                 "%.0f at most); make sure dt is stable, or pass --no-stability-check", bound, CHECK_MAX_ENTRIES);
        *limit = INFINITY;
        return 1;
    }
    check c = {.p = p, .q = *p, .params = engine_params(e), .t = engine_time(e)};
    c.jac = program_jacobian(p, NULL, 0);
    c.q.jacobian = (pj_jacobian *)c.jac; /* p's, derived: the scratch runs it (not a copy of its own) */
    c.chunk_bytes = budget < CHECK_CHUNK_BYTES ? budget : fmax(CHECK_CHUNK_BYTES, CHECK_CHUNK_CELLS * sizeof(double) * c.jac->n);
    if (!c.jac) {
        diag_set(err, len, "the stability check could not derive the Jacobian");
        return -1;
    }
    for (int i = 0; i < c.jac->n; i++) c.merge_always |= c.jac->entries[i].slot != 0;
    int rc = -1;
    double *state = NULL;
    engine_view *views = NULL;
    spectral_matrix sm = {0}, reduced = {0};
    int64_t band_rows = 0, cells = engine_cells(e), N = p->n[p->dim - 1];
    /* the whole Jacobian assembled for the spectral estimate when it fits (spectral.h); else, and
       when the estimate fails, Gershgorin's bound alone */
    sm.n = (int64_t)p->n_fields * cells;
    sm.most = (int64_t)cells * c.jac->n;
    c.cells = cells;
    if (spectral && spectral_bytes(sm.n, (double)sm.most) <= SPECTRAL_BYTES) c.sm = &sm;
    else if (p->n_algebraic) goto not_reduced; /* the reduction needs the whole Jacobian */
    if (plan_check(&c, budget, &band_rows) < 0) {
        diag_set(err, len, "out of memory");
        goto done;
    }
    if (!gathered && p->dim > 1 && (views = calloc((size_t)p->n_fields, sizeof *views))) {
        int ok = 1; /* the run's fields on the host in doubles: read in place, no copy of the state */
        for (int f = 0; f < p->n_fields && ok; f++)
            ok = engine_view_field(e, f, &views[f]) == 0 && views[f].data && !views[f].on_device &&
                 views[f].elem_size == (int)sizeof(double) && views[f].stride[0] == 1;
        if (ok) c.view = views;
    }
    if (!gathered && !c.view) {
        state = malloc(sizeof *state * (size_t)(cells > 0 ? cells : 1) * (size_t)p->n_fields);
        if (!state) {
            diag_set(err, len, "out of memory");
            goto done;
        }
        for (int f = 0; f < p->n_fields; f++)
            if (engine_get_field(e, f, state + (size_t)f * (size_t)cells, err, len) < 0) goto done;
    }
    c.state = gathered ? gathered : state;
    for (int64_t b0 = 0; b0 < N; b0 += band_rows)
        if (check_band(&c, b0, b0 + band_rows < N ? b0 + band_rows : N, err, len) < 0) goto done;
    if (p->n_algebraic) { /* the DAE's Jacobian: the scheme steps the system with m = -b/a (spectral_reduce.c) */
        if (spectral_reduce(&sm, p->field_algebraic, p->n_fields, cells, &reduced, &c.rho) < 0) goto not_reduced;
        spectral_free(&sm);
        sm = reduced;
        reduced = (spectral_matrix){0};
    }
    *limit = c.rho > 0 ? beta_of(p->scheme) / c.rho : INFINITY;
    if (c.sm) spectral_limit(&sm, p->scheme, *limit, limit);
    rc = 0;
    goto done;
not_reduced:
    diag_set(err, len, "the stability check was not made: an explicit scheme with an algebraic equation steps the "
             "system with the algebraic fields eliminated, whose Jacobian could not be formed (too large, or an "
             "algebraic equation's derivative by its unknown is 0 here); make sure dt is stable, or pass "
             "--no-stability-check");
    *limit = INFINITY;
    rc = 1;
done:
    spectral_free(&reduced);
    spectral_free(&sm);
    free(state);
    free(c.row);
    free(c.scratch);
    free(c.alpha);
    free(c.band);
    free(views);
    return rc;
}

int stability_state_free(const pj_program *p)
{
    const pj_jacobian *jac = program_jacobian(p, NULL, 0);
    if (!jac) return 0;
    const kir_kernel *ks[7] = {jac->kernel};
    int nk = 1;
    for (int side = 0; side < 2 * p->dim; side++) {
        if (p->bc_kernel[side]) ks[nk++] = p->bc_kernel[side];
        for (int f = 0; f < p->n_fields; f++)
            if (p->bc[f][side].kind != PJ_BC_PERIODIC && p->bc[f][side].kind != PJ_BC_LINEAR) return 0;
    }
    for (int i = 0; i < nk; i++)
        for (int id = 0; id < ks[i]->n_nodes; id++) {
            int op = ks[i]->nodes[id].op;
            if (op == KIR_LOAD || op == KIR_TIME || op == KIR_DT || op == KIR_RAND) return 0;
        }
    return 1;
}

void stability_memo_clear(stability_memo *m)
{
    free(m->params);
    *m = (stability_memo){.reused = m->reused};
}

void stability_memo_free(stability_memo *m) { stability_memo_clear(m); }

int stability_limit_memo(engine *e, stability_memo *m, double *limit, char *err, size_t len)
{
    const pj_program *p = engine_program(e);
    const double *params = engine_params(e);
    if (m && m->p == p && m->n_params == p->n_params &&
        (!p->n_params || !memcmp(m->params, params, sizeof *params * (size_t)p->n_params))) {
        m->reused++;
        *limit = m->limit;
        return 0;
    }
    int made = stability_limit(e, limit, err, len);
    if (!m) return made;
    stability_memo_clear(m);
    if (made != 0 || !stability_state_free(p)) return made;
    m->params = p->n_params ? malloc(sizeof *params * (size_t)p->n_params) : NULL;
    if (p->n_params && !m->params) return made; /* nothing kept */
    if (p->n_params) memcpy(m->params, params, sizeof *params * (size_t)p->n_params);
    m->p = p;
    m->n_params = p->n_params;
    m->limit = *limit;
    return made;
}

int stability_check(engine *e, double dt, char *err, size_t len) { return stability_check_memo(e, NULL, dt, err, len); }

int stability_check_memo(engine *e, stability_memo *m, double dt, char *err, size_t len)
{
    double limit;
    int made = stability_limit_memo(e, m, &limit, err, len);
    if (made) return made < 0 ? -1 : 2;
    if (!(dt > limit * (1 + 1e-6))) return 0;
    diag_set(err, len, "dt = %.6g exceeds the explicit stability limit (about %.3g) of %s; use a smaller dt or an implicit scheme",
             dt, limit, scheme_name(engine_program(e)->scheme));
    return 1;
}
