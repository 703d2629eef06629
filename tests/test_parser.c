/* test_parser.c — the language front end: grammar, precedence, and every error the issue
 * lists, each asserted with its exact message and position. */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "program.h"
#include "ast.h"
#include <fcntl.h>
#include <limits.h>
#include <sys/mman.h>
#include <unistd.h>

/* Compiles `src` as "t.pde"; returns the program (or NULL) and the diagnostics in *log. */
static pj_program *compile(const char *src, char **log)
{
    diag d;
    diag_init(&d, "t.pde", src, strlen(src));
    pj_program *p = compile_problem("t.pde", src, strlen(src), &d, NULL);
    *log = strdup(d.log ? d.log : "");
    diag_free(&d);
    return p;
}

/* Asserts that compiling src fails with `expected` ("LINE:COL: error: MESSAGE") in the log,
 * followed by the source line and a caret in the right column. */
static void expect_error(const char *src, const char *expected)
{
    char *log;
    pj_program *p = compile(src, &log);
    char want[512];
    snprintf(want, sizeof want, "t.pde:%s\n", expected);
    if (p || !strstr(log, want)) {
        fprintf(stderr, "source:\n%s\nexpected: %swas:\n%s\n", src, want, log);
        fail();
    }
    /* the caret sits under the column given */
    int line, col;
    assert_int_equal(sscanf(expected, "%d:%d", &line, &col), 2);
    const char *at = strstr(log, want) + strlen(want);
    const char *caret_line = strchr(at, '\n');
    assert_non_null(caret_line);
    caret_line++;
    const char *caret = strchr(caret_line, '^');
    assert_non_null(caret);
    /* "    " indent, then the text up to the column (no tabs in these sources) */
    if (!strchr(src, '\t'))
        assert_int_equal((int)(caret - caret_line), 4 + col - 1);
    else /* the caret line repeats the tabs, so it lines up in any terminal */
        assert_int_equal(caret_line[4], '\t');
    free(log);
    program_free(p);
}

static double param_value(const char *expr)
{
    char src[512], *log;
    snprintf(src, sizeof src, "mesh grid(nx = 4)\nparam p = %s\n", expr);
    pj_program *p = compile(src, &log);
    if (!p) {
        fprintf(stderr, "%s", log);
        fail();
    }
    double v = p->param_values[0];
    program_free(p);
    free(log);
    return v;
}

static void precedence(void **state)
{
    (void)state;
    assert_true(param_value("-2^2") == -4);
    assert_true(param_value("2^3^2") == 512);
    assert_true(param_value("2^-1") == 0.5);
    assert_true(param_value("-2^-2*4") == -1);
    assert_true(param_value("1 + 2*3 - 4/2") == 5);
    assert_true(param_value("(1 + 2)*3") == 9);
    assert_true(param_value("(1 < 2) + (3 >= 3) + (2 <= 1) + (1 > 0)") == 3);
    assert_true(param_value("1 < 2 && 2 < 1 || 1 == 1") == 1);
    assert_true(param_value("0 || 1 && 0") == 0);
    assert_true(param_value("0 ? 1 : 1 ? 2 : 3") == 2);
    assert_true(param_value("!0 + !5 + (1 != 1)") == 1);
    assert_true(param_value("-(3) - -2") == -1);
    assert_true(param_value("+4") == 4);
    assert_true(param_value(".5 + 1. + 1e-3 + 2.5E+1") == 26.501);
    assert_true(param_value("min(3, 2) + max(3, 2) + abs(-1) + sign(-4) + heaviside(2)") == 6);
    assert_true(fabs(param_value("pi") - M_PI) < 1e-15);
    assert_true(fabs(param_value("atan2(1, 1)*4 - pi")) < 1e-15);
    assert_true(param_value("pow(2, 10)") == 1024);
}

static void layout_and_continuation(void **state)
{
    (void)state;
    const char *src =
        "# a comment line\r\n"
        "mesh grid(nx = 10,\r\n"
        "          Lx = 2*pi)   # trailing comment\r\n"
        "param\ta = 1 +\r\n"
        "          2,\r\n"
        "      b = (a\r\n"
        "           * 3)\r\n"
        "\r\n"
        "field u = a\r\n"
        "eq dt(u) = -\r\n"
        "   b*u\r\n"
        "on left:\r\n"
        "   u = 0";              /* no final newline */
    char *log;
    pj_program *p = compile(src, &log);
    if (!p) fprintf(stderr, "%s", log);
    assert_non_null(p);
    assert_true(p->param_values[0] == 3);
    assert_true(p->param_values[1] == 9);
    assert_true(fabs(p->length[0] - 2 * M_PI) < 1e-15);
    assert_int_equal(p->bc[0][0].kind, PJ_BC_LINEAR);
    program_free(p);
    free(log);
}

static void samples_parse(void **state)
{
    (void)state;
    const char *files[] = {"heat1d", "fisher", "allen_cahn", "gray_scott", "advection_vanleer", "heat3d", "robin"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/samples/%s.pde", PJ_SOURCE_DIR, files[i]);
        size_t len;
        char *text = tu_read_file(path, &len);
        assert_non_null(text);
        diag d;
        diag_init(&d, path, text, len);
        pj_program *p = compile_problem(path, text, len, &d, NULL);
        if (!p) fprintf(stderr, "%s", d.log);
        assert_non_null(p);
        diag_free(&d);
        program_free(p);
        free(text);
    }
}

static void errors_names(void **state)
{
    (void)state;
    expect_error("mesh grid(nx=10)\nparam Dif = 1\nfield u\neq dt(u) = Diff*lap(u)\n",
                 "4:12: error: undefined name 'Diff'; did you mean 'Dif'?");
    expect_error("mesh grid(nx=10)\nfield u\neq dt(u) = zzz\n", "3:12: error: undefined name 'zzz'");
    expect_error("mesh grid(nx=10)\nfield u\neq dt(u) = exp(u, 2)\n", "3:12: error: exp() takes 1 argument, not 2");
    expect_error("mesh grid(nx=10)\nfield u\neq dt(u) = sqr(u)\n",
                 "3:12: error: unknown function 'sqr'; did you mean 'sqrt'?");
    expect_error("mesh grid(nx=10)\nfunc f(a, b) = a*b\nfield u\neq dt(u) = f(u)\n",
                 "4:12: error: func 'f' takes 2 arguments, not 1");
    expect_error("mesh grid(nx=10)\nfield u\nfield u\n", "3:7: error: 'u' is already defined as a field at line 2");
    expect_error("mesh grid(nx=10)\nparam x = 1\n", "2:7: error: 'x' is a built-in name and cannot be redefined");
}

static void errors_contexts(void **state)
{
    (void)state;
    const char *face_ops[] = {"L(u)", "R(u)", "LL(u)", "RR(u)", "harm(u)", "upwind(u, 1)", "normal(u)", "grad(u)"};
    for (size_t i = 0; i < sizeof face_ops / sizeof *face_ops; i++) {
        char src[256], want[256], name[16];
        snprintf(src, sizeof src, "mesh grid(nx=10)\nfield u\neq dt(u) = 1 + %s\n", face_ops[i]);
        snprintf(name, sizeof name, "%.*s", (int)strcspn(face_ops[i], "("), face_ops[i]);
        snprintf(want, sizeof want, "3:16: error: %s() is a face quantity: use it inside div(...) or a flux", name);
        expect_error(src, want);
    }
    expect_error("mesh grid(nx=10)\nflux F(u) = L(u)\nfield u\neq dt(u) = F(u)\n",
                 "4:12: error: flux 'F' is a face quantity: use it inside div(...)");
    /* a face operator inside a func used in cell context points into the func */
    expect_error("mesh grid(nx=10)\nfunc f(a) = R(a)\nfield u\neq dt(u) = f(u)\n",
                 "2:13: error: R() is a face quantity: use it inside div(...) or a flux");
    expect_error("mesh grid(nx=10)\nfield u\neq dt(u) = dn(u)\n",
                 "3:12: error: dn() is the normal derivative at a boundary: use it in an `on` condition");
    /* the face gradient's components: on faces only, and only along the mesh's axes */
    expect_error("mesh grid(nx=10, ny=10)\nfield u\neq dt(u) = 1 + gradx(u)\n",
                 "3:16: error: gradx() is a component of the gradient at a face: use it inside div(...) or a flux "
                 "(in a cell, write the central difference (u[1] - u[-1])/(2*dx))");
    expect_error("mesh grid(nx=10, ny=10)\nfield u\nmonitor m = integral(grady(u))\n",
                 "3:22: error: grady() is a component of the gradient at a face: use it inside div(...) or a flux "
                 "(in a cell, write the central difference (u[0, 1] - u[0, -1])/(2*dy))");
    expect_error("mesh grid(nx=4, ny=4, nz=4)\nfield u\non left: gradz(u) = 0\n",
                 "3:10: error: gradz() is a component of the gradient at a face: use it inside div(...) or a flux "
                 "(in a cell, write the central difference (u[0, 0, 1] - u[0, 0, -1])/(2*dz))");
    expect_error("mesh grid(nx=10, ny=10)\nfield u\neq dt(u) = div(L(gradx(u)))\n",
                 "3:18: error: gradx() is a component of the gradient at a face: use it inside div(...) or a flux "
                 "(in a cell, write the central difference (u[1] - u[-1])/(2*dx))");
    expect_error("mesh grid(nx=10)\nfield u\neq dt(u) = div(grady(u))\n",
                 "3:16: error: grady() does not exist in a 1D mesh");
    expect_error("mesh grid(nx=10, ny=10)\nflux F(u) = gradx(u)*gradz(u)\nfield u\neq dt(u) = div(F(u))\n",
                 "2:22: error: gradz() does not exist in a 2D mesh");
    expect_error("mesh grid(nx=10, ny=10)\nfield u\neq dt(u) = div(grady(u, u))\n",
                 "3:16: error: grady() takes 1 argument, not 2");
    expect_error("mesh grid(nx=10, ny=10)\nfunc gradx(a) = a\n",
                 "2:6: error: 'gradx' is a built-in function: a func cannot take its name (a field, param or const can)");
}

static void errors_equations(void **state)
{
    (void)state;
    expect_error("mesh grid(nx=10)\nfield u\neq dt(u) = 0\neq dt(u) = 1\n",
                 "4:7: error: field 'u' already has an equation at line 3");
    expect_error("mesh grid(nx=10)\nparam a = 1\nfield u\neq dt(a) = 0\n",
                 "4:7: error: eq for 'a', which is a param, not a field");
    expect_error("mesh grid(nx=10)\nfield u\neq dt(v) = 0\n",
                 "3:7: error: eq for 'v', which is not defined (declare it: field v = ...)");
    expect_error("mesh grid(nx=10)\nfield u\nparam a = 2*u\n", "3:13: error: a param value cannot depend on the field 'u'");
    expect_error("mesh grid(nx=10)\nfunc f(a) = g(a)\nfunc g(a) = f(a)\nfield u\neq dt(u) = f(u)\n",
                 "2:6: error: func 'f' is recursive (f -> g -> f); funcs are inlined and may not call themselves");
    expect_error("mesh grid(nx=10)\nfunc f(a) = f(a)\n",
                 "2:6: error: func 'f' is recursive (f -> f); funcs are inlined and may not call themselves");
    expect_error("mesh grid(nx=10)\nfunc f(a, b, a) = a\n", "2:14: error: duplicate argument 'a' in func 'f'");
}

/* `eq 0 = EXPR [for FIELD]` (LANGUAGE.md §9): which field each algebraic equation is for, and the
 * errors at the text. */
static void algebraic_equations(void **state)
{
    (void)state;
    const char *head = "mesh grid(nx=10)\nfield c = 0.5, mu = 0, nu = 0, D = 1\neq dt(c) = lap(mu)\n";
    char src[1024];
    char *log;
    /* one field left without a dt equation that the equation reads: mu; D and nu are coefficients */
    snprintf(src, sizeof src, "%seq 0 = mu - c^3\ntime dt = 0.1, steps = 1, scheme = beuler\n", head);
    pj_program *p = compile(src, &log);
    if (!p) fail_msg("%s", log);
    assert_int_equal(p->n_algebraic, 1);
    assert_true(p->field_has_eq[1] && p->field_algebraic[1]);
    assert_true(p->field_has_eq[0] && !p->field_algebraic[0]);
    assert_false(p->field_has_eq[2] || p->field_has_eq[3]);
    free(log);
    program_free(p);
    /* matched until none is left: the second reads mu and nu, the first only mu, in any order */
    snprintf(src, sizeof src, "%seq 0 = nu - mu*c\neq 0 = mu + lap(c)\ntime dt = 0.1, steps = 1, scheme = bdf2\n",
             "mesh grid(nx=10)\nfield c = 0.5, mu = 0, nu = 0\nfield D = 1\neq dt(c) = lap(nu)\n");
    p = compile(src, &log);
    if (!p) fail_msg("%s", log);
    assert_int_equal(p->n_algebraic, 2);
    assert_true(p->field_algebraic[1] && p->field_algebraic[2] && !p->field_has_eq[3]);
    free(log);
    program_free(p);
    /* through a func, and named with `for` */
    snprintf(src, sizeof src, "%sfunc g(a) = a - c\neq 0 = g(mu)*D for mu\nsteady\n", head);
    p = compile(src, &log);
    if (!p) fail_msg("%s", log);
    assert_true(p->field_algebraic[1] && !p->field_has_eq[3]);
    free(log);
    program_free(p);
    snprintf(src, sizeof src, "%sfunc g(a) = a*mu\neq 0 = g(c) - 1\nsteady\n", head);
    p = compile(src, &log);
    if (!p) fail_msg("%s", log);
    assert_true(p->field_algebraic[1]);
    free(log);
    program_free(p);

    snprintf(src, sizeof src, "%seq 0 = mu*D - c\nsteady\n", head);
    expect_error(src, "4:4: error: this algebraic equation reads mu and D, fields without an equation of their own: "
                      "say which one it determines (eq 0 = ... for mu)");
    snprintf(src, sizeof src, "%seq 0 = c - 1\nsteady\n", head);
    expect_error(src, "4:4: error: this algebraic equation reads no field that is left without an equation: eq 0 = "
                      "EXPR determines a field with no dt(...) equation of its own (declare one: field mu = 0, and use "
                      "it in EXPR)");
    snprintf(src, sizeof src, "%seq 0 = mu - c\neq 0 = mu + c\nsteady\n", head);
    expect_error(src, "5:4: error: this algebraic equation reads no field that is left without an equation: eq 0 = "
                      "EXPR determines a field with no dt(...) equation of its own (declare one: field mu = 0, and use "
                      "it in EXPR)");
    snprintf(src, sizeof src, "%seq 0 = mu - c for c\nsteady\n", head);
    expect_error(src, "4:19: error: field 'c' already has an equation at line 3: an algebraic equation is for a field "
                      "with no dt(c) equation of its own");
    snprintf(src, sizeof src, "%seq 0 = mu - c for q\nsteady\n", head);
    expect_error(src, "4:19: error: eq for 'q', which is not defined (declare it: field q = ...)");
    /* `for` is a keyword there only: a param may have its name */
    p = compile("mesh grid(nx=10)\nparam for = 2\nfield c = 0.5, mu = 0\neq dt(c) = for*lap(mu)\n"
                "eq 0 = mu - for*c for mu\nsteady\n", &log);
    if (!p) fail_msg("%s", log);
    assert_true(p->field_algebraic[1]);
    free(log);
    program_free(p);
    snprintf(src, sizeof src, "%seq 1 = mu - c\nsteady\n", head);
    expect_error(src, "4:4: error: an equation reads eq dt(u) = ..., or eq 0 = ... for an algebraic one: move 1 to the "
                      "right (eq 0 = EXPR - 1)");
    /* the explicit schemes evaluate it where it is linear in its field: a pass before each stage and
       one after the last (rk4: 4 + 4 + 1 kernels; euler 1 + 1 + 1) */
    snprintf(src, sizeof src, "%seq 0 = 2*mu - c*mu - lap(c)\ntime dt = 0.1, steps = 1, scheme = rk4\n", head);
    p = compile(src, &log);
    if (!p) fail_msg("%s", log);
    assert_int_equal(p->n_stages, 9);
    assert_int_equal(p->stages[0].read_slot, 0);
    assert_int_equal(p->stages[2].read_slot, p->stages[3].read_slot);
    free(log);
    program_free(p);
    snprintf(src, sizeof src, "%seq 0 = mu - c\ntime dt = 0.1, steps = 1\n", head);
    p = compile(src, &log);
    if (!p) fail_msg("%s", log);
    assert_int_equal(p->n_stages, 3);
    assert_int_equal(p->stages[2].read_slot, 1); /* euler's new state, before the swap */
    free(log);
    program_free(p);
    /* and refuse it where it is not, at its 0 */
    const char *use = "; use --scheme beuler or bdf2 (time ..., scheme = bdf2), or steady";
    char want[600];
    snprintf(src, sizeof src, "%seq 0 = mu^3 - c\ntime dt = 0.1, steps = 1, scheme = rk4\n", head);
    snprintf(want, sizeof want, "4:4: error: explicit schemes cannot evaluate the algebraic equation for mu: EXPR is not "
             "linear in mu (an explicit scheme evaluates mu = -b/a where EXPR = a*mu + b, a and b free of mu)%s", use);
    expect_error(src, want);
    snprintf(src, sizeof src, "%seq 0 = mu - floor(mu) - c\ntime dt = 0.1, steps = 1\n", head);
    expect_error(src, want);
    snprintf(src, sizeof src, "%seq 0 = mu - lap(mu) - c\ntime dt = 0.1, steps = 1, scheme = rk2\n", head);
    snprintf(want, sizeof want, "4:4: error: explicit schemes cannot evaluate the algebraic equation for mu: EXPR reads mu "
             "at a neighbouring cell (lap, grad, div or an offset of mu), so mu is not an explicit function of the "
             "other fields%s", use);
    expect_error(src, want);
    snprintf(src, sizeof src, "%seq 0 = c^2 - D for mu\ntime dt = 0.1, steps = 1, scheme = rk3\n", head);
    snprintf(want, sizeof want, "4:4: error: explicit schemes cannot evaluate the algebraic equation for mu: EXPR does "
             "not depend on mu (EXPR = a*mu + b with a = 0), so it cannot be solved for mu%s", use);
    expect_error(src, want);
    snprintf(src, sizeof src, "%seq 0 = mu - nu\neq 0 = nu - c for nu\ntime dt = 0.1, steps = 1, scheme = rk4\n", head);
    snprintf(want, sizeof want, "4:4: error: explicit schemes cannot evaluate the algebraic equation for mu: EXPR reads "
             "nu, the unknown of another algebraic equation (an explicit scheme evaluates each from the fields with "
             "dt(...) equations)%s", use);
    expect_error(src, want);
    snprintf(src, sizeof src, "%seq 0 = mu - c\ntime dt = 0.1, steps = 1, scheme = cn\n", head);
    expect_error(src, "4:4: error: cn cannot solve the algebraic equation for mu: Crank-Nicolson averages it over the "
                      "step, (EXPR(U_n) + EXPR(U_n+1))/2 = 0, so mu is never made to satisfy it (not L-stable: an "
                      "error in mu flips sign every step and never decays); use beuler or bdf2");
    snprintf(src, sizeof src, "%seq 0 = mu - c\ntime dt = 0.1, steps = 1, scheme = imex\n", head);
    expect_error(src, "4:4: error: imex cannot solve the algebraic equation for mu: its explicit part has no place "
                      "for an equation without dt(...); use beuler or bdf2");
}

static void errors_boundaries(void **state)
{
    (void)state;
    expect_error("mesh grid(nx=10)\nfield u\non left: u*u = 1\n", "3:10: error: boundary condition is not linear in u and dn(u)");
    expect_error("mesh grid(nx=10)\nfield u\non left: exp(dn(u)) = 1\n",
                 "3:10: error: boundary condition is not linear in u and dn(u)");
    expect_error("mesh grid(nx=10)\nfield u\non left, left: u = 1\n", "3:10: error: side 'left' is named twice");
    expect_error("mesh grid(nx=10)\nfield u\non left: u = 1\non left: dn(u) = 2\n",
                 "4:4: error: side 'left' already has a condition for u at line 3");
    expect_error("mesh grid(nx=10)\nfield u\non top: u = 1\n", "3:4: error: side 'top' does not exist in a 1D mesh");
    expect_error("mesh grid(nx=10, ny=4)\nfield u\non front: u = 1\n", "3:4: error: side 'front' does not exist in a 2D mesh");
    expect_error("mesh grid(nx=10)\nfield u\non lef: u = 1\n",
                 "3:4: error: unknown side 'lef' (did you mean 'left'?); sides are left, right, bottom, top, back, front, all");
    expect_error("mesh grid(nx=10)\nfield u\nperiodic x\non left: u = 1\n",
                 "4:4: error: side 'left' is periodic (periodic x at line 3); it cannot also have a boundary condition");
    expect_error("mesh grid(nx=10)\nfield u\non left: 1 = 2\n",
                 "3:10: error: boundary condition names no field (write e.g. `u = 1` or `dn(u) = 0`)");
}

static void errors_dimensions(void **state)
{
    (void)state;
    expect_error("mesh grid(nx=10)\nfield u = y\n", "2:11: error: 'y' does not exist in a 1D mesh");
    expect_error("mesh grid(nx=10, ny=3)\nfield u = z + dz\n", "2:11: error: 'z' does not exist in a 2D mesh");
    expect_error("mesh grid(nx=10)\nfield u\neq dt(u) = u[0, 1]\n", "3:17: error: offset along y, which a 1D mesh does not have");
    expect_error("mesh grid(nx=10)\nfield u\neq dt(u) = u[0.5]\n",
                 "3:14: error: a neighbour offset must be an integer between -100 and 100");
    expect_error("field u\n", "1:1: error: no mesh: a problem needs a line such as `mesh grid(nx = 100)`");
    expect_error("mesh grid(ny=10)\n", "1:1: error: the mesh needs nx (cells along x)");
    expect_error("mesh grid(nx=0)\n", "1:14: error: nx must be a positive whole number of cells, not 0");
    expect_error("mesh grid(nx=10.5)\n", "1:14: error: nx must be a positive whole number of cells, not 10.5");
    expect_error("mesh grid(nx=10, Lx=-1)\n", "1:21: error: Lx must be positive, not -1");
    expect_error("mesh grid(nx=10, Lxx=3)\n", "1:18: error: unknown mesh argument 'Lxx'; did you mean 'Lx'?");
    expect_error("mesh hex(nx=10)\n", "1:6: error: unknown mesh 'hex': the mesh is grid(nx=, ny=, nz=, Lx=, ...), "
                 "cylindrical(nr=, nz=, Lr=, Lz=, r0=) or spherical(nr=, Lr=, r0=)");
}

static void errors_meshes(void **state)
{
    (void)state;
    expect_error("mesh grid(nx = 4, dx = [0.1, 0.2, 0.3])\n", "1:16: error: nx = 4 but dx lists 3 widths");
    expect_error("mesh grid(dx = [0.1, -0.2])\n", "1:22: error: a cell width must be positive, not -0.2");
    expect_error("mesh grid(dx = [1e308, 1e308])\n", "1:16: error: the widths dx add up to inf: not a finite length");
    expect_error("mesh grid(dx = [0.1, 0.2], Lx = 1)\n", "1:33: error: Lx follows from the widths dx: give one of them");
    expect_error("mesh grid(nx = 10, x = stretch(0))\n", "1:32: error: stretch takes a width ratio > 0, not 0");
    expect_error("mesh grid(nx = 10, x = 2)\n", "1:24: error: x = takes stretch(RATIO): each cell RATIO times as wide "
                 "as the one before (or list the widths: dx = [...])");
    expect_error("mesh grid(nx = 3000, x = stretch(1.5))\n",
                 "1:26: error: stretch(1.5) over 3000 cells gives cells too narrow to tell apart");
    expect_error("mesh grid(nx = 10)\nfield u = [1, 2]\n",
                 "2:11: error: a list [...] only gives a mesh's cell widths (mesh grid(dx = [...]))");
    expect_error("mesh cylindrical(nr = 10, r0 = -1)\n", "1:32: error: r0 is the inner radius: it must be >= 0, not -1");
    expect_error("mesh cylindrical(nz = 10)\n", "1:1: error: the mesh needs nr (cells along r)");
    expect_error("mesh cylindrical(nr = 4, dr = [0.1, 0.2])\n", "1:23: error: nr = 4 but dr lists 2 widths");
    expect_error("mesh spherical(nr = 4, r = stretch(0))\n", "1:36: error: stretch takes a width ratio > 0, not 0");
    expect_error("mesh spherical(nr = 4, z = stretch(2))\n",
                 "1:24: error: unknown mesh argument 'z': a spherical mesh is 1D, radial (spherical takes nr Lr r0 r dr)");
    expect_error("mesh spherical(nr = 10, nz = 3)\n",
                 "1:25: error: unknown mesh argument 'nz': a spherical mesh is 1D, radial (spherical takes nr Lr r0 r dr)");
    expect_error("mesh cylindrical(nr = 10, r0 = 0)\nfield u\non inner: u = 0\n",
                 "3:4: error: the inner side of this cylindrical mesh is the axis (r0 = 0): it takes no condition "
                 "(nothing flows through it)");
    expect_error("mesh spherical(nr = 10)\nfield u\non inner, outer: u = 0\n",
                 "3:4: error: the inner side of this spherical mesh is the centre (r0 = 0): it takes no condition "
                 "(nothing flows through it)");
    expect_error("mesh cylindrical(nr = 10, r0 = 1)\nfield u\non left: u = 1\n",
                 "3:4: error: unknown side 'left'; sides are inner, outer, all");
    expect_error("mesh cylindrical(nr = 10, nz = 4)\nfield u = dz + z + y\n",
                 "2:20: error: 'y' is not a coordinate of a cylindrical mesh: its coordinates are r and z (spacings dr, dz)");
    expect_error("mesh spherical(nr = 10)\nfield u = z\n",
                 "2:11: error: 'z' is not a coordinate of a spherical mesh: its coordinates are r (spacing dr)");
    expect_error("mesh cylindrical(nr = 10)\nfield u = z\n", "2:11: error: 'z' does not exist in a 1D mesh");
    /* what is sound compiles: every form of the contract */
    const char *good[] = {"mesh grid(nx = 100, Lx = 1, x = stretch(1.05))\nfield u = x + dx\n",
                          "mesh grid(nx = 4, dx = [0.1, 0.2, 0.3, 0.4])\nfield u = x\n",
                          "mesh cylindrical(nr = 50, Lr = 1, r0 = 0)\nfield u = r\non all: u = 0\n",
                          "mesh cylindrical(nr = 50, nz = 100, Lr = 1, Lz = 2)\nfield u = r*z\non outer, top: u = 0\n",
                          "mesh spherical(nr = 50, Lr = 1, r0 = 0)\nfield u = dr\n"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        char *log;
        pj_program *p = compile(good[i], &log);
        if (!p) fprintf(stderr, "%s%s", good[i], log);
        assert_non_null(p);
        program_free(p);
        free(log);
    }
}

static void errors_time_and_lexing(void **state)
{
    (void)state;
    expect_error("mesh grid(nx=10)\ntime dt = 0, steps = 1\n", "2:11: error: the time step dt must be positive, not 0");
    expect_error("mesh grid(nx=10)\ntime dt = -1e-3, steps = 1\n", "2:11: error: the time step dt must be positive, not -0.001");
    expect_error("mesh grid(nx=10)\ntime dt = 1, steps = 1, scheme = rk5\n",
                 "2:34: error: unknown scheme 'rk5' (did you mean 'rk2'?); schemes are euler, rk2, rk3, rk4, rk23, rk45, beuler, cn, bdf2, imex");
    expect_error("mesh grid(nx=10)\ntime dt = 1, steps = 1, scheme = leapfrog\n",
                 "2:34: error: unknown scheme 'leapfrog'; schemes are euler, rk2, rk3, rk4, rk23, rk45, beuler, cn, bdf2, imex");
    expect_error("mesh grid(nx=10)\nfield u = 1e+\n", "2:11: error: malformed number '1e+'");
    expect_error("mesh grid(nx=10)\nfield u = 2x\n", "2:11: error: malformed number '2x'");
    expect_error("mesh grid(nx=10)\nfield u = 1.2.3\n", "2:11: error: malformed number '1.2.3'");
    expect_error("mesh grid(nx=10)\nfield u = 1e999\n", "2:11: error: number '1e999' is too large for a double");
    expect_error("mesh grid(nx=10)\nfield u = 1 \xc3\xa9\n", "2:13: error: non-ASCII byte 0xC3 (pdejit files are plain ASCII)");
    expect_error("mesh grid(nx=10)\nfield u = 1 @ 2\n", "2:13: error: unexpected character '@'");
    expect_error("mesh grid(nx=10)\nfield u = (1 + 2\n", "2:17: error: unexpected end of file: a '(' or '[' is still open");
    expect_error("mesh grid(nx=10)\nfield u = 1 +* 2\n", "2:14: error: unexpected '*'");
    /* a tab advances the column to the next multiple of 8, plus one */
    expect_error("mesh grid(nx=10)\n\tfield u = q\n", "2:19: error: undefined name 'q'");
}

/* Asserts that src fails with `expected` (as expect_error), its only error, and that the line after
 * its caret is "    hint: HINT". */
static void expect_hint(const char *src, const char *expected, const char *hint)
{
    expect_error(src, expected);
    char *log;
    pj_program *p = compile(src, &log);
    char want[512], line[700];
    snprintf(want, sizeof want, "t.pde:%s\n", expected);
    snprintf(line, sizeof line, "    hint: %s\n", hint);
    const char *at = strstr(log, want) + strlen(want);
    at = strchr(strchr(at, '\n') + 1, '\n') + 1; /* past the source line and the caret */
    int errors = 0;
    for (const char *e = log; (e = strstr(e, ": error: ")); e++) errors++;
    if (strncmp(at, line, strlen(line)) || errors != 1) {
        fprintf(stderr, "source:\n%s\nexpected the one error %swith %swas:\n%s\n", src, want, line, log);
        fail();
    }
    free(log);
    program_free(p);
}

/* The syntax errors a newcomer (a FiPy user especially) makes most: each with a hint line after
 * the caret that says what to write. */
static void syntax_error_hints(void **state)
{
    (void)state;
    const char *head = "mesh grid(nx=10)\nparam D = 1, kappa = 1\nfield u = 0, mu = 0\n";
    const struct { const char *line, *error, *hint; } cases[] = {
        {"dt(u) = D*lap(u)", "4:3: error: unexpected '(', expecting name or '='", "an equation starts with eq: eq dt(u) = ..."},
        {"eq 0 = mu - 2 u", "4:15: error: unexpected name, expecting end of line", "a product needs '*': 2*u"},
        {"fields v = 1", "4:1: error: unexpected name 'fields' at the start of a statement", "did you mean 'field'?"},
        {"u = 1", "4:1: error: unexpected name 'u' at the start of a statement",
         "a statement starts with mesh, param, const, field, func, flux, eq, on, periodic, time, output, steady, "
         "solver, monitor, stop or energy"},
        {"eq dt(u) = D*lap(u) - u**3", "4:25: error: unexpected '*'", "a power is written with ^: u^2, not u**2"},
        {"eq dt(u) = 2 u", "4:14: error: unexpected name, expecting end of line", "a product needs '*': 2*u"},
        {"eq dt(u) = D lap(u)", "4:14: error: unexpected name, expecting end of line", "a product needs '*': D*lap"},
        {"eq dt(u) = (1 - u) (1 + u)", "4:20: error: unexpected '(', expecting end of line",
         "a product needs '*': (...)*(...)"},
        {"eq dt(u) = 2u", "4:12: error: malformed number '2u'", "a product needs '*': 2*u"},
        {"eq dt(u) = 0.5kappa", "4:12: error: malformed number '0.5kappa'", "a product needs '*': 0.5*kappa"},
        {"eq dt(u) = 2eps*lap(u)", "4:12: error: malformed number '2eps'", "a product needs '*': 2*eps"},
        {"eq du/dt = D*lap(u)", "4:6: error: unexpected '/', expecting '('",
         "a time derivative is written dt(u): eq dt(u) = ..."},
        {"eq dt(u) == D*lap(u)", "4:10: error: unexpected ==, expecting '='", "an equation has one '=': eq dt(u) = ..."},
        {"eq dt(u) = D*lap(u)\nmonitor every = 1, m = maxval(u)\nstop when m = 1",
         "6:13: error: unexpected '=', expecting end of line",
         "a comparison is written ==, !=, <, <=, > or >=: stop when m >= 1"},
        {"eq dt(u) = x < 5 ? 1 if", "4:22: error: unexpected name", "a conditional is written COND ? A : B: x < 5 ? 1 : 0"},
        {"eq dt(u) = D*lap(u) if x > 1 else 0", "4:21: error: unexpected name, expecting end of line",
         "a conditional is written COND ? A : B: x < 5 ? 1 : 0"},
        {"eq dt(u) = x > 1 and x < 2 ? 1 : 0", "4:18: error: unexpected name, expecting end of line",
         "'and' is written &&: a > 0 && b > 0"},
        {"eq dt(u) = x < 1 or x > 2 ? 1 : 0", "4:18: error: unexpected name, expecting end of line",
         "'or' is written ||: a > 0 || b > 0"},
        {"eq dt(u) = not u", "4:16: error: unexpected name, expecting end of line", "'not' is written !: !(a > 0)"},
        /* a ?: broken before its ':' (a comment and a blank line between): one error, not two */
        {"eq dt(u) = x < 5 ? 1\n  # the other value\n\n    : 0", "4:21: error: unexpected end of line",
         "a line goes on only after an operator or a comma, or inside ( ): end this line with the ':' of its COND ? A "
         ": B (x < 5 ? 1 :), or put the conditional in ( )"},
        {"eq dt(u) = D*lap(u)\n    - u^3", "5:5: error: unexpected '-'",
         "a line goes on only after an operator or a comma, or inside ( ): move the '-' to the end of the line before"},
        {"eq dt(u) = D*lap(u) - u\n    * u", "5:5: error: unexpected '*'",
         "a line goes on only after an operator or a comma, or inside ( ): move the '*' to the end of the line before"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char src[1024];
        snprintf(src, sizeof src, "%s%s\ntime dt = 0.01, steps = 1\n", head, cases[i].line);
        expect_hint(src, cases[i].error, cases[i].hint);
    }
    /* no hint where none fits: a hex number, a broken exponent, an error that is not a syntax error */
    char *log;
    pj_program *p;
    const char *no_hint[] = {"0x10", "1e5x", "1e+", "1.2.3"};
    for (size_t i = 0; i < sizeof no_hint / sizeof *no_hint; i++) {
        char src[128];
        snprintf(src, sizeof src, "mesh grid(nx=10)\nfield u = %s\n", no_hint[i]);
        p = compile(src, &log);
        assert_null(p);
        assert_non_null(strstr(log, "malformed number"));
        assert_null(strstr(log, "hint:"));
        free(log);
    }
    p = compile("mesh grid(nx=10)\nfield u = 1\neq dt(u) = lap(v)\n", &log);
    assert_null(p);
    assert_null(strstr(log, "hint:"));
    free(log);
}

static void constants_and_limits(void **state)
{
    (void)state;
    expect_error("mesh grid(nx=4)\nconst c = c + 1\nfield u = c\n", "2:7: error: const 'c' depends on itself");
    expect_error("mesh grid(nx=4)\nconst a = b\nconst b = 2*a\n", "2:7: error: const 'a' depends on itself");
    expect_error("mesh grid(nx=4)\nparam p = 1\nconst a = p\n",
                 "3:11: error: a constant expression cannot depend on the param 'p' (use const for compile-time values)");
    expect_error("mesh grid(nx=4)\nparam h = dx\n", "2:11: error: a param value cannot use the spacing 'dx'");
    expect_error("mesh grid(nx=2)\nfield u\neq dt(u) = u[3]\n",
                 "1:1: error: the mesh has 2 cells along x but the equations reach 3 cells away: give nx >= 3");
    expect_error("mesh grid(nx=8)\nfield u\non left: u = 1\non all: u = 0\n",
                 "4:4: error: side 'left' (in all) already has a condition for u at line 3");
    assert_true(param_value("!(1 < 2) + (1 < 2 && 2 < 3) * 10") == 10);
    char *log;
    pj_program *p = compile("mesh grid(nx = 4, Lx = 1 > 0 && 1)\nconst c = !(1 < 2)\nfield u = c\n", &log);
    assert_non_null(p);
    assert_true(p->length[0] == 1);
    program_free(p);
    free(log);
}

static void long_func_chains(void **state)
{
    (void)state;
    /* a cycle through 70 funcs, a chain of 300: reported, no stack overflow */
    char *src = malloc(1 << 16);
    int n = sprintf(src, "mesh grid(nx = 10)\n");
    for (int i = 0; i < 70; i++) n += sprintf(src + n, "func f%d(a) = f%d(a) + 1\n", i, (i + 1) % 70);
    sprintf(src + n, "field u = x\neq dt(u) = f0(u)\n");
    expect_error(src, "2:6: error: func 'f0' is recursive (f0 -> f1 -> f2 -> ... -> f67 -> f68 -> f69 -> f0); "
                      "funcs are inlined and may not call themselves");
    n = sprintf(src, "mesh grid(nx = 10)\nfunc f0(a) = a\n");
    for (int i = 1; i < 300; i++) n += sprintf(src + n, "func f%d(a) = f%d(a) + 1\n", i, i - 1);
    sprintf(src + n, "field u = x\neq dt(u) = f299(u)\n");
    expect_error(src, "102:16: error: funcs call each other more than 200 deep");
    free(src);
    /* the inlining budget is per expression: eight big right-hand sides (rk4, two fields) compile */
    char *log;
    pj_program *p = compile("mesh grid(nx = 16, ny = 16, nz = 16)\nfield u = x\nfield v = y\n"
                            "eq dt(u) = lap(lap(lap(lap(lap(lap(lap(u)))))))\n"
                            "eq dt(v) = lap(lap(lap(lap(lap(lap(lap(v)))))))\n"
                            "time dt = 1e-30, steps = 1, scheme = rk4\n", &log);
    if (!p) fprintf(stderr, "%s", log);
    assert_non_null(p);
    assert_int_equal(p->field_halo[0], 7);
    program_free(p);
    free(log);
    expect_error("mesh grid(nx=4, ny=4, nz=4)\nfield u\neq dt(u) = u[1, 0, 0, 0]\n",
                 "3:23: error: 4 neighbour offsets: at most one per axis (x, y, z)");
    expect_error("mesh grid(nx=4, x0 = 1/0)\n", "1:22: error: x0 must be a finite number, not inf");
    expect_error("mesh grid(nx=4)\nfield u\noutput fields = u u\n", "3:19: error: output fields: 'u' is listed twice");
}

static void several_errors_in_one_run(void **state)
{
    (void)state;
    char *log;
    pj_program *p = compile("mesh grid(nx=10)\nfield u = 1 +* 2\nfield v = 3 */ 4\nparam a = )\n", &log);
    assert_null(p);
    assert_non_null(strstr(log, "t.pde:2:14: error"));
    assert_non_null(strstr(log, "t.pde:3:14: error"));
    assert_non_null(strstr(log, "t.pde:4:11: error"));
    free(log);
    p = compile("mesh grid(nx=10)\nfield u = y\nfield v = qq\neq dt(w) = 1\n", &log);
    assert_null(p);
    assert_non_null(strstr(log, "t.pde:2:11: error"));
    assert_non_null(strstr(log, "t.pde:3:11: error"));
    free(log);
}

static void hostile_input(void **state)
{
    (void)state;
    /* 100 000 nested parentheses, a 1 MB line, a million unary minuses, binary garbage */
    size_t n = 100000;
    char *s = malloc(2 * n + 64);
    strcpy(s, "mesh grid(nx=4)\nfield u = ");
    size_t k = strlen(s);
    for (size_t i = 0; i < n; i++) s[k++] = '(';
    s[k++] = '1';
    for (size_t i = 0; i < n; i++) s[k++] = ')';
    s[k] = 0;
    char *log;
    assert_null(compile(s, &log));
    assert_non_null(strstr(log, "t.pde:2:211: error: expression is nested too deeply (more than 200 parentheses)"));
    free(log);
    free(s);

    size_t len = 1 << 20;
    s = malloc(len + 64);
    strcpy(s, "mesh grid(nx=4)\nfield u = 1");
    k = strlen(s);
    while (k < len) { s[k++] = '+'; s[k++] = '1'; }
    s[k] = 0;
    pj_program *sum = compile(s, &log); /* a flat sum of 500 000 ones is not nesting */
    assert_non_null(sum);
    program_free(sum);
    free(log);
    memset(s + 27, '-', len - 27);
    s[len] = '1';
    s[len + 1] = 0;
    assert_null(compile(s, &log));
    assert_non_null(strstr(log, "error: expression is nested too deeply (more than 400 levels)"));
    free(log);

    srand(7);
    for (int round = 0; round < 50; round++) {
        size_t m = (size_t)(rand() % 5000);
        for (size_t i = 0; i < m; i++) s[i] = (char)(rand() % 256);
        s[m] = 0; /* strlen may stop early at a NUL byte: fine, both lengths are exercised */
        diag d;
        diag_init(&d, "g.pde", s, m);
        pj_program *p = compile_problem("g.pde", s, m, &d, NULL);
        program_free(p);
        diag_free(&d);
    }
    free(s);
}

/* "mesh grid(nx = 4)\n" HEAD TERM TERM ... (n times) TAIL, malloc'd. */
static char *repeated(const char *head, const char *term, int n, const char *tail)
{
    size_t len = strlen(head) + (size_t)n * strlen(term) + strlen(tail) + 32;
    char *s = malloc(len), *at = s;
    at += sprintf(at, "mesh grid(nx = 4)\n%s", head);
    for (int i = 0; i < n; i++) at += sprintf(at, "%s", term);
    sprintf(at, "%s", tail);
    return s;
}

/* Asserts that compiling src fails with exactly one error (or `n_errors`), `expected`
 * ("LINE:COL: error: MESSAGE") among them, its caret under the character `under` (lines of any
 * length: a long line is shown as a window around the caret). */
static void expect_errors_at(const char *src, int n_errors, const char *expected, char under)
{
    char *log;
    pj_program *p = compile(src, &log);
    char want[512];
    snprintf(want, sizeof want, "t.pde:%s\n", expected);
    const char *at = strstr(log, want);
    int errors = 0;
    for (const char *q = log; (q = strstr(q, ": error: ")); q++) errors++;
    if (p || !at || errors != n_errors) {
        fprintf(stderr, "expected %d error(s), among them: %swas:\n%.2000s\n", n_errors, want, log);
        fail();
    }
    const char *text = at + strlen(want), *caret_line = strchr(text, '\n') + 1;
    const char *caret = strchr(caret_line, '^');
    assert_non_null(caret);
    assert_int_equal(text[caret - caret_line], under);
    free(log);
}

static void long_sums_and_products(void **state)
{
    (void)state;
    /* 200 000 terms are one chain, not 200 000 levels, summed left to right: each + 1 rounds
       back to 1e16 (from the right the ones would add up first, to 1e16 + 199 999) */
    char *src = repeated("param p = 1e16", " + 1", 199999, ", q = 1");
    char *more = repeated("", " - 1", 199999, "\n");
    src = realloc(src, strlen(src) + strlen(more) + 1);
    strcat(src, more + strlen("mesh grid(nx = 4)\n"));
    free(more);
    char *log;
    pj_program *p = compile(src, &log);
    if (!p) fprintf(stderr, "%.2000s", log);
    assert_non_null(p);
    assert_true(p->param_values[0] == 1e16);
    assert_true(p->param_values[1] == -199998);
    program_free(p);
    free(log);
    free(src);
    /* products and quotients chain alike, left to right: 1e308 * 10 overflows before / 10 */
    src = repeated("param r = 1", " * 2 / 2", 100000, ", s = 1e308 * 10 / 10\n");
    p = compile(src, &log);
    assert_non_null(p);
    assert_true(p->param_values[0] == 1);
    assert_true(isinf(p->param_values[1]));
    program_free(p);
    free(log);
    free(src);
    /* an equation summing 10 000 params */
    src = malloc(400000);
    char *at = src + sprintf(src, "mesh grid(nx = 4)\nfield u\nparam p0 = 0");
    for (int i = 1; i < 10000; i++) at += sprintf(at, ", p%d = %d", i, i);
    at += sprintf(at, "\neq dt(u) = p0");
    for (int i = 1; i < 10000; i++) at += sprintf(at, " + p%d", i);
    sprintf(at, " + u\ntime dt = 1, steps = 1\n");
    p = compile(src, &log);
    if (!p) fprintf(stderr, "%.2000s", log);
    assert_non_null(p);
    assert_int_equal(p->n_params, 10000);
    assert_true(p->param_values[9999] == 9999);
    program_free(p);
    free(log);
    free(src);
    /* the lowering budget grows with the text: 500 000 products of 8 factors are 4.5 million
       lowering steps, beyond the 4 million any expression may take from inlining */
    src = repeated("field u = 1\neq dt(u) = u", " + u*u*u*u*u*u*u*u", 500000, "\n");
    p = compile(src, &log);
    if (!p) fprintf(stderr, "%.2000s", log);
    assert_non_null(p);
    program_free(p);
    free(log);
    free(src);
    /* a chain's terms still nest: (1 + ...) in a sum of sums */
    assert_true(param_value("1 + 2*3 - (4 - 5)*2^2^-1 / 2 + -3 < 8 && 1") == 1);
    assert_true(param_value("2*3^2 + 1 - 2 - 3") == 14);
    assert_true(param_value("(1 - 2) - (3 - 4)*5 / 10 * 4") == 1);
}

static void errors_inside_long_expressions(void **state)
{
    (void)state;
    /* a syntax error near the end of a 200 000-term sum is reported where it is, alone */
    char *src = repeated("field u = 1", " + 1", 199990, " 7 + 1 + 1\n");
    int col = 11 + 1 + 4 * 199990 + 1;
    char expected[200];
    snprintf(expected, sizeof expected, "2:%d: error: unexpected number, expecting end of line", col);
    expect_errors_at(src, 1, expected, '7');
    free(src);
    /* real nesting is still bounded, pointed at where the too-deep part starts: 450 powers
       nest 450 levels (right-associative), the 401 innermost start at the 50th */
    src = repeated("field u = 2", "^2", 449, "\n");
    expect_errors_at(src, 1, "2:109: error: expression is nested too deeply (more than 400 levels, from here)", '2');
    free(src);
    src = repeated("field u = ", "-", 500, "1\n");
    expect_errors_at(src, 1, "2:111: error: expression is nested too deeply (more than 400 levels, from here)", '-');
    free(src);
    /* too deep and then a syntax error on the same line: both reported */
    src = repeated("field u = ", "-", 500, "1 + 1 * 2 3\n");
    expect_errors_at(src, 2, "2:111: error: expression is nested too deeply (more than 400 levels, from here)", '-');
    expect_errors_at(src, 2, "2:521: error: unexpected number, expecting end of line", '3');
    free(src);
    /* a million unary minuses fill the parser's stack before any of them is reduced: reported
       where it fills up (YYMAXDEPTH, far beyond 400 levels) */
    src = repeated("field u = ", "-", 1000000, "1\n");
    expect_errors_at(src, 1, "2:5005: error: expression is nested too deeply (more than 400 levels)", '-');
    free(src);
}

/* The canonical hashes of every kernel of p, one string. */
static void kernel_hashes(const pj_program *p, char *out)
{
    const kir_kernel *ks[16] = {p->params_kernel, p->init, p->rhs};
    int n = 3;
    for (int s = 0; s < 6; s++) ks[n++] = p->bc_kernel[s];
    for (int s = 0; s < p->n_stages && n < 16; s++) ks[n++] = p->stages[s].kernel;
    out[0] = 0;
    for (int i = 0; i < n; i++) {
        char hex[33] = "-";
        if (ks[i]) kir_hash_hex(ks[i], hex);
        strcat(out, hex);
        strcat(out, " ");
    }
}

static void names_shadow_builtins(void **state)
{
    (void)state;
    /* a field, param or const may take a built-in function's name: written plainly it is the
       value, called it is the function (also where an argument has the name) */
    const char *shadowing =
        "mesh grid(nx = 8, Lx = L)\nconst L = 2\nparam R = 3, harm = 0.5\nfield normal = x/L\n"
        "func g(exp) = exp*L + exp(0)\nflux F(L) = L*(R(normal) - L(normal))/dx\n"
        "eq dt(normal) = div(harm*F(R)) + g(L) - R*L\non left: normal = L\non right: dn(normal) = L\n"
        "time dt = 0.001, steps = 10, scheme = rk2\n";
    const char *renamed =
        "mesh grid(nx = 8, Lx = c)\nconst c = 2\nparam p = 3, h = 0.5\nfield u = x/c\n"
        "func g(a) = a*c + exp(0)\nflux F(a) = a*(R(u) - L(u))/dx\n"
        "eq dt(u) = div(h*F(p)) + g(c) - p*c\non left: u = c\non right: dn(u) = c\n"
        "time dt = 0.001, steps = 10, scheme = rk2\n";
    char *log1, *log2, h1[600], h2[600];
    pj_program *p1 = compile(shadowing, &log1), *p2 = compile(renamed, &log2);
    if (!p1) fprintf(stderr, "%s", log1);
    assert_non_null(p1);
    assert_non_null(p2);
    kernel_hashes(p1, h1);
    kernel_hashes(p2, h2);
    assert_string_equal(h1, h2);
    assert_true(p1->length[0] == 2 && p1->param_values[0] == 3 && p1->param_values[1] == 0.5);
    program_free(p1);
    program_free(p2);
    free(log1);
    free(log2);
    /* a func or flux cannot: a call would not say which it means. One error, at the definition,
       and none at the uses (they call the built-in) */
    expect_errors_at("mesh grid(nx = 8)\nfunc L(a) = 2*a\nfield u = x\neq dt(u) = div(L(u)*grad(u)) + div(L(u))\n", 1,
                     "2:6: error: 'L' is a built-in function: a func cannot take its name (a field, param or const can)", 'L');
    expect_errors_at("mesh grid(nx = 8)\nfunc sign(a, b) = a*b\nfield u = sign(x, 2) + sign(1, x)\n", 1,
                     "2:6: error: 'sign' is a built-in function: a func cannot take its name (a field, param or const can)", 's');
    expect_errors_at("mesh grid(nx = 8)\nfield u\nflux upwind(a) = a\neq dt(u) = div(upwind(u))\n", 1,
                     "3:6: error: 'upwind' is a built-in function: a flux cannot take its name (a field, param or const can)", 'u');
    /* built-in values stay reserved, with one error however often they are used */
    expect_errors_at("mesh grid(nx = 8)\nconst pi = 3\nfield u = pi*x + pi\neq dt(u) = pi*lap(u) - pi\n", 1,
                     "2:7: error: 'pi' is a built-in name and cannot be redefined", 'p');
    /* a value is still not a function, nor a function a value */
    expect_error("mesh grid(nx = 8)\nconst k = 2\nfield u = k(1)\n", "3:11: error: 'k' is a const, not a function");
    expect_error("mesh grid(nx = 8)\nconst L = 2\nfield u = exp\n", "3:11: error: 'exp' is a function: call it as exp(...)");
}

/* A text longer than PJ_MAX_SOURCE_BYTES is refused before a byte of it is read: here 2^31 - 1
 * bytes (one more than INT_MAX allows flex) mapped from /dev/zero, never touched. */
static void huge_text_refused(void **state)
{
    (void)state;
    size_t sizes[] = {PJ_MAX_SOURCE_BYTES + 1, (size_t)INT_MAX, (size_t)INT_MAX + 10};
    size_t most = (size_t)INT_MAX + 10;
    int fd = open("/dev/zero", O_RDONLY);
    assert_true(fd >= 0);
    const char *text = mmap(NULL, most, PROT_READ, MAP_PRIVATE, fd, 0);
    assert_true(text != MAP_FAILED);
    for (int i = 0; i < 3; i++) {
        diag d;
        diag_init(&d, "huge.pde", text, sizes[i]);
        pj_program *p = compile_problem("huge.pde", text, sizes[i], &d, NULL);
        assert_null(p);
        assert_int_equal(d.errors, 1);
        assert_string_equal(d.log, "huge.pde: error: the problem text is larger than 64 MiB (67108864 bytes), "
                                   "the most a problem may have\n");
        diag_free(&d);
        arena a = {0};
        diag_init(&d, "huge.pde", text, sizes[i]);
        assert_null(parse_program(&a, &d, text, sizes[i]));
        assert_int_equal(d.errors, 1);
        diag_free(&d);
        arena_free(&a);
    }
    munmap((void *)text, most);
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(precedence),
        cmocka_unit_test(layout_and_continuation),
        cmocka_unit_test(samples_parse),
        cmocka_unit_test(errors_names),
        cmocka_unit_test(errors_contexts),
        cmocka_unit_test(errors_equations),
        cmocka_unit_test(algebraic_equations),
        cmocka_unit_test(errors_boundaries),
        cmocka_unit_test(errors_dimensions),
        cmocka_unit_test(errors_meshes),
        cmocka_unit_test(errors_time_and_lexing),
        cmocka_unit_test(syntax_error_hints),
        cmocka_unit_test(constants_and_limits),
        cmocka_unit_test(long_func_chains),
        cmocka_unit_test(several_errors_in_one_run),
        cmocka_unit_test(hostile_input),
        cmocka_unit_test(long_sums_and_products),
        cmocka_unit_test(errors_inside_long_expressions),
        cmocka_unit_test(names_shadow_builtins),
        cmocka_unit_test(huge_text_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
