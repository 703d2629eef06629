/* stability.c — the explicit stability check: is dt within the limit of an explicit scheme for
 * the linearised right-hand side at the current state?
 *
 * The Jacobian dF/dU comes from the symbolic derivative of the rhs kernel (derive.h), run by the
 * interpreter on a scratch simulation holding a copy of the state. Gershgorin's discs bound its
 * eigenvalues: row i's disc has centre J_ii and radius r_i = sum of |J_ij|, j != i (every other
 * entry of the row: other fields, other offsets; a ghost cell's entry moved onto the interior cell
 * its boundary rule reads, times d ghost / d that cell, as the implicit solver's Jacobian does). The leftmost
 * point of any disc, -rho with rho = max_i (r_i - J_ii), bounds how far the spectrum reaches
 * into the left half plane; growth (a positive J_ii) does not count against dt, decay does. An
 * explicit scheme is stable along the negative real axis up to dt * rho <= beta: 2 for euler and
 * rk2, 2.51 for rk3, 2.79 for rk4. For diffusion rho is exact (4D/h^2 per axis), for upwind
 * advection it gives the CFL limit c*dt/h <= 1 under euler; for centred advection it stays within
 * the schemes' imaginary-axis limits. The check refuses dt > (1 + 1e-6) * beta / rho. */
#include "stability.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "derive.h"
#include "diag.h"
#include "grid.h"
#include "scheme.h"
#include "sim.h"

static double beta_of(pj_scheme s)
{
    switch (s) {
    case PJ_EULER: return 2.0;
    case PJ_RK2: return 2.0;
    case PJ_RK3: return 2.5127453266183286;
    case PJ_RK4: return 2.785293563405282;
    default: return INFINITY;
    }
}

/* One Jacobian entry of a row, its column moved onto the interior cell it stands for. */
typedef struct folded { int field; int64_t pos[3]; double v; } folded;

static int limit_of_state(engine *e, const double *gathered, double *limit, char *err, size_t len);

int stability_limit(engine *e, double *limit, char *err, size_t len)
{
    const pj_program *p = engine_program(e);
    *limit = INFINITY;
    if (PJ_SCHEME_IMPLICIT(p->scheme) || !p->rhs || !p->rhs->n_outputs) return 0;
    if (engine_processes(e) == 1) return limit_of_state(e, NULL, limit, err, len);
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
        found[0] = limit_of_state(e, gathered, &found[1], err, len);
        free(gathered);
    }
    engine_bcast(e, found, sizeof found);
    *limit = found[1];
    return (int)found[0];
}

/* The limit at the engine's state (or, over MPI, the state gathered: every field in turn). */
static int limit_of_state(engine *e, const double *gathered, double *limit, char *err, size_t len)
{
    const pj_program *p = engine_program(e);
    /* a program of the same problem whose stages are the rhs and its Jacobian (scheme.c's
       implicit lowering), sharing everything else with p */
    pj_program q = *p;
    q.scheme = PJ_BEULER;
    q.stages = NULL;
    q.jac = NULL;
    if (scheme_lower(&q) < 0) {
        diag_set(err, len, "the stability check could not derive the Jacobian");
        return -1;
    }
    int rc = -1;
    double *state = NULL, *alpha = NULL;
    folded *entries = NULL;
    sim_options so = {.single = 0, .threads = 1};
    sim *s = sim_create(&q, &so, err, len);
    if (!s) goto done;
    sim_init(s);
    int64_t cells = engine_cells(e);
    state = malloc(sizeof *state * (size_t)(cells > 0 ? cells : 1));
    if (!state) {
        diag_set(err, len, "out of memory");
        goto done;
    }
    for (int f = 0; f < p->n_fields; f++) {
        if (gathered) sim_set_field(s, f, gathered + (size_t)f * (size_t)cells);
        else if (engine_get_field(e, f, state, err, len) < 0) goto done;
        else sim_set_field(s, f, state);
    }
    const double *params = engine_params(e); /* the run's values (--set), not the file's */
    for (int i = 0; params && i < p->n_params; i++) sim_set_param(s, p->param_names[i], params[i]);
    double t = engine_time(e);
    if (sim_eval(s, 1, t, p->dt) < 0) {
        diag_set(err, len, "%s", sim_error(s));
        goto done;
    }
    const grid_layout *g = sim_layout(s);
    const kir_launch *L = sim_launch(s);
    /* A ghost cell is alpha * (its mirror or periodic partner) + beta: alpha from two fills of slot
       1 (interior 0, then 1), so that a ghost's entry lands on the cell it stands for (a Dirichlet
       wall's ghost -u0 cancels part of the centre, as it does in the scheme). */
    size_t elems = g->elems;
    alpha = malloc(sizeof *alpha * elems * (size_t)p->n_fields);
    entries = malloc(sizeof *entries * (size_t)(q.n_jac + 1));
    if (!alpha || !entries) {
        diag_set(err, len, "out of memory");
        goto done;
    }
    for (int pass = 0; pass < 2; pass++) {
        for (int f = 0; f < p->n_fields; f++) {
            if (!p->field_has_eq[f]) continue;
            double *b = (double *)L->buf[p->n_fields + f] - g->origin_off;
            for (size_t e = 0; e < elems; e++) b[e] = 0;
            if (pass)
                for (int64_t k = 0; k < g->n[2]; k++)
                    for (int64_t j = 0; j < g->n[1]; j++)
                        for (int64_t i = 0; i < g->n[0]; i++) b[g->origin_off + i + j * g->stride[1] + k * g->stride[2]] = 1;
        }
        sim_fill_ghosts(s, 1, t);
        for (int f = 0; f < p->n_fields; f++) {
            if (!p->field_has_eq[f]) continue;
            const double *b = (const double *)L->buf[p->n_fields + f] - g->origin_off;
            double *a = alpha + (size_t)f * elems;
            for (size_t e = 0; e < elems; e++) a[e] = pass ? b[e] - a[e] : b[e];
        }
    }
    double rho = 0;
    for (int64_t k = 0; k < g->n[2]; k++)
        for (int64_t j = 0; j < g->n[1]; j++)
            for (int64_t i = 0; i < g->n[0]; i++) {
                int64_t cell = i + j * g->stride[1] + k * g->stride[2];
                int e0 = 0;
                while (e0 < q.n_jac) {
                    int out = q.jac[e0].output, row_field = q.jac[e0].out_field, n = 0;
                    for (; e0 < q.n_jac && q.jac[e0].output == out; e0++) {
                        const derive_entry *d = &q.jac[e0];
                        if (!p->field_has_eq[d->field]) continue; /* a coefficient does not evolve */
                        double v = ((const double *)L->buf[2 * p->n_fields + e0])[cell];
                        int64_t pos[3] = {i + d->off[0], j + d->off[1], k + d->off[2]};
                        int ghost = 0;
                        for (int a = 0; a < p->dim; a++) ghost |= pos[a] < 0 || pos[a] >= g->n[a];
                        if (ghost)
                            v *= alpha[(size_t)d->field * elems +
                                       (size_t)(g->origin_off + pos[0] + pos[1] * g->stride[1] + pos[2] * g->stride[2])];
                        for (int a = 0; a < p->dim; a++) { /* the cell it stands for */
                            int64_t m = g->n[a];
                            if (p->periodic[a]) pos[a] = ((pos[a] % m) + m) % m;
                            else if (pos[a] < 0) pos[a] = -pos[a] - 1;
                            else if (pos[a] >= m) pos[a] = 2 * m - 1 - pos[a];
                        }
                        int q2 = 0; /* entries landing on one cell add up */
                        while (q2 < n && !(entries[q2].field == d->field && entries[q2].pos[0] == pos[0] &&
                                           entries[q2].pos[1] == pos[1] && entries[q2].pos[2] == pos[2]))
                            q2++;
                        if (q2 == n) entries[n++] = (folded){d->field, {pos[0], pos[1], pos[2]}, 0};
                        entries[q2].v += v;
                    }
                    double centre = 0, radius = 0;
                    for (int q2 = 0; q2 < n; q2++) {
                        if (entries[q2].field == row_field && entries[q2].pos[0] == i && entries[q2].pos[1] == j &&
                            entries[q2].pos[2] == k)
                            centre += entries[q2].v;
                        else
                            radius += fabs(entries[q2].v);
                    }
                    double r = radius - centre;
                    if (r > rho) rho = r; /* NaN never wins: the check then says nothing */
                }
            }
    *limit = rho > 0 ? beta_of(p->scheme) / rho : INFINITY;
    rc = 0;
done:
    free(state);
    free(alpha);
    free(entries);
    sim_destroy(s);
    for (int i = 0; i < q.n_stages; i++) kir_free(q.stages[i].kernel);
    free(q.stages);
    free(q.jac);
    return rc;
}

int stability_check(engine *e, double dt, char *err, size_t len)
{
    double limit;
    if (stability_limit(e, &limit, err, len) < 0) return -1;
    if (!(dt > limit * (1 + 1e-6))) return 0;
    diag_set(err, len, "dt = %.6g exceeds the explicit stability limit (about %.3g) of %s; use a smaller dt or an implicit scheme",
             dt, limit, scheme_name(engine_program(e)->scheme));
    return 1;
}
