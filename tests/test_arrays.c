/* test_arrays.c — order-parameter arrays (LANGUAGE.md §9, docs/language.md "Order-parameter
 * arrays"): `field eta[N]`, `eta[k]`, `eq dt(eta[i])` templates, condition templates, `sum` and
 * `prod`, against independent expectations:
 *
 *   same_as_field_by_field   a problem written with an array (templates for the init, the equation
 *                            and two boundary conditions, sum, prod, i as a value) and the same
 *                            problem written out field by field by hand: the same kernels (hash
 *                            of every kernel), the same field names, the same final bits on the
 *                            interpreter and on the CPU back end (the emulated GPU runs the
 *                            array case of the table of cases, tests/solve.c, and pfhub2)
 *   sum_prod_values          one Euler step of sum, prod, a nested sum over j != k and i as a
 *                            value, against the same sums computed here from the initial values
 *   member_neighbours        eta[j][1, 0] (a member's neighbour) against eta1[1, 0] ... by hand
 *   members_by_constants     eta[N], eta[2*1 + 1], eq dt(eta[2]) for one member, --set N
 *   errors_at_the_text       each misuse: the exact message, at its line and column, once
 *   names_outside            `pdejit run`: the members eta1 ... etaN in --dump, in snapshots
 *                            (`output fields = eta`), a monitor of integral(eta[1]) equal to one of
 *                            integral(eta1), --init from a dump, --resume from a checkpoint; the
 *                            C API's field names and pj_sim_get_field("eta2")
 *   pfhub2_sample            samples/pfhub2.pde (PFHub 2a): the free energy falls, c is conserved,
 *                            the order parameters stay in [0, 1] (to 0.01) */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pdejit.h"
#include "program.h"
#include "solve.h"

/* ---- the same problem, as an array and field by field ------------------------------------- */

static const char array_text[] =
    "mesh grid(nx = 20, ny = 12, Lx = 2, Ly = 1.2)\n"
    "param L = 1, kappa = 0.01, alpha = 2\n"
    "const N = 3\n"
    "field c = 0.5 + 0.1*rand()\n"
    "field eta[N] = 0.1*i*rand() + 0.05*x\n"
    "eq dt(c) = 0.02*lap(c) - 0.1*sum(j, eta[j]^2)*c\n"
    "eq dt(eta[i]) = -L*(eta[i]^3 - eta[i] + alpha*eta[i]*sum(j, eta[j]^2) - alpha*eta[i]^3 - kappa*lap(eta[i])) +\n"
    "                0.01*prod(k, 1 + eta[k]) + 0.001*i*c\n"
    "periodic y\n"
    "on left: eta[i] = 0.1*i\n"
    "on right: dn(eta[i]) = 0.2*eta[i]\n"
    "time dt = 0.01, until = 0.5, scheme = rk2\n";

static const char by_hand_text[] =
    "mesh grid(nx = 20, ny = 12, Lx = 2, Ly = 1.2)\n"
    "param L = 1, kappa = 0.01, alpha = 2\n"
    "const N = 3\n"
    "field c = 0.5 + 0.1*rand()\n"
    "field eta1 = 0.1*1*rand() + 0.05*x, eta2 = 0.1*2*rand() + 0.05*x, eta3 = 0.1*3*rand() + 0.05*x\n"
    "eq dt(c) = 0.02*lap(c) - 0.1*(eta1^2 + eta2^2 + eta3^2)*c\n"
    "eq dt(eta1) = -L*(eta1^3 - eta1 + alpha*eta1*(eta1^2 + eta2^2 + eta3^2) - alpha*eta1^3 - kappa*lap(eta1)) +\n"
    "              0.01*((1 + eta1)*(1 + eta2)*(1 + eta3)) + 0.001*1*c\n"
    "eq dt(eta2) = -L*(eta2^3 - eta2 + alpha*eta2*(eta1^2 + eta2^2 + eta3^2) - alpha*eta2^3 - kappa*lap(eta2)) +\n"
    "              0.01*((1 + eta1)*(1 + eta2)*(1 + eta3)) + 0.001*2*c\n"
    "eq dt(eta3) = -L*(eta3^3 - eta3 + alpha*eta3*(eta1^2 + eta2^2 + eta3^2) - alpha*eta3^3 - kappa*lap(eta3)) +\n"
    "              0.01*((1 + eta1)*(1 + eta2)*(1 + eta3)) + 0.001*3*c\n"
    "periodic y\n"
    "on left: eta1 = 0.1*1\n"
    "on left: eta2 = 0.1*2\n"
    "on left: eta3 = 0.1*3\n"
    "on right: dn(eta1) = 0.2*eta1\n"
    "on right: dn(eta2) = 0.2*eta2\n"
    "on right: dn(eta3) = 0.2*eta3\n"
    "time dt = 0.01, until = 0.5, scheme = rk2\n";

static void kernel_hashes(const pj_program *p, char *out, size_t len)
{
    char hex[33];
    out[0] = 0;
    const kir_kernel *ks[16];
    int n = 0;
    ks[n++] = p->init;
    ks[n++] = p->rhs;
    for (int s = 0; s < 6; s++)
        if (p->bc_kernel[s]) ks[n++] = p->bc_kernel[s];
    for (int s = 0; s < p->n_stages && n < 16; s++) ks[n++] = p->stages[s].kernel;
    for (int i = 0; i < n; i++) {
        kir_hash_hex(ks[i], hex);
        strncat(out, hex, len - strlen(out) - 2);
        strncat(out, " ", len - strlen(out) - 1);
    }
}

static void same_as_field_by_field(void **state)
{
    (void)state;
    pj_program *a = compile_text(array_text), *b = compile_text(by_hand_text);
    assert_int_equal(a->n_fields, 4);
    assert_int_equal(b->n_fields, 4);
    static const char *const names[] = {"c", "eta1", "eta2", "eta3"};
    for (int f = 0; f < 4; f++) {
        assert_string_equal(a->field_names[f], names[f]);
        assert_string_equal(b->field_names[f], names[f]);
    }
    char ha[1024], hb[1024];
    kernel_hashes(a, ha, sizeof ha);
    kernel_hashes(b, hb, sizeof hb);
    assert_string_equal(ha, hb);
    program_free(a);
    program_free(b);
    for (int be = BE_INTERP; be <= BE_CPU; be++) {
        solved *sa = solve(array_text, (backend_kind)be, 0, 2, "alpha=2.5"), *sb = solve(by_hand_text, (backend_kind)be, 0, 2, "alpha=2.5");
        assert_int_equal(sa->status, 0);
        assert_int_equal(sb->status, 0);
        assert_true(fabs(sa->t - 0.5) < 1e-12);
        for (int f = 0; f < 4; f++) {
            assert_memory_equal(sa->u[f], sb->u[f], sizeof(double) * (size_t)sa->cells);
            assert_true(field_sum(sa, f) != 0);
        }
        solved_free(sa);
        solved_free(sb);
    }
}

/* ---- values ---------------------------------------------------------------------------------- */

static void sum_prod_values(void **state)
{
    (void)state;
    const char *text =
        "mesh grid(nx = 7, Lx = 1)\n"
        "field a[3] = i + x\n"
        "field s = 0, q = 0, r = 0, m = 0\n"
        "eq dt(a[i]) = i*a[i]\n"
        "eq dt(s) = sum(j, a[j]^2)\n"
        "eq dt(q) = prod(k, a[k] + 1)\n"
        "eq dt(r) = sum(j, sum(k, (j != k)*a[j]*a[k]))\n"
        "eq dt(m) = sum(j, j*a[j]) - prod(j, j + 0*a[j])\n"
        "time dt = 0.5, steps = 1, scheme = euler\n";
    solved *s = solve(text, BE_INTERP, 0, 1, NULL);
    assert_int_equal(s->p->n_fields, 7);
    for (int64_t c = 0; c < s->cells; c++) {
        double x = s->x[0][c], v[4] = {0, 1 + x, 2 + x, 3 + x};
        double sum2 = 0, prod1 = 1, cross = 0, weighted = 0;
        for (int j = 1; j <= 3; j++) {
            sum2 += v[j] * v[j];
            prod1 *= v[j] + 1;
            weighted += j * v[j];
            for (int k = 1; k <= 3; k++)
                if (j != k) cross += v[j] * v[k];
        }
        for (int i = 1; i <= 3; i++) assert_true(fabs(s->u[i - 1][c] - v[i] * (1 + 0.5 * i)) <= 1e-14 * v[i]);
        assert_true(fabs(s->u[3][c] - 0.5 * sum2) <= 1e-14 * sum2);
        assert_true(fabs(s->u[4][c] - 0.5 * prod1) <= 1e-14 * prod1);
        assert_true(fabs(s->u[5][c] - 0.5 * cross) <= 1e-14 * cross);
        assert_true(fabs(s->u[6][c] - 0.5 * (weighted - 6)) <= 1e-14 * weighted);
    }
    solved_free(s);
}

/* Neighbours of members, eta[j][1, 0], are those of the fields: the same bits as eta1[1, 0] ... */
static void member_neighbours(void **state)
{
    (void)state;
    const char *array =
        "mesh grid(nx = 9, ny = 7)\n"
        "field eta[2] = sin(3*i*x) + y*y*i\n"
        "field u = 0\n"
        "eq dt(u) = sum(j, (eta[j][1, 0] - eta[j][-1, 0])^2 + (eta[j][0, 1] - eta[j][0, -1])^2) + eta[2][1, 1]\n"
        "time dt = 0.5, steps = 2\n";
    const char *by_hand =
        "mesh grid(nx = 9, ny = 7)\n"
        "field eta1 = sin(3*1*x) + y*y*1, eta2 = sin(3*2*x) + y*y*2\n"
        "field u = 0\n"
        "eq dt(u) = ((eta1[1, 0] - eta1[-1, 0])^2 + (eta1[0, 1] - eta1[0, -1])^2) +\n"
        "           ((eta2[1, 0] - eta2[-1, 0])^2 + (eta2[0, 1] - eta2[0, -1])^2) + eta2[1, 1]\n"
        "time dt = 0.5, steps = 2\n";
    solved *a = solve(array, BE_INTERP, 0, 1, NULL), *b = solve(by_hand, BE_INTERP, 0, 1, NULL);
    assert_int_equal(a->p->n_fields, 3);
    for (int f = 0; f < 3; f++) assert_memory_equal(a->u[f], b->u[f], sizeof(double) * (size_t)a->cells);
    assert_true(field_sum(a, 2) > 1);
    solved_free(a);
    solved_free(b);
}

/* Members named by constants: eta[N], eta[2*1 + 1]; an equation for one member; --set N. */
static void members_by_constants(void **state)
{
    (void)state;
    const char *text =
        "mesh grid(nx = 5)\n"
        "const N = 3, two = 2\n"
        "field eta[N] = 10*i + x\n"
        "field u = 0\n"
        "eq dt(eta[two]) = 1\n"
        "eq dt(u) = eta[N] + 100*eta[2*1 - 1] + 10000*sum(j, eta[j])\n"
        "time dt = 1, steps = 1\n";
    solved *s = solve(text, BE_INTERP, 0, 1, NULL);
    assert_int_equal(s->p->n_fields, 4);
    assert_int_equal(s->p->field_has_eq[0], 0);
    assert_int_equal(s->p->field_has_eq[1], 1);
    assert_int_equal(s->p->field_has_eq[2], 0);
    for (int64_t c = 0; c < s->cells; c++) {
        double x = s->x[0][c];
        assert_true(fabs(s->u[1][c] - (20 + x + 1)) < 1e-13);
        double want = (30 + x) + 100 * (10 + x) + 10000 * (60 + 3 * x);
        assert_true(fabs(s->u[3][c] - want) <= 1e-14 * want);
    }
    solved_free(s);
    /* --set N = 5: five members, their sum over five */
    const char *names[] = {"N"};
    double values[] = {5};
    pj_compile_options opt = {.n_const_sets = 1, .const_names = names, .const_values = values};
    diag d;
    diag_init(&d, "t.pde", text, strlen(text));
    pj_program *p = compile_problem("t.pde", text, strlen(text), &d, &opt);
    if (!p) fprintf(stderr, "%s", d.log);
    assert_non_null(p);
    assert_int_equal(p->n_fields, 6);
    assert_string_equal(p->field_names[4], "eta5");
    assert_string_equal(p->field_names[5], "u");
    program_free(p);
    diag_free(&d);
}

/* ---- errors ---------------------------------------------------------------------------------- */

typedef struct misuse { const char *text, *error; } misuse;

static void errors_at_the_text(void **state)
{
    (void)state;
    /* after "mesh grid(nx = 8)\nparam L = 1\nconst N = 3\n": the statements from line 4 */
    static const misuse cases[] = {
        {"field eta[N]\neq dt(eta[i]) = eta[i+1]",
         "t.pde:5:21: error: member 4 of 'eta' is out of range: 'eta' has members 1 to 3 (with i = 3)"},
        {"field eta[N]\neq dt(eta[i]) = eta[0]",
         "t.pde:5:21: error: member 0 of 'eta' is out of range: 'eta' has members 1 to 3"},
        {"field eta[N]\neq dt(eta[i]) = eta[k]",
         "t.pde:5:21: error: unbound index 'k': an index is bound by eq dt(eta[k]) = ..., by sum(k, ...) or prod(k, "
         "...), or is i in an array's initial value"},
        {"field eta[N]\neq dt(u) = 1\nfield u = eta[i]",
         "t.pde:6:15: error: unbound index 'i': an index is bound by eq dt(eta[i]) = ..., by sum(i, ...) or prod(i, "
         "...), or is i in an array's initial value"},
        {"field eta[N]\neq dt(eta[i]) = eta",
         "t.pde:5:17: error: 'eta' is an array of 3 fields: name a member, eta[1] ... eta[3], or eta[i] with an index"},
        {"field eta[N], phi[2]\neq dt(eta[i]) = sum(j, eta[j]*phi[j])",
         "t.pde:5:31: error: the index 'j' runs over arrays of different sizes: 'phi' has 2 members, 'eta' (column 24) "
         "has 3"},
        {"field eta[N]\neq dt(eta[i]) = sum(L, eta[L])",
         "t.pde:5:21: error: sum(L, ...): the index 'L' is the name of a param (line 2); an index needs a name of its "
         "own"},
        {"field eta[N]\neq dt(eta[i]) = prod(i, eta[i])",
         "t.pde:5:22: error: prod(i, ...): the index 'i' is already bound by the eq at line 5; use another name"},
        {"field eta[N]\neq dt(eta[i]) = sum(x, eta[x])",
         "t.pde:5:21: error: sum(x, ...): the index 'x' is a built-in name; an index needs a name of its own"},
        {"field eta[N]\neq dt(eta[L]) = 1",
         "t.pde:5:11: error: dt(eta[L]): 'L' is a param, not an index: the member is an index of its own (eta[i]) or "
         "a whole constant (eta[2])"},
        {"field eta[N]\neq dt(eta[i]) = eta[L]",
         "t.pde:5:21: error: the member of 'eta' is an index or a whole constant, and 'L' is a param"},
        {"field eta[N]\neq dt(eta[i]) = eta[1.5]", "t.pde:5:21: error: the member of 'eta' must be a whole number, not 1.5"},
        {"field eta[N]\neq dt(eta[i]) = eta[i, 1]",
         "t.pde:5:17: error: 'eta' is an array: eta[k] names its member k (one index, not 2)"},
        {"field eta[N]\neq dt(eta[i]) = 1\neq dt(eta[2]) = 2", "t.pde:6:7: error: field 'eta2' already has an equation at line 5"},
        {"field eta[N], eta2 = 1",
         "t.pde:4:7: error: field array 'eta' names its members eta1 ... eta3, and 'eta2' is already a field (line 4)"},
        {"field b1 = 0\nfield b[12]",
         "t.pde:5:7: error: field array 'b' names its members b1 ... b12, and 'b1' is already a field (line 4)"},
        {"field eta[2.5]", "t.pde:4:11: error: the size of field array 'eta' must be a whole number from 1 to 1024, not 2.5"},
        {"field eta[L]", "t.pde:4:11: error: a constant expression cannot depend on the param 'L' (use const for "
                         "compile-time values)"},
        {"param p[3] = 1", "t.pde:4:7: error: 'p[...]' declares an array, and only a field can be one (field p[N] = ...)"},
        {"field u\neq dt(u) = sum(j, u^2)",
         "t.pde:5:12: error: sum(j, ...): no array is indexed by 'j' here, so 'j' has no range (e.g. sum(j, eta[j]^2))"},
        {"field eta[N]\neq dt(eta[i]) = sum(j)", "t.pde:5:17: error: sum() takes an index and an expression: sum(j, eta[j]^2)"},
        {"field eta[N]\neq dt(eta) = 1",
         "t.pde:5:7: error: 'eta' is an array of 3 fields: write eq dt(eta[i]) = ... (one equation per member) or eq "
         "dt(eta[1]) = ..."},
        {"field eta[N], u\neq dt(u[i]) = 1",
         "t.pde:5:7: error: eq dt(u[...]): 'u' is a field, not a field array (field u[N] declares one)"},
        {"field eta[N]\neq dt(eta[x]) = 1", "t.pde:5:11: error: eq: the index 'x' is a built-in name; an index needs a name of its own"},
        {"field eta[N]\neq foo(eta[i]) = 1", "t.pde:5:4: error: an equation reads `eq dt(eta[i]) = ...`, not foo(eta[...])"},
        {"field eta[N]\neq dt(eta[i]) = 1\non left: eta[i] = i, dn(eta[k]) = 0",
         "t.pde:6:29: error: a boundary condition runs over one index, and this one has two, 'i' and 'k'"},
        {"field eta[N]\neq dt(eta[i]) = lap(eta[i])\non left: eta = 0",
         "t.pde:6:10: error: 'eta' is an array of 3 fields: name a member, eta[1] ... eta[3], or eta[i] with an index"},
        {"param i = 2\nfield eta[N] = i",
         "t.pde:5:16: error: in the initial value of field array 'eta', i is the member number, and 'i' is also a "
         "param (line 4): rename the param"},
        {"field eta[N]\nfunc f(k) = eta[k]\neq dt(eta[i]) = f(i)",
         "t.pde:5:17: error: the member of 'eta' must be known when the problem is compiled: 'k' is an argument of func "
         "'f'"},
        {"field u\neq dt(u) = u[1][0]",
         "t.pde:5:12: error: u[k][...] is a neighbour of member k of a field array, and 'u' is not one"},
        {"field eta[N], u\neq dt(u) = eta[4][1]",
         "t.pde:5:16: error: member 4 of 'eta' is out of range: 'eta' has members 1 to 3"},
        {"field eta[N], u\neq dt(u) = eta[1, 2][1]", "t.pde:5:12: error: eta[k][...]: one member k, not 2 indices"},
        /* an error inside a template: once, not once per member */
        {"field eta[N]\neq dt(eta[i]) = eta[i] + lap(eta[i], 2)", "t.pde:5:26: error: lap() takes 1 argument, not 2"},
        {"field eta[N]\neq dt(eta[i]) = eta[i] + foo", "t.pde:5:26: error: undefined name 'foo'"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        char text[1024];
        snprintf(text, sizeof text, "mesh grid(nx = 8)\nparam L = 1\nconst N = 3\n%s\n", cases[c].text);
        diag d;
        diag_init(&d, "t.pde", text, strlen(text));
        pj_program *p = compile_problem("t.pde", text, strlen(text), &d, NULL);
        const char *log = d.log ? d.log : "";
        size_t first = strcspn(log, "\n");
        if (p || d.errors != 1 || strlen(cases[c].error) != first || strncmp(log, cases[c].error, first))
            fail_msg("case %zu:\n%s\nwanted one error:\n%s\ngot %d:\n%s", c, text, cases[c].error, d.errors, log);
        program_free(p);
        diag_free(&d);
    }
}

/* ---- names outside: outputs, monitors, restarts, the C API ------------------------------------ */

static const char outside_text[] =
    "mesh grid(nx = 16, ny = 4)\n"
    "const N = 3\n"
    "field c = x\n"
    "field eta[N] = 0.1*i + 0.2*rand()\n"
    "eq dt(eta[i]) = 0.01*lap(eta[i]) - eta[i]*sum(j, eta[j]^2) + 0.1*c\n"
    "periodic x, y\n"
    "time dt = 0.01, until = 0.2\n"
    "output every = 0.1, fields = eta, format = csv\n";
static const char outside_monitors[] = "monitor every = 0.1, m = integral(eta[2]), s = integral(sum(j, eta[j]))\n";
static const char outside_by_hand_monitors[] = "monitor every = 0.1, m = integral(eta2), s = integral(eta1 + eta2 + eta3)\n";

static char *read_in_dir(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", tu_dir, name);
    char *s = tu_read_file(path, NULL);
    if (!s) fail_msg("no %s", path);
    return s;
}

static void write_in_dir(const char *name, const char *a, const char *b)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", tu_dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(a, f);
    fputs(b, f);
    fclose(f);
}

static void names_outside(void **state)
{
    (void)state;
    char *out = NULL;
    write_in_dir("a.pde", outside_text, outside_monitors);
    /* the same problem, its monitors over the members by their names */
    write_in_dir("b.pde", outside_text, outside_by_hand_monitors);
    assert_int_equal(tu_pdejit(&out, "run a.pde --out oa --dump a.csv --checkpoint-every 0.1 --quiet"), 0);
    free(out);
    assert_int_equal(tu_pdejit(&out, "run b.pde --out ob --quiet"), 0);
    free(out);
    char *dump = read_in_dir("a.csv"), *snap = read_in_dir("oa/snapshot_000001.csv");
    char *ma = read_in_dir("oa/monitor.csv"), *mb = read_in_dir("ob/monitor.csv");
    assert_true(!strncmp(dump, "x,y,c,eta1,eta2,eta3\n", 21));
    assert_true(!strncmp(snap, "x,y,eta1,eta2,eta3\n", 19));
    assert_true(!strncmp(ma, "t,step,m,s\n", 11));
    assert_string_equal(ma, mb); /* integral(eta[2]) is integral(eta2), to the bit */
    assert_non_null(strchr(ma + 11, '\n'));
    /* --init from the dump, --resume from the checkpoint: the members by name */
    assert_int_equal(tu_pdejit(&out, "run a.pde --out none --init a.csv --steps 0 --dump i.csv --quiet"), 0);
    free(out);
    char *init = read_in_dir("i.csv");
    assert_string_equal(init, dump);
    assert_int_equal(tu_pdejit(&out, "run a.pde --out oa --resume oa/checkpoint.pjc --dump r.csv --quiet"), 0);
    free(out);
    char *resumed = read_in_dir("r.csv");
    assert_string_equal(resumed, dump);
    free(dump);
    free(snap);
    free(ma);
    free(mb);
    free(init);
    free(resumed);
    /* the C API: the members' names, a member read by its name */
    api_sim a = api_sim_start("a.pde", outside_text, NULL);
    assert_int_equal(pj_problem_field_count(a.problem), 4);
    assert_string_equal(pj_problem_field_name(a.problem, 0), "c");
    assert_string_equal(pj_problem_field_name(a.problem, 2), "eta2");
    double v[64];
    assert_int_equal(pj_sim_get_field(a.sim, "eta2", v), PJ_OK);
    for (int c = 0; c < 64; c++) assert_true(v[c] >= 0.2 && v[c] < 0.4);
    assert_int_not_equal(pj_sim_get_field(a.sim, "eta", v), PJ_OK);
    /* the arrays by name and size (the Python package stacks their members) */
    assert_int_equal(pj_problem_array_count(a.problem), 1);
    assert_string_equal(pj_problem_array_name(a.problem, 0), "eta");
    assert_int_equal(pj_problem_array_size(a.problem, 0), 3);
    assert_null(pj_problem_array_name(a.problem, 1));
    assert_int_equal(pj_problem_array_size(a.problem, -1), 0);
    api_sim_end(&a, NULL, NULL);
    api_sim plain = api_sim_start("p.pde", "mesh grid(nx = 4)\nfield eta1 = 1\neq dt(eta1) = 0\n", NULL);
    assert_int_equal(pj_problem_array_count(plain.problem), 0); /* a name like a member is no array */
    api_sim_end(&plain, NULL, NULL);
}

/* samples/pfhub2.pde (PFHub 2a, written with an array): its free energy falls at every monitor time and
 * c is conserved (its mean to round-off), every order parameter ends within [-0.01, 1.01]. */
static void pfhub2_sample(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(tu_pdejit(&out, "run %s/samples/pfhub2.pde --until 10 --out p2 --dump end.csv --quiet",
                               PJ_SOURCE_DIR), 0);
    free(out);
    assert_int_equal(tu_pdejit(&out, "run %s/samples/pfhub2.pde --steps 0 --out none --dump start.csv --quiet",
                               PJ_SOURCE_DIR), 0);
    free(out);
    char *mon = read_in_dir("p2/monitor.csv");
    assert_true(!strncmp(mon, "t,step,F\n", 9));
    double last = INFINITY;
    int rows = 0;
    for (char *line = strchr(mon, '\n') + 1; *line; line = strchr(line, '\n') + 1) {
        double t, F;
        long step;
        assert_int_equal(sscanf(line, "%lf,%ld,%lf", &t, &step, &F), 3);
        assert_true(F < last);
        last = F;
        rows++;
    }
    assert_int_equal(rows, 2); /* t = 0 and 10 */
    double mean[2] = {0, 0};
    for (int which = 0; which < 2; which++) {
        char *csv = read_in_dir(which ? "end.csv" : "start.csv");
        assert_true(!strncmp(csv, "x,y,c,eta1,eta2,eta3,eta4\n", 26));
        int n = 0;
        for (char *line = strchr(csv, '\n') + 1; *line; line = strchr(line, '\n') + 1, n++) {
            double v[7];
            assert_int_equal(sscanf(line, "%lf,%lf,%lf,%lf,%lf,%lf,%lf", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6]), 7);
            mean[which] += v[2];
            for (int k = 3; k < 7 && which; k++) assert_true(v[k] > -0.01 && v[k] < 1.01); /* (the start reaches 1.19) */
        }
        assert_int_equal(n, 10000);
        mean[which] /= n;
        free(csv);
    }
    assert_true(fabs(mean[1] - mean[0]) < 1e-12);
    free(mon);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(same_as_field_by_field),
        cmocka_unit_test(sum_prod_values),
        cmocka_unit_test(member_neighbours),
        cmocka_unit_test(members_by_constants),
        cmocka_unit_test(errors_at_the_text),
        cmocka_unit_test(names_outside),
        cmocka_unit_test(pfhub2_sample),
    };
    return cmocka_run_group_tests(tests, tu_dir_setup, tu_dir_teardown);
}
