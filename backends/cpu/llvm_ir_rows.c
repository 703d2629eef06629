/* llvm_ir_rows.c — the second row of a 2D kernel's two-row pass (llvm_ir.c, emit_x_loop): its loads,
 * the ones it shares with the first row, its values' names and its stores' rows. */
#include "llvm_internal.h"

#include <stdio.h>
#include <string.h>

/* The second row of a two-row pass: its loads read row (dy + 1) of row y's pointers, and one that
 * row y's x loop reads too (same buffer, offsets dy + 1, dz and dx) is that value; its stores go
 * to row 1. Its other values are numbered id + n_nodes (llvm_emit_node). */
void llvm_plan_row_b(gen *g)
{
    const kir_kernel *k = g->k;
    for (int id = 0; id < k->n_nodes; id++) {
        const kir_node *n = &k->nodes[id];
        g->row_of_b[id] = -1;
        if (!llvm_is_leaf_op((kir_op)n->op))
            snprintf(g->name_b[id], sizeof g->name_b[id], "%%v%d", id + k->n_nodes);
        else
            memcpy(g->name_b[id], g->name[id], sizeof g->name_b[id]);
        if (n->op != KIR_LOAD) continue;
        int r = llvm_find_row(g, g->rows[g->row_of[id]].buf, n->off[1] + 1, n->off[2], 1), same = -1;
        for (int q = 0; q < k->n_nodes && same < 0; q++)
            if (k->nodes[q].op == KIR_LOAD && g->row_of[q] == r && k->nodes[q].off[0] == n->off[0]) same = q;
        if (same >= 0) memcpy(g->name_b[id], g->name[same], sizeof g->name_b[id]);
        else g->row_of_b[id] = r;
    }
    for (int i = 0; i < k->n_outputs; i++) g->out_row_b[i] = llvm_find_row(g, g->rows[g->out_row[i]].buf, 1, 0, 0);
}
