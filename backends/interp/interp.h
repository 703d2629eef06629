/* interp.h — the reference interpreter of the kernel IR: the oracle every back end is tested
 * against.
 *
 * Semantics are exactly kir_eval_scalar()'s, node by node, in double or (single != 0) in float:
 * in single precision every node's result is rounded to float, buffers are float*, params stay
 * double in the launch and are rounded when read. The leaves are
 *
 *     CONST    value                     PARAM    L->param[index]
 *     TIME     L->t                      DT       L->dt
 *     SPACING  L->h[axis]                LOAD     buf[slot*n_fields+field][cell + off]
 *     COORD    L->origin[axis] + ((double)idx + 0.5*(1 + half)) * L->h[axis]
 *     METRIC   k->metric's table `index` of `axis` at the mesh index idx + off[axis] (kir.h)
 *
 * each computed in double and then (single) rounded to float. Cell (i,j,k) of a buffer is
 * element i + j*stride[1] + k*stride[2] from buf[...], which points at cell (0,0,0).
 *
 * Speed: the interpreter evaluates node by node over a block of up to INTERP_BLOCK cells of
 * a row (values [n_nodes][block] in scratch memory malloc'd per call), so the dispatch cost is
 * paid once per node and block, not per cell.
 *
 * Out of memory never aborts: the evaluators return -1 (0 on success) and leave NaN where their
 * results would be (stage outputs, bc coefficients, params), raising L->nonfinite for a stage,
 * so a caller that ignores the status still stops at its next NaN check. */
#ifndef PJ_INTERP_H
#define PJ_INTERP_H
#include <stdint.h>
#include "kir.h"

#define INTERP_BLOCK 128

/* Runs a KIR_STAGE (or KIR_INIT, or KIR_JACOBIAN: stores at the cell too) kernel over the cells
 * whose outermost index (z in 3D, y in 2D, x in 1D) is in [begin, end) and all inner indices in
 * [0, n): every output writes buf[slot*n_fields+field] at the cell. An output buffer may also be
 * an input read at offset 0 (in place): all of a block's outputs are computed before any is
 * stored. Thread-safe for disjoint ranges. */
int interp_stage(const kir_kernel *k, const kir_launch *L, int single, int64_t begin, int64_t end);

/* Runs a KIR_REDUCE kernel over parts [begin, end) (kir.h, "Reductions"): part q's result for
 * output j goes to part[j][q]. Needs the ghosts of slot 0 filled where the kernel reads
 * neighbours. Thread-safe for disjoint ranges. -1 (results NaN) without scratch memory. */
int interp_reduce(const kir_kernel *k, const kir_launch *L, int single, int64_t begin, int64_t end, double *const *part);

/* Evaluates a KIR_INIT kernel over every interior cell (slot 0 of each field it writes). */
int interp_init(const kir_kernel *k, const kir_launch *L, int single);

/* Number of boundary cells of side `side` (0 left 1 right 2 bottom 3 top 4 back 5 front):
 * the product of L->n over the other two axes. */
int64_t interp_face_cells(const kir_launch *L, int side);

/* Evaluates a KIR_BC kernel on the boundary cells of its side k->side: the index along the
 * side's axis is 0 (low side) or n-1 (high side), the other two axes run over their interior
 * cells, the lower axis fastest. out[o * interp_face_cells(L, side) + c] receives output o
 * (a double, rounded to float first when single) at face cell c. COORD nodes are evaluated as
 * written: the compiler gives the side's axis half = -1 / +1, the face. */
int interp_bc(const kir_kernel *k, const kir_launch *L, int single, double *out);

#endif
