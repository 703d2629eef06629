/* scheme.c — euler, rk2 (Heun, SSP), rk3 (Shu-Osher SSP), rk4 (classical) as stage tables,
 * composed with the right-hand-side kernel into one fused kernel per stage.
 *
 * Slot 0 holds U, the state at the start and at the end of a step. A stage output is
 *     out = A * U  +  B * (base + C * dt * F(read))        (the A term only when A != 0)
 * written into `out` at the cell: reading `base` and U at offset 0 only, which is what makes
 * writing in place safe. F is the program's KIR_RHS kernel imported into the stage kernel with
 * its loads moved to the stage's read slot (kir_import), so the stage is still one pass.
 *
 * A field without an eq (a coefficient: D(x, y)) is computed once by the init kernel into slot 0
 * and never changes: every stage reads it from slot 0 and none writes it, in any slot (the
 * run's ghost fill and Euler's slot swap leave it alone too), so it costs one read per stage. */
#include "scheme.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct stage_out { int out, base; double A, B, C; } stage_out;
typedef struct stage_spec {
    double t_frac;
    int read;
    int n_out;
    stage_out outs[2];
} stage_spec;
typedef struct scheme_spec {
    const char *name;
    int n_slots, n_stages, swap;
    const stage_spec *stages;
} scheme_spec;

static const stage_spec euler_stages[] = {{0.0, 0, 1, {{1, 0, 0, 1, 1}}}};
static const stage_spec rk2_stages[] = {{0.0, 0, 1, {{1, 0, 0, 1, 1}}},
                                        {1.0, 1, 1, {{0, 1, 0.5, 0.5, 1}}}};
static const stage_spec rk3_stages[] = {{0.0, 0, 1, {{1, 0, 0, 1, 1}}},
                                        {1.0, 1, 1, {{2, 1, 0.75, 0.25, 1}}},
                                        {0.5, 2, 1, {{0, 2, 1.0 / 3.0, 2.0 / 3.0, 1}}}};
static const stage_spec rk4_stages[] = {{0.0, 0, 2, {{1, 0, 0, 1, 0.5}, {3, 0, 0, 1, 1.0 / 6.0}}},
                                        {0.5, 1, 2, {{2, 0, 0, 1, 0.5}, {3, 3, 0, 1, 1.0 / 3.0}}},
                                        {0.5, 2, 2, {{1, 0, 0, 1, 1.0}, {3, 3, 0, 1, 1.0 / 3.0}}},
                                        {1.0, 1, 1, {{0, 3, 0, 1, 1.0 / 6.0}}}};

static const scheme_spec schemes[] = {
    [PJ_EULER] = {"euler", 2, 1, 1, euler_stages},
    [PJ_RK2] = {"rk2", 2, 2, 0, rk2_stages},
    [PJ_RK3] = {"rk3", 3, 3, 0, rk3_stages},
    [PJ_RK4] = {"rk4", 4, 4, 0, rk4_stages},
    /* implicit: PETSc's time steppers (runtime/implicit.c) take the stages of implicit_lower */
    [PJ_BEULER] = {"beuler", 0, 0, 0, NULL},
    [PJ_CN] = {"cn", 0, 0, 0, NULL},
    [PJ_BDF2] = {"bdf2", 0, 0, 0, NULL},
    [PJ_IMEX] = {"imex", 0, 0, 0, NULL},
    [PJ_STEADY] = {"steady", 0, 0, 0, NULL},
};

const char *scheme_name(pj_scheme s) { return schemes[s].name; }

int scheme_from_name(const char *name)
{
    for (int s = 0; s < (int)(sizeof schemes / sizeof *schemes); s++)
        if (!strcmp(name, schemes[s].name)) return s;
    return -1;
}

/* Implicit schemes and steady solves: no fused stages (the solver library combines F and its
 * Jacobian, which the program names: program.h). The Jacobian is derived now, so that a problem
 * it cannot be derived for is an error when compiled; its output j goes to buffer
 * 2 * n_fields + j: slots 2 and up hold the stencil coefficients. */
static int implicit_lower(pj_program *p)
{
    char err[256] = "";
    const pj_jacobian *j = program_jacobian(p, err, sizeof err);
    if (!j) return strstr(err, "out of memory") ? -1 : -2;
    p->n_stages = 0;
    p->stages = NULL;
    p->n_slots = 2 + (j->n + p->n_fields - 1) / (p->n_fields > 0 ? p->n_fields : 1);
    p->swap_after_step = 0;
    return 0;
}

int scheme_lower(pj_program *p)
{
    if (PJ_SCHEME_IMPLICIT(p->scheme)) return implicit_lower(p);
    const scheme_spec *sp = &schemes[p->scheme];
    const kir_kernel *rhs = p->rhs;
    p->stages = calloc((size_t)sp->n_stages, sizeof *p->stages);
    int *node_map = malloc(sizeof *node_map * (size_t)(rhs->n_nodes + 1));
    int *F = malloc(sizeof *F * (size_t)(p->n_fields + 1));
    int *field_slot = malloc(sizeof *field_slot * (size_t)(p->n_fields + 1));
    int rc = -1;
    if (!p->stages || !node_map || !F || !field_slot) goto done;
    for (int f = 0; f < p->n_fields; f++) field_slot[f] = p->field_has_eq[f] ? -1 : 0; /* coefficients: slot 0 */
    p->n_slots = sp->n_slots;
    p->n_stages = sp->n_stages;
    p->swap_after_step = sp->swap;
    static const int here[3] = {0, 0, 0};
    for (int s = 0; s < sp->n_stages; s++) {
        const stage_spec *st = &sp->stages[s];
        char name[32];
        snprintf(name, sizeof name, "stage%d", s + 1);
        kir_kernel *k = kir_new(KIR_STAGE, p->dim, p->n_fields, p->n_params, sp->n_slots, name);
        if (!k) goto done; /* out of memory (stages made so far are the program's, freed with it) */
        p->stages[s] = (pj_stage){k, st->read, st->t_frac};
        const int slot_map[2] = {st->read, st->read};
        kir_import(k, rhs, slot_map, field_slot, node_map);
        for (int f = 0; f < p->n_fields; f++) F[f] = -1;
        for (int o = 0; o < rhs->n_outputs; o++) F[rhs->outputs[o].field] = node_map[rhs->outputs[o].node];
        for (int f = 0; f < p->n_fields; f++) {
            if (F[f] < 0) continue; /* a coefficient: stays in slot 0 as it is */
            for (int o = 0; o < st->n_out; o++) {
                const stage_out *so = &st->outs[o];
                int dtc = kir_op2(k, KIR_MUL, kir_const(k, so->C), kir_leaf(k, KIR_DT));
                int value = kir_op2(k, KIR_ADD, kir_load(k, so->base, f, here), kir_op2(k, KIR_MUL, dtc, F[f]));
                if (so->A != 0)
                    value = kir_op2(k, KIR_ADD, kir_op2(k, KIR_MUL, kir_const(k, so->A), kir_load(k, 0, f, here)),
                                    kir_op2(k, KIR_MUL, kir_const(k, so->B), value));
                kir_add_output(k, so->out, f, value);
            }
        }
        kir_finish(k);
    }
    rc = 0;
done:
    free(node_map);
    free(F);
    free(field_slot);
    return rc;
}
