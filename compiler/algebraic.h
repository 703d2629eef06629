/* algebraic.h — algebraic equations under the explicit schemes (LANGUAGE.md §9): `eq 0 = EXPR`
 * for a field m, with EXPR = a*m + b linear in m (a, b free of m, a not zero), evaluated as
 * m = -b/a in a pass over the cells before each stage (see algebraic.c). */
#ifndef PJ_ALGEBRAIC_H
#define PJ_ALGEBRAIC_H
#include <stddef.h>
#include "program.h"

/* 0 when the algebraic equation of field f (its output of p->rhs, finished) can be evaluated by
 * an explicit scheme; -1 with the reason in why (the text after "explicit schemes cannot evaluate
 * the algebraic equation for m: "), -2 when out of memory. */
int algebraic_explicit_check(const pj_program *p, int f, char *why, size_t len);

/* Inserts the passes into p's explicit stages (composed by scheme_lower, p->stages allocated
 * with malloc): before every stage one that writes each algebraic field of the stage's read slot
 * from the other fields of that slot, and one after the last stage on the slot holding the new
 * state (not for an adaptive embedded pair, whose last stage reads that slot). 0, -1 when out of
 * memory. */
int algebraic_insert_passes(pj_program *p);

#endif
