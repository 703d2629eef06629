/* stability.c — the explicit stability check: is dt within the limit of an explicit scheme for
 * the linearised right-hand side at the current state?
 *
 * The Jacobian dF/dU comes from the symbolic derivative of the rhs kernel (derive.h), run by the
 * interpreter on a scratch simulation holding a copy of the state. Gershgorin's discs bound its
 * eigenvalues: row i's disc has centre J_ii and radius r_i = sum of |J_ij|, j != i (every other
 * entry of the row: other fields, other offsets, ghost cells counted as they are). The leftmost
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

int stability_limit(engine *e, double *limit, char *err, size_t len)
{
    const pj_program *p = engine_program(e);
    *limit = INFINITY;
    if (PJ_SCHEME_IMPLICIT(p->scheme) || !p->rhs || !p->rhs->n_outputs) return 0;
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
    double *state = NULL;
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
        if (engine_get_field(e, f, state, err, len) < 0) goto done;
        sim_set_field(s, f, state);
    }
    double t = engine_time(e);
    if (sim_eval(s, 1, t, p->dt) < 0) {
        diag_set(err, len, "%s", sim_error(s));
        goto done;
    }
    const grid_layout *g = sim_layout(s);
    const kir_launch *L = sim_launch(s);
    double rho = 0;
    for (int64_t k = 0; k < g->n[2]; k++)
        for (int64_t j = 0; j < g->n[1]; j++)
            for (int64_t i = 0; i < g->n[0]; i++) {
                int64_t cell = i + j * g->stride[1] + k * g->stride[2];
                int e0 = 0;
                while (e0 < q.n_jac) {
                    double centre = 0, radius = 0;
                    int out = q.jac[e0].output, row_field = q.jac[e0].out_field;
                    for (; e0 < q.n_jac && q.jac[e0].output == out; e0++) {
                        const derive_entry *d = &q.jac[e0];
                        if (!p->field_has_eq[d->field]) continue; /* a coefficient does not evolve */
                        double v = ((const double *)L->buf[2 * p->n_fields + e0])[cell];
                        if (d->field == row_field && !d->off[0] && !d->off[1] && !d->off[2]) centre += v;
                        else radius += fabs(v);
                    }
                    double r = radius - centre;
                    if (r > rho) rho = r; /* NaN never wins: the check then says nothing */
                }
            }
    *limit = rho > 0 ? beta_of(p->scheme) / rho : INFINITY;
    rc = 0;
done:
    free(state);
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
