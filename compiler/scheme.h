/* scheme.h — the explicit time-stepping schemes as data, lowered into fused stage kernels.
 *
 * Every stage is one pass over the cells that evaluates all right-hand sides F from the
 * stage's input slot and writes the combination the scheme asks for, so a step costs one
 * read and one write of each field per stage (memory traffic decides speed). */
#ifndef PJ_SCHEME_H
#define PJ_SCHEME_H
#include "program.h"

/* Builds into kernel k the node of field f's right-hand side F evaluated on `read_slot`;
 * returns -1 on error (already reported). */
typedef int (*scheme_rhs_fn)(void *ctx, kir_kernel *k, int read_slot, int field);

/* Fills p->stages, p->n_stages, p->n_slots, p->swap_after_step for p->scheme. Needs p->dim,
 * n_fields, n_params, field_has_eq. Returns 0, or -1 when rhs failed. */
int scheme_lower(pj_program *p, scheme_rhs_fn rhs, void *ctx);

/* Parses "euler" "rk2" "rk3" "rk4"; -1 when unknown. */
int scheme_from_name(const char *name);

#endif
