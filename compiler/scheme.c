/* scheme.c — euler, rk2 (Heun, SSP), rk3 (Shu-Osher SSP), rk4 (classical) as stage tables,
 * and the embedded pairs rk23 (Bogacki-Shampine 3(2)) and rk45 (Dormand-Prince 5(4)) as Butcher
 * tableaux (see "Embedded pairs" below), composed with the right-hand-side kernel into one fused
 * kernel per stage.
 *
 * Slot 0 holds U, the state at the start and at the end of a step. A stage output is
 *     out = A * U  +  B * (base + C * dt * F(read))        (the A term only when A != 0)
 * written into `out` at the cell: reading `base` and U at offset 0 only, which is what makes
 * writing in place safe. F is the program's KIR_RHS kernel imported into the stage kernel with
 * its loads moved to the stage's read slot (kir_import), so the stage is still one pass.
 *
 * A field without an eq (a coefficient: D(x, y)) is computed once by the init kernel into slot 0
 * and never changes: every stage reads it from slot 0 and none writes it, in any slot (the
 * run's ghost fill and Euler's slot swap leave it alone too), so it costs one read per stage.
 *
 * A field with an algebraic equation (eq 0 = EXPR) is not stepped: no stage writes it; a pass
 * before each stage writes it into the stage's read slot from the other fields there, and one
 * after the last into the new state (algebraic.c). */
#include "scheme.h"
#include "algebraic.h"
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
    /* the embedded pairs: lowered from their tableaux (embedded_lower) */
    [PJ_RK23] = {"rk23", 0, 0, 1, NULL},
    [PJ_RK45] = {"rk45", 0, 0, 1, NULL},
};

/* Field f has an algebraic equation (a program built by hand may have no field_algebraic). */
static int algebraic(const pj_program *p, int f) { return p->field_algebraic && p->field_algebraic[f]; }

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

/* ---- Embedded pairs -------------------------------------------------------------------------
 *
 * An s-stage pair whose last stage is evaluated at the new solution (FSAL: a_s,j = b_j, b_s = 0):
 * Y_1 = U, k_i = F(t + c_i dt, Y_i), Y_i = U + dt sum_j<i a_ij k_j, the solution y = Y_s and the
 * error estimate e = y - y^ = dt sum_j (b_j - b^_j) k_j. Slots: 0 U; 1 y (the new state: swapped
 * with slot 0 after an accepted step, as Euler's); from 2 the k_1 .. k_s-1 (F itself, not dt F;
 * k_s-2 the last with fixed steps); then two for the stage values Y_2 .. Y_s-1 in turn; then the
 * error (with adapt). Stage i (one kernel)
 * reads Y_i (slot 0 for the first) at offsets, U and the k's at the cell, and writes k_i and
 * Y_i+1. With fixed steps the last stage is left out (its k_s only serves the error): the pair
 * is then its higher-order scheme, in s - 1 stages. With `adapt` the last stage writes, per cell,
 * the weighted square of the error that the step controller sums (program.h, adapt_error_buf).
 * k_s is not kept for the next step's k_1 (first same as last): a stage is one memory-bound pass
 * over the state either way, and the state may change between steps (set_field, a param, a hot
 * swap). */
typedef struct tableau {
    int s, order;
    const double *a; /* s x s, row-major, strictly lower */
    const double *c, *d; /* d = b - b^ */
} tableau;

static const double bs3_a[16] = {0, 0, 0, 0, 1.0 / 2, 0, 0, 0, 0, 3.0 / 4, 0, 0, 2.0 / 9, 1.0 / 3, 4.0 / 9, 0};
static const double bs3_c[4] = {0, 1.0 / 2, 3.0 / 4, 1};
/* b = (2/9, 1/3, 4/9, 0), b^ = (7/24, 1/4, 1/3, 1/8) */
static const double bs3_d[4] = {2.0 / 9 - 7.0 / 24, 1.0 / 3 - 1.0 / 4, 4.0 / 9 - 1.0 / 3, -1.0 / 8};
static const double dp5_a[49] = {
    0, 0, 0, 0, 0, 0, 0,
    1.0 / 5, 0, 0, 0, 0, 0, 0,
    3.0 / 40, 9.0 / 40, 0, 0, 0, 0, 0,
    44.0 / 45, -56.0 / 15, 32.0 / 9, 0, 0, 0, 0,
    19372.0 / 6561, -25360.0 / 2187, 64448.0 / 6561, -212.0 / 729, 0, 0, 0,
    9017.0 / 3168, -355.0 / 33, 46732.0 / 5247, 49.0 / 176, -5103.0 / 18656, 0, 0,
    35.0 / 384, 0, 500.0 / 1113, 125.0 / 192, -2187.0 / 6784, 11.0 / 84, 0};
static const double dp5_c[7] = {0, 1.0 / 5, 3.0 / 10, 4.0 / 5, 8.0 / 9, 1, 1};
/* b = (35/384, 0, 500/1113, 125/192, -2187/6784, 11/84, 0),
   b^ = (5179/57600, 0, 7571/16695, 393/640, -92097/339200, 187/2100, 1/40) */
static const double dp5_d[7] = {35.0 / 384 - 5179.0 / 57600, 0, 500.0 / 1113 - 7571.0 / 16695,
                                125.0 / 192 - 393.0 / 640, -2187.0 / 6784 + 92097.0 / 339200, 11.0 / 84 - 187.0 / 2100,
                                -1.0 / 40};
static const tableau bs3 = {4, 3, bs3_a, bs3_c, bs3_d};
static const tableau dp5 = {7, 5, dp5_a, dp5_c, dp5_d};

/* The adaptive controller's tolerances for `adapt = TOL`: those the implicit schemes give PETSc's
   TSAdapt (runtime/implicit.c, TSSetTolerances): atol = TOL / 1000, rtol = TOL. */
#define ADAPT_ATOL(tol) ((tol) * 1e-3)

static int embedded_lower(pj_program *p, const tableau *T, int *node_map, int *F, const int *field_slot)
{
    const kir_kernel *rhs = p->rhs;
    const int s = T->s, adaptive = p->adapt > 0, stages = adaptive ? s : s - 1;
    /* the k's kept: k_1 .. k_s-1 for the error, k_1 .. k_s-2 with fixed steps (k_s-1 goes straight
       into y); then the two stage values and the error */
    const int ya = 2 + (adaptive ? s - 1 : s - 2), err_slot = ya + 2;
    static const int here[3] = {0, 0, 0};
    p->n_slots = adaptive ? ya + 3 : ya + 2;
    p->n_stages = stages;
    p->swap_after_step = 1;
    p->adapt_order = adaptive ? T->order : 0;
    p->adapt_eq_fields = 0;
    int f_err = -1;
    for (int f = 0; f < p->n_fields; f++)
        if (p->field_has_eq[f] && !algebraic(p, f)) { /* an algebraic field has no error of its own */
            p->adapt_eq_fields++;
            if (f_err < 0) f_err = f;
        }
    p->adapt_error_buf = adaptive && f_err >= 0 ? err_slot * p->n_fields + f_err : 0;
    for (int i = 0; i < stages; i++) { /* stage i + 1 of the tableau */
        char name[32];
        snprintf(name, sizeof name, "stage%d", i + 1);
        int read = i == 0 ? 0 : i == s - 1 ? 1 : ya + (i - 1) % 2;
        int write = i + 1 == s - 1 ? 1 : ya + i % 2; /* where Y_i+2 goes */
        kir_kernel *k = kir_new(KIR_STAGE, p->dim, p->n_fields, p->n_params, p->n_slots, name);
        if (!k) return -1;
        p->stages[i] = (pj_stage){k, read, T->c[i]};
        const int slot_map[2] = {read, read};
        kir_import(k, rhs, slot_map, field_slot, node_map);
        for (int f = 0; f < p->n_fields; f++) F[f] = -1;
        for (int o = 0; o < rhs->n_outputs; o++)
            if (!algebraic(p, rhs->outputs[o].field)) F[rhs->outputs[o].field] = node_map[rhs->outputs[o].node];
        int dtn = kir_leaf(k, KIR_DT), wsum = -1;
        for (int f = 0; f < p->n_fields; f++) {
            if (F[f] < 0) continue; /* a coefficient: stays in slot 0 as it is */
            if (i < s - 1) {
                /* Y_i+2 = U + dt (sum_j<=i a_i+2,j k_j): the k's before this one from their slots */
                const double *row = T->a + (size_t)(i + 1) * (size_t)s;
                int sum = kir_op2(k, KIR_MUL, kir_const(k, row[i]), F[f]);
                for (int j = i - 1; j >= 0; j--)
                    if (row[j] != 0)
                        sum = kir_op2(k, KIR_ADD, kir_op2(k, KIR_MUL, kir_const(k, row[j]), kir_load(k, 2 + j, f, here)), sum);
                kir_add_output(k, write, f, kir_op2(k, KIR_ADD, kir_load(k, 0, f, here), kir_op2(k, KIR_MUL, dtn, sum)));
                if (adaptive || i + 1 < s - 1) kir_add_output(k, 2 + i, f, F[f]); /* k_i+1, read later */
                continue;
            }
            /* the last stage: e = dt sum_j d_j k_j, y = Y_s (read here at the cell), y^ = y - e */
            int sum = kir_op2(k, KIR_MUL, kir_const(k, T->d[i]), F[f]);
            for (int j = i - 1; j >= 0; j--)
                if (T->d[j] != 0)
                    sum = kir_op2(k, KIR_ADD, kir_op2(k, KIR_MUL, kir_const(k, T->d[j]), kir_load(k, 2 + j, f, here)), sum);
            int e = kir_op2(k, KIR_MUL, dtn, sum);
            int y = kir_load(k, 1, f, here), yh = kir_op2(k, KIR_SUB, y, e);
            int ay = kir_op1(k, KIR_ABS, y), ayh = kir_op1(k, KIR_ABS, yh);
            int big = kir_op3(k, KIR_SELECT, kir_op2(k, KIR_GT, ayh, ay), ayh, ay);
            int scale = kir_op2(k, KIR_ADD, kir_const(k, ADAPT_ATOL(p->adapt)),
                                kir_op2(k, KIR_MUL, kir_const(k, p->adapt), big));
            int q = kir_op2(k, KIR_DIV, e, scale);
            int w = kir_op2(k, KIR_MUL, q, q);
            wsum = wsum < 0 ? w : kir_op2(k, KIR_ADD, wsum, w);
        }
        if (wsum >= 0) kir_add_output(k, err_slot, f_err, wsum);
        kir_finish(k);
    }
    return 0;
}

int scheme_lower(pj_program *p)
{
    if (PJ_SCHEME_IMPLICIT(p->scheme)) return implicit_lower(p);
    p->adapt_order = p->adapt_error_buf = p->adapt_eq_fields = 0;
    const scheme_spec *sp = &schemes[p->scheme];
    const kir_kernel *rhs = p->rhs;
    p->stages = calloc((size_t)(sp->n_stages > 7 ? sp->n_stages : 7), sizeof *p->stages);
    int *node_map = malloc(sizeof *node_map * (size_t)(rhs->n_nodes + 1));
    int *F = malloc(sizeof *F * (size_t)(p->n_fields + 1));
    int *field_slot = malloc(sizeof *field_slot * (size_t)(p->n_fields + 1));
    int rc = -1;
    if (!p->stages || !node_map || !F || !field_slot) goto done;
    for (int f = 0; f < p->n_fields; f++) field_slot[f] = p->field_has_eq[f] ? -1 : 0; /* coefficients: slot 0 */
    if (PJ_SCHEME_EMBEDDED(p->scheme)) {
        rc = embedded_lower(p, p->scheme == PJ_RK23 ? &bs3 : &dp5, node_map, F, field_slot);
        if (rc == 0) rc = algebraic_insert_passes(p);
        goto done;
    }
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
        for (int o = 0; o < rhs->n_outputs; o++)
            if (!algebraic(p, rhs->outputs[o].field)) F[rhs->outputs[o].field] = node_map[rhs->outputs[o].node];
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
    rc = algebraic_insert_passes(p);
done:
    free(node_map);
    free(F);
    free(field_slot);
    return rc;
}
