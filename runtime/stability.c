/* stability.c — the explicit stability check: is dt within the limit of an explicit scheme for
 * the linearised right-hand side at the current state?
 *
 * The Jacobian dF/dU is the program's (program_jacobian: the symbolic derivative of its rhs kernel,
 * derive.h), run by the interpreter on a scratch simulation (an interp engine: engine.h,
 * engine_run) holding a copy of the state. Every row's entries, each moved onto the interior cell
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
 * Cost: the Jacobian kernel writes one buffer per entry (stencil point and field), so the check
 * holds at most about CHECK_SCRATCH_BYTES of them: the mesh in bands along its last axis (each
 * band's scratch simulation also holds the halo's rows beyond it, and its sides on the mesh's
 * sides take their conditions), a Jacobian with many entries per cell in groups of whole rows
 * (kir_subset). Cells whose entries all stay inside the mesh are summed an entry at a time over
 * contiguous cells (Gershgorin alone), only the others fold and merge their entries; with the
 * spectral estimate every cell goes through folded_row. Any split gives the same limit (to
 * rounding: a group kernel may round an entry otherwise). */
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

/* The check's scratch buffers stay within about this many bytes: the Jacobian's entries take one
   buffer each, so a large mesh is taken in bands along its last axis and a Jacobian with many
   entries per cell (hundreds of coupled fields) in groups of rows, one band and group at a time. */
#define CHECK_SCRATCH_BYTES ((double)(64 << 20))

/* The check's work grows with the Jacobian's entries per cell, which grow with the square of the
   number of fields when every field is coupled to every other (a sum over all the fields of a
   multi-phase-field model): beyond this many the check is not made (1000 such fields: a million
   entries, 20 s of CPU for the estimate) and the run says so. */
#define CHECK_MAX_ENTRIES 200000.0

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

static int limit_of_state(engine *e, double budget, const double *gathered, double *limit, char *err, size_t len);

int stability_limit(engine *e, double *limit, char *err, size_t len)
{
    return stability_limit_within(e, CHECK_SCRATCH_BYTES, limit, err, len);
}

int stability_limit_within(engine *e, double budget, double *limit, char *err, size_t len)
{
    const pj_program *p = engine_program(e);
    *limit = INFINITY;
    if (PJ_SCHEME_IMPLICIT(p->scheme) || !p->rhs || !p->rhs->n_outputs) return 0;
    if (engine_processes(e) == 1) return limit_of_state(e, budget, NULL, limit, err, len);
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
        found[0] = limit_of_state(e, budget, gathered, &found[1], err, len);
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
    const double *state;       /* every field's cells in mesh order, one field after another */
    const double *params;      /* the run's values (--set), not the file's */
    double t;
    int n_groups;
    int *group_first;          /* [n_groups + 1]: group g holds entries [group_first[g], group_first[g + 1]) */
    kir_kernel **group_kernel; /* [n_groups]: its outputs alone (NULL: the whole Jacobian) */
    folded *row;               /* one row's entries */
    const grid_layout *g;      /* the band's scratch simulation: its layout */
    void **buf;                /* and its buffers (host addresses: slot * n_fields + field) */
    int merge_always;          /* entries of one row may share a column unmoved (loads of two slots) */
    double rho;
    spectral_matrix *sm;       /* NULL, or every row's entries go here too (spectral.h) */
    int64_t cells;             /* the mesh's cells: rows are field * cells + cell */
} check;

static int by_column(const void *a, const void *b)
{
    const folded *x = a, *y = b;
    if (x->field != y->field) return x->field < y->field ? -1 : 1;
    for (int i = 2; i >= 0; i--)
        if (x->pos[i] != y->pos[i]) return x->pos[i] < y->pos[i] ? -1 : 1;
    return 0;
}

/* Row [r0, r1) of the Jacobian (group entries from `first`) at cell (i, j, k) of the scratch s:
   its disc's leftmost point, negated (radius - centre), with every entry moved onto the mesh's
   cell it stands for (a ghost's through alpha) and the entries on one cell added. */
static double folded_row(check *c, const double *alpha, int first, int r0, int r1, int64_t i, int64_t j, int64_t k)
{
    const pj_program *p = c->p;
    const grid_layout *g = c->g;
    int nf = p->n_fields, row_field = c->jac->entries[r0].out_field, n = 0, moved = c->merge_always;
    int64_t cell = i + j * g->stride[1] + k * g->stride[2];
    int64_t here[3] = {i + g->first[0], j + g->first[1], k + g->first[2]}; /* in the mesh */
    for (int e = r0; e < r1; e++) {
        const derive_entry *d = &c->jac->entries[e];
        if (!p->field_has_eq[d->field]) continue; /* a coefficient does not evolve */
        double v = ((const double *)c->buf[2 * nf + (e - first)])[cell];
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

/* The entries of group grp (the whole Jacobian when in one group) into buffers 2 * nf + e of the
   scratch s: its program's Jacobian is the group's while it runs. */
static int eval_group(check *c, engine *s, int grp, char *err, size_t len)
{
    pj_jacobian group = *c->jac;
    if (c->group_kernel[grp]) group.kernel = c->group_kernel[grp];
    c->q.jacobian = &group;
    int rc = engine_run(s, PJ_KERNEL_JACOBIAN, c->t, c->p->dt, err, len);
    c->q.jacobian = NULL;
    return rc;
}

/* A ghost cell is alpha * (its mirror or periodic partner) + beta: alpha from two fills of slot
   1 of the scratch s (interior 0, then 1), so that a ghost's entry lands on the cell it stands
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
            double *b = (double *)c->buf[nf + f] - g->origin_off;
            for (size_t e = 0; e < elems; e++) b[e] = 0;
            if (pass)
                for (int64_t k = 0; k < g->n[2]; k++)
                    for (int64_t j = 0; j < g->n[1]; j++)
                        for (int64_t i = 0; i < g->n[0]; i++)
                            b[g->origin_off + i + j * g->stride[1] + k * g->stride[2]] = 1;
        }
        if (engine_fill(s, 1, c->t, err, len) < 0) return -1;
        for (int f = 0; f < nf; f++) {
            if (!p->field_has_eq[f]) continue;
            const double *b = (const double *)c->buf[nf + f] - g->origin_off;
            double *a = alpha + (size_t)f * elems;
            for (size_t e = 0; e < elems; e++) a[e] = pass ? b[e] - a[e] : b[e];
        }
    }
    return 0;
}

/* Rows [r0, r1) of the Jacobian (group entries from `first`) over the cells [blo, bhi) whose
   entries all lie on cells of the mesh and of the scratch: each entry its own column, summed an
   entry at a time over contiguous cells into acc (2 elems), the largest disc reach into c->rho. */
static void sum_box(check *c, double *acc, int first, int r0, int r1, const int64_t blo[3], const int64_t bhi[3])
{
    const pj_program *p = c->p;
    const grid_layout *g = c->g;
    int nf = p->n_fields, row_field = c->jac->entries[r0].out_field;
    size_t elems = g->elems;
    double *radius = acc, *centre = acc + elems;
    for (int64_t k = blo[2]; k < bhi[2]; k++)
        for (int64_t j = blo[1]; j < bhi[1]; j++) {
            size_t at = (size_t)(g->origin_off + j * g->stride[1] + k * g->stride[2]);
            for (int64_t i = blo[0]; i < bhi[0]; i++) radius[at + (size_t)i] = centre[at + (size_t)i] = 0;
        }
    for (int e = r0; e < r1; e++) {
        const derive_entry *d = &c->jac->entries[e];
        if (!p->field_has_eq[d->field]) continue; /* a coefficient does not evolve */
        const double *v = (const double *)c->buf[2 * nf + (e - first)] - g->origin_off;
        int is_centre = d->field == row_field && !d->off[0] && !d->off[1] && !d->off[2];
        double *sum = is_centre ? centre : radius;
        for (int64_t k = blo[2]; k < bhi[2]; k++)
            for (int64_t j = blo[1]; j < bhi[1]; j++) {
                size_t at = (size_t)(g->origin_off + j * g->stride[1] + k * g->stride[2]);
                if (is_centre)
                    for (int64_t i = blo[0]; i < bhi[0]; i++) sum[at + (size_t)i] += v[at + (size_t)i];
                else
                    for (int64_t i = blo[0]; i < bhi[0]; i++) sum[at + (size_t)i] += fabs(v[at + (size_t)i]);
            }
    }
    for (int64_t k = blo[2]; k < bhi[2]; k++)
        for (int64_t j = blo[1]; j < bhi[1]; j++) {
            size_t at = (size_t)(g->origin_off + j * g->stride[1] + k * g->stride[2]);
            for (int64_t i = blo[0]; i < bhi[0]; i++) {
                double r = radius[at + (size_t)i] - centre[at + (size_t)i];
                if (r > c->rho) c->rho = r; /* NaN never wins: the check then says nothing */
            }
        }
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
    engine_options so = {.threads = 1, .block = whole ? NULL : &block};
    if (!whole) so.ghosts = ghosts;
    int rc = -1;
    double *cells = NULL, *alpha = NULL, *acc = NULL;
    engine *s = engine_create(engine_backend("interp"), &c->q, &so, NULL, err, len);
    if (!s) goto done; /* its buffers are zero, its clock at 0: every field is set below */
    const grid_layout *g = c->g = engine_layout(s);
    c->buf = malloc(sizeof *c->buf * (size_t)(c->q.n_slots * nf));
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
    int64_t plane = 1; /* cells per row of the last axis */
    for (int a = 0; a < last; a++) plane *= p->n[a];
    cells = malloc(sizeof *cells * (size_t)(plane * (e1 - e0)));
    if (!cells) {
        diag_set(err, len, "out of memory");
        goto done;
    }
    for (int f = 0; f < nf; f++) {
        for (int64_t r = e0; r < e1; r++)
            memcpy(cells + (r - e0) * plane, c->state + ((size_t)f * (size_t)N + (size_t)((r % N + N) % N)) * (size_t)plane,
                   sizeof *cells * (size_t)plane);
        if (engine_set_field(s, f, cells, err, len) < 0) goto done;
    }
    if (c->params) engine_set_param_values(s, c->params); /* one evaluation, not one a param */
    /* each ghost cell's share of the cell it stands for (ghost_alpha) */
    size_t elems = g->elems;
    alpha = malloc(sizeof *alpha * elems * (size_t)nf);
    if (!alpha) {
        diag_set(err, len, "out of memory");
        goto done;
    }
    if (ghost_alpha(c, s, alpha, err, len) < 0) goto done;
    int64_t lo[3] = {0, 0, 0}, hi[3] = {g->n[0], g->n[1], g->n[2]};
    lo[last] = b0 - e0;
    hi[last] = b1 - e0;
    acc = malloc(sizeof *acc * elems * 2);
    if (!acc) {
        diag_set(err, len, "out of memory");
        goto done;
    }
    for (int grp = 0; grp < c->n_groups; grp++) {
        int first = c->group_first[grp], beyond = c->group_first[grp + 1];
        if (eval_group(c, s, grp, err, len) < 0) goto done;
        for (int r0 = first, r1; r0 < beyond; r0 = r1) { /* a row of the Jacobian: entries [r0, r1) */
            int64_t reach[3] = {0, 0, 0}, blo[3], bhi[3];
            for (r1 = r0; r1 < beyond && c->jac->entries[r1].output == c->jac->entries[r0].output; r1++)
                for (int a = 0; a < 3; a++) {
                    int64_t o = c->jac->entries[r1].off[a] < 0 ? -c->jac->entries[r1].off[a] : c->jac->entries[r1].off[a];
                    if (o > reach[a]) reach[a] = o;
                }
            /* the box of cells whose entries all lie on cells of the mesh and of the scratch: each
               entry its own column, summed an entry at a time over contiguous cells */
            int box = !c->merge_always && !c->sm; /* the spectral estimate takes every entry */
            for (int a = 0; a < 3; a++) {
                int64_t m = a < p->dim ? p->n[a] : 1;
                blo[a] = lo[a] > reach[a] - g->first[a] ? lo[a] : reach[a] - g->first[a];
                if (blo[a] < reach[a]) blo[a] = reach[a];
                bhi[a] = hi[a] < m - g->first[a] - reach[a] ? hi[a] : m - g->first[a] - reach[a];
                if (bhi[a] > g->n[a] - reach[a]) bhi[a] = g->n[a] - reach[a];
                box &= blo[a] < bhi[a];
            }
            if (box) sum_box(c, acc, first, r0, r1, blo, bhi);
            /* the other cells: entries moved onto the cells they stand for, those on one cell added */
            for (int64_t k = lo[2]; k < hi[2]; k++)
                for (int64_t j = lo[1]; j < hi[1]; j++)
                    for (int64_t i = lo[0]; i < hi[0]; i++) {
                        if (box && i >= blo[0] && i < bhi[0] && j >= blo[1] && j < bhi[1] && k >= blo[2] && k < bhi[2]) {
                            i = bhi[0] - 1;
                            continue;
                        }
                        double r = folded_row(c, alpha, first, r0, r1, i, j, k);
                        if (r > c->rho) c->rho = r;
                    }
        }
    }
    rc = 0;
done:
    free(cells);
    free(alpha);
    free(acc);
    free(c->buf);
    c->buf = NULL;
    engine_destroy(s);
    return rc;
}

/* Groups of whole rows within `most` entries each (a longer row alone), and the bands' rows. */
static int plan_check(check *c, double budget, int64_t *band_rows)
{
    const pj_program *p = c->p;
    int nf = p->n_fields, last = p->dim - 1, H = p->halo > 0 ? p->halo : 1;
    int64_t N = p->n[last];
    double row_bytes = sizeof(double);
    for (int a = 0; a < last; a++) row_bytes *= (double)(p->n[a] + 2 * H + 8);
    int n_jac = c->jac->n, longest = 0;
    for (int e = 0; e < n_jac;) {
        int e1 = e;
        while (e1 < n_jac && c->jac->entries[e1].output == c->jac->entries[e].output) e1++;
        if (e1 - e > longest) longest = e1 - e;
        e = e1;
    }
    /* every entry at once, in bands as deep as the budget allows (the whole mesh when it fits) */
    double rows = floor(budget / (row_bytes * (2.0 * nf + n_jac + nf))) - 4 * H;
    double most = n_jac;
    if (rows < 16 && rows < N) { /* bands of 16 rows, and the entries in groups */
        rows = N < 16 ? (double)N : 16;
        most = floor(budget / (row_bytes * (rows + 4 * H))) - 3.0 * nf;
        if (most < longest) most = longest;
        rows = floor(budget / (row_bytes * (2.0 * nf + most + nf))) - 4 * H;
        if (rows < 1) rows = 1;
    }
    *band_rows = rows >= (double)N ? N : (int64_t)rows;
    c->group_first = malloc(sizeof *c->group_first * (size_t)(n_jac + 2));
    if (!c->group_first) return -1;
    c->n_groups = 0;
    c->group_first[0] = 0;
    int largest = 0;
    for (int e = 0; e < n_jac;) {
        int e1 = e;
        while (e1 < n_jac && c->jac->entries[e1].output == c->jac->entries[e].output) e1++;
        int start = c->group_first[c->n_groups];
        if (e > start && e1 - start > most) c->group_first[++c->n_groups] = e; /* a new group at this row */
        e = e1;
    }
    c->group_first[++c->n_groups] = n_jac;
    c->group_kernel = calloc((size_t)c->n_groups, sizeof *c->group_kernel);
    if (!c->group_kernel) return -1;
    for (int grp = 0; grp < c->n_groups; grp++) {
        int n = c->group_first[grp + 1] - c->group_first[grp];
        if (n > largest) largest = n;
        if (c->n_groups > 1 && !(c->group_kernel[grp] = kir_subset(c->jac->kernel, c->group_first[grp], n))) return -1;
    }
    c->q.n_slots = 2 + (largest + nf - 1) / nf;
    if (c->q.n_stages > 1) c->q.n_stages = 1; /* no stage runs here: the first (reading slot 0) for the layout */
    c->row = malloc(sizeof *c->row * (size_t)(longest + 1));
    return c->row ? 0 : -1;
}

static int limit_of_state(engine *e, double budget, const double *gathered, double *limit, char *err, size_t len)
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
    c.q.jacobian = NULL; /* set to a group's while it runs (check_band) */
    if (!c.jac) {
        diag_set(err, len, "the stability check could not derive the Jacobian");
        return -1;
    }
    for (int i = 0; i < c.jac->n; i++) c.merge_always |= c.jac->entries[i].slot != 0;
    int rc = -1;
    double *state = NULL;
    spectral_matrix sm = {0}, reduced = {0};
    int64_t band_rows = 0, cells = engine_cells(e), N = p->n[p->dim - 1];
    if (plan_check(&c, budget, &band_rows) < 0) {
        diag_set(err, len, "out of memory");
        goto done;
    }
    if (!gathered) {
        state = malloc(sizeof *state * (size_t)(cells > 0 ? cells : 1) * (size_t)p->n_fields);
        if (!state) {
            diag_set(err, len, "out of memory");
            goto done;
        }
        for (int f = 0; f < p->n_fields; f++)
            if (engine_get_field(e, f, state + (size_t)f * (size_t)cells, err, len) < 0) goto done;
    }
    c.state = gathered ? gathered : state;
    /* the whole Jacobian assembled for the spectral estimate when it fits (spectral.h); else, and
       when the estimate fails, Gershgorin's bound alone */
    sm.n = (int64_t)p->n_fields * cells;
    sm.most = (int64_t)cells * c.jac->n;
    c.cells = cells;
    if (spectral_bytes(sm.n, (double)sm.most) <= SPECTRAL_BYTES) c.sm = &sm;
    else if (p->n_algebraic) goto not_reduced; /* the reduction needs the whole Jacobian */
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
    for (int i = 0; c.group_kernel && i < c.n_groups; i++) kir_free(c.group_kernel[i]);
    free(c.group_kernel);
    free(c.group_first);
    free(c.row);
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
