/* stability.h — the explicit stability check of LANGUAGE.md §7: an explicit scheme's dt against
 * the stability limit estimated from the linearised right-hand side at the current state (the
 * spectrum of the Jacobian that derive.h gives, spectral.c; Gershgorin's discs as the fallback;
 * see stability.c). */
#ifndef PJ_STABILITY_H
#define PJ_STABILITY_H
#include <stddef.h>
#include "engine.h"

/* The largest stable dt of e's explicit scheme estimated at e's current state and time
 * (infinity for an implicit scheme, or when nothing limits it). 0; 1 when it was not estimated
 * because the Jacobian has too many entries per cell (hundreds of fields all coupled), with the
 * note saying so; -1 with a message. */
int stability_limit(engine *e, double *limit, char *err, size_t len);

/* The same with its scratch buffers within about `budget` bytes (stability_limit: 256 MiB); any
 * budget gives the same limit, to rounding (1e-12; tests/test_stability.c). */
int stability_limit_within(engine *e, double budget, double *limit, char *err, size_t len);
/* For tests: Gershgorin's limit alone (no spectral estimate, as on a mesh too large for it: every
   cell that can be is summed in the box), one process. */
int stability_gershgorin_within(engine *e, double budget, double *limit, char *err, size_t len);

/* 0 when dt is within the limit; 1 when it exceeds it, with the message "dt = X exceeds the
 * explicit stability limit (about Y) of SCHEME; use a smaller dt or an implicit scheme"; 2 when
 * the limit was not estimated (stability_limit's 1: the note in err); -1 when the check could
 * not be made (message). */
int stability_check(engine *e, double dt, char *err, size_t len);

/* 1 when p's limit cannot change while it runs: its Jacobian kernel and boundary kernels read no
 * field, no t, no dt and no random number, and every side is periodic or a linear condition (the
 * entries and each ghost's share of the cell it stands for are then the same at every state and
 * time); 0 otherwise. */
int stability_state_free(const pj_program *p);

/* The last limit found, for the checks again at output times: while the program and its param
 * values are those it was found with and stability_state_free holds, the next check would find
 * the same limit to the bit (the same Jacobian, the same fixed-seed estimate), so it is taken
 * from here instead. Zero-initialised; stability_memo_free frees it. */
typedef struct stability_memo {
    const pj_program *p;       /* NULL: empty */
    double *params;            /* the values it was found with */
    int n_params;
    double limit;
    long reused;               /* how many checks it answered */
} stability_memo;
/* stability_limit and stability_check through m (m NULL: as they are). */
int stability_limit_memo(engine *e, stability_memo *m, double *limit, char *err, size_t len);
int stability_check_memo(engine *e, stability_memo *m, double dt, char *err, size_t len);
/* Forgets the limit (a swapped program: its address may be reused). */
void stability_memo_clear(stability_memo *m);
void stability_memo_free(stability_memo *m);

#endif
