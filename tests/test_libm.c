/* test_libm.c — the libm ops of the op table (compiler/kir_ops.h, the libm column) against the C
 * library they name.
 *
 * The expectation is not read from the table: each op's C function is looked up by the name the
 * op has in the IR and the language (dlsym of its text, "abs" meaning fabs; the float twin with
 * an "f"), so a table line whose function columns disagree with its name fails here. The points
 * are a fixed set, each op tested where the C function is finite (at least 3 points each).
 *
 *   libm_ops_are_the_c_library   every op of one or two arguments: the table's names are the C
 *                                names; the interpreter over a row of cells and kir_eval_scalar
 *                                (the constant folder's and the params' evaluator) give the C
 *                                function's bits, in double and in single precision
 *   libm_derivatives_against_finite_differences  every such op's derivative rule (derive.c): the
 *                                Jacobian kernel run by the interpreter against a central
 *                                difference of the C function, by each operand */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "derive.h"
#include "interp.h"
#include "kir.h"

static const double points[] = {-2.7, -0.6, -0.15, 0.35, 0.8, 1.9, 4.3};
#define N_POINTS ((int)(sizeof points / sizeof *points))
#define N_CELLS (N_POINTS * N_POINTS) /* every pair (a, b); one-argument ops read a */

typedef double (*fn1)(double);
typedef double (*fn2)(double, double);
typedef float (*fn1f)(float);
typedef float (*fn2f)(float, float);

/* The ops this test covers: libm functions of one or two arguments. */
static int covered(int op) { return kir_ops[op].cfn && (kir_ops[op].arity == 1 || kir_ops[op].arity == 2); }

/* The C library's function of op's name, double (single = 0) or float; fails the test when there is none. */
static void *c_function(int op, int single)
{
    char name[64];
    snprintf(name, sizeof name, "%s%s", op == KIR_ABS ? "fabs" : kir_ops[op].text, single ? "f" : "");
    void *f = dlsym(RTLD_DEFAULT, name);
    if (!f) fprintf(stderr, "op %s: no C function %s\n", kir_ops[op].text, name);
    assert_non_null(f);
    return f;
}

/* The C function at cell i's operands, in double. */
static double c_value(int op, int i, double da, double db)
{
    double a = points[i % N_POINTS] + da, b = points[i / N_POINTS] + db;
    void *f = c_function(op, 0);
    return kir_ops[op].arity == 1 ? ((fn1)f)(a) : ((fn2)f)(a, b);
}

/* op(u, w) of fields u and w read at the cell, stored into field 0 of slot 1. */
static kir_kernel *op_kernel(int op)
{
    kir_kernel *k = kir_new(KIR_STAGE, 1, 2, 0, 2, kir_ops[op].text);
    static const int here[3] = {0, 0, 0};
    int u = kir_load(k, 0, 0, here), w = kir_load(k, 0, 1, here);
    kir_add_output(k, 1, 0, kir_ops[op].arity == 1 ? kir_op1(k, (kir_op)op, u) : kir_op2(k, (kir_op)op, u, w));
    kir_finish(k);
    char err[200];
    assert_int_equal(kir_verify(k, err, sizeof err), 0);
    return k;
}

/* Runs kernel k over the N_CELLS cells, cell i reading (points[i % N], points[i / N]), in double or
 * single: buf[4 + j] gets output buffer j of a Jacobian kernel (k's own output: buf[2]). */
static void run(const kir_kernel *k, int single, double *out[8])
{
    static double mem[8][N_CELLS];
    static float memf[8][N_CELLS];
    void *buf[8];
    assert_true(k->n_slots * k->n_fields + (k->kind == KIR_JACOBIAN ? k->n_outputs : 0) <= 8);
    for (int b = 0; b < 8; b++) {
        for (int i = 0; i < N_CELLS; i++) {
            double v = b == 0 ? points[i % N_POINTS] : b == 1 ? points[i / N_POINTS] : NAN;
            mem[b][i] = v;
            memf[b][i] = (float)v;
        }
        buf[b] = single ? (void *)memf[b] : (void *)mem[b];
    }
    kir_launch L = {.buf = buf, .n = {N_CELLS, 1, 1}, .stride = {1, N_CELLS, N_CELLS}, .h = {1, 1, 1}};
    assert_int_equal(interp_stage(k, &L, single, 0, N_CELLS), 0);
    for (int b = 0; b < 8; b++) {
        if (single)
            for (int i = 0; i < N_CELLS; i++) mem[b][i] = memf[b][i];
        out[b] = mem[b];
    }
}

static int same_bits(double x, double y) { return !memcmp(&x, &y, sizeof x) || (isnan(x) && isnan(y)); }

static void libm_ops_are_the_c_library(void **state)
{
    (void)state;
    int ops = 0;
    for (int op = 0; op < KIR_N_OPS; op++) {
        if (!covered(op)) continue;
        /* the table's function names are the C library's of the op's name */
        char twin[64];
        snprintf(twin, sizeof twin, "%sf", kir_ops[op].cfn);
        assert_string_equal(kir_ops[op].cfn, op == KIR_ABS ? "fabs" : kir_ops[op].text);
        assert_string_equal(kir_ops[op].ffn, twin);
        void *fd = c_function(op, 0), *ff = c_function(op, 1);
        kir_kernel *k = op_kernel(op);
        int finite = 0;
        for (int single = 0; single <= 1; single++) {
            double *out[8];
            run(k, single, out);
            int cells = kir_ops[op].arity == 1 ? N_POINTS : N_CELLS;
            for (int i = 0; i < cells; i++) {
                double a = points[i % N_POINTS], b = points[i / N_POINTS], want;
                float af = (float)a, bf = (float)b;
                if (!single) want = kir_ops[op].arity == 1 ? ((fn1)fd)(a) : ((fn2)fd)(a, b);
                else want = kir_ops[op].arity == 1 ? ((fn1f)ff)(af) : ((fn2f)ff)(af, bf);
                double folded = kir_eval_scalar((kir_op)op, a, b, 0, single);
                if (!same_bits(out[2][i], want) || !same_bits(folded, want))
                    fprintf(stderr, "%s(%g, %g) in %s: C %.17g, interpreter %.17g, kir_eval_scalar %.17g\n",
                            kir_ops[op].text, a, b, single ? "single" : "double", want, out[2][i], folded);
                assert_true(same_bits(out[2][i], want));
                assert_true(same_bits(folded, want));
                finite += !single && isfinite(want);
            }
        }
        if (finite < 3) fprintf(stderr, "op %s: finite at %d points only\n", kir_ops[op].text, finite);
        assert_true(finite >= 3);
        kir_free(k);
        ops++;
    }
    printf("%d libm ops: the C library's bits in double and single\n", ops);
    assert_true(ops >= 20);
}

static void libm_derivatives_against_finite_differences(void **state)
{
    (void)state;
    int ops = 0, compared = 0;
    for (int op = 0; op < KIR_N_OPS; op++) {
        if (!covered(op)) continue;
        kir_kernel *k = op_kernel(op);
        derive_entry *ent = NULL;
        int n = 0;
        char err[200] = "";
        kir_kernel *j = derive_jacobian(k, &ent, &n, err, sizeof err);
        if (!j) fprintf(stderr, "derive %s: %s\n", kir_ops[op].text, err);
        assert_non_null(j);
        double *out[8];
        run(j, 0, out);
        int arity = kir_ops[op].arity, cells = arity == 1 ? N_POINTS : N_CELLS, here = 0;
        for (int i = 0; i < cells; i++) {
            double x[2] = {points[i % N_POINTS], points[i / N_POINTS]};
            if (!isfinite(c_value(op, i, 0, 0))) continue;
            for (int by = 0; by < arity; by++) {
                /* the central difference by operand `by`, where the function is finite around the point */
                double h = 1e-5 * fmax(1.0, fabs(x[by])), xp = x[by] + h, xm = x[by] - h;
                double fp = c_value(op, i, by == 0 ? h : 0, by == 1 ? h : 0);
                double fm = c_value(op, i, by == 0 ? -h : 0, by == 1 ? -h : 0);
                if (!isfinite(fp) || !isfinite(fm)) continue;
                double diff = (fp - fm) / (xp - xm), d = 0; /* no entry: a structural zero */
                for (int e = 0; e < n; e++)
                    if (ent[e].field == by) d = out[4 + e][i];
                if (!(fabs(d - diff) <= 1e-6 * fmax(1.0, fabs(diff))))
                    fprintf(stderr, "d %s(%g, %g) / d operand %d: derivative rule %.17g, central difference %.17g\n",
                            kir_ops[op].text, x[0], x[1], by + 1, d, diff);
                assert_true(fabs(d - diff) <= 1e-6 * fmax(1.0, fabs(diff)));
                compared++;
                here++;
            }
        }
        assert_true(here >= 3 * arity);
        free(ent);
        kir_free(j);
        kir_free(k);
        ops++;
    }
    printf("%d libm ops: %d derivatives agree with central differences\n", ops, compared);
    assert_true(ops >= 20);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(libm_ops_are_the_c_library),
                                       cmocka_unit_test(libm_derivatives_against_finite_differences)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
