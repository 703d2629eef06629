/* algebraic.c — algebraic equations under the explicit schemes (LANGUAGE.md §9): the check that
 * one can be evaluated, and the passes that evaluate it.
 *
 * `eq 0 = EXPR` for field m is EXPR's output of the rhs kernel. An explicit scheme evaluates it
 * where EXPR = a*m + b with a and b free of m: the derivative a = d EXPR / d m(cell) from the
 * program's Jacobian (derive.c, the rules the implicit schemes use) must exist, read no m and no
 * other algebraic field, and EXPR must read m at the cell only and not through a piecewise-
 * constant op (floor, a comparison, a select's condition). Then m = -b/a, with b = EXPR at m = 0
 * (the rhs imported with m's loads replaced by 0): for EXPR = m - g(c) that is g(c) to the bit.
 *
 * The pass for a slot is a stage kernel that reads the slot's other fields (at offsets: lap(c))
 * and writes each algebraic field into that same slot at the cell. Before every stage of the
 * scheme one such pass runs on the stage's read slot, and the run's ghost fill before the stage
 * then fills m's ghosts by m's boundary conditions; the stage itself never writes m. After the
 * last stage one more pass makes m agree with the new state (what outputs and monitors see).
 * The passes are ordinary stages to every back end (interp, cpu, cuda, over MPI). */
#include "algebraic.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "derive.h"
#include "diag.h"

/* 1 when node `node` of k depends on a load of field f; *piecewise set when it does through a
 * piecewise-constant op. -1 when out of memory. */
static int depends_on(const kir_kernel *k, int node, int f, int *piecewise)
{
    char *live = calloc((size_t)node + 1, 1), *dep = calloc((size_t)node + 1, 1);
    int found = -1;
    if (!live || !dep) goto done;
    live[node] = 1;
    for (int id = node; id >= 0; id--)
        if (live[id])
            for (int a = 0; a < kir_ops[k->nodes[id].op].arity; a++)
                if (k->nodes[id].arg[a] >= 0) live[k->nodes[id].arg[a]] = 1;
    *piecewise = 0;
    for (int id = 0; id <= node; id++) {
        if (!live[id]) continue;
        const kir_node *n = &k->nodes[id];
        int arity = kir_ops[n->op].arity;
        if (n->op == KIR_LOAD) dep[id] = n->index == f;
        for (int a = 0; a < arity; a++) dep[id] |= dep[n->arg[a]];
        if (!dep[id] || !arity) continue;
        derive_rule r = derive_op_rule((kir_op)n->op);
        if (r == DERIVE_ZERO || (r == DERIVE_SELECT && dep[n->arg[0]])) *piecewise = 1;
    }
    found = dep[node];
done:
    free(live);
    free(dep);
    return found;
}

static int rhs_output(const pj_program *p, int f)
{
    for (int o = 0; o < p->rhs->n_outputs; o++)
        if (p->rhs->outputs[o].field == f) return o;
    return -1;
}

int algebraic_explicit_check(const pj_program *p, int f, char *why, size_t len)
{
    const char *m = p->field_names[f];
    int o = rhs_output(p, f);
    char err[256] = "";
    const pj_jacobian *j = o >= 0 ? program_jacobian(p, err, sizeof err) : NULL;
    if (!j) {
        if (strstr(err, "out of memory")) return -2;
        diag_set(why, len, "its derivative by %s cannot be derived (%s)", m, err);
        return -1;
    }
    int at = -1;
    for (int e = 0; e < j->n; e++) {
        const derive_entry *d = &j->entries[e];
        if (d->output != o || !p->field_algebraic[d->field]) continue;
        if (d->field != f) {
            diag_set(why, len, "EXPR reads %s, the unknown of another algebraic equation (an explicit scheme "
                     "evaluates each from the fields with dt(...) equations); use --scheme beuler or bdf2",
                     p->field_names[d->field]);
            return -1;
        }
        if (d->off[0] || d->off[1] || d->off[2]) {
            diag_set(why, len, "EXPR reads %s at a neighbouring cell (lap, grad, div or an offset of %s), so %s is not "
                     "an explicit function of the other fields; use --scheme beuler or bdf2", m, m, m);
            return -1;
        }
        at = e;
    }
    const kir_node *an = at >= 0 ? &j->kernel->nodes[j->kernel->outputs[at].node] : NULL;
    if (!an || (an->op == KIR_CONST && an->value == 0)) {
        diag_set(why, len, "EXPR does not depend on %s (EXPR = a*%s + b with a = 0), so it cannot be solved for %s; "
                 "use --scheme beuler or bdf2", m, m, m);
        return -1;
    }
    int pw_a = 0, pw_expr = 0;
    int in_a = depends_on(j->kernel, j->kernel->outputs[at].node, f, &pw_a);
    int in_expr = depends_on(p->rhs, p->rhs->outputs[o].node, f, &pw_expr);
    if (in_a < 0 || in_expr < 0) return -2;
    if (in_a || pw_expr) {
        diag_set(why, len, "EXPR is not linear in %s (an explicit scheme evaluates %s = -b/a where EXPR = a*%s + b, a "
                 "and b free of %s); use --scheme beuler or bdf2", m, m, m, m);
        return -1;
    }
    return 0;
}

/* The pass kernel for `slot`: every algebraic field m of the slot as -b/a. */
static kir_kernel *pass_kernel(const pj_program *p, const pj_jacobian *j, int slot, const char *name, int *node_map,
                               const int *field_slot)
{
    kir_kernel *k = kir_new(KIR_STAGE, p->dim, p->n_fields, p->n_params, p->n_slots, name);
    if (!k) return NULL;
    const int slot_map[2] = {slot, slot};
    for (int f = 0; f < p->n_fields; f++) {
        if (!p->field_algebraic[f]) continue;
        int o = rhs_output(p, f), at = -1;
        for (int e = 0; e < j->n && at < 0; e++) {
            const derive_entry *d = &j->entries[e];
            if (d->output == o && d->field == f && !d->off[0] && !d->off[1] && !d->off[2]) at = e;
        }
        if (o < 0 || at < 0) continue; /* refused by algebraic_explicit_check */
        kir_import_subst(k, p->rhs, slot_map, field_slot, node_map, f, kir_const(k, 0));
        int b = node_map[p->rhs->outputs[o].node];
        kir_import(k, j->kernel, slot_map, field_slot, node_map);
        int a = node_map[j->kernel->outputs[at].node];
        kir_add_output(k, slot, f, kir_op2(k, KIR_DIV, kir_op1(k, KIR_NEG, b), a));
    }
    kir_finish(k);
    return k;
}

int algebraic_insert_passes(pj_program *p)
{
    if (!p->n_algebraic || PJ_SCHEME_IMPLICIT(p->scheme)) return 0;
    const pj_jacobian *j = program_jacobian(p, NULL, 0);
    if (!j) return -1; /* derived by algebraic_explicit_check already: only out of memory is left */
    const int n = p->n_stages, final = !(PJ_SCHEME_EMBEDDED(p->scheme) && p->adapt > 0);
    const int total = 2 * n + final;
    int nodes = p->rhs->n_nodes > j->kernel->n_nodes ? p->rhs->n_nodes : j->kernel->n_nodes;
    pj_stage *stages = calloc((size_t)total, sizeof *stages);
    int *node_map = malloc(sizeof *node_map * (size_t)(nodes + 1));
    int *field_slot = malloc(sizeof *field_slot * (size_t)(p->n_fields + 1));
    int rc = -1;
    if (!stages || !node_map || !field_slot) goto done;
    for (int f = 0; f < p->n_fields; f++) field_slot[f] = p->field_has_eq[f] ? -1 : 0; /* coefficients: slot 0 */
    for (int i = 0; i <= n; i++) {
        if (i == n && !final) break;
        int slot = i < n ? p->stages[i].read_slot : p->swap_after_step ? 1 : 0;
        char name[40];
        if (i < n) snprintf(name, sizeof name, "algebraic%d", i + 1);
        else snprintf(name, sizeof name, "algebraic.end");
        kir_kernel *k = pass_kernel(p, j, slot, name, node_map, field_slot);
        if (!k) {
            for (int s = 0; s < 2 * i; s += 2) kir_free(stages[s].kernel);
            goto done;
        }
        stages[2 * i] = (pj_stage){k, slot, i < n ? p->stages[i].t_frac : 1.0};
        if (i < n) stages[2 * i + 1] = p->stages[i];
    }
    free(p->stages);
    p->stages = stages;
    p->n_stages = total;
    stages = NULL;
    rc = 0;
done:
    free(stages);
    free(node_map);
    free(field_slot);
    return rc;
}
