/* test_compile.c — the lowering to kernel IR: canonical hashes, CSE, halo widths, operator
 * expansion checked against hand-expanded formulas. */
#include "testutil.h"
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "derive.h"
#include "program.h"
#include "solve.h"

/* One hex string of every kernel's hash, in order. */
static char *hashes(const pj_program *p)
{
    char *s = calloc(1, 40 * 16);
    char hex[33];
    for (int i = 0; i < p->n_stages; i++) {
        kir_hash_hex(p->stages[i].kernel, hex);
        strcat(s, hex);
        strcat(s, " ");
    }
    kir_hash_hex(p->init, hex);
    strcat(s, hex);
    for (int i = 0; i < 6; i++)
        if (p->bc_kernel[i]) {
            kir_hash_hex(p->bc_kernel[i], hex);
            strcat(s, " ");
            strcat(s, hex);
        }
    return s;
}

static void hash_invariance(void **state)
{
    (void)state;
    const char *a =
        "mesh grid(nx = 64, ny = 32)\n"
        "param D = 1, k = 2\n"
        "func g(s) = s*(1 - s)\n"
        "field u = x\n"
        "eq dt(u) = div(D*grad(u)) + k*g(u)\n"
        "on left: u = 1\n"
        "time dt = 0.1, steps = 3\n";
    /* renamed field, params and func; reformatted; comments; a different mesh size */
    const char *b =
        "# the same mathematics\n"
        "mesh grid(nx=128,ny=8)\n"
        "param   diffusivity=1 ,\n"
        "        rate = 2\n"
        "func   logistic( q ) = q * (1-q)   # logistic growth\n"
        "field  c = x\n"
        "eq dt(c) = div(diffusivity * grad(c)) +\n"
        "           rate * logistic(c)\n"
        "on left:\tc = 1\n"
        "time dt = 0.1, steps = 3\n";
    /* a changed formula: (1 - s) -> (2 - s) */
    const char *c =
        "mesh grid(nx = 64, ny = 32)\n"
        "param D = 1, k = 2\n"
        "func g(s) = s*(2 - s)\n"
        "field u = x\n"
        "eq dt(u) = div(D*grad(u)) + k*g(u)\n"
        "on left: u = 1\n"
        "time dt = 0.1, steps = 3\n";
    pj_program *pa = compile_text(a), *pb = compile_text(b), *pc = compile_text(c);
    char *ha = hashes(pa), *hb = hashes(pb), *hc = hashes(pc);
    assert_string_equal(ha, hb);
    /* the stage kernels differ, the initial values do not */
    assert_true(strncmp(ha, hc, 32) != 0);
    char ia[33], ic[33];
    kir_hash_hex(pa->init, ia);
    kir_hash_hex(pc->init, ic);
    assert_string_equal(ia, ic);
    free(ha); free(hb); free(hc);
    program_free(pa); program_free(pb); program_free(pc);
}

static int count_op(const kir_kernel *k, kir_op op)
{
    int n = 0;
    for (int i = 0; i < k->n_nodes; i++) n += k->nodes[i].op == op;
    return n;
}

static void cse_and_folding(void **state)
{
    (void)state;
    pj_program *p = compile_text("mesh grid(nx=8)\nconst c = 2*3\nfield u\n"
                            "eq dt(u) = u*(1-u) + u*(1-u) + c*exp(u) + c*exp(u)\ntime dt=1, steps=1, scheme=euler\n");
    const kir_kernel *k = p->stages[0].kernel;
    assert_int_equal(count_op(k, KIR_EXP), 1);  /* one exp(u) */
    assert_int_equal(count_op(k, KIR_SUB), 1);  /* one 1-u */
    assert_int_equal(count_op(k, KIR_LOAD), 1); /* u loaded once */
    int six = 0;
    for (int i = 0; i < k->n_nodes; i++) six += k->nodes[i].op == KIR_CONST && k->nodes[i].value == 6.0;
    assert_int_equal(six, 1); /* const folded */
    program_free(p);
}

static void halo_widths(void **state)
{
    (void)state;
    struct { const char *rhs; int halo; } cases[] = {
        {"u", 0}, {"lap(u)", 1}, {"lap(lap(u))", 2}, {"div(grad(lap(u)))", 2}, {"u[3] - u[-2]", 3},
        {"div(u*grad(u))", 1}, {"-div(adv(u))", 2}, {"div(RR(u) - LL(u))", 2}, {"lap(u[1])", 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char src[512];
        snprintf(src, sizeof src,
                 "mesh grid(nx=16)\nflux adv(u) = L(u) + 0.5*(R(u) - LL(u))\nfield u, v\neq dt(u) = %s\neq dt(v) = lap(v)\n"
                 "time dt = 1, steps = 1\n", cases[i].rhs);
        pj_program *p = compile_text(src);
        if (p->field_halo[0] != cases[i].halo) fprintf(stderr, "%s: halo %d\n", cases[i].rhs, p->field_halo[0]);
        assert_int_equal(p->field_halo[0], cases[i].halo);
        assert_int_equal(p->field_halo[1], 1);
        program_free(p);
    }
}

/* Evaluates stage 1 of a 1D euler problem at cell i of the state `u` (no ghosts needed: the
 * array is long and i is in the middle), with kir_eval_scalar walking the DAG. */
static double eval_cell(const kir_kernel *k, const double *u, int i, double h, double dt, const double *params)
{
    double *v = calloc((size_t)k->n_nodes, sizeof *v);
    for (int id = 0; id < k->n_nodes; id++) {
        const kir_node *n = &k->nodes[id];
        double a = n->arg[0] >= 0 ? v[n->arg[0]] : 0, b = n->arg[1] >= 0 ? v[n->arg[1]] : 0,
               c = n->arg[2] >= 0 ? v[n->arg[2]] : 0;
        switch (n->op) {
        case KIR_CONST: v[id] = n->value; break;
        case KIR_PARAM: v[id] = params[n->index]; break;
        case KIR_LOAD: v[id] = u[i + n->off[0]]; break;
        case KIR_SPACING: v[id] = h; break;
        case KIR_DT: v[id] = dt; break;
        case KIR_COORD: v[id] = (i + 0.5 + 0.5 * n->half) * h; break;
        default: v[id] = kir_eval_scalar((kir_op)n->op, a, b, c, 0);
        }
    }
    double r = v[k->outputs[0].node];
    free(v);
    return r;
}

static void operators_expand_as_written(void **state)
{
    (void)state;
    double u[40], h = 0.25, dt = 0.01;
    for (int i = 0; i < 40; i++) u[i] = 0.3 + 0.2 * sin(0.7 * i) + 0.01 * i * i;
    struct { const char *rhs; double (*expect)(const double *u, int i, double h); } cases[] = {
        {"lap(u)", NULL}, {"div(D*grad(u))", NULL}, {"div(u*grad(u))", NULL}, {"lap(lap(u))", NULL},
        {"-div(upwind(u, 1))", NULL}, {"div(harm(u)*grad(u))", NULL}, {"u[2] - u[-1]", NULL}, {"div(x*grad(u))", NULL},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        char src[512];
        snprintf(src, sizeof src, "mesh grid(nx=40, Lx=10)\nparam D = 1.5\nfield u\neq dt(u) = %s\ntime dt=0.01, steps=1, scheme=euler\n",
                 cases[c].rhs);
        pj_program *p = compile_text(src);
        const kir_kernel *k = p->stages[0].kernel;
        for (int i = 6; i < 34; i++) {
            double got = (eval_cell(k, u, i, h, dt, p->param_values) - u[i]) / dt, want;
            double fe = (u[i + 1] - u[i]) / h, fw = (u[i] - u[i - 1]) / h;
            double ue = 0.5 * (u[i] + u[i + 1]), uw = 0.5 * (u[i - 1] + u[i]);
            double xe = (i + 1) * h, xw = i * h;
            switch (c) {
            case 0: want = (fe - fw) / h; break;
            case 1: want = (1.5 * fe - 1.5 * fw) / h; break;
            case 2: want = (ue * fe - uw * fw) / h; break;
            case 3: {
                double l[40];
                for (int j = 1; j < 39; j++) l[j] = ((u[j + 1] - u[j]) / h - (u[j] - u[j - 1]) / h) / h;
                want = ((l[i + 1] - l[i]) / h - (l[i] - l[i - 1]) / h) / h;
                break;
            }
            case 4: want = -(u[i] - u[i - 1]) / h; break;
            case 5: {
                double he = 2 * u[i] * u[i + 1] / (u[i] + u[i + 1]), hw = 2 * u[i - 1] * u[i] / (u[i - 1] + u[i]);
                want = (he * fe - hw * fw) / h;
                break;
            }
            case 6: want = u[i + 2] - u[i - 1]; break;
            default: want = (xe * fe - xw * fw) / h; break;
            }
            if (tu_reldiff(got, want) > 1e-9) fprintf(stderr, "%s at %d: %.17g vs %.17g\n", cases[c].rhs, i, got, want);
            assert_true(tu_reldiff(got, want) <= 1e-9);
        }
        program_free(p);
    }
}

static void boundary_classification(void **state)
{
    (void)state;
    pj_program *p = compile_text("mesh grid(nx=8, ny=8)\nparam g = 3\nfield u\neq dt(u) = lap(u)\n"
                            "on left: u = 1\non right: dn(u) = g\non bottom: 2*u + 0.5*dn(u) = 1\n"
                            "on top: u = sin(t) + x\ntime dt=1, steps=1\n");
    assert_int_equal(p->bc[0][0].kind, PJ_BC_LINEAR);
    assert_true(p->bc[0][0].constant);
    assert_true(p->bc[0][2].constant);
    assert_false(p->bc[0][3].constant);
    /* bottom: a = 2, b = 0.5, c = 1 */
    const kir_kernel *k = p->bc_kernel[2];
    double abc[3] = {0, 0, 0};
    for (int i = 0; i < k->n_outputs; i++)
        abc[k->outputs[i].slot] = kir_eval_uniform(k, k->outputs[i].node, p->param_values, 0);
    assert_true(abc[0] == 2 && abc[1] == 0.5 && abc[2] == 1);
    k = p->bc_kernel[1];
    for (int i = 0; i < k->n_outputs; i++)
        abc[k->outputs[i].slot] = kir_eval_uniform(k, k->outputs[i].node, p->param_values, 0);
    assert_true(abc[0] == 0 && abc[1] == 1 && abc[2] == 3);
    program_free(p);
}

/* A field without an eq is a coefficient: every stage reads it from slot 0 and none writes it,
 * so Gray-Scott with D(x, y) for each species moves 6 values (48 bytes) per cell and stage with
 * Euler: u, v, Du, Dv read, u, v written — not 8 (the coefficients copied along). */
static void coefficient_fields_are_read_only(void **state)
{
    (void)state;
    static const char *const schemes[] = {"euler", "rk2", "rk3", "rk4"};
    for (int sc = 0; sc < 4; sc++) {
        char src[1024];
        snprintf(src, sizeof src,
                 "mesh grid(nx = 16, ny = 16)\nparam F = 0.04, k = 0.06\n"
                 "field Du = 2e-5*(1 + x), Dv = 1e-5*(1 + y)\nfield u = 1, v = x*y\n"
                 "eq dt(u) = div(Du*grad(u)) - u*v*v + F*(1 - u)\neq dt(v) = div(Dv*grad(v)) + u*v*v - (F + k)*v\n"
                 "periodic x, y\ntime dt = 1, steps = 1, scheme = %s\n", schemes[sc]);
        pj_program *p = compile_text(src);
        assert_non_null(p);
        for (int s = 0; s < p->n_stages; s++) {
            const kir_kernel *k = p->stages[s].kernel;
            for (int o = 0; o < k->n_outputs; o++) assert_true(p->field_has_eq[k->outputs[o].field]);
            for (int i = 0; i < k->n_nodes; i++)
                if (k->nodes[i].op == KIR_LOAD && !p->field_has_eq[k->nodes[i].index]) assert_int_equal(k->nodes[i].slot, 0);
        }
        if (sc == 0) assert_int_equal(kir_values_per_cell(p->stages[0].kernel) * 8, 48);
        program_free(p);
    }
}

static void *ask_jacobian(void *p) { return (void *)program_jacobian(p, NULL, 0); }

/* The kernel set (program.h): every kernel by its name. An explicit scheme has its stages and a
 * Jacobian derived on first use, once, whoever asks (threads at once: one kept); an implicit one
 * has no stages, and its F, Jacobian (derived when compiled, with slots for its entries) and,
 * under imex, explicit part are what a step runs. */
static void kernel_set(void **state)
{
    (void)state;
    static const char *const schemes[] = {"rk2", "bdf2", "imex"};
    for (int sc = 0; sc < 3; sc++) {
        char src[512];
        snprintf(src, sizeof src, "mesh grid(nx = 16, ny = 8)\nfield u = x, v = y\neq dt(u) = %s + u*(1 - v)\n"
                 "eq dt(v) = lap(v) - u\nmonitor m = integral(u)\ntime dt = 0.001, steps = 1, scheme = %s\n",
                 sc == 2 ? "implicit(lap(u))" : "lap(u)", schemes[sc]);
        pj_program *p = compile_text(src);
        int implicit = sc > 0;
        const kir_kernel *F = program_kernel(p, PJ_KERNEL_RHS_IMPLICIT);
        assert_ptr_equal(program_kernel(p, PJ_KERNEL_RHS), p->rhs);
        assert_ptr_equal(F, sc == 2 ? p->rhs_implicit : p->rhs);
        assert_ptr_equal(program_kernel(p, PJ_KERNEL_RHS_EXPLICIT), sc == 2 ? p->rhs_explicit : NULL);
        assert_ptr_equal(program_kernel(p, PJ_KERNEL_REDUCE), p->reduce);
        assert_ptr_equal(program_kernel(p, PJ_KERNEL_INIT), p->init);
        assert_int_equal(p->n_stages, implicit ? 0 : 2);
        assert_null(program_kernel(p, PJ_KERNEL_STAGE(p->n_stages)));
        if (!implicit) assert_ptr_equal(program_kernel(p, PJ_KERNEL_STAGE(1)), p->stages[1].kernel);
        assert_true(implicit ? p->jacobian != NULL : p->jacobian == NULL); /* explicit: not yet derived */
        pthread_t th[4];
        void *got[4];
        for (int i = 0; i < 4; i++) assert_int_equal(pthread_create(&th[i], NULL, ask_jacobian, p), 0);
        for (int i = 0; i < 4; i++) assert_int_equal(pthread_join(th[i], &got[i]), 0);
        const pj_jacobian *J = program_jacobian(p, NULL, 0);
        for (int i = 0; i < 4; i++) assert_ptr_equal(got[i], J);
        assert_ptr_equal(program_kernel(p, PJ_KERNEL_JACOBIAN), J->kernel);
        derive_entry *e = NULL;
        int n = 0;
        kir_kernel *d = derive_jacobian(F, &e, &n, NULL, 0);
        assert_non_null(d);
        assert_int_equal(n, J->n);
        assert_memory_equal(d->hash, J->kernel->hash, 16);
        assert_memory_equal(e, J->entries, sizeof *e * (size_t)n);
        if (implicit) assert_int_equal(p->n_slots, 2 + (n + 1) / 2);
        kir_free(d);
        free(e);
        pj_kernel_id ids[PJ_KERNEL_IDS_MAX];
        int k = program_run_kernels(p, ids);
        assert_int_equal(k, sc == 0 ? 3 : sc == 1 ? 3 : 4);
        assert_int_equal(ids[0], implicit ? PJ_KERNEL_RHS_IMPLICIT : PJ_KERNEL_STAGE(0));
        assert_int_equal(ids[1], implicit ? PJ_KERNEL_JACOBIAN : PJ_KERNEL_STAGE(1));
        if (sc == 2) assert_int_equal(ids[2], PJ_KERNEL_RHS_EXPLICIT);
        assert_int_equal(ids[k - 1], PJ_KERNEL_REDUCE);
        assert_int_equal(program_step_kernels(p, ids), k - 1);
        program_free(p);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hash_invariance),
        cmocka_unit_test(kernel_set),
        cmocka_unit_test(coefficient_fields_are_read_only),
        cmocka_unit_test(cse_and_folding),
        cmocka_unit_test(halo_widths),
        cmocka_unit_test(operators_expand_as_written),
        cmocka_unit_test(boundary_classification),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
