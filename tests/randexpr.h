/* randexpr.h — random problems for the tests: expressions over every operator, math function,
 * conditional, neighbour offset and face operator of the language, in 1D, 2D and 3D, and whole
 * problem texts of ten fields with a random right-hand side each (the set test_backends.c draws
 * the same way). Deterministic: a generator is a seed. */
#ifndef PJ_TEST_RANDEXPR_H
#define PJ_TEST_RANDEXPR_H
#include <stddef.h>

typedef struct randexpr { unsigned state; } randexpr;

/* A number in [0, n). */
unsigned randexpr_next(randexpr *r, unsigned n);
/* One expression of at most `depth` levels into out[cap]: in a cell context, or (face != 0) a
 * face context (inside div(...) or a flux), using fields u, v, params p, q, func f, flux F. */
void randexpr_gen(randexpr *r, char *out, size_t cap, int depth, int dim, int face);
/* Problem number `prob` (malloc'd text): dimension 1 + prob % 3, fields u, v, w0..w7, each with a
 * random right-hand side of depth 4, boundary conditions and scheme chosen by prob. */
char *randexpr_problem(randexpr *r, int prob);

#endif
