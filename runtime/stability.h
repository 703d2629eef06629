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

/* The same with its scratch buffers within about `budget` bytes (stability_limit: 64 MiB); any
 * budget gives the same limit, to rounding (1e-12; tests/test_stability.c). */
int stability_limit_within(engine *e, double budget, double *limit, char *err, size_t len);

/* 0 when dt is within the limit; 1 when it exceeds it, with the message "dt = X exceeds the
 * explicit stability limit (about Y) of SCHEME; use a smaller dt or an implicit scheme"; 2 when
 * the limit was not estimated (stability_limit's 1: the note in err); -1 when the check could
 * not be made (message). */
int stability_check(engine *e, double dt, char *err, size_t len);

#endif
