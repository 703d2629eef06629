/* spectral.h — the explicit stability limit from the spectrum of the derived Jacobian: the
 * Jacobian stability.c assembles (boundary rows folded as the scheme sees them), a few Arnoldi
 * steps from a seeded start vector, the Ritz values of its Hessenberg matrix, and for each the
 * first step size at which dt * lambda leaves the scheme's stability region along its ray. */
#ifndef PJ_SPECTRAL_H
#define PJ_SPECTRAL_H
#include <stddef.h>
#include <stdint.h>
#include "program.h"

/* The Jacobian as entries (row, column, value), rows and columns numbered field * cells + cell. */
typedef struct spectral_entry { int32_t r, c; double v; } spectral_entry;
typedef struct spectral_matrix {
    int64_t n;        /* rows (and columns) */
    int64_t nnz, cap; /* entries held, and room */
    int64_t most;     /* entries it may hold: beyond them it gives up (failed) */
    struct spectral_entry *e;
    int failed;       /* out of memory or room: no estimate, the caller falls back */
    int general;      /* 1: Arnoldi even when the matrix is symmetric (tests compare it with Lanczos) */
} spectral_matrix;

/* Bytes the spectral estimate may take for an n-row Jacobian with up to `entries` entries:
   beyond SPECTRAL_BYTES the caller keeps Gershgorin's bound. */
#define SPECTRAL_BYTES ((double)(96 << 20))
#define SPECTRAL_STEPS 48 /* Arnoldi steps */
#define SPECTRAL_STEPS_EULER 160 /* and for euler when the spectrum is complex (spectral.c) */
double spectral_bytes(int64_t n, double entries);

/* One entry (entries on one row and column add up). */
void spectral_add(spectral_matrix *m, int64_t row, int64_t col, double v);
void spectral_free(spectral_matrix *m);

/* The scheme's stability polynomial R (its amplification of y' = lambda y per step, z = dt
   lambda): its degree, coefficients into c[0..degree] (c has room for 8). 0 for an implicit one. */
int spectral_polynomial(pj_scheme s, double *c);

/* The largest s with dt = s stable for the eigenvalue re + i im along the whole ray [0, s]: where
   |R(s lambda)| first exceeds max(1, exp(s re)) (growth that is the equation's own, re > 0, does
   not count). INFINITY when it never does. */
double spectral_ray_limit(pj_scheme s, double re, double im);

/* Eigenvalues of the m x m upper Hessenberg matrix h (row-major, m <= 64) into re, im: 0, or -1
   when the QR iterations do not converge. */
int spectral_hessenberg_eigenvalues(const double *h, int m, double *re, double *im);

/* The stability limit of scheme s for the Jacobian m (its entries sorted and merged here, so
   that any order of spectral_add gives the same bits), from the Ritz values of SPECTRAL_STEPS
   Arnoldi steps (Lanczos steps when m is symmetric); `gershgorin`, the limit from Gershgorin's discs, is kept when the spectrum is
   real and Gershgorin's bound is within the estimate's margin (it is then exact or nearly).
   0 with *limit, or -1 when no estimate was made (no memory, no convergence): *limit untouched. */
int spectral_limit(spectral_matrix *m, pj_scheme s, double gershgorin, double *limit);

/* spectral_reduce.c: the Jacobian of the system an explicit scheme steps when some fields have an
   algebraic equation (eq 0 = EXPR, EXPR = a*m + b evaluated as m = -b/a each stage): from `full`
   (every field's rows, folded as above), the differential fields' rows of A - B D^-1 C, where D is
   the algebraic rows' diagonal (a) and C their other entries, into *reduced (rows and columns
   renumbered over the differential fields alone: their rank * cells + cell), and rho, the
   leftmost point of its Gershgorin discs, negated. `algebraic[f]` marks those fields. 0, or -1:
   an algebraic row reads another algebraic unknown, a is 0 or not finite, no memory, or the
   reduced matrix would pass SPECTRAL_BYTES. */
int spectral_reduce(const spectral_matrix *full, const int *algebraic, int n_fields, int64_t cells,
                    spectral_matrix *reduced, double *rho);

#endif
