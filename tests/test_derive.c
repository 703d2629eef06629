/* test_derive.c — the derivative pass (compiler/derive.c) against finite differences.
 *
 * The oracle is the interpreter: a Jacobian entry d F_o / d U(slot, field, off), evaluated by
 * running the KIR_JACOBIAN kernel at one cell, must match the central difference of the source
 * kernel's output o at that cell when the buffer element at cell + off is perturbed (that
 * element is read by exactly that load of the cell). The difference is Richardson-extrapolated
 * from steps h and h/2; a point where the two steps disagree beyond what a smooth function
 * allows (a select switching, a floor jumping, a kink, rounding noise) is skipped and counted.
 *
 *   every_op_has_a_derivative_rule      the table's derivative column is filled for every op
 *   every_op_against_finite_differences each differentiable op at points of its domain, direct,
 *                                       through a chain factor and with one load in both operands
 *   piecewise_ops_have_no_derivative    comparisons, logic, b2f, floor, ceil: no entries
 *   pow_log_term_only_when_exponent_varies
 *   zero_arguments_have_derivative_zero abs(0), sqrt(0), atan2(0, 0): 0, never Inf or NaN
 *   heat_stencil_coefficients           lap(u) in 2D: the five-point stencil, exactly
 *   random_expressions_against_finite_differences  the random problem set, every entry
 *   hashes_are_canonical                same kernel twice, renamed and reformatted problems
 *   jacobian_through_llvm               the Jacobian kernel compiled by the LLVM back end
 *   jacobian_through_cuda_c             its CUDA C, compiled as host C++ and run thread by thread
 *                                       (skipped without a C++ compiler)
 *   refuses_other_kernels               an init kernel, an unverifiable kernel */
#include "testutil.h"
#include "gpu_emu/cuda_on_host.h"
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
#include <unistd.h>
#include "cuda_codegen.h"
#include "derive.h"
#include "interp.h"
#include "llvm_backend.h"
#include "program.h"
#include "randexpr.h"
#include "sema.h"

/* ---- one cell with its neighbours -------------------------------------------------------------- */

/* Buffers of n[a] + 2 halo[a] cells along each axis (n = 1: one interior cell in the middle): the
 * input buffers of a kernel (n_slots * n_fields), then the outputs of its Jacobian. */
typedef struct cell {
    int dim, n_bufs;
    int64_t len, centre, stride[3];
    double **mem;
    void **at;  /* mem[b] + centre */
    kir_launch L;
} cell;

static cell *grid_new(int dim, const int n[3], const int halo[3], int n_bufs, const double *params)
{
    cell *c = calloc(1, sizeof *c);
    assert_non_null(c);
    c->dim = dim;
    c->n_bufs = n_bufs;
    int64_t ext[3];
    for (int a = 0; a < 3; a++) ext[a] = a < dim ? n[a] + 2 * halo[a] : 1;
    c->stride[0] = 1;
    c->stride[1] = ext[0];
    c->stride[2] = ext[0] * ext[1];
    c->len = ext[0] * ext[1] * ext[2];
    c->centre = 0;
    for (int a = 0; a < dim; a++) c->centre += halo[a] * c->stride[a];
    c->mem = calloc((size_t)n_bufs + 1, sizeof *c->mem);
    c->at = calloc((size_t)n_bufs + 1, sizeof *c->at);
    assert_non_null(c->mem);
    assert_non_null(c->at);
    for (int b = 0; b < n_bufs; b++) {
        c->mem[b] = calloc((size_t)c->len, sizeof **c->mem);
        assert_non_null(c->mem[b]);
        c->at[b] = c->mem[b] + c->centre;
    }
    c->L = (kir_launch){.buf = c->at, .param = params, .t = 0.3, .dt = 1e-3,
                        .n = {dim > 0 ? n[0] : 1, dim > 1 ? n[1] : 1, dim > 2 ? n[2] : 1},
                        .stride = {c->stride[0], c->stride[1], c->stride[2]},
                        .h = {0.1, 0.15, 0.2}, .origin = {-0.4, 0.2, 0.5}};
    return c;
}

static cell *cell_new(int dim, const int halo[3], int n_bufs, const double *params)
{
    static const int one[3] = {1, 1, 1};
    return grid_new(dim, one, halo, n_bufs, params);
}

static void cell_free(cell *c)
{
    for (int b = 0; b < c->n_bufs; b++) free(c->mem[b]);
    free(c->mem);
    free(c->at);
    free(c);
}

static double *element(cell *c, int buf, const int off[3])
{
    return c->mem[buf] + c->centre + off[0] * c->stride[0] + off[1] * c->stride[1] + off[2] * c->stride[2];
}

/* Runs kernel k at the cell and returns its output o. The values the outputs overwrite are put
 * back (a stage may write in place a buffer it reads). */
static double eval_output(cell *c, const kir_kernel *k, int o)
{
    double saved[64];
    assert_true(k->n_outputs <= 64);
    for (int i = 0; i < k->n_outputs; i++)
        saved[i] = c->mem[k->outputs[i].slot * k->n_fields + k->outputs[i].field][c->centre];
    interp_stage(k, &c->L, 0, 0, 1);
    const kir_output *out = &k->outputs[o];
    double v = c->mem[out->slot * k->n_fields + out->field][c->centre];
    for (int i = k->n_outputs - 1; i >= 0; i--)
        c->mem[k->outputs[i].slot * k->n_fields + k->outputs[i].field][c->centre] = saved[i];
    return v;
}

static const kir_kernel *differentiate(const kir_kernel *k, derive_entry **ent, int *n)
{
    char err[256] = "";
    kir_kernel *j = derive_jacobian(k, ent, n, err, sizeof err);
    if (!j) fprintf(stderr, "derive: %s\n", err);
    assert_non_null(j);
    assert_int_equal(j->kind, KIR_JACOBIAN);
    assert_int_equal(j->n_outputs, *n);
    assert_int_equal(kir_verify(j, err, sizeof err), 0);
    return j;
}

/* ---- finite differences ------------------------------------------------------------------------ */

/* worst: the largest difference seen, as a fraction of its tolerance (1 = at the limit) */
typedef struct fd_stats { int candidates, compared, skipped, bad; double worst; } fd_stats;

/* Compares Jacobian entry e (value jv, computed at the cell's current values) with the
 * Richardson-extrapolated central difference of source output e->output. Smoothness: the
 * differences with steps h and h/2 must agree to `smooth` relative; the entry must then agree to
 * `tol` relative (plus the rounding noise of the differences). */
static void fd_check(cell *c, const kir_kernel *k, const derive_entry *e, double jv, double smooth, double tol,
                     fd_stats *st, const char *what)
{
    double *x = element(c, e->slot * k->n_fields + e->field, e->off);
    double x0 = *x, h = 1e-4 * fmax(1.0, fabs(x0)), f[4], step[2];
    double f0 = eval_output(c, k, e->output);
    for (int s = 0; s < 2; s++) {
        double hs = s ? h / 2 : h, xp = x0 + hs, xm = x0 - hs;
        *x = xp;
        f[2 * s] = eval_output(c, k, e->output);
        *x = xm;
        f[2 * s + 1] = eval_output(c, k, e->output);
        step[s] = xp - xm;
    }
    *x = x0;
    int finite = isfinite(jv) && isfinite(f0);
    double fbig = fabs(f0);
    for (int i = 0; i < 4; i++) {
        finite &= isfinite(f[i]) != 0;
        fbig = fbig > fabs(f[i]) ? fbig : fabs(f[i]);
    }
    if (!finite) return;
    st->candidates++;
    double d1 = (f[0] - f[1]) / step[0], d2 = (f[2] - f[3]) / step[1];
    double noise = 1e3 * DBL_EPSILON * fbig / h;
    if (fabs(d1 - d2) > smooth * fmax(fabs(d1), fabs(d2)) + noise) {
        st->skipped++;
        return;
    }
    double r = (4 * d2 - d1) / 3, diff = fabs(jv - r);
    double scale = fmax(fabs(jv), fabs(r));
    st->compared++;
    if (diff > tol * scale + noise) {
        if (st->bad < 10)
            fprintf(stderr, "%s: d out%d / d f%d@%d[%d,%d,%d] at %.17g: jacobian %.17g, differences %.17g (h: %.17g, h/2: %.17g)\n",
                    what, e->output, e->field, e->slot, e->off[0], e->off[1], e->off[2], x0, jv, r, d1, d2);
        st->bad++;
    }
    if (diff / (tol * scale + noise) > st->worst) st->worst = diff / (tol * scale + noise);
}

/* Evaluates Jacobian kernel j at the cell: the value of derivative e. */
static double *eval_jacobian(cell *c, const kir_kernel *j)
{
    interp_stage(j, &c->L, 0, 0, 1);
    double *v = calloc((size_t)j->n_outputs + 1, sizeof *v);
    assert_non_null(v);
    for (int e = 0; e < j->n_outputs; e++) v[e] = c->mem[j->n_slots * j->n_fields + e][c->centre];
    return v;
}

/* ---- the op table -------------------------------------------------------------------------------- */

static void every_op_has_a_derivative_rule(void **state)
{
    (void)state;
    for (int op = 0; op < KIR_N_OPS; op++) {
        derive_rule r = derive_op_rule((kir_op)op);
        if (r == DERIVE_NONE) fprintf(stderr, "op %s has no derivative rule in kir_ops.h\n", kir_ops[op].text);
        assert_int_not_equal(r, DERIVE_NONE);
        if (kir_ops[op].arity == 0) assert_int_equal(r, op == KIR_LOAD ? DERIVE_VAR : DERIVE_ZERO);
        else assert_int_not_equal(r, DERIVE_VAR);
        if (kir_ops[op].type == KIR_B) assert_int_equal(r, DERIVE_ZERO); /* booleans have no derivative */
    }
    assert_int_equal(derive_op_rule(KIR_N_OPS), DERIVE_NONE);
    /* the user names are the language's functions: each names one op, and the front end knows it */
    for (int op = 0; op < KIR_N_OPS; op++) {
        if (!kir_ops[op].user) continue;
        assert_true(sema_is_builtin_function(kir_ops[op].user));
        for (int other = op + 1; other < KIR_N_OPS; other++)
            assert_false(kir_ops[other].user && !strcmp(kir_ops[op].user, kir_ops[other].user));
    }
}

/* Points inside each differentiable op's domain (first operand, second operand), away from
 * its singularities; an op with a chain rule and no line here fails the test. */
typedef struct op_domain { kir_op op; double at[3][2]; } op_domain;
static const op_domain domains[] = {
    {KIR_NEG, {{-1.3, 0}, {0.4, 0}, {2.1, 0}}},
    {KIR_ADD, {{-1.3, 0.7}, {0.4, -2.2}, {2.1, 3.3}}},
    {KIR_SUB, {{-1.3, 0.7}, {0.4, -2.2}, {2.1, 3.3}}},
    {KIR_MUL, {{-1.3, 0.7}, {0.4, -2.2}, {2.1, 3.3}}},
    {KIR_DIV, {{-1.3, 0.7}, {0.4, -2.2}, {2.1, 3.3}}},
    {KIR_ABS, {{-1.3, 0}, {0.4, 0}, {2.1, 0}}},
    {KIR_SQRT, {{0.3, 0}, {1.7, 0}, {25, 0}}},
    {KIR_EXP, {{-2, 0}, {0.5, 0}, {3, 0}}},
    {KIR_LOG, {{0.2, 0}, {1.5, 0}, {40, 0}}},
    {KIR_LOG10, {{0.2, 0}, {1.5, 0}, {40, 0}}},
    {KIR_CBRT, {{-8.5, 0}, {0.3, 0}, {27, 0}}},
    {KIR_SIN, {{-2, 0}, {0.5, 0}, {3, 0}}},
    {KIR_COS, {{-2, 0}, {0.5, 0}, {3, 0}}},
    {KIR_TAN, {{-1.2, 0}, {0.3, 0}, {1.1, 0}}},
    {KIR_ASIN, {{-0.8, 0}, {0.1, 0}, {0.9, 0}}},
    {KIR_ACOS, {{-0.8, 0}, {0.1, 0}, {0.9, 0}}},
    {KIR_ATAN, {{-3, 0}, {0.2, 0}, {5, 0}}},
    {KIR_SINH, {{-2, 0}, {0.3, 0}, {1.5, 0}}},
    {KIR_COSH, {{-2, 0}, {0.3, 0}, {1.5, 0}}},
    {KIR_TANH, {{-2, 0}, {0.3, 0}, {1.5, 0}}},
    {KIR_ERF, {{-1.5, 0}, {0.2, 0}, {2, 0}}},
    {KIR_ERFC, {{-1.5, 0}, {0.2, 0}, {2, 0}}},
    {KIR_POW, {{0.5, 2.5}, {1.7, -0.6}, {3, 0.3}}},
    {KIR_ATAN2, {{1, 2}, {-0.7, -0.4}, {0.3, -2}}},
};

static const op_domain *domain_of(kir_op op)
{
    for (size_t i = 0; i < sizeof domains / sizeof *domains; i++)
        if (domains[i].op == op) return &domains[i];
    return NULL;
}

static const int at_right[3] = {1, 0, 0}, at_left[3] = {-1, 0, 0}, here[3] = {0, 0, 0};

/* Every op with a chain rule: op(u[1]) and op(0.5*v[-1]) (a chain factor) for unary ops,
 * op(u[1], v[-1]) and op(u[0], u[0]) (one load in both operands) for binary ones, 1D, two fields. */
static void every_op_against_finite_differences(void **state)
{
    (void)state;
    fd_stats st = {0};
    int ops_tested = 0, entries_expected = 0;
    for (int op = 0; op < KIR_N_OPS; op++) {
        if (derive_op_rule((kir_op)op) != DERIVE_CHAIN) continue;
        const op_domain *dom = domain_of((kir_op)op);
        if (!dom) fprintf(stderr, "op %s has a derivative rule but no test points in test_derive.c\n", kir_ops[op].text);
        assert_non_null(dom);
        int arity = kir_ops[op].arity;
        assert_true(arity == 1 || arity == 2);
        kir_kernel *k = kir_new(KIR_STAGE, 1, 2, 0, 2, kir_ops[op].text);
        int u = kir_load(k, 0, 0, at_right), v = kir_load(k, 0, 1, at_left), w = kir_load(k, 0, 0, here);
        if (arity == 1) {
            kir_add_output(k, 1, 0, kir_op1(k, (kir_op)op, u));
            kir_add_output(k, 1, 1, kir_op1(k, (kir_op)op, kir_op2(k, KIR_MUL, kir_const(k, 0.5), v)));
        } else {
            kir_add_output(k, 1, 0, kir_op2(k, (kir_op)op, u, v));
            kir_add_output(k, 1, 1, kir_op2(k, (kir_op)op, w, w));
        }
        kir_finish(k);
        derive_entry *ent;
        int n;
        const kir_kernel *j = differentiate(k, &ent, &n);
        /* the first output depends on each of its operands' loads: one entry each */
        int first = 0;
        for (int e = 0; e < n; e++) first += ent[e].output == 0;
        assert_int_equal(first, arity);
        assert_true(n >= arity + (arity == 1)); /* op(w, w) may cancel structurally (w - w) */
        int halo[3] = {1, 0, 0};
        cell *c = cell_new(1, halo, k->n_slots * k->n_fields + n, NULL);
        for (int p = 0; p < 3; p++) {
            double a = dom->at[p][0], b = dom->at[p][1];
            *element(c, 0, at_right) = a;
            *element(c, 0, here) = a;
            *element(c, 1, at_left) = arity == 1 ? 2 * a : b;
            double *jv = eval_jacobian(c, j);
            char what[64];
            snprintf(what, sizeof what, "%s at (%g, %g)", kir_ops[op].text, a, b);
            for (int e = 0; e < n; e++) fd_check(c, k, &ent[e], jv[e], 1e-6, 1e-7, &st, what);
            free(jv);
            entries_expected += n;
        }
        cell_free(c);
        free(ent);
        kir_free((kir_kernel *)j);
        kir_free(k);
        ops_tested++;
    }
    printf("%d ops, %d entries: %d compared with finite differences, worst difference %.2g of its tolerance\n", ops_tested,
           entries_expected, st.compared, st.worst);
    assert_int_equal(st.bad, 0);
    /* the points are inside the domains: every entry is finite and smooth there */
    assert_int_equal(st.candidates, entries_expected);
    assert_int_equal(st.compared, entries_expected);
    assert_int_equal(ops_tested, (int)(sizeof domains / sizeof *domains));
}

/* select(u > v, u*u, sin(v)): each branch's derivative on its side of the switch. */
static void select_against_finite_differences(void **state)
{
    (void)state;
    kir_kernel *k = kir_new(KIR_STAGE, 1, 2, 0, 2, "select");
    int u = kir_load(k, 0, 0, at_right), v = kir_load(k, 0, 1, at_left);
    kir_add_output(k, 1, 0, kir_op3(k, KIR_SELECT, kir_op2(k, KIR_GT, u, v), kir_op2(k, KIR_MUL, u, u),
                                    kir_op1(k, KIR_SIN, v)));
    kir_finish(k);
    derive_entry *ent;
    int n;
    const kir_kernel *j = differentiate(k, &ent, &n);
    assert_int_equal(n, 2); /* u[1] and v[-1] */
    assert_int_equal(ent[0].field, 0);
    assert_int_equal(ent[1].field, 1);
    int halo[3] = {1, 0, 0};
    cell *c = cell_new(1, halo, k->n_slots * k->n_fields + n, NULL);
    const double pts[4][2] = {{1.5, 0.3}, {-0.2, 0.9}, {2.0, -1.0}, {0.1, 0.4}};
    fd_stats st = {0};
    for (int p = 0; p < 4; p++) {
        *element(c, 0, at_right) = pts[p][0];
        *element(c, 1, at_left) = pts[p][1];
        double *jv = eval_jacobian(c, j);
        /* the independent expectation, by hand */
        double du = pts[p][0] > pts[p][1] ? 2 * pts[p][0] : 0, dv = pts[p][0] > pts[p][1] ? 0 : cos(pts[p][1]);
        assert_true(fabs(jv[0] - du) <= 1e-15 * fabs(du));
        assert_true(fabs(jv[1] - dv) <= 1e-15 * fabs(dv));
        for (int e = 0; e < n; e++) fd_check(c, k, &ent[e], jv[e], 1e-6, 1e-7, &st, "select");
        free(jv);
    }
    assert_int_equal(st.bad, 0);
    assert_int_equal(st.compared, 8);
    cell_free(c);
    free(ent);
    kir_free((kir_kernel *)j);
    kir_free(k);
}

/* Every op whose rule is zero (comparisons, logic, b2f, f2b, floor, ceil) applied to loads gives
 * no entry; added to a load, only that load's entry remains, with value 1. */
static void piecewise_ops_have_no_derivative(void **state)
{
    (void)state;
    int tested = 0;
    for (int op = 0; op < KIR_N_OPS; op++) {
        if (derive_op_rule((kir_op)op) != DERIVE_ZERO || kir_ops[op].arity == 0) continue;
        kir_kernel *k = kir_new(KIR_STAGE, 1, 2, 0, 2, kir_ops[op].text);
        int u = kir_load(k, 0, 0, at_right), v = kir_load(k, 0, 1, at_left);
        int args[3] = {u, v, u};
        if (op == KIR_B2F || op == KIR_NOT || op == KIR_AND || op == KIR_OR)
            for (int a = 0; a < 3; a++) args[a] = kir_op2(k, KIR_LT, args[a], kir_const(k, 0.5));
        int r = kir_ops[op].arity == 1 ? kir_op1(k, (kir_op)op, args[0])
              : kir_ops[op].arity == 2 ? kir_op2(k, (kir_op)op, args[0], args[1])
                                       : kir_op3(k, (kir_op)op, args[0], args[1], args[2]);
        r = kir_as_f(k, r);
        kir_add_output(k, 1, 0, r);
        kir_add_output(k, 1, 1, kir_op2(k, KIR_ADD, r, kir_load(k, 0, 1, here)));
        kir_finish(k);
        derive_entry *ent;
        int n;
        const kir_kernel *j = differentiate(k, &ent, &n);
        assert_int_equal(n, 1);
        assert_int_equal(ent[0].output, 1);
        assert_int_equal(ent[0].field, 1);
        assert_int_equal(ent[0].off[0], 0);
        assert_int_equal(j->nodes[j->outputs[0].node].op, KIR_CONST);
        assert_true(j->nodes[j->outputs[0].node].value == 1.0);
        free(ent);
        kir_free((kir_kernel *)j);
        kir_free(k);
        tested++;
    }
    assert_true(tested >= 13); /* lt le gt ge eq ne and or not b2f f2b floor ceil */
}

/* abs, sqrt and atan2 where the classical derivative is infinite or undefined (what a zero
 * gradient gives: contract section 9): every Jacobian entry finite and exactly 0, for the ops
 * alone and in the compositions a gradient's magnitude and angle make; beside the zero, the usual
 * derivative (atan2(0, v): 1/v by the first operand, 0 by the second; sqrt(u) at 4: 1/4). */
static void zero_arguments_have_derivative_zero(void **state)
{
    (void)state;
    kir_kernel *k = kir_new(KIR_STAGE, 1, 6, 0, 2, "zero");
    int u = kir_load(k, 0, 0, at_right), v = kir_load(k, 0, 1, at_left), w = kir_load(k, 0, 0, here);
    int mag = kir_op1(k, KIR_SQRT, kir_op2(k, KIR_ADD, kir_op2(k, KIR_MUL, u, u), kir_op2(k, KIR_MUL, v, v)));
    int theta = kir_op2(k, KIR_ATAN2, kir_op2(k, KIR_SUB, u, w), kir_op2(k, KIR_SUB, v, w));
    kir_add_output(k, 1, 0, kir_op1(k, KIR_ABS, u));
    kir_add_output(k, 1, 1, kir_op1(k, KIR_SQRT, v));
    kir_add_output(k, 1, 2, kir_op2(k, KIR_ATAN2, u, v));
    kir_add_output(k, 1, 3, mag);
    kir_add_output(k, 1, 4, kir_op1(k, KIR_COS, kir_op2(k, KIR_MUL, kir_const(k, 4), theta)));
    kir_add_output(k, 1, 5, kir_op2(k, KIR_ADD, kir_op2(k, KIR_MUL, theta, mag), kir_op1(k, KIR_ABS, kir_op2(k, KIR_SUB, u, v))));
    kir_finish(k);
    derive_entry *ent;
    int n;
    const kir_kernel *j = differentiate(k, &ent, &n);
    assert_true(n >= 10);
    int halo[3] = {1, 0, 0};
    cell *c = cell_new(1, halo, k->n_slots * k->n_fields + n, NULL);
    double *jv = eval_jacobian(c, j); /* every load 0 */
    for (int e = 0; e < n; e++) {
        if (!(jv[e] == 0))
            fail_msg("d out%d / d f%d[%d] at 0: %.17g, expected 0", ent[e].output, ent[e].field, ent[e].off[0], jv[e]);
    }
    free(jv);
    /* u = 0, v = 4: atan2(0, 4) by u is 1/4, by v 0; sqrt(4) by v is 1/4 */
    *element(c, 1, at_left) = 4;
    jv = eval_jacobian(c, j);
    int seen = 0;
    for (int e = 0; e < n; e++) {
        assert_true(isfinite(jv[e]));
        if (ent[e].output == 2) {
            assert_true(jv[e] == (ent[e].field == 0 ? 0.25 : 0.0));
            seen++;
        }
        if (ent[e].output == 1) {
            assert_true(jv[e] == 0.25);
            seen++;
        }
    }
    assert_int_equal(seen, 3);
    free(jv);
    cell_free(c);
    free(ent);
    kir_free((kir_kernel *)j);
    kir_free(k);
}

static int count_op(const kir_kernel *k, kir_op op)
{
    int n = 0;
    for (int id = 0; id < k->n_nodes; id++) n += k->nodes[id].op == op;
    return n;
}

/* pow(u, 2.5): no log(u) term (its exponent has no derivative); pow(u, v): the log term. */
static void pow_log_term_only_when_exponent_varies(void **state)
{
    (void)state;
    for (int var = 0; var <= 1; var++) {
        kir_kernel *k = kir_new(KIR_STAGE, 1, 2, 0, 2, "pow");
        int u = kir_load(k, 0, 0, here), b = var ? kir_load(k, 0, 1, here) : kir_const(k, 2.5);
        kir_add_output(k, 1, 0, kir_op2(k, KIR_POW, u, b));
        kir_finish(k);
        derive_entry *ent;
        int n;
        const kir_kernel *j = differentiate(k, &ent, &n);
        assert_int_equal(n, 1 + var);
        assert_int_equal(count_op(j, KIR_LOG), var);
        free(ent);
        kir_free((kir_kernel *)j);
        kir_free(k);
    }
}

/* ---- problems --------------------------------------------------------------------------------- */

static pj_program *compile_euler(const char *src)
{
    diag d;
    diag_init(&d, "t.pde", src, strlen(src));
    pj_compile_options opt = {.scheme = PJ_EULER, .scheme_set = 1};
    pj_program *p = compile_problem("t.pde", src, strlen(src), &d, &opt);
    if (!p) fprintf(stderr, "%s\n%s", src, d.log);
    diag_free(&d);
    assert_non_null(p);
    return p;
}

/* The right-hand sides F alone, from an Euler stage (out = U + dt * F, in kir form
 * fma(dt, F, load(0, f, here)), or add(load, dt) when F = 1): a KIR_STAGE kernel writing F of
 * each field into slot 1. */
static kir_kernel *rhs_kernel(const pj_program *p)
{
    kir_kernel *k = kir_clone(p->stages[0].kernel);
    for (int o = 0; o < k->n_outputs; o++) {
        const kir_node *n = &k->nodes[k->outputs[o].node];
        int F = -1;
        if (n->op == KIR_FMA) { /* U + dt * F, the product fused (kir_finish) */
            for (int b = 0; b < 2; b++)
                if (k->nodes[n->arg[b]].op == KIR_DT) F = n->arg[1 - b];
        } else { /* U + dt * F, the product shared; or U + dt when F = 1 */
            assert_int_equal(n->op, KIR_ADD);
            for (int a = 0; a < 2 && F < 0; a++) {
                const kir_node *m = &k->nodes[n->arg[a]];
                if (m->op == KIR_DT) F = kir_const(k, 1.0); /* dt * 1 folds to dt */
                if (m->op != KIR_MUL) continue;
                for (int b = 0; b < 2; b++)
                    if (k->nodes[m->arg[b]].op == KIR_DT) F = m->arg[1 - b];
            }
        }
        assert_true(F >= 0);
        k->outputs[o].node = F;
    }
    kir_finish(k);
    char err[200];
    assert_int_equal(kir_verify(k, err, sizeof err), 0);
    return k;
}

/* lap(u) in 2D: D/h^2 times the five-point stencil, in canonical order (y, then x). */
static void heat_stencil_coefficients(void **state)
{
    (void)state;
    pj_program *p = compile_euler("mesh grid(nx = 8, ny = 4, Lx = 2, Ly = 2)\nparam D = 0.3\nfield u = x\n"
                                  "eq dt(u) = D*lap(u)\ntime dt = 0.001, steps = 1\n");
    kir_kernel *k = rhs_kernel(p);
    derive_entry *ent;
    int n;
    const kir_kernel *j = differentiate(k, &ent, &n);
    assert_int_equal(n, 5);
    static const int offs[5][2] = {{0, -1}, {-1, 0}, {0, 0}, {1, 0}, {0, 1}};
    int halo[3] = {1, 1, 0};
    cell *c = cell_new(2, halo, k->n_slots * k->n_fields + n, p->param_values);
    double hx = c->L.h[0], hy = c->L.h[1], D = p->param_values[0];
    double want[5] = {D / (hy * hy), D / (hx * hx), -2 * D / (hx * hx) - 2 * D / (hy * hy), D / (hx * hx),
                      D / (hy * hy)};
    double *jv = eval_jacobian(c, j);
    for (int e = 0; e < 5; e++) {
        assert_int_equal(ent[e].output, 0);
        assert_int_equal(ent[e].out_slot, 1);
        assert_int_equal(ent[e].out_field, 0);
        assert_int_equal(ent[e].slot, 0);
        assert_int_equal(ent[e].field, 0);
        assert_int_equal(ent[e].off[0], offs[e][0]);
        assert_int_equal(ent[e].off[1], offs[e][1]);
        assert_int_equal(ent[e].off[2], 0);
        if (tu_reldiff(jv[e], want[e]) > 1e-14) fprintf(stderr, "entry %d: %.17g, want %.17g\n", e, jv[e], want[e]);
        assert_true(tu_reldiff(jv[e], want[e]) <= 1e-14);
    }
    free(jv);
    cell_free(c);
    free(ent);
    kir_free((kir_kernel *)j);
    kir_free(k);
    program_free(p);
}

/* Fills the input buffers (slots of the state, every cell) with values in (0.2, 1.4). */
static void fill_state(cell *c, int n_in, unsigned *seed)
{
    for (int b = 0; b < n_in; b++)
        for (int64_t i = 0; i < c->len; i++) {
            *seed = *seed * 1103515245u + 12345u;
            c->mem[b][i] = 0.2 + 1.2 * (double)((*seed >> 8) % 100000) / 100000.0;
        }
}

/* Every Jacobian entry at `points` random states: returns the number of entries. */
static int check_kernel(const kir_kernel *k, const double *params, double dt, int points, unsigned *seed,
                        fd_stats *st, const char *what)
{
    derive_entry *ent;
    int n;
    const kir_kernel *j = differentiate(k, &ent, &n);
    int halo[3];
    kir_halo_axes(k, halo);
    cell *c = cell_new(k->dim, halo, k->n_slots * k->n_fields + n, params);
    c->L.dt = dt;
    for (int point = 0; point < points; point++) {
        fill_state(c, k->n_slots * k->n_fields, seed);
        double *jv = eval_jacobian(c, j);
        for (int e = 0; e < n; e++) fd_check(c, k, &ent[e], jv[e], 1e-7, 1e-6, st, what);
        free(jv);
    }
    cell_free(c);
    free(ent);
    kir_free((kir_kernel *)j);
    return n;
}

/* The random problem set: every Jacobian entry of every right-hand side F (from the Euler
 * stage), and of the last stage kernel of the problem's own scheme (rk2, rk3, rk4: loads of
 * two slots, U + dt F combinations, with dt = 0.5 so that F is not lost beside U), at random
 * states of each problem. */
static void random_expressions_against_finite_differences(void **state)
{
    (void)state;
    randexpr r = {12345};
    unsigned seed = 2024;
    fd_stats st = {0}, st_stage = {0};
    int problems = 0, entries = 0, stage_entries = 0;
    for (int prob = 0; prob < 63; prob++) {
        char *src = randexpr_problem(&r, prob);
        assert_non_null(src);
        pj_program *p = compile_euler(src);
        kir_kernel *k = rhs_kernel(p);
        char what[48];
        snprintf(what, sizeof what, "random problem %d", prob);
        int bad = st.bad + st_stage.bad;
        entries += check_kernel(k, p->param_values, 1e-3, 4, &seed, &st, what);
        kir_free(k);
        program_free(p);
        diag d;
        diag_init(&d, "t.pde", src, strlen(src));
        p = compile_problem("t.pde", src, strlen(src), &d, NULL);
        diag_free(&d);
        assert_non_null(p);
        snprintf(what, sizeof what, "random problem %d, %s stage %d", prob, scheme_name(p->scheme), p->n_stages);
        stage_entries += check_kernel(p->stages[p->n_stages - 1].kernel, p->param_values, 0.5, 2, &seed, &st_stage,
                                      what);
        if (st.bad + st_stage.bad != bad) fprintf(stderr, "%s\n", src);
        problems++;
        program_free(p);
        free(src);
    }
    printf("%d random problems, right-hand sides: %d Jacobian entries at 4 points: %d finite, %d compared with "
           "finite differences, %d skipped as not smooth there; worst difference %.2g of its tolerance\n",
           problems, entries, st.candidates, st.compared, st.skipped, st.worst);
    printf("last stages: %d entries at 2 points: %d finite, %d compared, %d skipped; worst %.2g of its tolerance\n",
           stage_entries, st_stage.candidates, st_stage.compared, st_stage.skipped, st_stage.worst);
    assert_int_equal(st.bad, 0);
    assert_int_equal(st_stage.bad, 0);
    /* most entries are smooth at a random point: the comparison must not be mostly skipped */
    assert_true(st.candidates >= entries); /* on average at least one finite point of 4 per entry */
    assert_true(2 * st.compared >= st.candidates);
    assert_true(st_stage.candidates >= stage_entries / 2);
    assert_true(2 * st_stage.compared >= st_stage.candidates);
}

/* ---- hashing ------------------------------------------------------------------------------------ */

static const char *problem_a =
    "mesh grid(nx = 16, ny = 8)\nparam D = 0.1, k = 2\nfield u = x\nfield v = y\n"
    "eq dt(u) = D*lap(u) + u*u*v - k*u + atan2(u[1, 0], v)\n"
    "eq dt(v) = div(grad(v)) - u*u*v + exp(-v[0, -1]) * pow(u, v)\n"
    "time dt = 0.001, steps = 1\n";
/* the same mathematics: other names, other layout, a comment */
static const char *problem_b =
    "# renamed\nmesh grid(nx = 16, ny = 8)\nparam diff = 0.1,   rate = 2\nfield a = x\nfield b = y\n"
    "eq dt(a) = diff * lap(a) + a*a*b - rate*a + atan2(a[1,0], b)\n"
    "eq dt(b) = div(grad(b)) - a*a*b + exp(-b[0,-1])*pow(a, b)\n"
    "time dt = 0.001, steps = 1\n";
/* different mathematics: one exponent */
static const char *problem_c =
    "mesh grid(nx = 16, ny = 8)\nparam D = 0.1, k = 2\nfield u = x\nfield v = y\n"
    "eq dt(u) = D*lap(u) + u*u*v - k*u + atan2(u[1, 0], v)\n"
    "eq dt(v) = div(grad(v)) - u*u*v + exp(-v[0, -1]) * pow(v, u)\n"
    "time dt = 0.001, steps = 1\n";

static kir_kernel *jacobian_of(const char *src, derive_entry **ent, int *n, pj_program **prog)
{
    pj_program *p = compile_euler(src);
    kir_kernel *k = rhs_kernel(p);
    kir_kernel *j = (kir_kernel *)differentiate(k, ent, n);
    kir_free(k);
    if (prog) *prog = p;
    else program_free(p);
    return j;
}

static void hashes_are_canonical(void **state)
{
    (void)state;
    pj_program *p = compile_euler(problem_a);
    kir_kernel *k = rhs_kernel(p);
    derive_entry *e1, *e2;
    int n1, n2;
    kir_kernel *j1 = (kir_kernel *)differentiate(k, &e1, &n1), *j2 = (kir_kernel *)differentiate(k, &e2, &n2);
    assert_memory_equal(j1->hash, j2->hash, 16);
    assert_int_equal(n1, n2);
    assert_memory_equal(e1, e2, sizeof *e1 * (size_t)n1);
    assert_memory_not_equal(j1->hash, k->hash, 16);
    /* hash-consed: no two nodes alike (a structural duplicate would have the same node hash) */
    for (int a = 0; a < j1->n_nodes; a++)
        for (int b = a + 1; b < j1->n_nodes; b++) assert_true(j1->nodes[a].hash != j1->nodes[b].hash);
    /* the primal values are shared, not copied: the jacobian holds the nodes of F it needs once */
    assert_true(count_op(j1, KIR_LOAD) <= count_op(k, KIR_LOAD));

    derive_entry *eb, *ec;
    int nb, nc;
    kir_kernel *jb = jacobian_of(problem_b, &eb, &nb, NULL), *jc = jacobian_of(problem_c, &ec, &nc, NULL);
    char h1[33], hb[33], hc[33];
    kir_hash_hex(j1, h1);
    kir_hash_hex(jb, hb);
    kir_hash_hex(jc, hc);
    printf("jacobian of the problem %s (%d entries), renamed %s, changed %s\n", h1, n1, hb, hc);
    assert_string_equal(h1, hb);
    assert_int_equal(n1, nb);
    assert_memory_equal(e1, eb, sizeof *e1 * (size_t)n1);
    assert_string_not_equal(h1, hc);
    /* the program's own right-hand-side kernel (KIR_RHS) has the same stencil entries as F taken
       out of the Euler stage */
    derive_entry *er;
    int nr;
    char err[256];
    kir_kernel *jr = derive_jacobian(p->rhs, &er, &nr, err, sizeof err);
    assert_non_null(jr);
    assert_int_equal(nr, n1);
    for (int i = 0; i < nr; i++) {
        assert_int_equal(er[i].out_field, e1[i].out_field);
        assert_int_equal(er[i].field, e1[i].field);
        assert_memory_equal(er[i].off, e1[i].off, sizeof er[i].off);
    }
    free(er);
    kir_free(jr);
    free(e1);
    free(e2);
    free(eb);
    free(ec);
    kir_free(j1);
    kir_free(j2);
    kir_free(jb);
    kir_free(jc);
    kir_free(k);
    program_free(p);
}

/* ---- every back end ------------------------------------------------------------------------------ */

/* The Jacobian of problem_a and of a 3D random problem compiled by LLVM agree with the
 * interpreter on every interior cell of a grid (double precision: to the bit in practice, 1e-12
 * by contract). */
static void jacobian_through_llvm(void **state)
{
    (void)state;
    char err[512] = "";
    llvm_jit *jit = llvm_jit_create(err, sizeof err);
    if (!jit) fprintf(stderr, "%s\n", err);
    assert_non_null(jit);
    randexpr r = {4242};
    char *random3d = randexpr_problem(&r, 2);
    const char *srcs[2] = {problem_a, random3d};
    for (int s = 0; s < 2; s++) {
        derive_entry *ent;
        int n;
        pj_program *p;
        kir_kernel *j = jacobian_of(srcs[s], &ent, &n, &p);
        assert_true(n > 0);
        void *obj = NULL;
        size_t len = 0;
        char sym[32];
        snprintf(sym, sizeof sym, "pj_derive_test_%d", s);
        int rc = llvm_compile(jit, j, NULL, sym, &obj, &len, NULL, NULL, err, sizeof err);
        if (rc) fprintf(stderr, "%s\n", err);
        assert_int_equal(rc, 0);
        kir_cpu_fn fn = NULL;
        llvm_loaded *handle = NULL;
        rc = llvm_load(jit, obj, len, sym, &fn, &handle, err, sizeof err);
        if (rc) fprintf(stderr, "%s\n", err);
        assert_int_equal(rc, 0);
        int halo[3], cells[3] = {7, 5, 3};
        kir_halo_axes(j, halo);
        int n_in = j->n_slots * j->n_fields;
        cell *a = grid_new(j->dim, cells, halo, n_in + n, p->param_values);
        cell *b = grid_new(j->dim, cells, halo, n_in + n, p->param_values);
        unsigned vals = 99;
        for (int buf = 0; buf < n_in; buf++)
            for (int64_t i = 0; i < a->len; i++) {
                vals = vals * 1103515245u + 12345u;
                a->mem[buf][i] = b->mem[buf][i] = 0.2 + 1.2 * (double)((vals >> 8) % 100000) / 100000.0;
            }
        int64_t outer = a->L.n[j->dim - 1];
        interp_stage(j, &a->L, 0, 0, outer);
        fn(&b->L, 0, outer);
        int compared = 0, finite = 0;
        int64_t nc[3] = {a->L.n[0], a->L.n[1], a->L.n[2]};
        for (int e = 0; e < n; e++)
            for (int64_t z = 0; z < nc[2]; z++)
                for (int64_t y = 0; y < nc[1]; y++)
                    for (int64_t x = 0; x < nc[0]; x++) {
                        int64_t i = a->centre + x + y * a->stride[1] + z * a->stride[2];
                        double u = a->mem[n_in + e][i], w = b->mem[n_in + e][i];
                        if (isnan(u) && isnan(w)) continue;
                        compared++;
                        finite += isfinite(u) != 0;
                        int ok = isinf(u) || isinf(w) ? u == w : tu_reldiff(u, w) <= 1e-12;
                        if (!ok)
                            fprintf(stderr, "problem %d, derivative %d, cell (%lld,%lld,%lld): interp %.17g, llvm %.17g\n",
                                    s, e, (long long)x, (long long)y, (long long)z, u, w);
                        assert_true(ok);
                    }
        printf("%s: %d derivatives through LLVM, %d cell values agree with the interpreter (%d finite)\n", j->name, n,
               compared, finite);
        assert_true(2 * finite >= n * nc[0] * nc[1] * nc[2]); /* mostly real values compared */
        llvm_unload(jit, handle);
        free(obj);
        cell_free(a);
        cell_free(b);
        free(ent);
        kir_free(j);
        program_free(p);
    }
    free(random3d);
    llvm_jit_destroy(jit);
}

/* The program's right-hand-side kernel (KIR_RHS) is a kernel like any other: compiled by LLVM it
 * gives the interpreter's F to the bit, and the CUDA code generator takes it. */
static void rhs_kernels_through_every_back_end(void **state)
{
    (void)state;
    char err[512] = "";
    llvm_jit *jit = llvm_jit_create(err, sizeof err);
    assert_non_null(jit);
    randexpr r = {777};
    for (int s = 0; s < 6; s++) {
        char *src = randexpr_problem(&r, s);
        pj_program *p = compile_euler(src);
        const kir_kernel *k = p->rhs;
        assert_int_equal(k->kind, KIR_RHS);
        void *obj = NULL;
        size_t len = 0;
        char sym[32];
        snprintf(sym, sizeof sym, "pj_rhs_test_%d", s);
        int rc = llvm_compile(jit, k, NULL, sym, &obj, &len, NULL, NULL, err, sizeof err);
        if (rc) fprintf(stderr, "%s\n", err);
        assert_int_equal(rc, 0);
        kir_cpu_fn fn = NULL;
        llvm_loaded *handle = NULL;
        assert_int_equal(llvm_load(jit, obj, len, sym, &fn, &handle, err, sizeof err), 0);
        int halo[3], cells[3] = {6, 5, 4};
        kir_halo_axes(k, halo);
        int nb = k->n_slots * k->n_fields;
        cell *a = grid_new(k->dim, cells, halo, nb, p->param_values);
        cell *b = grid_new(k->dim, cells, halo, nb, p->param_values);
        unsigned vals = 7;
        for (int buf = 0; buf < nb; buf++)
            for (int64_t i = 0; i < a->len; i++) {
                vals = vals * 1103515245u + 12345u;
                a->mem[buf][i] = b->mem[buf][i] = 0.2 + 1.2 * (double)((vals >> 8) % 100000) / 100000.0;
            }
        int64_t outer = a->L.n[k->dim - 1];
        interp_stage(k, &a->L, 0, 0, outer);
        fn(&b->L, 0, outer);
        int same = 0;
        for (int f = 0; f < k->n_fields; f++)
            for (int64_t i = 0; i < a->len; i++) {
                double u = a->mem[k->n_fields + f][i], w = b->mem[k->n_fields + f][i];
                assert_true((isnan(u) && isnan(w)) || u == w);
                same += isfinite(u) != 0;
            }
        assert_true(same > 0);
        char *cu = cuda_codegen(k, NULL, "pj_rhs", err, sizeof err);
        if (!cu) fprintf(stderr, "%s\n", err);
        assert_non_null(cu);
        free(cu);
        llvm_unload(jit, handle);
        free(obj);
        cell_free(a);
        cell_free(b);
        program_free(p);
        free(src);
    }
    llvm_jit_destroy(jit);
}

/* The CUDA C of a kernel runs on the host: CUDA's built-ins as C++, one call per thread. */
static const char cuda_on_host_prelude[] = PJ_CUDA_ON_HOST_PRELUDE "#line 1 \"jacobian.cu\"\n";
static const char cuda_on_host_runner[] =
    "\nextern \"C\" void pj_run(const void *arg, const unsigned *g, const unsigned *b)\n"
    "{\n    pj_args a;\n    memcpy(&a, arg, sizeof a);\n    blockDim = {b[0], b[1], b[2]};\n"
    "    for (unsigned z = 0; z < g[2]; z++) for (unsigned y = 0; y < g[1]; y++) for (unsigned x = 0; x < g[0]; x++)\n"
    "    for (unsigned tz = 0; tz < b[2]; tz++) for (unsigned ty = 0; ty < b[1]; ty++) for (unsigned tx = 0; tx < b[0]; tx++) {\n"
    "        blockIdx = {x, y, z};\n        threadIdx = {tx, ty, tz};\n        %s(a);\n    }\n}\n";

/* The Jacobian of problem_a through cuda_codegen, run on the host, against the interpreter on
 * every interior cell of a grid (to 1e-12: the same operations in the same order). */
static void jacobian_through_cuda_c(void **state)
{
    (void)state;
    if (tu_run("c++ --version", NULL) != 0) {
        printf("no C++ compiler: CUDA C of the Jacobian not run\n");
        skip();
    }
    derive_entry *ent;
    int n;
    pj_program *p;
    kir_kernel *j = jacobian_of(problem_a, &ent, &n, &p);
    char err[512] = "";
    char *cu = cuda_codegen(j, NULL, "pj_jacobian", err, sizeof err);
    if (!cu) fprintf(stderr, "%s\n", err);
    assert_non_null(cu);
    int n_in = j->n_slots * j->n_fields;
    for (int e = 0; e < n; e++) { /* each derivative stored into its own buffer */
        char store[64];
        snprintf(store, sizeof store, "a.buf[%d]", n_in + e);
        assert_non_null(strstr(cu, store));
    }
    char *dir = tu_tempdir("derive-cuda"), path[512], so[512], cmd[1400];
    snprintf(path, sizeof path, "%s/jacobian.cpp", dir);
    snprintf(so, sizeof so, "%s/jacobian.so", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(cuda_on_host_prelude, f);
    fputs(cu, f);
    fprintf(f, cuda_on_host_runner, "pj_jacobian");
    fclose(f);
    snprintf(cmd, sizeof cmd, "c++ -std=c++11 -O1 -shared -fPIC -o %s %s", so, path);
    char *log = NULL;
    int rc = tu_run(cmd, &log);
    if (rc) fprintf(stderr, "%s\n%s\n", cmd, log ? log : "");
    free(log);
    assert_int_equal(rc, 0);
    void *lib = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(lib);
    void (*run)(const void *, const unsigned *, const unsigned *);
    *(void **)&run = dlsym(lib, "pj_run");
    assert_non_null(run);

    int halo[3], cells[3] = {9, 6, 1};
    kir_halo_axes(j, halo);
    cell *a = grid_new(j->dim, cells, halo, n_in + n, p->param_values);
    cell *b = grid_new(j->dim, cells, halo, n_in + n, p->param_values);
    unsigned seed = 7;
    fill_state(a, n_in, &seed);
    for (int buf = 0; buf < n_in; buf++) memcpy(b->mem[buf], a->mem[buf], sizeof(double) * (size_t)a->len);
    interp_stage(j, &a->L, 0, 0, a->L.n[j->dim - 1]);
    cuda_args args;
    memset(&args, 0, sizeof args);
    for (int buf = 0; buf < n_in + n; buf++) args.buf[buf] = (uint64_t)(uintptr_t)b->at[buf];
    for (int i = 0; i < p->n_params; i++) args.param[i] = p->param_values[i];
    args.t = b->L.t;
    args.dt = b->L.dt;
    for (int ax = 0; ax < 3; ax++) {
        args.n[ax] = b->L.n[ax];
        args.stride[ax] = b->L.stride[ax];
        args.h[ax] = b->L.h[ax];
        args.origin[ax] = b->L.origin[ax];
        args.ghost[ax] = ax < j->dim ? halo[ax] : 0;
    }
    unsigned grid[3], block[3];
    assert_int_equal(cuda_stage_dims(j->dim, args.n, grid, block), 0);
    run(&args, grid, block);
    int compared = 0;
    for (int e = 0; e < n; e++)
        for (int64_t y = 0; y < a->L.n[1]; y++)
            for (int64_t x = 0; x < a->L.n[0]; x++) {
                int64_t i = a->centre + x + y * a->stride[1];
                double u = a->mem[n_in + e][i], w = b->mem[n_in + e][i];
                if (tu_reldiff(u, w) > 1e-12)
                    fprintf(stderr, "derivative %d, cell (%lld,%lld): interp %.17g, CUDA C %.17g\n", e, (long long)x,
                            (long long)y, u, w);
                assert_true(isfinite(u) && tu_reldiff(u, w) <= 1e-12);
                compared++;
            }
    printf("%s: %d derivatives in CUDA C, %d cell values agree with the interpreter\n", j->name, n, compared);
    assert_int_equal(compared, n * cells[0] * cells[1]);
    dlclose(lib);
    remove(path);
    remove(so);
    rmdir(dir);
    free(dir);
    cell_free(a);
    cell_free(b);
    free(cu);
    free(ent);
    kir_free(j);
    program_free(p);
}

static void refuses_other_kernels(void **state)
{
    (void)state;
    pj_program *p = compile_euler(problem_a);
    derive_entry *ent = (derive_entry *)&ent;
    int n = -1;
    char err[200] = "";
    assert_null(derive_jacobian(p->init, &ent, &n, err, sizeof err));
    assert_null(ent);
    assert_int_equal(n, 0);
    assert_non_null(strstr(err, "not a stage kernel"));
    /* a load of a field the kernel does not have: kir_verify refuses it, so does the pass */
    kir_kernel *k = kir_new(KIR_STAGE, 1, 1, 0, 2, "bad");
    kir_add_output(k, 1, 0, kir_load(k, 0, 3, here));
    kir_finish(k);
    err[0] = 0;
    assert_null(derive_jacobian(k, &ent, &n, err, sizeof err));
    assert_non_null(strstr(err, "out of range"));
    assert_null(derive_jacobian(p->stages[0].kernel, NULL, &n, err, sizeof err));
    kir_free(k);
    program_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_op_has_a_derivative_rule),
        cmocka_unit_test(every_op_against_finite_differences),
        cmocka_unit_test(select_against_finite_differences),
        cmocka_unit_test(piecewise_ops_have_no_derivative),
        cmocka_unit_test(pow_log_term_only_when_exponent_varies),
        cmocka_unit_test(zero_arguments_have_derivative_zero),
        cmocka_unit_test(heat_stencil_coefficients),
        cmocka_unit_test(random_expressions_against_finite_differences),
        cmocka_unit_test(hashes_are_canonical),
        cmocka_unit_test(jacobian_through_llvm),
        cmocka_unit_test(rhs_kernels_through_every_back_end),
        cmocka_unit_test(jacobian_through_cuda_c),
        cmocka_unit_test(refuses_other_kernels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
