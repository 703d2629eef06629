/* test_kir.c — the kernel IR builder: folding, CSE, fused multiply-adds, hashing, halo. */
#include <math.h>
#include "testutil.h"
#include "kir.h"

static void cse_and_fold(void **state)
{
    (void)state;
    kir_kernel *k = kir_new(KIR_STAGE, 2, 1, 1, 1, "t");
    int off0[3] = {0, 0, 0}, offx[3] = {1, 0, 0}, offm[3] = {0, -2, 0};
    int u = kir_load(k, 0, 0, off0);
    int a = kir_op2(k, KIR_ADD, u, kir_load(k, 0, 0, offx));
    int b = kir_op2(k, KIR_ADD, kir_load(k, 0, 0, offx), u);
    assert_int_equal(a, b); /* commutative operands share one node */
    int c = kir_op2(k, KIR_MUL, kir_const(k, 2), kir_const(k, 3));
    assert_int_equal(k->nodes[c].op, KIR_CONST);
    assert_true(k->nodes[c].value == 6.0);
    kir_add_output(k, 0, 0, kir_op2(k, KIR_MUL, a, kir_load(k, 0, 0, offm)));
    kir_finish(k);
    char err[200];
    assert_int_equal(kir_verify(k, err, sizeof err), 0);
    int halo[1];
    kir_halo(k, halo);
    assert_int_equal(halo[0], 2);
    kir_free(k);
}

/* A clone keeps its own hash-cons table: finishing it and building more nodes in it works for
 * kernels larger than the initial table, and leaves the original alone. */
static void clone_is_independent(void **state)
{
    (void)state;
    kir_kernel *k = kir_new(KIR_STAGE, 1, 1, 0, 2, "big");
    int off[3] = {0, 0, 0}, acc = kir_load(k, 0, 0, off);
    for (int i = 0; i < 200; i++) acc = kir_op2(k, KIR_ADD, kir_op2(k, KIR_MUL, acc, kir_const(k, 1.5 + i)), kir_const(k, i));
    kir_add_output(k, 1, 0, acc);
    kir_finish(k);
    int n = k->n_nodes;
    kir_kernel *c = kir_clone(k);
    assert_int_equal(kir_op2(c, KIR_MUL, c->outputs[0].node, kir_const(c, 1.5)),
                     kir_op2(c, KIR_MUL, c->outputs[0].node, kir_const(c, 1.5)));
    c->outputs[0].node = kir_op1(c, KIR_EXP, c->outputs[0].node);
    kir_finish(c);
    char err[200];
    assert_int_equal(kir_verify(c, err, sizeof err), 0);
    assert_int_equal(c->n_nodes, n + 1);
    assert_int_equal(k->n_nodes, n);
    assert_memory_not_equal(c->hash, k->hash, 16);
    kir_free(c);
    kir_free(k);
}

/* kir_finish fuses an added product that nothing else uses into one fma (rounded once); a product
 * used twice stays a product. fma(1 + 2^-30, 1 - 2^-30, -1) is -2^-60 exactly, where the
 * product rounded first (to 1) gives 0. */
static void fused_multiply_add(void **state)
{
    (void)state;
    kir_kernel *k = kir_new(KIR_STAGE, 1, 3, 0, 2, "fma");
    int off[3] = {0, 0, 0};
    int a = kir_load(k, 0, 0, off), b = kir_load(k, 0, 1, off), c = kir_load(k, 0, 2, off);
    kir_add_output(k, 1, 0, kir_op2(k, KIR_ADD, c, kir_op2(k, KIR_MUL, a, b)));
    int shared = kir_op2(k, KIR_MUL, b, c);
    kir_add_output(k, 1, 1, kir_op2(k, KIR_ADD, shared, a));
    kir_add_output(k, 1, 2, shared);
    kir_finish(k);
    char err[200];
    assert_int_equal(kir_verify(k, err, sizeof err), 0);
    const kir_node *f = &k->nodes[k->outputs[0].node], *g = &k->nodes[k->outputs[1].node];
    assert_int_equal(f->op, KIR_FMA);
    assert_int_equal(k->nodes[f->arg[2]].op, KIR_LOAD);
    assert_int_equal(k->nodes[f->arg[2]].index, 2); /* c is the addend */
    assert_int_equal(g->op, KIR_ADD);               /* b*c is stored too: not fused */
    double x = 1 + ldexp(1, -30), y = 1 - ldexp(1, -30);
    assert_true(x * y + -1.0 == 0.0);
    assert_true(kir_eval_scalar(KIR_FMA, x, y, -1, 0) == -ldexp(1, -60));
    assert_true(kir_eval_scalar(KIR_FMA, 1 + ldexp(1, -13), 1 - ldexp(1, -13), -1, 1) == -ldexp(1, -26));
    kir_free(k);
}

/* kir_eval_params, one pass over the nodes, gives the values of evaluating the outputs one after
 * another (kir_eval_uniform, each with the params written before it), bit for bit: a chain of
 * 4000 params, some user-set; and a kernel whose order the one pass cannot follow (a param read
 * before the output that writes it) still reads the value given. kir_values_per_cell counts the
 * outputs and the distinct (slot, field) loaded. */
static void params_in_one_pass(void **state)
{
    (void)state;
    enum { N = 4000 };
    kir_kernel *k = kir_new(KIR_PARAMS, 1, 0, N, 0, "params");
    kir_add_output(k, 0, 0, kir_const(k, 0.3));
    for (int i = 1; i < N; i++) {
        int prev = kir_param(k, i - 1), a = kir_op1(k, KIR_SIN, prev);
        if (i > 7) a = kir_op2(k, KIR_ADD, a, kir_op2(k, KIR_MUL, kir_param(k, i - 7), kir_const(k, 0.5 + i % 3)));
        kir_add_output(k, 0, i, i % 1000 == 5 ? kir_const(k, i) : kir_op2(k, KIR_DIV, a, kir_const(k, 1.5)));
    }
    kir_finish(k);
    static double p[N], q[N];
    static unsigned char fixed[N];
    for (int i = 0; i < N; i++) {
        fixed[i] = i % 777 == 3;
        p[i] = q[i] = fixed[i] ? 0.25 * i : -1;
    }
    kir_eval_params(k, p, fixed);
    for (int o = 0; o < k->n_outputs; o++)
        if (!fixed[k->outputs[o].field]) q[k->outputs[o].field] = kir_eval_uniform(k, k->outputs[o].node, q, 0);
    assert_memory_equal(p, q, sizeof p);
    assert_true(isfinite(p[N - 1]) && p[N - 1] != p[N - 2]);
    kir_free(k);

    k = kir_new(KIR_PARAMS, 1, 0, 2, 0, "params");
    kir_add_output(k, 0, 1, kir_op2(k, KIR_ADD, kir_param(k, 0), kir_const(k, 1)));
    kir_add_output(k, 0, 0, kir_const(k, 7));
    kir_finish(k);
    double r[2] = {2, 0};
    kir_eval_params(k, r, NULL);
    assert_true(r[0] == 7 && r[1] == 3);
    kir_free(k);

    k = kir_new(KIR_STAGE, 1, 3, 0, 2, "t");
    int o0[3] = {0, 0, 0}, o1[3] = {1, 0, 0};
    int s = kir_op2(k, KIR_ADD, kir_load(k, 0, 2, o0), kir_load(k, 0, 2, o1));
    s = kir_op2(k, KIR_MUL, s, kir_load(k, 1, 2, o1));
    s = kir_op2(k, KIR_SUB, s, kir_load(k, 0, 0, o1));
    kir_add_output(k, 1, 0, s);
    kir_add_output(k, 1, 1, kir_load(k, 0, 2, o0));
    kir_finish(k);
    assert_int_equal(kir_values_per_cell(k), 2 + 3); /* (0, 2), (1, 2), (0, 0) */
    kir_free(k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(cse_and_fold), cmocka_unit_test(clone_is_independent),
                                       cmocka_unit_test(fused_multiply_add), cmocka_unit_test(params_in_one_pass)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
