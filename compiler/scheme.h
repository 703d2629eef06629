/* scheme.h — the explicit time-stepping schemes as data, lowered into fused stage kernels.
 *
 * Every stage is one pass over the cells that evaluates all right-hand sides F from the
 * stage's input slot and writes the combination the scheme asks for, so a step costs one
 * read and one write of each field per stage (memory traffic decides speed). */
#ifndef PJ_SCHEME_H
#define PJ_SCHEME_H
#include "program.h"

/* Fills p->stages (malloc'd), p->n_stages, p->n_slots, p->swap_after_step for p->scheme,
 * composing each stage from p->rhs (finished). Needs p->dim, n_fields, n_params. An implicit
 * scheme has no stages: its Jacobian is derived (program_jacobian) and p->n_slots holds its entries.
 * Returns 0, -1 when out of memory, -2 when the Jacobian cannot be derived. */
int scheme_lower(pj_program *p);

/* Parses "euler" "rk2" "rk3" "rk4" "beuler" "cn" "bdf2" "imex"; -1 when unknown ("steady" is a
 * statement, not a scheme name, but parses too). */
int scheme_from_name(const char *name);

#endif
