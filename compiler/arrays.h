/* arrays.h — order-parameter arrays (LANGUAGE.md §9: `field eta[N]`, `eta[i]`, `sum`, `prod`),
 * expanded in the syntax tree before the other passes (see arrays.c). */
#ifndef PJ_ARRAYS_H
#define PJ_ARRAYS_H
#include "sema.h"

/* The most members one array may have. */
#define PJ_MAX_ARRAY_MEMBERS 1024

/* Rewrites C->ast so that it names ordinary fields only: `field eta[N] = e(i)` becomes the fields
 * eta1 ... etaN, `eq dt(eta[i]) = ...` and `on ...: eta[i] = ...` one statement per member,
 * `eta[k]` the field etak (`eta[k][1, 0]` its neighbour), `sum(j, e)` and `prod(j, e)` the chains e(1) + ... + e(N) and
 * e(1) * ... * e(N), `output fields = eta` the members. Needs the symbols of the unexpanded tree
 * (sema_collect_symbols) for its constants; the caller collects them again afterwards.
 * Returns 1 when the tree was rewritten, 0 when it has no array, sum or prod (left as it is),
 * -1 on errors (reported in C->d). */
int arrays_expand(compiler *C);

#endif
