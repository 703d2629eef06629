/* mesh.h — the mesh statement (grid, cylindrical, spherical; uniform, stretched or listed
 * widths) and the finite-volume metric the lowering builds into the kernels (mesh.c).
 *
 * A uniform Cartesian axis keeps today's operators and kernels exactly (mesh_plain). Along any
 * other axis the metric is computed once, at compile time, into per-axis tables (kir.h,
 * kir_metric: face positions, centre-to-centre distances and their inverses, face areas 1, r,
 * r^2, cell volumes w, (r+^2 - r-^2)/2, (r+^3 - r-^3)/3 and their inverses, lap's A / (d V) of
 * a cell's two faces, ghosts included) that the kernels read with METRIC nodes at the mesh
 * index: a load per quantity and cell, the same doubles on every back end. Every quantity of a
 * face is a function of the face's index alone, so the two cells that share a face compute the
 * same flux to the bit (conservation); lap along a non-uniform axis folds each cell's 1 / V into
 * its faces' coefficients (a load less per cell, the x loop being bound by its loads), so there
 * the two agree to rounding. A uniform axis's face positions in expressions stay COORDs. `half`
 * is in half cells from the kernel's cell centre along the axis: odd a face, even a cell centre. */
#ifndef PJ_MESH_H
#define PJ_MESH_H
#include "sema.h"

/* Reads the mesh statement into p (n, length, origin, geometry, spacing) and sets C->dim and
 * C->mesh. 0, or -1 (reported). */
int read_mesh(compiler *C, pj_program *p);
/* 1 when axis a takes today's uniform Cartesian operators (always before the mesh is read). */
int mesh_plain(const compiler *C, int a);
/* 1 when axis a's cells all have one width (the launch's h): uniform Cartesian or curvilinear. */
int mesh_uniform(const compiler *C, int a);
/* The axis a coordinate (or, *spacing set, spacing) name denotes in the mesh: x y z dx dy dz on a
 * grid, r z dr dz on a cylindrical mesh, r dr on a spherical one. -1: not such a name; -2: a
 * Cartesian name on a curvilinear mesh (the message says so); -3: an axis the mesh lacks. */
int mesh_name_axis(const compiler *C, const char *name, int *spacing);
/* The message of mesh_name_axis's -2 for `name`. */
void mesh_name_error(compiler *C, pj_loc loc, const char *name);
/* The sides: their number for a side name of this mesh (or -1), and a side's name. */
int mesh_side_index(const compiler *C, const char *name);
const char *mesh_side_name(const pj_program *p, int side);
const char *mesh_side_list(const pj_program *p); /* "left, right, ..." for the messages */

/* KIR of the metric along axis a (node ids). */
int mesh_position(compiler *C, kir_kernel *k, int a, int half); /* coordinate of a face or centre */
int mesh_width(compiler *C, kir_kernel *k, int a, int off);     /* width of the cell at off */
int mesh_distance(compiler *C, kir_kernel *k, int a, int half); /* centre to centre across a face */
int mesh_inv_distance(compiler *C, kir_kernel *k, int a, int half); /* its inverse (non-uniform axes) */
int mesh_area(compiler *C, kir_kernel *k, int a, int half);     /* face area factor, -1 when 1 */
int mesh_volume(compiler *C, kir_kernel *k, int a, int off);    /* cell volume factor along a */
int mesh_inv_volume(compiler *C, kir_kernel *k, int a, int off); /* its inverse (axes not plain) */
/* A / (d V) of the cell at off through its high (high 1) or low face: lap's coefficients along a
 * non-uniform axis, the area, inverse distance and inverse volume in one table each. */
int mesh_lap_coef(compiler *C, kir_kernel *k, int a, int off, int high);
/* What a boundary condition's dn coefficient is scaled by on `side` so that the ghost fill (which
 * takes the launch's h for the distance from the ghost to its mirror) sees the boundary cell's
 * own width: h / w_boundary; 1 on a uniform axis. */
double mesh_bc_scale(const pj_program *p, int side);

#endif
