/* randexpr.c — see randexpr.h. The generator is test_backends.c's, with its state in a struct. */
#include "randexpr.h"
/* An expression longer than its buffer is cut short on purpose (snprintf): gcc's -O3
   format-truncation analysis would otherwise warn at each nesting (an error under -Werror). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif
#include <stdio.h>
#include <stdlib.h>

unsigned randexpr_next(randexpr *r, unsigned n)
{
    r->state = r->state * 1103515245u + 12345u;
    return (r->state >> 8) % n;
}

static const char *fn1[] = {"exp", "log", "log10", "sqrt", "cbrt", "sin", "cos", "tan", "asin", "acos", "atan",
                            "sinh", "cosh", "tanh", "erf", "erfc", "abs", "floor", "ceil", "sign", "heaviside"};
static const char *fn2[] = {"atan2", "min", "max", "pow"};

static void leaf(randexpr *r, char *out, size_t cap, int dim, int face)
{
    const char *coords[] = {"x", "y", "z"}, *sp[] = {"dx", "dy", "dz"};
    switch (randexpr_next(r, face ? 9 : 8)) {
    case 0: snprintf(out, cap, "%g", (double)(randexpr_next(r, 2000)) / 100.0 - 10); break;
    case 1: snprintf(out, cap, "%s", randexpr_next(r, 2) ? "u" : "v"); break;
    case 2: {
        int o[3] = {(int)randexpr_next(r, 5) - 2, (int)randexpr_next(r, 5) - 2, (int)randexpr_next(r, 5) - 2};
        const char *f = randexpr_next(r, 2) ? "u" : "v";
        if (dim == 1) snprintf(out, cap, "%s[%d]", f, o[0]);
        else if (dim == 2) snprintf(out, cap, "%s[%d, %d]", f, o[0], o[1]);
        else snprintf(out, cap, "%s[%d, %d, %d]", f, o[0], o[1], o[2]);
        break;
    }
    case 3: snprintf(out, cap, "%s", coords[randexpr_next(r, (unsigned)dim)]); break;
    case 4: snprintf(out, cap, "t"); break;
    case 5: snprintf(out, cap, "%s", sp[randexpr_next(r, (unsigned)dim)]); break;
    case 6: snprintf(out, cap, "%s", randexpr_next(r, 2) ? "p" : "q"); break;
    case 7: snprintf(out, cap, "%s", randexpr_next(r, 2) ? "pi" : "e"); break;
    default: {
        const char *ops[] = {"L", "R", "LL", "RR", "harm"};
        const char *op = ops[randexpr_next(r, 5)];
        snprintf(out, cap, "%s(%s)", op, randexpr_next(r, 2) ? "u" : "v");
    }
    }
}

void randexpr_gen(randexpr *r, char *out, size_t cap, int depth, int dim, int face)
{
    char a[4096], b[4096], c[4096];
    if (depth <= 0 || randexpr_next(r, 5) == 0) {
        leaf(r, out, cap, dim, face);
        return;
    }
    unsigned kind = randexpr_next(r, face ? 12 : 11);
    static const char *bin[] = {"+", "-", "*", "/", "^", "<", "<=", ">", ">=", "==", "!=", "&&", "||"};
    switch (kind) {
    case 0: case 1: case 2:
        randexpr_gen(r, a, sizeof a, depth - 1, dim, face);
        randexpr_gen(r, b, sizeof b, depth - 1, dim, face);
        snprintf(out, cap, "(%s %s %s)", a, bin[randexpr_next(r, 13)], b);
        break;
    case 3:
        randexpr_gen(r, a, sizeof a, depth - 1, dim, face);
        snprintf(out, cap, "%s(%s)", fn1[randexpr_next(r, sizeof fn1 / sizeof *fn1)], a);
        break;
    case 4:
        randexpr_gen(r, a, sizeof a, depth - 1, dim, face);
        randexpr_gen(r, b, sizeof b, depth - 1, dim, face);
        snprintf(out, cap, "%s(%s, %s)", fn2[randexpr_next(r, 4)], a, b);
        break;
    case 5:
        randexpr_gen(r, a, sizeof a, depth - 1, dim, face);
        randexpr_gen(r, b, sizeof b, depth - 1, dim, face);
        randexpr_gen(r, c, sizeof c, depth - 1, dim, face);
        snprintf(out, cap, "(%s ? %s : %s)", a, b, c);
        break;
    case 6:
        randexpr_gen(r, a, sizeof a, depth - 1, dim, face);
        snprintf(out, cap, "%s(%s)", randexpr_next(r, 3) ? "-" : "!", a);
        break;
    case 7:
        if (face) { randexpr_gen(r, out, cap, depth - 1, dim, face); break; }
        randexpr_gen(r, a, sizeof a, depth - 1, dim, 1);
        snprintf(out, cap, "div(%s)", a);
        break;
    case 8:
        if (face) {
            randexpr_gen(r, a, sizeof a, depth - 1, dim, 0);
            snprintf(out, cap, "grad(%s)", a);
        } else {
            snprintf(out, cap, "lap(%s)", randexpr_next(r, 2) ? "u" : "v");
        }
        break;
    case 9:
        randexpr_gen(r, a, sizeof a, depth - 1, dim, face);
        snprintf(out, cap, "f(%s)", a);
        break;
    case 10:
        snprintf(out, cap, face ? "F(u)" : "div(F(v))");
        break;
    default: /* face only */
        randexpr_gen(r, a, sizeof a, depth - 1, dim, face);
        if (randexpr_next(r, 2)) snprintf(out, cap, "upwind(u, %s)", a);
        else if (dim == 1) snprintf(out, cap, "normal(%s)", a);
        else if (dim == 2) snprintf(out, cap, "normal(%s, -u)", a);
        else snprintf(out, cap, "normal(%s, v, 2)", a);
    }
}

char *randexpr_problem(randexpr *r, int prob)
{
    int dim = 1 + prob % 3;
    const char *mesh = dim == 1 ? "mesh grid(nx = 37, Lx = 3)"
                     : dim == 2 ? "mesh grid(nx = 13, ny = 9, Lx = 2, Ly = 1.5)"
                                : "mesh grid(nx = 7, ny = 6, nz = 5)";
    size_t cap = 1 << 16;
    char *src = malloc(cap);
    if (!src) return NULL;
    int n = snprintf(src, cap, "%s\nparam p = 0.7, q = -1.3\nfunc f(a) = a*a - p\nflux F(w) = R(w) - 0.5*L(w)\n"
                     "field u = 0.3 + 0.5*sin(3*x + 1)\nfield v = 1.2 - 0.4*cos(2*x)%s\n",
                     mesh, dim > 1 ? " + 0.3*y" : "");
    for (int f = 0; f < 8; f++) n += snprintf(src + n, cap - (size_t)n, "field w%d = %g + x\n", f, 0.1 * f);
    char e1[4096], e2[4096];
    randexpr_gen(r, e1, sizeof e1, 4, dim, 0);
    randexpr_gen(r, e2, sizeof e2, 4, dim, 0);
    n += snprintf(src + n, cap - (size_t)n, "eq dt(u) = %s\neq dt(v) = %s\n", e1, e2);
    for (int f = 0; f < 8; f++) {
        randexpr_gen(r, e1, sizeof e1, 4, dim, 0);
        n += snprintf(src + n, cap - (size_t)n, "eq dt(w%d) = %s\n", f, e1);
    }
    static const char *bcs[] = {"on left: u = 1 + t\non right: dn(v) = x\n", "periodic x\n"};
    static const char *schemes[] = {"euler", "rk2", "rk3", "rk4"};
    n += snprintf(src + n, cap - (size_t)n, "%s%stime dt = 0.001, steps = 2, scheme = %s\n", bcs[prob % 2],
                  dim > 1 ? "periodic y\n" : "", schemes[prob % 4]);
    if (dim == 3) snprintf(src + n, cap - (size_t)n, "on back, front: u = z\n");
    return src;
}
