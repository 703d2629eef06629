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

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(cse_and_fold), cmocka_unit_test(clone_is_independent),
                                       cmocka_unit_test(fused_multiply_add)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
