/* energy.h — `energy NAME = DENSITY`, delta(NAME, u) and integral(NAME) (contract section 9),
 * expanded on the syntax tree into ordinary expressions (energy.c). */
#ifndef PJ_ENERGY_H
#define PJ_ENERGY_H
#include "ast.h"

/* Replaces every delta(F, u) by the variational derivative of energy F, every integral(F) in a
 * monitor by the integral of its discrete density, and removes the energy statements from P.
 * Errors (at the user's text) go to d; returns -1 after one, else 0. */
int energy_expand(arena *a, diag *d, ast_program *P);

#endif
