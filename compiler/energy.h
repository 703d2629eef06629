/* energy.h — `energy NAME = DENSITY`, delta(NAME, u) and integral(NAME) (contract section 9),
 * expanded on the syntax tree into ordinary expressions (energy.c). */
#ifndef PJ_ENERGY_H
#define PJ_ENERGY_H
#include "sema.h"

/* Replaces every delta(F, u) by the variational derivative of energy F, every integral(F) in a
 * monitor by the integral of its discrete density, and removes the energy statements from P (the
 * compile's tree, C->ast). Runs after the symbols are collected and the mesh is read (C->dim), before
 * sema checks the expressions. Errors (at the user's text) go to C->d; returns -1 after one, else 0. */
int energy_expand(compiler *C, ast_program *P);

#endif
