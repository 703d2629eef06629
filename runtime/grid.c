/* grid.c — the checks, the buffer layout and the ghost-fill plan of every back end (see grid.h). */
#include "grid.h"
#include <stdlib.h>
#include <string.h>
#include "diag.h"

static int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

int grid_layout_make(grid_layout *g, const pj_program *p, size_t esz, int row_align, const char *who, char *err,
                     size_t err_len)
{
    memset(g, 0, sizeof *g);
    if (!p || p->dim < 1 || p->dim > 3 || p->n_fields < 1 || p->n_slots < 1 || p->n_stages < 1 || !p->stages ||
        !p->bc) {
        diag_set(err, err_len, "%s: the program is incomplete (dimension, fields, slots or stages)", who);
        return -1;
    }
    for (int i = 0; i < p->n_stages; i++)
        if (!p->stages[i].kernel || p->stages[i].read_slot < 0 || p->stages[i].read_slot >= p->n_slots) {
            diag_set(err, err_len, "%s: stage %d has no kernel or a bad read slot", who, i + 1);
            return -1;
        }
    g->dim = p->dim;
    g->esz = esz;
    g->H = p->halo > 0 ? p->halo : 1;
    for (int a = 0; a < 3; a++) {
        g->n[a] = a < p->dim ? p->n[a] : 1;
        g->ghost[a] = a < p->dim ? g->H : 0;
        if (g->n[a] < 1 || (a < p->dim && g->n[a] < g->H)) {
            diag_set(err, err_len, "%s: %c has %lld cells, fewer than the %d ghost layers the stencil needs", who,
                     "xyz"[a], (long long)g->n[a], g->H);
            return -1;
        }
        g->lo[a] = -g->ghost[a];
        g->ext[a] = g->n[a] + 2 * g->ghost[a];
        g->origin[a] = a < p->dim ? p->origin[a] : 0;
        g->h[a] = a < p->dim && p->length[a] > 0 ? p->length[a] / (double)g->n[a] : 1.0;
    }
    /* x: a leading pad of `lead` elements puts interior cell 0 of every row on a boundary */
    int64_t align = row_align / (int64_t)esz;
    int64_t lead = round_up(g->H, align);
    int64_t row = round_up(lead + g->n[0] + g->H, align);
    if ((double)row * (double)g->ext[1] * (double)g->ext[2] * (double)esz > 1e15) {
        diag_set(err, err_len, "%s: the grid is too large", who);
        return -1;
    }
    g->stride[0] = 1;
    g->stride[1] = row;
    g->stride[2] = row * g->ext[1];
    g->origin_off = lead + g->ghost[1] * g->stride[1] + g->ghost[2] * g->stride[2];
    g->elems = (size_t)(row * g->ext[1] * g->ext[2]);
    return 0;
}

int ghost_plan_make(ghost_plan *plan, const pj_program *p, const ghost_settings *settings)
{
    memset(plan, 0, sizeof *plan);
    if (settings) plan->set = *settings;
    plan->n_sides = 2 * p->dim;
    plan->rule = calloc((size_t)p->n_fields * 6, sizeof *plan->rule);
    if (!plan->rule) return -1;
    for (int f = 0; f < p->n_fields; f++)
        for (int side = 0; side < 6; side++) {
            pj_bc_kind k = p->bc[f][side].kind;
            plan->rule[f * 6 + side] = k == PJ_BC_PERIODIC ? GHOST_PERIODIC : k == PJ_BC_LINEAR ? GHOST_LINEAR : GHOST_MIRROR;
        }
    for (int side = 0; side < 6; side++) plan->bc[side] = p->bc_kernel[side];
    return 0;
}

void ghost_plan_free(ghost_plan *plan)
{
    free(plan->rule);
    plan->rule = NULL;
}
