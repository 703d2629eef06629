/* scheme.c — euler, rk2 (Heun, SSP), rk3 (Shu-Osher SSP), rk4 (classical) as stage tables.
 *
 * Slot 0 holds U, the state at the start and at the end of a step. A stage output is
 *     out = A * U  +  B * (base + C * dt * F(read))        (the A term only when A != 0)
 * written into `out` at the cell: reading `base` and U at offset 0 only, which is what makes
 * writing in place safe. */
#include "scheme.h"
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
    stage_spec stages[PJ_MAX_STAGES];
} scheme_spec;

static const scheme_spec schemes[] = {
    [PJ_EULER] = {"euler", 2, 1, 1, {{0.0, 0, 1, {{1, 0, 0, 1, 1}}}}},
    [PJ_RK2] = {"rk2", 2, 2, 0,
                {{0.0, 0, 1, {{1, 0, 0, 1, 1}}},
                 {1.0, 1, 1, {{0, 1, 0.5, 0.5, 1}}}}},
    [PJ_RK3] = {"rk3", 3, 3, 0,
                {{0.0, 0, 1, {{1, 0, 0, 1, 1}}},
                 {1.0, 1, 1, {{2, 1, 0.75, 0.25, 1}}},
                 {0.5, 2, 1, {{0, 2, 1.0 / 3.0, 2.0 / 3.0, 1}}}}},
    [PJ_RK4] = {"rk4", 4, 4, 0,
                {{0.0, 0, 2, {{1, 0, 0, 1, 0.5}, {3, 0, 0, 1, 1.0 / 6.0}}},
                 {0.5, 1, 2, {{2, 0, 0, 1, 0.5}, {3, 3, 0, 1, 1.0 / 3.0}}},
                 {0.5, 2, 2, {{1, 0, 0, 1, 1.0}, {3, 3, 0, 1, 1.0 / 3.0}}},
                 {1.0, 1, 1, {{0, 3, 0, 1, 1.0 / 6.0}}}}},
};

const char *scheme_name(pj_scheme s) { return schemes[s].name; }

int scheme_from_name(const char *name)
{
    for (int s = 0; s < (int)(sizeof schemes / sizeof *schemes); s++)
        if (!strcmp(name, schemes[s].name)) return s;
    return -1;
}

int scheme_lower(pj_program *p, scheme_rhs_fn rhs, void *ctx)
{
    const scheme_spec *sp = &schemes[p->scheme];
    p->n_slots = sp->n_slots;
    p->n_stages = sp->n_stages;
    p->swap_after_step = sp->swap;
    static const int here[3] = {0, 0, 0};
    for (int s = 0; s < sp->n_stages; s++) {
        const stage_spec *st = &sp->stages[s];
        char name[32];
        snprintf(name, sizeof name, "stage%d", s + 1);
        kir_kernel *k = kir_new(KIR_STAGE, p->dim, p->n_fields, p->n_params, sp->n_slots, name);
        if (!k) return -1; /* out of memory: the caller finds the stage kernel missing */
        p->stages[s] = (pj_stage){k, st->read, st->t_frac};
        for (int f = 0; f < p->n_fields; f++) {
            int F = -1;
            if (p->field_has_eq[f]) {
                F = rhs(ctx, k, st->read, f);
                if (F < 0) return -1;
            }
            for (int o = 0; o < st->n_out; o++) {
                const stage_out *so = &st->outs[o];
                int value;
                if (!p->field_has_eq[f]) {
                    if (so->out == 0) continue; /* U stays as it is */
                    value = kir_load(k, 0, f, here);
                } else {
                    int dtc = kir_op2(k, KIR_MUL, kir_const(k, so->C), kir_leaf(k, KIR_DT));
                    value = kir_op2(k, KIR_ADD, kir_load(k, so->base, f, here),
                                    kir_op2(k, KIR_MUL, dtc, F));
                    if (so->A != 0) {
                        value = kir_op2(k, KIR_ADD,
                                        kir_op2(k, KIR_MUL, kir_const(k, so->A), kir_load(k, 0, f, here)),
                                        kir_op2(k, KIR_MUL, kir_const(k, so->B), value));
                    }
                }
                kir_add_output(k, so->out, f, value);
            }
        }
        kir_finish(k);
    }
    return 0;
}
