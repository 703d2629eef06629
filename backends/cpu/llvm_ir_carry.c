/* llvm_ir_carry.c — the x loop's carried loads (llvm_ir.c's emit_x_loop): a load of row r at x
 * offset d whose row is also loaded at d + 1 takes that load's value from the previous x step,
 * a phi, instead of reading memory again. The vectoriser turns the phi into a first-order
 * recurrence: one lane shift of the previous vector (valignq) in place of an unaligned load.
 *
 * Why: on Zen 4 a 512-bit load at x - 1 crosses a cache line every time and costs two of the
 * load unit's slots; a 2D kernel at the L1 (a temporally blocked strip) is bound by them. A lap
 * along a non-uniform axis reads two metric tables more (kir_metric laphi/laplo), and with them
 * ran at 0.66x the uniform grid at 1024²: bench/mesh_speed.sh, docs/performance.md.
 *
 * The value is the same: the kernel reads no cell that the loop writes (the aliasing contract,
 * llvm_backend.h), so the element loaded at the previous step still holds it. Only odd offsets
 * are carried, from the even one above: LLVM 14 vectorises first-order recurrences only (the value
 * carried must be a load, not another phi), and x + 0, the one load that a cache line holds whole,
 * stays a load. The carried value's first step is loaded before the x loop
 * (llvm_emit_carry_inits), once per chunk.
 *
 * Applied to kernels that read a metric table along x (g->carry set by llvm_plan_carries): the
 * uniform grid's code stays as it was. */
#include "llvm_internal.h"

#include <stdlib.h>

int llvm_plan_carries(gen *g)
{
    const kir_kernel *k = g->k;
    g->carry_of = malloc(sizeof *g->carry_of * ((size_t)k->n_nodes + 1));
    if (!g->carry_of) return -1;
    int metric_x = 0;
    for (int id = 0; id < k->n_nodes; id++) {
        g->carry_of[id] = -1;
        metric_x |= k->nodes[id].op == KIR_METRIC && k->nodes[id].axis == 0;
    }
    if (!metric_x || k->dim < 2 || g->n_seg > 1 || k->kind == KIR_REDUCE) return 0;
    /* odd offsets only: the load at d + 1 (even) is then never carried itself, and x + 0, the one
       load a cache line holds whole, stays a load */
    for (int a = 0; a < k->n_nodes; a++) {
        if (k->nodes[a].op != KIR_LOAD || !(k->nodes[a].off[0] & 1)) continue;
        for (int p = 0; p < k->n_nodes; p++)
            if (k->nodes[p].op == KIR_LOAD && k->nodes[p].off[0] == k->nodes[a].off[0] + 1 &&
                g->row_of[p] == g->row_of[a]) {
                g->carry_of[a] = p;
                break;
            }
    }
    return 0;
}

int llvm_carried_from(const gen *g, int id)
{
    if (!g->carry_of) return 0;
    for (int a = 0; a < g->k->n_nodes; a++)
        if (g->carry_of[a] == id) return 1;
    return 0;
}

void llvm_emit_carry_inits(gen *g)
{
    for (int a = 0; g->carry_of && a < g->k->n_nodes; a++) {
        if (g->carry_of[a] < 0) continue;
        const kir_node *n = &g->k->nodes[a];
        sb_printf(g->b, "  %%ci%d = add nsw i64 %%c0, %d\n  %%cq%d = getelementptr inbounds %s, %s* %%R%d, i64 %%ci%d\n"
                        "  %%cv%d = load %s, %s* %%cq%d, align %d\n",
                  a, n->off[0], a, g->T, g->T, g->row_of[a], a, a, g->T, g->T, a, g->align);
    }
}

void llvm_emit_carry_phis(gen *g, const char *pre, const char *self)
{
    for (int a = 0; g->carry_of && a < g->k->n_nodes; a++)
        if (g->carry_of[a] >= 0)
            sb_printf(g->b, "  %%v%d = phi %s [ %%cv%d, %%%s ], [ %%v%d, %%%s ]\n", a, g->T, a, pre, g->carry_of[a],
                      self);
}
