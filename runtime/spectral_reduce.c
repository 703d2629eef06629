/* spectral_reduce.c — the Jacobian an explicit scheme steps when fields have algebraic equations.
 *
 * An algebraic field m (eq 0 = G, G = a*m + b with a and b free of m, read at the cell only:
 * compiler/algebraic.c) is not stepped: before every stage m = -b/a is evaluated from the other
 * fields, and its ghosts are filled by its boundary conditions. So the scheme steps U' = F(U, m(U))
 * whose Jacobian is, by the chain rule through G(U, m(U)) = 0,
 *     dF/dU + dF/dm dm/dU = A - B D^-1 C,
 * A, B the differential rows' entries on the differential and the algebraic columns, C the
 * algebraic rows' entries on the differential columns and D their diagonal (a, one entry per row:
 * G reads m at the cell alone). stability.c assembles the whole DAE Jacobian (every row folded as
 * the scheme sees it: a differential row's entry on a ghost of m lands on the cell of m that the
 * ghost is filled from) and this file eliminates the algebraic rows: for Cahn-Hilliard written
 * with mu as an unknown (dt(c) = M lap(mu), 0 = mu - f'(c) + kappa lap(c)) it gives the matrix of
 * the single fourth-order equation dt(c) = M lap(f'(c) - kappa lap(c)), to rounding. */
#include "spectral.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int by_place(const void *x, const void *y)
{
    const spectral_entry *a = x, *b = y;
    if (a->r != b->r) return a->r < b->r ? -1 : 1;
    if (a->c != b->c) return a->c < b->c ? -1 : 1;
    return a->v < b->v ? -1 : a->v > b->v; /* and by value: sums in one order, the same bits */
}

static int by_column(const void *x, const void *y)
{
    const spectral_entry *a = x, *b = y;
    if (a->c != b->c) return a->c < b->c ? -1 : 1;
    return a->v < b->v ? -1 : a->v > b->v;
}

int spectral_reduce(const spectral_matrix *full, const int *algebraic, int n_fields, int64_t cells,
                    spectral_matrix *reduced, double *rho)
{
    if (full->failed || cells < 1 || full->n != (int64_t)n_fields * cells) return -1;
    int64_t n = full->n, nnz = 0, most = 0, longest = 0;
    int *rank = malloc(sizeof *rank * (size_t)(n_fields + 1)), n_diff = 0;
    spectral_entry *e = malloc(sizeof *e * (size_t)(full->nnz + 1)), *row = NULL;
    int64_t *start = calloc((size_t)n + 1, sizeof *start);
    double *diag = NULL;
    int rc = -1;
    if (!rank || !e || !start) goto done;
    for (int f = 0; f < n_fields; f++) rank[f] = algebraic[f] ? -1 : n_diff++;
    if (full->nnz) memcpy(e, full->e, sizeof *e * (size_t)full->nnz);
    qsort(e, (size_t)full->nnz, sizeof *e, by_place);
    for (int64_t i = 0; i < full->nnz; i++) /* entries on one place added */
        if (nnz && e[nnz - 1].r == e[i].r && e[nnz - 1].c == e[i].c) e[nnz - 1].v += e[i].v;
        else e[nnz++] = e[i];
    for (int64_t i = 0; i < nnz; i++) start[e[i].r + 1]++;
    for (int64_t i = 0; i < n; i++) start[i + 1] += start[i];
    /* D: each algebraic row's diagonal; its other entries (C) on differential columns only */
    if (!(diag = calloc((size_t)n, sizeof *diag))) goto done;
    for (int64_t r = 0; r < n; r++) {
        if (!algebraic[r / cells]) continue;
        for (int64_t k = start[r]; k < start[r + 1]; k++)
            if (e[k].c == r) diag[r] = e[k].v;
            else if (algebraic[e[k].c / cells]) goto done;
        if (!(fabs(diag[r]) > 0) || !isfinite(diag[r])) goto done;
    }
    /* room: a differential row's entry on m brings m's row of C */
    for (int64_t r = 0; r < n; r++) {
        if (algebraic[r / cells]) continue;
        int64_t len = 0;
        for (int64_t k = start[r]; k < start[r + 1]; k++)
            len += algebraic[e[k].c / cells] ? start[e[k].c + 1] - start[e[k].c] - 1 : 1;
        most += len;
        if (len > longest) longest = len;
    }
    reduced->n = (int64_t)n_diff * cells;
    reduced->most = most;
    if (spectral_bytes(reduced->n, (double)most) > SPECTRAL_BYTES) goto done;
    if (!(row = malloc(sizeof *row * (size_t)(longest + 1)))) goto done;
    double worst = 0;
    for (int64_t r = 0; r < n; r++) {
        if (algebraic[r / cells]) continue;
        int64_t len = 0, out = rank[r / cells] * cells + r % cells;
        for (int64_t k = start[r]; k < start[r + 1]; k++) {
            int64_t c = e[k].c;
            if (!algebraic[c / cells]) {
                row[len++] = (spectral_entry){0, (int32_t)(rank[c / cells] * cells + c % cells), e[k].v};
                continue;
            }
            double s = -e[k].v / diag[c]; /* B_rc (-1/a_c) C_c */
            for (int64_t q = start[c]; q < start[c + 1]; q++)
                if (e[q].c != c)
                    row[len++] = (spectral_entry){0, (int32_t)(rank[e[q].c / cells] * cells + e[q].c % cells), s * e[q].v};
        }
        qsort(row, (size_t)len, sizeof *row, by_column);
        int64_t m = 0;
        for (int64_t q = 0; q < len; q++)
            if (m && row[m - 1].c == row[q].c) row[m - 1].v += row[q].v;
            else row[m++] = row[q];
        double centre = 0, radius = 0;
        for (int64_t q = 0; q < m; q++) {
            if (row[q].c == out) centre += row[q].v;
            else radius += fabs(row[q].v);
            spectral_add(reduced, out, row[q].c, row[q].v);
        }
        if (radius - centre > worst) worst = radius - centre;
    }
    if (reduced->failed) goto done;
    *rho = worst;
    rc = 0;
done:
    free(rank);
    free(e);
    free(start);
    free(diag);
    free(row);
    return rc;
}
