/* writers.c — CSV, PNG, atomic files and snapshot series (see writers.h); VTK is writers_vtk.c.
 *
 * Every file goes through afile: mkstemp beside the target, write, flush, fsync-free close,
 * rename over the target; any failure unlinks the temporary file and reports path: strerror. */
#include "writers.h"
#include "writers_afile.h"
#include "diag.h"
#include "picture.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- reading a user's file ------------------------------------------------------------- */

FILE *writers_open_regular(const char *path, char *err, size_t err_len)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        diag_set(err, err_len, "%s", strerror(errno));
        if (fd >= 0) close(fd);
        return NULL;
    }
    int flags = fcntl(fd, F_GETFL);
    if (!S_ISREG(st.st_mode) || flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
        diag_set(err, err_len, "%s", S_ISREG(st.st_mode) ? strerror(errno) : "not a regular file");
        close(fd);
        return NULL;
    }
    FILE *f = fdopen(fd, "r");
    if (!f) {
        diag_set(err, err_len, "%s", strerror(errno));
        close(fd);
    }
    return f;
}

/* ---- atomic files ---------------------------------------------------------------------- */

int writers_af_open(afile *a, const char *path, char *err, size_t err_len)
{
    a->path = path;
    a->f = NULL;
    a->tmp = NULL;
    /* a device, a pipe or a link (--dump /dev/stdout, a user's symlink) is written through:
       renaming over it would replace it with a regular file */
    struct stat st;
    if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        a->f = fopen(path, "wb");
        if (!a->f) {
            diag_set(err, err_len, "%s: %s", path, strerror(errno));
            return -1;
        }
        return 0;
    }
    size_t n = strlen(path) + 16;
    a->tmp = malloc(n);
    if (!a->tmp) {
        diag_set(err, err_len, "%s: %s", path, strerror(ENOMEM));
        return -1;
    }
    snprintf(a->tmp, n, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(a->tmp);
    if (fd < 0) {
        diag_set(err, err_len, "%s: %s", path, strerror(errno));
        free(a->tmp);
        a->tmp = NULL;
        return -1;
    }
    fchmod(fd, 0644);
    a->f = fdopen(fd, "wb");
    if (!a->f) {
        int e = errno;
        close(fd);
        unlink(a->tmp);
        free(a->tmp);
        a->tmp = NULL;
        diag_set(err, err_len, "%s: %s", path, strerror(e));
        return -1;
    }
    return 0;
}

void writers_af_abort(afile *a)
{
    if (a->f) fclose(a->f);
    if (a->tmp) {
        unlink(a->tmp);
        free(a->tmp);
    }
    a->f = NULL;
    a->tmp = NULL;
}

int writers_af_commit(afile *a, char *err, size_t err_len)
{
    int e = 0;
    if (ferror(a->f)) e = errno ? errno : EIO;
    if (fflush(a->f) != 0 && !e) e = errno;
    if (fclose(a->f) != 0 && !e) e = errno;
    a->f = NULL;
    if (!a->tmp) { /* written directly (a device) */
        if (e) diag_set(err, err_len, "%s: %s", a->path, strerror(e));
        return e ? -1 : 0;
    }
    if (!e && rename(a->tmp, a->path) != 0) e = errno;
    if (e) {
        diag_set(err, err_len, "%s: %s", a->path, strerror(e));
        unlink(a->tmp);
    }
    free(a->tmp);
    a->tmp = NULL;
    return e ? -1 : 0;
}


int writers_mkdirs(const char *path, char *err, size_t err_len)
{
    size_t n = strlen(path);
    char *p = malloc(n + 1);
    if (!p) {
        diag_set(err, err_len, "%s: %s", path, strerror(ENOMEM));
        return -1;
    }
    memcpy(p, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (p[i] != '/' && p[i] != 0) continue;
        char c = p[i];
        p[i] = 0;
        if (mkdir(p, 0755) != 0 && errno != EEXIST) {
            diag_set(err, err_len, "%s: %s", p, strerror(errno));
            free(p);
            return -1;
        }
        p[i] = c;
    }
    free(p);
    struct stat st;
    int e = stat(path, &st) != 0 ? errno : !S_ISDIR(st.st_mode) ? ENOTDIR : 0;
    if (e) {
        diag_set(err, err_len, "%s: %s", path, strerror(e));
        return -1;
    }
    return 0;
}

/* ---- frames ---------------------------------------------------------------------------- */

int writers_frame_build(writers_frame *fr, const pj_program *p, const kir_launch *L, double t, const int *fields,
                        int n_fields, writers_field_fn get, void *obj, char *err, size_t err_len)
{
    memset(fr, 0, sizeof *fr);
    if (!fields) n_fields = p->n_fields;
    fr->dim = p->dim;
    size_t cells = 1;
    for (int a = 0; a < 3; a++) {
        fr->n[a] = L->n[a];
        fr->h[a] = L->h[a];
        fr->origin[a] = L->origin[a];
        cells *= (size_t)L->n[a];
    }
    fr->t = t;
    fr->mesh = p;
    const char **names = calloc((size_t)(n_fields ? n_fields : 1), sizeof *names);
    double **data = calloc((size_t)(n_fields ? n_fields : 1), sizeof *data);
    fr->names = names;
    fr->data = (const double *const *)data;
    fr->n_fields = n_fields;
    if (!names || !data) goto oom;
    for (int i = 0; i < n_fields; i++) {
        int f = fields ? fields[i] : i;
        names[i] = p->field_names ? p->field_names[f] : "field";
        data[i] = malloc(sizeof(double) * cells);
        if (!data[i]) goto oom;
        if (get(obj, f, data[i], err, err_len) < 0) {
            writers_frame_free(fr);
            return -1;
        }
    }
    return 0;
oom:
    writers_frame_free(fr);
    diag_set(err, err_len, "frame: %s", strerror(ENOMEM));
    return -1;
}

void writers_frame_free(writers_frame *fr)
{
    if (fr->data)
        for (int i = 0; i < fr->n_fields; i++) free((void *)fr->data[i]);
    free((void *)fr->data);
    free((void *)fr->names);
    memset(fr, 0, sizeof *fr);
}

/* ---- CSV ------------------------------------------------------------------------------- */

int writers_csv(const char *path, const writers_frame *fr, char *err, size_t err_len)
{
    afile a;
    if (writers_af_open(&a, path, err, err_len)) return -1;
    FILE *f = a.f;
    int radial = fr->mesh && fr->mesh->geometry != PJ_GEOM_CARTESIAN;
    for (int ax = 0; ax < fr->dim; ax++) fprintf(f, "%s%c", ax ? "," : "", (radial ? "rz" : "xyz")[ax]);
    for (int i = 0; i < fr->n_fields; i++) fprintf(f, ",%s", fr->names[i]);
    fputc('\n', f);
    int64_t c = 0;
    for (int64_t k = 0; k < fr->n[2]; k++)
        for (int64_t j = 0; j < fr->n[1]; j++)
            for (int64_t i = 0; i < fr->n[0]; i++, c++) {
                int64_t idx[3] = {i, j, k};
                for (int ax = 0; ax < fr->dim; ax++) /* the centre: of the listed or stretched faces */
                    fprintf(f, "%s%.17g", ax ? "," : "", fr->mesh && fr->mesh->faces[ax]
                            ? program_cell_centre(fr->mesh, ax, fr->first[ax] + idx[ax])
                            : fr->origin[ax] + ((double)idx[ax] + 0.5) * fr->h[ax]);
                for (int v = 0; v < fr->n_fields; v++) fprintf(f, ",%.17g", fr->data[v][c]);
                if (fputc('\n', f) == EOF) break;
            }
    if (ferror(f)) {
        diag_set(err, err_len, "%s: %s", path, strerror(errno ? errno : EIO));
        writers_af_abort(&a);
        return -1;
    }
    return writers_af_commit(&a, err, err_len);
}

/* ---- PNG ------------------------------------------------------------------------------- */

typedef struct png_err { jmp_buf jb; char msg[200]; } png_err;

static void png_on_error(png_structp png, png_const_charp msg)
{
    png_err *pe = png_get_error_ptr(png);
    snprintf(pe->msg, sizeof pe->msg, "%s", msg);
    longjmp(pe->jb, 1);
}

static void png_on_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;
}

/* The picture of a frame's field (writers.h): white, the field's cells at the top left, the colour
 * bar to their right, the header, the axes' caption under the cells and the bar's labels in black. */
typedef struct png_layout {
    int64_t nx, ny, scale;    /* cells drawn across and up, pixels a cell side */
    int64_t pw, ph;           /* the field's pixels */
    int64_t w, h;             /* the image */
    double lo, hi;
    char head[128], top[32], bottom[32], axes[96];
} png_layout;

enum { PNG_MARGIN = 8, PNG_BAR = 24, PNG_FONT = 2, PNG_HEAD = 2 * PNG_MARGIN + 7 * PNG_FONT,
       PNG_FOOT = 2 * PNG_MARGIN + 7 * PNG_FONT };

/* The plane of field f a picture shows (d, nx across by ny up, x fastest): a 1D or 2D field
 * whole, a 3D one across the style's axis (`slice`), copied into *own unless it is a z plane;
 * across, up: the axes drawn (0 x, 1 y, 2 z); where: the plane's place ("" for 1D and 2D). */
typedef struct png_plane {
    const double *d;
    double *own;
    int64_t nx, ny;
    int across, up;
    char where[64];
} png_plane;

static int png_plane_of(png_plane *pl, const writers_frame *fr, int f, const writers_png_style *st)
{
    memset(pl, 0, sizeof *pl);
    pl->nx = fr->n[0];
    pl->ny = fr->dim >= 2 ? fr->n[1] : 1;
    pl->d = fr->data[f];
    pl->up = 1;
    if (fr->dim < 3) return 0;
    int axis = st && st->slice ? st->slice - 1 : 2;
    int64_t k = st && st->slice ? st->slice_index : fr->n[2] / 2;
    if (k < 0) k = 0;
    if (k >= fr->n[axis]) k = fr->n[axis] - 1;
    int64_t stride[3] = {1, fr->n[0], fr->n[0] * fr->n[1]};
    pl->across = axis == 0 ? 1 : 0;
    pl->up = axis == 2 ? 1 : 2;
    pl->nx = fr->n[pl->across];
    pl->ny = fr->n[pl->up];
    double at = fr->mesh && fr->mesh->faces[axis] ? program_cell_centre(fr->mesh, axis, k)
                                                   : fr->origin[axis] + ((double)k + 0.5) * fr->h[axis];
    snprintf(pl->where, sizeof pl->where, "  %c = %.4g (%c = %lld)", "xyz"[axis], at, "ijk"[axis], (long long)k);
    if (axis == 2) {
        pl->d = fr->data[f] + k * stride[2];
        return 0;
    }
    if (!(pl->own = malloc(sizeof *pl->own * (size_t)(pl->nx * pl->ny)))) return -1;
    for (int64_t j = 0; j < pl->ny; j++)
        for (int64_t i = 0; i < pl->nx; i++)
            pl->own[i + j * pl->nx] = fr->data[f][i * stride[pl->across] + j * stride[pl->up] + k * stride[axis]];
    pl->d = pl->own;
    return 0;
}

static void png_plan(png_layout *L, const writers_frame *fr, int f, const png_plane *pl, const writers_png_style *st)
{
    const double *d = pl->d;
    L->nx = pl->nx;
    L->ny = pl->ny;
    int64_t longest = L->nx > L->ny ? L->nx : L->ny;
    L->scale = longest >= 512 ? 1 : (512 + longest - 1) / longest;
    L->pw = L->nx * L->scale;
    L->ph = L->ny * L->scale;
    if (fr->dim == 1) { /* a 1D field: a band, its cells as columns, of at most 2^24 pixels from 2^17 cells on */
        int64_t band = L->pw / 6 < 128 ? L->pw / 6 : 128, most = (int64_t)1 << 24;
        if (band * L->pw > most) band = most / L->pw > 8 ? most / L->pw : 8;
        if (band > L->ph) L->ph = band;
    }
    if (st && st->fixed) {
        L->lo = st->lo;
        L->hi = st->hi;
    } else {
        L->lo = INFINITY;
        L->hi = -INFINITY;
        for (int64_t c = 0; c < L->nx * L->ny; c++)
            if (isfinite(d[c])) {
                if (d[c] < L->lo) L->lo = d[c];
                if (d[c] > L->hi) L->hi = d[c];
            }
        if (!(L->lo <= L->hi)) L->lo = L->hi = 0; /* no finite value */
    }
    char a[32];
    snprintf(L->head, sizeof L->head, "%.40s  t = %s%s", fr->names[f], diag_number(a, sizeof a, fr->t), pl->where);
    const char *axis_names = fr->mesh && fr->mesh->geometry != PJ_GEOM_CARTESIAN ? "rz" : "xyz";
    if (fr->dim == 1) snprintf(L->axes, sizeof L->axes, "%c -> %lld cells", axis_names[0], (long long)L->nx);
    else snprintf(L->axes, sizeof L->axes, "%c -> %lld cells   %c ^ %lld cells", axis_names[pl->across], (long long)L->nx,
                  axis_names[pl->up], (long long)L->ny);
    if (writers_frame_rectilinear(fr)) /* cells of unequal widths drawn alike: not the mesh's shape */
        snprintf(L->axes + strlen(L->axes), sizeof L->axes - strlen(L->axes), "   (index space)");
    snprintf(L->top, sizeof L->top, "%.4g", L->hi); /* the labels: 4 digits */
    snprintf(L->bottom, sizeof L->bottom, "%.4g", L->lo);
    int tw = picture_text_width(L->top, PNG_FONT), bw = picture_text_width(L->bottom, PNG_FONT);
    int64_t label = 4 + (tw > bw ? tw : bw);
    L->w = PNG_MARGIN + L->pw + PNG_MARGIN + PNG_BAR + label + PNG_MARGIN;
    int64_t hw = 2 * PNG_MARGIN + picture_text_width(L->head, PNG_FONT);
    int64_t aw = 2 * PNG_MARGIN + picture_text_width(L->axes, PNG_FONT);
    if (L->w < hw) L->w = hw;
    if (L->w < aw) L->w = aw;
    L->h = PNG_HEAD + L->ph + PNG_FOOT;
}

static void png_draw(unsigned char *pix, const png_layout *L, const double *d, const writers_png_style *st)
{
    int cmap = st ? st->colormap : PJ_CMAP_VIRIDIS;
    static const unsigned char black[3] = {0, 0, 0};
    memset(pix, 255, (size_t)(L->w * L->h * 3));
    for (int64_t r = 0; r < L->ph; r++) {
        int64_t j = L->ny - 1 - (L->ny > 1 ? r / L->scale : 0); /* y up */
        unsigned char *row = pix + ((PNG_HEAD + r) * L->w + PNG_MARGIN) * 3;
        for (int64_t i = 0; i < L->nx; i++) {
            double v = d[i + j * L->nx];
            unsigned char px[3] = {128, 128, 128};
            if (isfinite(v)) picture_colour(cmap, L->hi > L->lo ? (v - L->lo) / (L->hi - L->lo) : 0.5, px);
            for (int64_t q = 0; q < L->scale; q++) memcpy(row + (i * L->scale + q) * 3, px, 3);
        }
    }
    int64_t bx = PNG_MARGIN + L->pw + PNG_MARGIN;
    for (int64_t r = 0; r < L->ph; r++) { /* the bar: hi at the top row, lo at the bottom one */
        unsigned char px[3];
        picture_colour(cmap, L->ph > 1 ? 1 - (double)r / (double)(L->ph - 1) : 1, px);
        for (int64_t q = 0; q < PNG_BAR; q++) memcpy(pix + ((PNG_HEAD + r) * L->w + bx + q) * 3, px, 3);
    }
    int W = (int)L->w, H = (int)L->h, lx = (int)(bx + PNG_BAR + 4);
    picture_text(pix, W, H, PNG_MARGIN, PNG_MARGIN, L->head, PNG_FONT, black);
    picture_text(pix, W, H, PNG_MARGIN, (int)(PNG_HEAD + L->ph + PNG_MARGIN), L->axes, PNG_FONT, black);
    picture_text(pix, W, H, lx, PNG_HEAD, L->top, PNG_FONT, black);
    picture_text(pix, W, H, lx, (int)(PNG_HEAD + L->ph - 7 * PNG_FONT), L->bottom, PNG_FONT, black);
}

int writers_png(const char *path, const writers_frame *fr, int f, const writers_png_style *st, char *err, size_t err_len)
{
    if (f < 0 || f >= fr->n_fields) {
        diag_set(err, err_len, "%s: no field %d to draw", path, f);
        return -1;
    }
    if (fr->n[0] > 1000000 || (fr->dim >= 2 && fr->n[1] > 1000000)) {
        diag_set(err, err_len, "%s: image too large", path);
        return -1;
    }
    png_plane pl;
    png_layout L;
    unsigned char *pix = NULL;
    png_bytep *rows = NULL;
    if (png_plane_of(&pl, fr, f, st) == 0) {
        png_plan(&L, fr, f, &pl, st);
        pix = malloc((size_t)(L.w * L.h * 3));
        rows = malloc(sizeof *rows * (size_t)L.h);
    }
    if (!pix || !rows) {
        free(pl.own);
        free(pix);
        free(rows);
        diag_set(err, err_len, "%s: %s", path, strerror(ENOMEM));
        return -1;
    }
    png_draw(pix, &L, pl.d, st);
    free(pl.own);
    for (int64_t r = 0; r < L.h; r++) rows[r] = pix + r * L.w * 3;
    afile a;
    if (writers_af_open(&a, path, err, err_len)) {
        free(pix);
        free(rows);
        return -1;
    }
    png_err pe;
    pe.msg[0] = 0;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &pe, png_on_error, png_on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info) {
        png_destroy_write_struct(&png, &info);
        writers_af_abort(&a);
        free(pix);
        free(rows);
        diag_set(err, err_len, "%s: %s", path, strerror(ENOMEM));
        return -1;
    }
    if (setjmp(pe.jb)) {
        png_destroy_write_struct(&png, &info);
        writers_af_abort(&a);
        free(pix);
        free(rows);
        diag_set(err, err_len, "%s: %s", path, pe.msg[0] ? pe.msg : "png error");
        return -1;
    }
    png_init_io(png, a.f);
    png_set_IHDR(png, info, (png_uint_32)L.w, (png_uint_32)L.h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    static const char *const cmaps[] = PJ_CMAP_NAMES;
    char t[32], range[80], lo[32], hi[32];
    snprintf(range, sizeof range, "%s,%s", diag_number(lo, sizeof lo, L.lo), diag_number(hi, sizeof hi, L.hi));
    png_text text[4] = {
        {.compression = PNG_TEXT_COMPRESSION_NONE, .key = "field", .text = (char *)fr->names[f]},
        {.compression = PNG_TEXT_COMPRESSION_NONE, .key = "t", .text = (char *)diag_number(t, sizeof t, fr->t)},
        {.compression = PNG_TEXT_COMPRESSION_NONE, .key = "range", .text = range},
        {.compression = PNG_TEXT_COMPRESSION_NONE, .key = "colormap",
         .text = (char *)cmaps[st && st->colormap >= 0 && st->colormap < PJ_N_CMAPS ? st->colormap : 0]},
    };
    png_set_text(png, info, text, 4);
    if (writers_frame_rectilinear(fr)) {
        png_text space = {.compression = PNG_TEXT_COMPRESSION_NONE, .key = "space", .text = "index"};
        png_set_text(png, info, &space, 1);
    }
    png_write_info(png, info);
    png_write_image(png, rows);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    free(pix);
    free(rows);
    return writers_af_commit(&a, err, err_len);
}

/* ---- checks before a run ---------------------------------------------------------------- */

/* Makes and removes a file in dir the way writers_af_open would beside a target there: 0, or -1 with
 * errno's text in err. */
static int probe_folder(const char *dir, char *err, size_t err_len)
{
    size_t n = strlen(dir) + 32;
    char *tmp = malloc(n);
    if (!tmp) {
        diag_set(err, err_len, "%s", strerror(ENOMEM));
        return -1;
    }
    snprintf(tmp, n, "%s/.pdejit-probe.XXXXXX", dir);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        diag_set(err, err_len, "%s", strerror(errno));
        free(tmp);
        return -1;
    }
    close(fd);
    unlink(tmp);
    free(tmp);
    return 0;
}

int writers_check_writable(const char *path, char *err, size_t err_len)
{
    struct stat st;
    if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) { /* written through (writers_af_open) */
        if (S_ISDIR(st.st_mode)) {
            diag_set(err, err_len, "%s", strerror(EISDIR));
            return -1;
        }
        if (access(path, W_OK) == 0) return 0;
        if (errno != ENOENT) { /* a link to nowhere is created through it: its folder decides */
            diag_set(err, err_len, "%s", strerror(errno));
            return -1;
        }
    }
    const char *slash = strrchr(path, '/');
    if (!slash) return probe_folder(".", err, err_len);
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    char *dir = malloc(n + 1);
    if (!dir) {
        diag_set(err, err_len, "%s", strerror(ENOMEM));
        return -1;
    }
    memcpy(dir, path, n);
    dir[n] = 0;
    int rc = probe_folder(dir, err, err_len);
    free(dir);
    return rc;
}

/* "snapshot_000012.csv", ".vti", ".vtr", ".pvti" or ".pvtr", "snapshot_000012_p3.vti" or ".vtr", "u_000012.png" (a field's name, 6 or more digits),
 * "snapshots.csv", "snapshots.pvd": the names a series writes. */
static int is_series_file(const char *name)
{
    if (!strcmp(name, "snapshots.csv") || !strcmp(name, "snapshots.pvd")) return 1;
    const char *dot = strrchr(name, '.');
    if (!dot) return 0;
    int piece = !strcmp(dot, ".vti") || !strcmp(dot, ".vtr");
    if (piece || !strcmp(dot, ".pvti") || !strcmp(dot, ".pvtr")) { /* snapshot_000012.pvti, snapshot_000012_p3.vti */
        const char *q = name + 9;
        if (strncmp(name, "snapshot_", 9)) return 0;
        int digits = 0;
        while (*q >= '0' && *q <= '9') q++, digits++;
        if (digits < 6) return 0;
        if (q == dot) return 1;
        if (!piece || q[0] != '_' || q[1] != 'p' || !(q[2] >= '0' && q[2] <= '9')) return 0;
        for (q += 2; *q >= '0' && *q <= '9'; q++) {}
        return q == dot;
    }
    const char *under = dot;
    while (under > name && under[-1] >= '0' && under[-1] <= '9') under--;
    if (dot - under < 6 || under == name || under[-1] != '_') return 0;
    size_t stem = (size_t)(under - 1 - name);
    if (!strcmp(dot, ".csv")) return stem == 8 && !strncmp(name, "snapshot", 8);
    if (strcmp(dot, ".png") || !stem) return 0;
    for (size_t i = 0; i < stem; i++) {
        char c = name[i];
        int letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        if (!letter && !(i > 0 && c >= '0' && c <= '9')) return 0;
    }
    return 1;
}

int writers_series_clean(const char *dir, char *err, size_t err_len)
{
    DIR *d = opendir(dir);
    if (!d) {
        diag_set(err, err_len, "%s", strerror(errno));
        return -1;
    }
    size_t plen = strlen(dir) + 2 + 256;
    char *path = malloc(plen);
    if (!path) {
        closedir(d);
        diag_set(err, err_len, "%s", strerror(ENOMEM));
        return -1;
    }
    int removed = 0, rc = 0;
    struct dirent *ent;
    while ((ent = readdir(d))) {
        if (!is_series_file(ent->d_name) || strlen(ent->d_name) > 255) continue;
        snprintf(path, plen, "%s/%s", dir, ent->d_name);
        struct stat st;
        if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue; /* only files a series wrote */
        if (unlink(path) != 0) {
            diag_set(err, err_len, "%s: %s", ent->d_name, strerror(errno));
            rc = -1;
            break;
        }
        removed++;
    }
    closedir(d);
    free(path);
    if (rc < 0) return -1;
    return probe_folder(dir, err, err_len) < 0 ? -1 : removed;
}

/* ---- snapshot series ------------------------------------------------------------------- */

struct writers_series {
    char *dir;
    int formats;
    int count, cap;
    double *times;
    int n_pieces;          /* 0: whole-mesh .vti snapshots; else .pvti of these blocks */
    int rectilinear;       /* .vtr and .pvtr instead (a mesh with listed faces) */
    int64_t (*piece_first)[3], (*piece_n)[3];
    writers_png_style png; /* zero: viridis, each frame on its own min..max */
};

void writers_series_set_png(writers_series *ws, const writers_png_style *st) { ws->png = *st; }

int writers_series_set_pieces(writers_series *ws, int n_pieces, const int64_t (*first)[3], const int64_t (*n)[3])
{
    ws->piece_first = malloc(sizeof *ws->piece_first * (size_t)n_pieces);
    ws->piece_n = malloc(sizeof *ws->piece_n * (size_t)n_pieces);
    if (!ws->piece_first || !ws->piece_n) return -1;
    memcpy(ws->piece_first, first, sizeof *ws->piece_first * (size_t)n_pieces);
    memcpy(ws->piece_n, n, sizeof *ws->piece_n * (size_t)n_pieces);
    ws->n_pieces = n_pieces;
    return 0;
}

writers_series *writers_series_open(const char *dir, int formats, char *err, size_t err_len)
{
    if (writers_mkdirs(dir, err, err_len)) return NULL;
    writers_series *ws = calloc(1, sizeof *ws);
    if (ws) ws->dir = strdup(dir);
    if (!ws || !ws->dir) {
        free(ws);
        diag_set(err, err_len, "%s: %s", dir, strerror(ENOMEM));
        return NULL;
    }
    ws->formats = formats ? formats : PJ_FMT_CSV;
    return ws;
}

int writers_series_count(const writers_series *ws) { return ws->count; }

int writers_series_resume(writers_series *ws, double t_max, char *err, size_t err_len)
{
    size_t plen = strlen(ws->dir) + 32;
    char *path = malloc(plen);
    if (!path) {
        diag_set(err, err_len, "%s: %s", ws->dir, strerror(ENOMEM));
        return -1;
    }
    snprintf(path, plen, "%s/snapshots.csv", ws->dir);
    char why[256];
    FILE *f = writers_open_regular(path, why, sizeof why); /* none, or not a file: a new series */
    free(path);
    if (!f) return 0;
    char line[128];
    int i;
    double t;
    int rc = 0;
    if (fgets(line, sizeof line, f) && !strcmp(line, "snapshot,t\n"))
        while (fgets(line, sizeof line, f) && sscanf(line, "%d,%lf", &i, &t) == 2 && i == ws->count &&
               t < t_max - 1e-12 * fmax(1, fabs(t_max))) {
            if (ws->count == ws->cap) {
                int nc = ws->cap ? 2 * ws->cap : 16;
                double *tt = realloc(ws->times, sizeof *tt * (size_t)nc);
                if (!tt) {
                    diag_set(err, err_len, "%s: %s", ws->dir, strerror(ENOMEM));
                    rc = -1;
                    break;
                }
                ws->times = tt;
                ws->cap = nc;
            }
            ws->times[ws->count++] = t;
        }
    fclose(f);
    return rc;
}

void writers_series_close(writers_series *ws)
{
    if (!ws) return;
    free(ws->dir);
    free(ws->times);
    free(ws->piece_first);
    free(ws->piece_n);
    free(ws);
}

static int write_index(writers_series *ws, char *path, size_t plen, char *err, size_t err_len)
{
    snprintf(path, plen, "%s/snapshots.csv", ws->dir);
    afile a;
    if (writers_af_open(&a, path, err, err_len)) return -1;
    fprintf(a.f, "snapshot,t\n");
    for (int i = 0; i < ws->count; i++) fprintf(a.f, "%d,%.17g\n", i, ws->times[i]);
    if (writers_af_commit(&a, err, err_len)) return -1;
    if (!(ws->formats & PJ_FMT_VTK)) return 0;
    char **files = calloc((size_t)ws->count, sizeof *files);
    if (!files) {
        diag_set(err, err_len, "%s: %s", ws->dir, strerror(ENOMEM));
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < ws->count && !rc; i++) {
        files[i] = malloc(32);
        if (!files[i]) rc = -1;
        else snprintf(files[i], 32, "snapshot_%06d.%s%s", i, ws->n_pieces ? "p" : "", ws->rectilinear ? "vtr" : "vti");
    }
    if (rc) diag_set(err, err_len, "%s: %s", ws->dir, strerror(ENOMEM));
    snprintf(path, plen, "%s/snapshots.pvd", ws->dir);
    if (!rc) rc = writers_pvd(path, ws->count, ws->times, (const char *const *)files, err, err_len);
    for (int i = 0; i < ws->count; i++) free(files[i]);
    free(files);
    return rc;
}

int writers_series_write(writers_series *ws, const writers_frame *fr, char *err, size_t err_len)
{
    size_t plen = strlen(ws->dir) + 64;
    for (int i = 0; i < fr->n_fields; i++) plen += strlen(fr->names[i]);
    char *path = malloc(plen);
    if (!path) {
        diag_set(err, err_len, "%s: %s", ws->dir, strerror(ENOMEM));
        return -1;
    }
    int rc = 0, n = ws->count;
    if (ws->formats & PJ_FMT_CSV) {
        snprintf(path, plen, "%s/snapshot_%06d.csv", ws->dir, n);
        rc = writers_csv(path, fr, err, err_len);
    }
    ws->rectilinear = writers_frame_rectilinear(fr);
    if (!rc && (ws->formats & PJ_FMT_VTK) && !ws->n_pieces) {
        snprintf(path, plen, "%s/snapshot_%06d.%s", ws->dir, n, ws->rectilinear ? "vtr" : "vti");
        rc = writers_vtk(path, fr, err, err_len);
    }
    if (!rc && (ws->formats & PJ_FMT_VTK) && ws->n_pieces) {
        char (*names)[40] = malloc(sizeof *names * (size_t)ws->n_pieces);
        const char **pieces = malloc(sizeof *pieces * (size_t)ws->n_pieces);
        if (!names || !pieces) {
            diag_set(err, err_len, "%s: %s", ws->dir, strerror(ENOMEM));
            rc = -1;
        } else {
            for (int i = 0; i < ws->n_pieces; i++) {
                writers_piece_name(names[i], sizeof names[i], n, i, ws->rectilinear);
                pieces[i] = names[i];
            }
            snprintf(path, plen, "%s/snapshot_%06d.%s", ws->dir, n, ws->rectilinear ? "pvtr" : "pvti");
            rc = writers_pvtk(path, fr, ws->n_pieces, (const int64_t(*)[3])ws->piece_first,
                              (const int64_t(*)[3])ws->piece_n, pieces, err, err_len);
        }
        free(names);
        free(pieces);
    }
    for (int v = 0; !rc && (ws->formats & PJ_FMT_PNG) && v < fr->n_fields; v++) {
        snprintf(path, plen, "%s/%s_%06d.png", ws->dir, fr->names[v], n);
        rc = writers_png(path, fr, v, &ws->png, err, err_len);
    }
    if (!rc && ws->count == ws->cap) {
        int nc = ws->cap ? 2 * ws->cap : 16;
        double *t = realloc(ws->times, sizeof *t * (size_t)nc);
        if (!t) {
            diag_set(err, err_len, "%s: %s", ws->dir, strerror(ENOMEM));
            rc = -1;
        } else {
            ws->times = t;
            ws->cap = nc;
        }
    }
    if (!rc) {
        ws->times[ws->count++] = fr->t;
        rc = write_index(ws, path, plen, err, err_len);
    }
    free(path);
    return rc;
}
