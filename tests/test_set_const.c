/* test_set_const.c — `--set NAME=VALUE` on a const: the run is the run of the file with that
 * value written in (the mesh too), the kernels it changes are compiled again and the run says how
 * many; through the C API, pj_problem_compile_consts and pj_problem_kernels_changed. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pdejit.h"
#include "testutil.h"

static const char prob[] =
    "const N = 50, k = 2\n"
    "mesh grid(nx = N, Lx = 1)\n"
    "param D = 0.01\n"
    "field u = sin(pi*x)\n"
    "eq dt(u) = D*lap(u) - k*u\n"
    "on left, right: u = 0\n"
    "time dt = 0.001, steps = 20, scheme = rk2\n";

static void write_file(const char *name, const char *text)
{
    char path[700];
    snprintf(path, sizeof path, "%s/%s", tu_dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int sh(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int sh(char **out, const char *fmt, ...)
{
    char cmd[4096];
    int n = snprintf(cmd, sizeof cmd, "cd '%s' && ", tu_dir);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd + n, sizeof cmd - (size_t)n, fmt, ap);
    va_end(ap);
    char *o = NULL;
    int rc = tu_run(cmd, &o);
    if (out) *out = o;
    else free(o);
    return rc;
}

/* The same bits as the file with the values written in; the line says what was recompiled. */
static void set_equals_edit(void **state)
{
    (void)state;
    write_file("c.pde", prob);
    char edited[sizeof prob + 16];
    snprintf(edited, sizeof edited, "%s", prob);
    memcpy(strstr(edited, "N = 50, k = 2"), "N = 60, k = 3", 13);
    write_file("c2.pde", edited);
    char *out = NULL;
    assert_int_equal(sh(&out, "%s run c.pde --set k=3 --set N=60 --set D=0.02 --dump a.csv 2>&1", PJ_BINARY), 0);
    /* kernels: 2 stages, initial values, params, 2 boundary sides; k is in both stages */
    assert_string_equal(out, "pdejit: const k = 3, N = 60 (--set): 2 of 6 kernels differ from the file's and are "
                             "compiled; the mesh has 60 cells (the file's: 50)\n");
    free(out);
    assert_int_equal(sh(NULL, "%s run c2.pde --quiet --set D=0.02 --dump b.csv && cmp a.csv b.csv", PJ_BINARY), 0);
    /* the mesh only: no kernel changes (the mesh size is not in the kernels) */
    assert_int_equal(sh(&out, "%s run c.pde --set N=80 --backend interp --dump m.csv 2>&1 && test $(wc -l < m.csv) = 81",
                        PJ_BINARY), 0);
    assert_string_equal(out, "pdejit: const N = 80 (--set): no kernel differs from the file's, none is compiled for "
                             "it; the mesh has 80 cells (the file's: 50)\n");
    free(out);
    /* --quiet says nothing; a name that is neither is refused as before */
    assert_int_equal(sh(&out, "%s run c.pde --quiet --set k=2.5 2>&1", PJ_BINARY), 0);
    assert_string_equal(out, "");
    free(out);
    assert_int_equal(sh(&out, "%s run c.pde --set kk=1 2>&1", PJ_BINARY), 2);
    assert_string_equal(out, "pdejit: --set: 'kk' is not a param of c.pde (did you mean 'k'?)\n");
    free(out);
    assert_int_equal(sh(&out, "%s run c.pde --set N=0 2>&1", PJ_BINARY), 2);
    assert_non_null(strstr(out, "c.pde:2:"));
    free(out);
    assert_int_equal(sh(&out, "%s run c.pde --watch --set N=60 2>&1", PJ_BINARY), 2);
    assert_string_equal(out, "pdejit run: --watch cannot keep --set on a const (N) yet: edit the file instead\n");
    free(out);
}

/* The API: consts by name, the kernels that differ, a name that is no const. */
static void api(void **state)
{
    (void)state;
    pj_problem *a = NULL, *b = NULL, *c = NULL;
    char *diag = NULL;
    assert_int_equal(pj_problem_compile("c.pde", prob, strlen(prob), &a, &diag), PJ_OK);
    assert_int_equal(pj_problem_const_count(a), 2);
    assert_string_equal(pj_problem_const_name(a, 0), "N");
    assert_string_equal(pj_problem_const_name(a, 1), "k");
    assert_null(pj_problem_const_name(a, 2));
    const char *names[] = {"k"};
    const double values[] = {2};
    assert_int_equal(pj_problem_compile_consts("c.pde", prob, strlen(prob), NULL, 1, names, values, &b, &diag), PJ_OK);
    int total = 0;
    assert_int_equal(pj_problem_kernels_changed(a, b, &total), 0); /* the value written */
    assert_int_equal(total, 6);
    const double other[] = {-1};
    pj_problem_free(b);
    assert_int_equal(pj_problem_compile_consts("c.pde", prob, strlen(prob), "rk4", 1, names, other, &b, &diag), PJ_OK);
    assert_int_equal(pj_problem_kernels_changed(a, b, &total), 4); /* rk4's four stages, all new */
    assert_int_equal(total, 8);
    const char *bad[] = {"D"};
    assert_int_equal(pj_problem_compile_consts("c.pde", prob, strlen(prob), NULL, 1, bad, values, &c, &diag),
                     PJ_ERR_INPUT);
    assert_null(c);
    assert_non_null(diag);
    assert_non_null(strstr(diag, "c.pde: error: --set D: not a const"));
    free(diag);
    pj_problem_free(a);
    pj_problem_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(set_equals_edit),
        cmocka_unit_test(api),
    };
    return cmocka_run_group_tests(tests, tu_dir_setup, tu_dir_teardown);
}
