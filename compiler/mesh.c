/* mesh.c — the mesh statement (grid with uniform, stretched or listed widths; cylindrical r or
 * r-z; spherical r), its names (coordinates, spacings, sides) and the finite-volume metric as
 * kernel IR, for the front end and the lowering (mesh.h says how the metric is built). */
#include "mesh.h"
#include "statements.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MESH_MAX_LIST 1024 /* widths a list may give */

/* ---- reading ------------------------------------------------------------------------------ */

static void build_metric(compiler *C, pj_program *p);

enum { ROLE_N, ROLE_L, ROLE_ORIGIN, ROLE_STRETCH, ROLE_WIDTHS };
typedef struct mesh_key { const char *name; int axis, role; } mesh_key;

static const mesh_key grid_keys[] = {
    {"nx", 0, ROLE_N}, {"ny", 1, ROLE_N}, {"nz", 2, ROLE_N}, {"Lx", 0, ROLE_L}, {"Ly", 1, ROLE_L},
    {"Lz", 2, ROLE_L}, {"x0", 0, ROLE_ORIGIN}, {"y0", 1, ROLE_ORIGIN}, {"z0", 2, ROLE_ORIGIN},
    {"x", 0, ROLE_STRETCH}, {"y", 1, ROLE_STRETCH}, {"z", 2, ROLE_STRETCH},
    {"dx", 0, ROLE_WIDTHS}, {"dy", 1, ROLE_WIDTHS}, {"dz", 2, ROLE_WIDTHS}};
static const mesh_key cyl_keys[] = {
    {"nr", 0, ROLE_N}, {"nz", 1, ROLE_N}, {"Lr", 0, ROLE_L}, {"Lz", 1, ROLE_L}, {"r0", 0, ROLE_ORIGIN},
    {"z0", 1, ROLE_ORIGIN}, {"r", 0, ROLE_STRETCH}, {"z", 1, ROLE_STRETCH}, {"dr", 0, ROLE_WIDTHS}, {"dz", 1, ROLE_WIDTHS}};
static const mesh_key sph_keys[] = {
    {"nr", 0, ROLE_N}, {"Lr", 0, ROLE_L}, {"r0", 0, ROLE_ORIGIN}, {"r", 0, ROLE_STRETCH}, {"dr", 0, ROLE_WIDTHS}};
#define N_KEYS_MAX 15

static const char *const axis_names[3][3] = {{"x", "y", "z"}, {"r", "z", "?"}, {"r", "?", "?"}};

/* `x = stretch(q)`: q, or -1 (reported). */
static int read_stretch(compiler *C, const ast_kwarg *kw, double *q)
{
    const ast_expr *v = kw->value;
    if (v->kind != AST_CALL || strcmp(v->name, "stretch") || v->n_args != 1) {
        diag_error(C->d, v->loc, "%s = takes stretch(RATIO): each cell RATIO times as wide as the one before "
                   "(or list the widths: d%s = [...])", kw->name, kw->name);
        return -1;
    }
    if (sema_check_expr(C, v->args[0], NULL) || lower_const_value(C, v->args[0], q) < 0) return -1;
    if (!(*q > 0) || !isfinite(*q)) {
        diag_error(C->d, v->args[0]->loc, "stretch takes a width ratio > 0, not %g", *q);
        return -1;
    }
    return 0;
}

/* `dx = [w0, w1, ...]`: the widths (malloc'd into *w), their number, or -1 (reported). */
static int read_widths(compiler *C, const ast_kwarg *kw, double **w)
{
    const ast_expr *v = kw->value;
    if (v->kind != AST_CALL || strcmp(v->name, "[]")) {
        diag_error(C->d, v->loc, "%s = takes the cells' widths as a list: %s = [0.1, 0.2, ...]", kw->name, kw->name);
        return -1;
    }
    if (v->n_args > MESH_MAX_LIST) {
        diag_error(C->d, v->loc, "%s lists %d widths; a list takes at most %d (use stretch for more cells)",
                   kw->name, v->n_args, MESH_MAX_LIST);
        return -1;
    }
    double *out = malloc(sizeof *out * (size_t)v->n_args);
    if (!out) arena_fail(C->arena);
    int errors = C->d->errors;
    for (int i = 0; i < v->n_args; i++) {
        if (sema_check_expr(C, v->args[i], NULL) || lower_const_value(C, v->args[i], &out[i]) < 0) continue;
        if (!(out[i] > 0) || !isfinite(out[i]))
            diag_error(C->d, v->args[i]->loc, "a cell width must be positive, not %g", out[i]);
    }
    if (C->d->errors > errors) {
        free(out);
        return -1;
    }
    *w = out;
    return v->n_args;
}

/* The face positions of a stretched axis: x0 + L (q^j - 1) / (q^n - 1). */
static double *stretch_faces(compiler *C, pj_program *p, int a, pj_loc loc)
{
    double q = p->stretch[a], L = p->length[a], qn = pow(q, (double)p->n[a]);
    double *f = malloc(sizeof *f * (size_t)(p->n[a] + 1));
    if (!f) arena_fail(C->arena);
    for (int64_t j = 0; j <= p->n[a]; j++) f[j] = p->origin[a] + L * (pow(q, (double)j) - 1) / (qn - 1);
    f[p->n[a]] = p->origin[a] + L;
    for (int64_t j = 0; j < p->n[a]; j++)
        if (!(f[j + 1] > f[j]) || !isfinite(qn)) {
            diag_error(C->d, loc, "stretch(%g) over %lld cells gives cells too narrow to tell apart", q, (long long)p->n[a]);
            free(f);
            return NULL;
        }
    return f;
}

static const mesh_key *find_key(const mesh_key *keys, int n, const char *name)
{
    for (int q = 0; q < n; q++)
        if (!strcmp(keys[q].name, name)) return &keys[q];
    return NULL;
}

/* The settings of one axis after the keywords are read. */
typedef struct axis_in {
    double v[5];
    int given[5];
    pj_loc where[5];
    double *widths;
    int n_widths;
} axis_in;

/* Axis a of the mesh from what was given; errors reported. */
static void set_axis(compiler *C, pj_program *p, int a, axis_in *in, const char *const *names)
{
    if (in->given[ROLE_WIDTHS]) {
        if (in->given[ROLE_N] && in->v[ROLE_N] != in->n_widths) {
            diag_error(C->d, in->where[ROLE_N], "n%s = %g but d%s lists %d widths", names[a], in->v[ROLE_N], names[a], in->n_widths);
            return;
        }
        if (in->given[ROLE_L]) {
            diag_error(C->d, in->where[ROLE_L], "L%s follows from the widths d%s: give one of them", names[a], names[a]);
            return;
        }
        if (in->given[ROLE_STRETCH]) {
            diag_error(C->d, in->where[ROLE_STRETCH], "%s = stretch(...) and d%s = [...] both give the widths: give one of them",
                       names[a], names[a]);
            return;
        }
        in->v[ROLE_N] = in->n_widths;
        in->given[ROLE_N] = 1;
    }
    double n = in->v[ROLE_N];
    if (n != floor(n) || n < 1 || n > 1e9) {
        diag_error(C->d, in->where[ROLE_N], "n%s must be a positive whole number of cells, not %g", names[a], n);
        return;
    }
    p->n[a] = (int64_t)n;
    if (in->given[ROLE_L]) {
        if (!(in->v[ROLE_L] > 0) || isinf(in->v[ROLE_L])) {
            diag_error(C->d, in->where[ROLE_L], "L%s must be positive, not %g", names[a], in->v[ROLE_L]);
            return;
        }
        p->length[a] = in->v[ROLE_L];
    }
    if (in->given[ROLE_ORIGIN]) {
        double o = in->v[ROLE_ORIGIN];
        if (!isfinite(o)) {
            diag_error(C->d, in->where[ROLE_ORIGIN], "%s0 must be a finite number, not %g", names[a], o);
            return;
        }
        if (p->geometry != PJ_GEOM_CARTESIAN && a == 0 && o < 0) {
            diag_error(C->d, in->where[ROLE_ORIGIN], "r0 is the inner radius: it must be >= 0, not %g", o);
            return;
        }
        p->origin[a] = o;
    }
    if (p->geometry != PJ_GEOM_CARTESIAN && a == 0 && p->origin[0] == 0) p->axis_inner = 1;
    if (in->given[ROLE_WIDTHS]) {
        p->spacing[a] = PJ_SPACING_LIST;
        p->faces[a] = malloc(sizeof(double) * (size_t)(p->n[a] + 1));
        if (!p->faces[a]) arena_fail(C->arena);
        p->faces[a][0] = p->origin[a];
        for (int64_t i = 0; i < p->n[a]; i++) p->faces[a][i + 1] = p->faces[a][i] + in->widths[i];
        p->length[a] = p->faces[a][p->n[a]] - p->origin[a];
        if (!isfinite(p->faces[a][p->n[a]]) || !(p->length[a] > 0))
            diag_error(C->d, in->where[ROLE_WIDTHS], "the widths d%s add up to %g: not a finite length", names[a], p->length[a]);
    } else if (in->given[ROLE_STRETCH] && in->v[ROLE_STRETCH] != 1) {
        p->spacing[a] = PJ_SPACING_STRETCH;
        p->stretch[a] = in->v[ROLE_STRETCH];
        p->faces[a] = stretch_faces(C, p, a, in->where[ROLE_STRETCH]);
    }
}

/* One keyword of the mesh statement into the axis settings. */
static void read_mesh_kwarg(compiler *C, const ast_stmt *mesh, const mesh_key *keys, int n_keys, const ast_kwarg *kw, axis_in *in)
{
    const mesh_key *key = find_key(keys, n_keys, kw->name);
    if (!key) {
        const char *names[N_KEYS_MAX];
        for (int q = 0; q < n_keys; q++) names[q] = keys[q].name;
        const char *near = diag_closest(kw->name, names, n_keys);
        if (keys == sph_keys && find_key(cyl_keys, (int)(sizeof cyl_keys / sizeof *cyl_keys), kw->name))
            diag_error(C->d, kw->loc, "unknown mesh argument '%s': a spherical mesh is 1D, radial (spherical takes nr Lr r0 r dr)", kw->name);
        else if (near) diag_error(C->d, kw->loc, "unknown mesh argument '%s'; did you mean '%s'?", kw->name, near);
        else if (keys == grid_keys) diag_error(C->d, kw->loc, "unknown mesh argument '%s' (grid takes nx ny nz Lx Ly Lz x0 y0 z0)", kw->name);
        else diag_error(C->d, kw->loc, "unknown mesh argument '%s' (%s takes %s)", kw->name, mesh->name,
                        keys == cyl_keys ? "nr nz Lr Lz r0 z0 r z dr dz" : "nr Lr r0 r dr");
        return;
    }
    axis_in *ax = &in[key->axis];
    if (ax->given[key->role]) {
        diag_error(C->d, kw->loc, "mesh argument '%s' is given twice", kw->name);
        return;
    }
    if (!kw->value) {
        diag_error(C->d, kw->loc, "mesh argument '%s' needs a value", kw->name);
        return;
    }
    if (key->role == ROLE_STRETCH) {
        if (read_stretch(C, kw, &ax->v[ROLE_STRETCH]) < 0) return;
    } else if (key->role == ROLE_WIDTHS) {
        if ((ax->n_widths = read_widths(C, kw, &ax->widths)) < 0) return;
    } else {
        if (sema_check_expr(C, kw->value, NULL)) return;
        if (lower_const_value(C, kw->value, &ax->v[key->role]) < 0) return;
    }
    ax->given[key->role] = 1;
    ax->where[key->role] = kw->value->loc;
}

int read_mesh(compiler *C, pj_program *p)
{
    const ast_stmt *mesh = NULL;
    for (int i = 0; i < C->ast->n_stmts; i++) stmt_single(C, C->ast->stmts[i], ST_MESH, "mesh", &mesh);
    if (mesh) C->mesh_loc = mesh->loc;
    if (!mesh) {
        diag_error(C->d, (pj_loc){1, 1}, "no mesh: a problem needs a line such as `mesh grid(nx = 100)`");
        return -1;
    }
    const mesh_key *keys = grid_keys;
    int n_keys = (int)(sizeof grid_keys / sizeof *grid_keys);
    if (!strcmp(mesh->name, "cylindrical")) {
        p->geometry = PJ_GEOM_CYLINDRICAL;
        keys = cyl_keys;
        n_keys = (int)(sizeof cyl_keys / sizeof *cyl_keys);
    } else if (!strcmp(mesh->name, "spherical")) {
        p->geometry = PJ_GEOM_SPHERICAL;
        keys = sph_keys;
        n_keys = (int)(sizeof sph_keys / sizeof *sph_keys);
    } else if (strcmp(mesh->name, "grid")) {
        diag_error(C->d, mesh->name_loc, "unknown mesh '%s': the mesh is grid(nx=, ny=, nz=, Lx=, ...), "
                   "cylindrical(nr=, nz=, Lr=, Lz=, r0=) or spherical(nr=, Lr=, r0=)", mesh->name);
        return -1;
    }
    const char *const *names = axis_names[p->geometry];
    axis_in in[3];
    memset(in, 0, sizeof in);
    C->dim = 3; /* constants may use anything while the mesh is read */
    int errors = C->d->errors;
    for (int j = 0; j < mesh->n_kwargs; j++) read_mesh_kwarg(C, mesh, keys, n_keys, &mesh->kwargs[j], in);
    int dim = 0;
    for (int a = 0; a < 3; a++)
        if (in[a].given[ROLE_N] || in[a].given[ROLE_WIDTHS]) dim = a + 1;
    if (C->d->errors == errors && !in[0].given[ROLE_N] && !in[0].given[ROLE_WIDTHS]) {
        diag_error(C->d, mesh->loc, "the mesh needs n%s (cells along %s)", names[0], names[0]);
    } else if (C->d->errors == errors && dim == 3 && !in[1].given[ROLE_N] && !in[1].given[ROLE_WIDTHS]) {
        diag_error(C->d, mesh->loc, "a 3D mesh needs ny as well as nz");
    } else if (C->d->errors == errors) {
        p->dim = dim;
        for (int a = 0; a < 3; a++) {
            p->n[a] = 1;
            p->length[a] = 1;
            p->origin[a] = 0;
            if (a < dim) {
                set_axis(C, p, a, &in[a], names);
                continue;
            }
            for (int q = 0; q < 5; q++)
                if (in[a].given[q])
                    diag_error(C->d, in[a].where[q], "%s%s is given but the mesh is %s (no n%s)",
                               q == ROLE_WIDTHS ? "d" : q == ROLE_L ? "L" : "", q == ROLE_ORIGIN ? (a == 0 ? "x0" : a == 1 ? "y0" : "z0") : names[a],
                               sema_dim_text(dim), names[a]);
        }
    }
    for (int a = 0; a < 3; a++) free(in[a].widths);
    if (C->d->errors > errors) return -1;
    C->dim = dim;
    C->mesh = p;
    build_metric(C, p);
    return 0;
}

/* ---- names -------------------------------------------------------------------------------- */

int mesh_plain(const compiler *C, int a) { return !C->mesh || program_axis_plain(C->mesh, a); }

int mesh_uniform(const compiler *C, int a) { return !C->mesh || a >= C->mesh->dim || C->mesh->spacing[a] == PJ_SPACING_UNIFORM; }

int mesh_name_axis(const compiler *C, const char *name, int *spacing)
{
    int geom = C->mesh ? (int)C->mesh->geometry : PJ_GEOM_CARTESIAN;
    *spacing = name[0] == 'd' && name[1];
    const char *n = *spacing ? name + 1 : name;
    if (!n[0] || n[1]) return -1;
    for (int a = 0; a < 3; a++)
        if (!strcmp(n, axis_names[geom][a])) return a < C->dim ? a : -3;
    if (geom != PJ_GEOM_CARTESIAN && strchr("xyz", n[0])) return -2;
    return -1;
}

void mesh_name_error(compiler *C, pj_loc loc, const char *name)
{
    int cyl = C->mesh->geometry == PJ_GEOM_CYLINDRICAL;
    diag_error(C->d, loc, "'%s' is not a coordinate of a %s mesh: its coordinates are %s", name,
               cyl ? "cylindrical" : "spherical", cyl ? (C->dim == 2 ? "r and z (spacings dr, dz)" : "r (spacing dr)") : "r (spacing dr)");
}

static const char *const cart_sides[] = {"left", "right", "bottom", "top", "back", "front"};
static const char *const radial_sides[] = {"inner", "outer", "bottom", "top"};

int mesh_side_index(const compiler *C, const char *name)
{
    int curvi = C->mesh && C->mesh->geometry != PJ_GEOM_CARTESIAN;
    const char *const *names = curvi ? radial_sides : cart_sides;
    for (int s = 0; s < (curvi ? 4 : 6); s++)
        if (!strcmp(name, names[s])) return s;
    return -1;
}

const char *mesh_side_name(const pj_program *p, int side)
{
    if (side < 0 || side >= 6) return "?";
    return p->geometry != PJ_GEOM_CARTESIAN && side < 4 ? radial_sides[side] : cart_sides[side];
}

const char *mesh_side_list(const pj_program *p)
{
    return p->geometry == PJ_GEOM_CARTESIAN ? "left, right, bottom, top, back, front, all"
           : p->dim == 2 ? "inner, outer, bottom, top, all" : "inner, outer, all";
}

/* ---- the metric tables and their KIR --------------------------------------------------- */

/* Face g of axis a, beyond the mesh too: ghost faces continue the boundary cell's width. A
 * uniform axis's faces are COORD's values, origin + g h, to the bit. */
static double table_face(const pj_program *p, int a, int64_t g)
{
    int64_t n = p->n[a];
    if (!p->faces[a]) return p->origin[a] + (double)g * (p->length[a] / (double)n);
    const double *f = p->faces[a];
    if (g < 0) return f[0] + (double)g * (f[1] - f[0]);
    if (g > n) return f[n] + (double)(g - n) * (f[n] - f[n - 1]);
    return f[g];
}

/* Centre-to-centre distance across face g of axis a (a side: the boundary cell's width). */
static double face_dist(const pj_program *p, int a, int64_t g)
{
    double lo = table_face(p, a, g), hi = table_face(p, a, g + 1), below = table_face(p, a, g - 1);
    return g == 0 ? hi - lo : g == p->n[a] ? lo - below : 0.5 * (hi - below);
}

static int axis_radial(const pj_program *p, int a) { return p->geometry != PJ_GEOM_CARTESIAN && a == 0; }

static double face_area(const pj_program *p, int a, int64_t g)
{
    double lo = table_face(p, a, g);
    return !axis_radial(p, a) ? 1 : p->geometry == PJ_GEOM_CYLINDRICAL ? lo : lo * lo;
}

static double cell_volume(const pj_program *p, int a, int64_t g)
{
    double lo = table_face(p, a, g), hi = table_face(p, a, g + 1), w = hi - lo;
    if (axis_radial(p, a) && p->geometry == PJ_GEOM_CYLINDRICAL) return 0.5 * w * (hi + lo); /* (hi^2 - lo^2) / 2 */
    if (axis_radial(p, a) && p->geometry == PJ_GEOM_SPHERICAL) return 1.0 / 3.0 * w * (hi * hi + hi * lo + lo * lo);
    return w;
}

/* Fills axis a's tables (kir.h, kir_metric): every quantity of face g is a function of g alone,
 * so the two cells that share a face compute the same flux to the bit (conservation); the lap
 * coefficients A / (d V) fold a cell's volume into its two faces' (one load less per cell). */
static void fill_axis(const pj_program *p, kir_metric *m, int a)
{
    int64_t n = p->n[a];
    for (int64_t g = -KIR_METRIC_PAD; g <= n + KIR_METRIC_PAD; g++) {
        int64_t i = g + KIR_METRIC_PAD;
        double d = face_dist(p, a, g), v = cell_volume(p, a, g), iv = v != 0 ? 1 / v : 0;
        m->tab[a][KIR_MT_FACE][i] = table_face(p, a, g);
        m->tab[a][KIR_MT_DIST][i] = d;
        m->tab[a][KIR_MT_INVDIST][i] = 1 / d;
        m->tab[a][KIR_MT_AREA][i] = face_area(p, a, g);
        m->tab[a][KIR_MT_VOL][i] = v;
        m->tab[a][KIR_MT_INVVOL][i] = iv;
        m->tab[a][KIR_MT_LAPHI][i] = face_area(p, a, g + 1) * (1 / face_dist(p, a, g + 1)) * iv;
        m->tab[a][KIR_MT_LAPLO][i] = face_area(p, a, g) * (1 / d) * iv;
    }
}

static void build_metric(compiler *C, pj_program *p)
{
    if (program_mesh_plain(p)) return;
    p->metric = kir_metric_new();
    if (!p->metric) arena_fail(C->arena);
    for (int a = 0; a < p->dim; a++) {
        if (program_axis_plain(p, a)) continue;
        if (kir_metric_axis(p->metric, a, p->n[a]) < 0) arena_fail(C->arena);
        fill_axis(p, p->metric, a);
    }
    kir_metric_seal(p->metric);
}

/* Table t of axis a at the kernel's cell + off (a face: the low face of that cell). */
static int table(const pj_program *p, kir_kernel *k, int a, int t, int off) { return kir_metric_node(k, p->metric, a, t, off); }

static int face_position(kir_kernel *k, const pj_program *p, int a, int half)
{
    if (p->spacing[a] == PJ_SPACING_UNIFORM) return kir_coord(k, a, half);
    return table(p, k, a, KIR_MT_FACE, (half + 1) / 2);
}

int mesh_position(compiler *C, kir_kernel *k, int a, int half)
{
    const pj_program *p = C->mesh;
    if (!p || p->spacing[a] == PJ_SPACING_UNIFORM || (half & 1)) return p ? face_position(k, p, a, half) : kir_coord(k, a, half);
    int lo = face_position(k, p, a, half - 1), hi = face_position(k, p, a, half + 1);
    return kir_op2(k, KIR_MUL, kir_const(k, 0.5), kir_op2(k, KIR_ADD, lo, hi));
}

int mesh_width(compiler *C, kir_kernel *k, int a, int off)
{
    if (mesh_uniform(C, a)) return kir_spacing(k, a);
    return kir_op2(k, KIR_SUB, face_position(k, C->mesh, a, 2 * off + 1), face_position(k, C->mesh, a, 2 * off - 1));
}

int mesh_distance(compiler *C, kir_kernel *k, int a, int half)
{
    if (mesh_uniform(C, a)) return kir_spacing(k, a);
    return table(C->mesh, k, a, KIR_MT_DIST, (half + 1) / 2);
}

int mesh_inv_distance(compiler *C, kir_kernel *k, int a, int half)
{
    return table(C->mesh, k, a, KIR_MT_INVDIST, (half + 1) / 2);
}

int mesh_area(compiler *C, kir_kernel *k, int a, int half)
{
    const pj_program *p = C->mesh;
    if (!p || p->geometry == PJ_GEOM_CARTESIAN || a != 0) return -1;
    if (p->spacing[a] == PJ_SPACING_UNIFORM) { /* r = COORD, arithmetic instead of a load per face */
        int r = kir_coord(k, a, half);
        return p->geometry == PJ_GEOM_CYLINDRICAL ? r : kir_op2(k, KIR_MUL, r, r);
    }
    return table(p, k, a, KIR_MT_AREA, (half + 1) / 2);
}

int mesh_volume(compiler *C, kir_kernel *k, int a, int off)
{
    if (mesh_plain(C, a)) return kir_spacing(k, a);
    return table(C->mesh, k, a, KIR_MT_VOL, off);
}

int mesh_inv_volume(compiler *C, kir_kernel *k, int a, int off)
{
    return table(C->mesh, k, a, KIR_MT_INVVOL, off);
}

int mesh_lap_coef(compiler *C, kir_kernel *k, int a, int off, int high)
{
    return table(C->mesh, k, a, high ? KIR_MT_LAPHI : KIR_MT_LAPLO, off);
}

double mesh_bc_scale(const pj_program *p, int side)
{
    int a = side / 2;
    if (a >= p->dim || p->spacing[a] == PJ_SPACING_UNIFORM) return 1;
    const double *f = p->faces[a];
    int64_t n = p->n[a];
    double w = side & 1 ? f[n] - f[n - 1] : f[1] - f[0];
    return p->length[a] / (double)n / w;
}

/* ---- the host's view ---------------------------------------------------------------------- */

int program_axis_plain(const pj_program *p, int a)
{
    return a >= p->dim || (p->spacing[a] == PJ_SPACING_UNIFORM && !(p->geometry != PJ_GEOM_CARTESIAN && a == 0));
}

int program_mesh_plain(const pj_program *p)
{
    int plain = 1;
    for (int a = 0; a < p->dim; a++) plain &= program_axis_plain(p, a);
    return plain;
}

static double host_face(const pj_program *p, int a, int64_t j)
{
    if (p->faces[a]) return p->faces[a][j];
    return p->origin[a] + (double)j * (p->length[a] / (double)p->n[a]);
}

double program_cell_centre(const pj_program *p, int a, int64_t i)
{
    if (!p->faces[a]) return p->origin[a] + ((double)i + 0.5) * (p->length[a] / (double)p->n[a]);
    return 0.5 * (p->faces[a][i] + p->faces[a][i + 1]);
}

double program_integral_scale(const pj_program *p, const double h[3])
{
    double v = 1;
    for (int a = 0; a < p->dim; a++)
        if (program_axis_plain(p, a)) v *= h[a];
    return v;
}

double program_mean_divisor(const pj_program *p)
{
    double v = 1;
    for (int a = 0; a < p->dim; a++) {
        if (program_axis_plain(p, a)) {
            v *= (double)p->n[a];
            continue;
        }
        double lo = host_face(p, a, 0), hi = host_face(p, a, p->n[a]);
        v *= p->geometry == PJ_GEOM_CARTESIAN || a ? hi - lo
             : p->geometry == PJ_GEOM_CYLINDRICAL ? (hi * hi - lo * lo) / 2 : (hi * hi * hi - lo * lo * lo) / 3;
    }
    return v;
}
