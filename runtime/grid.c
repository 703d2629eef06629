/* grid.c — the checks, the buffer layout and the ghost-fill plan of every back end (see grid.h). */
#include "grid.h"
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "diag.h"

static int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

int grid_layout_make(grid_layout *g, const pj_program *p, size_t esz, int row_align, const char *who, char *err,
                     size_t err_len)
{
    return grid_layout_block(g, p, NULL, esz, row_align, who, err, err_len);
}

int grid_layout_block(grid_layout *g, const pj_program *p, const grid_block *block, size_t esz, int row_align,
                      const char *who, char *err, size_t err_len)
{
    memset(g, 0, sizeof *g);
    int stepped = p && !PJ_SCHEME_IMPLICIT(p->scheme); /* explicit: fused stages; implicit: none */
    if (!p || p->dim < 1 || p->dim > 3 || p->n_fields < 1 || p->n_slots < 1 ||
        (stepped && (p->n_stages < 1 || !p->stages)) || !p->bc) {
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
    g->row_align = row_align;
    g->H = p->halo > 0 ? p->halo : 1;
    for (int a = 0; a < 3; a++) {
        g->n[a] = a < p->dim ? (block ? block->n[a] : p->n[a]) : 1;
        if (block && a < p->dim) {
            g->first[a] = block->first[a];
            g->beyond[a] = p->n[a] - block->first[a] - block->n[a];
        }
        g->ghost[a] = a < p->dim ? g->H : 0;
        if (g->n[a] < 1 || (a < p->dim && g->n[a] < g->H)) {
            diag_set(err, err_len, "%s: %c has %lld cells, fewer than the %d ghost layers the stencil needs", who,
                     "xyz"[a], (long long)g->n[a], g->H);
            return -1;
        }
        g->lo[a] = -g->ghost[a];
        g->ext[a] = g->n[a] + 2 * g->ghost[a];
        g->origin[a] = a < p->dim ? p->origin[a] : 0;
        g->h[a] = a < p->dim && p->length[a] > 0 ? p->length[a] / (double)p->n[a] : 1.0;
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
    if (p->dim == 3 && g->stride[2] * (int64_t)esz >= GRID_PAGE_PAD_MIN) /* whole pages (grid.h) */
        g->stride[2] = round_up(g->stride[2], GRID_PAGE / (int64_t)esz);
    g->origin_off = lead + g->ghost[1] * g->stride[1] + g->ghost[2] * g->stride[2];
    g->elems = (size_t)(g->stride[2] * g->ext[2]);
    return 0;
}

/* ---- memory ------------------------------------------------------------------------------- */

double grid_buffer_bytes(const grid_layout *g, size_t alloc_align)
{
    double bytes = (double)g->elems * (double)g->esz, align = alloc_align ? (double)alloc_align : 1;
    return ceil(bytes / align) * align;
}

/* "38.4 GB", "512.0 MB", "12.0 kB": decimal units, one decimal */
static void format_bytes(double bytes, char *out, size_t len)
{
    if (bytes >= 1e9) snprintf(out, len, "%.1f GB", bytes / 1e9);
    else if (bytes >= 1e6) snprintf(out, len, "%.1f MB", bytes / 1e6);
    else snprintf(out, len, "%.1f kB", bytes / 1e3);
}

int grid_memory_check(int n_buffers, double buffer_bytes, double available, const char *where, char *err,
                      size_t err_len)
{
    double need = (double)n_buffers * buffer_bytes;
    if (need <= available) return 0;
    char total[32], each[32], avail[32];
    format_bytes(need, total, sizeof total);
    format_bytes(buffer_bytes, each, sizeof each);
    format_bytes(available > 0 ? available : 0, avail, sizeof avail);
    diag_set(err, err_len, GRID_NEEDS_PREFIX "%s (%d buffer%s of %s); %s are available%s", total, n_buffers,
             n_buffers == 1 ? "" : "s", each, avail, where ? where : "");
    return -1;
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
    int k = 0;
    for (int pass = 0; pass < 2; pass++) /* conditions first, then periodic wraps */
        for (int a = 0; a < p->dim; a++)
            if ((plan->rule[2 * a] == GHOST_PERIODIC) == pass) plan->axis_order[k++] = a;
    return 0;
}

void ghost_plan_free(ghost_plan *plan)
{
    free(plan->rule);
    plan->rule = NULL;
}
