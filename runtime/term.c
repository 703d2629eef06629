/* term.c — text-defined terms on the caller's arrays (pj_term_*, include/pdejit.h).
 *
 * A term is a generated problem: the inputs are fields without an eq, the expression is the eq of
 * one more field (`term__`), the boundary treatment is `periodic` on the periodic axes and the
 * default zero-flux mirror elsewhere. Evaluating it is that problem's right-hand-side kernel
 * (PJ_KERNEL_RHS: F, the expression) run once on a cpu engine (engine_eval: ghost fill of slot 0,
 * the kernel on the engine's threads, no step) and read from slot 1. The CPU back end compiles that
 * kernel alone, through the kernel cache like every kernel. The derivative with respect to an
 * input at the cell is one output of the program's Jacobian (program_jacobian); that kernel is
 * compiled the same way (on first use, one for every input) and run with the engine's buffers and
 * two scratch buffers (the wanted derivative and one that every other derivative output is
 * written to).
 *
 * A face term (pj_term_options.at = PJ_TERM_FACES) is the same with the expression as a flux
 * `face__()` and, per axis, two outputs: the flux on each cell's low face and on its high face
 * (the internal calls face_x0__(face__()) ..., pj_compile_options.term_faces). The faces normal to
 * an axis are the low faces of its cells and, past the last cell, that cell's high face: what a
 * div(...) of the expression would use on every face, boundary faces included.
 *
 * In place: in 1D and 2D a cell term's kernel writes the caller's `out` and reads the inputs it
 * reads at the cell only (halo 0) from the caller's arrays, not from copies in the sim's ghosted
 * buffers (no copy in, no copy out, no fresh pages for them: the first call's cost). The sim's
 * buffers have rows of nx + 2·halo, the caller's of nx, and a kernel addresses row y of every
 * buffer as base + y·stride[1]; so in 2D the kernel runs one row at a time, each caller's array
 * given the base that puts row y where it is in that array (run_rows). 3D runs a plane a call,
 * whose rows no one base can place, and copies as before. In 2D an input read at neighbours
 * (halo h > 0) is not copied whole either: each thread copies blocks of TERM_WINDOW_ROWS rows
 * plus h rows either side, with their ghost cells (zero flux mirrors, periodic wraps, as the sim's
 * fill does), into a small window that stays in cache, given the base that puts those rows at
 * their y. $PDEJIT_TERM_COPY set at pj_term_compile keeps the copies (for comparisons).
 *
 * On the device (pj_term_options.on_device): the same problem on a cuda engine (engine.h, its
 * executor's device memory, copies and kernels): the inputs, device arrays, are copied device
 * to device into slot 0's ghosted buffers (cuMemcpy2D, a plane at a time), the fill kernels and
 * the rhs kernel run once (engine_run: no step, no swap), and slot 1's interior (a face term:
 * each axis's low faces, then the high faces past the last cell) is copied device to device into
 * the caller's arrays. Nothing crosses to the host but the launch arguments. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine.h"
#include "derive.h"
#include "diag.h"
#include "pdejit.h"
#include "program.h"
#include "knobs.h"

#define TERM_OUT "term__"
#define TERM_DIRECT_BUFS 64   /* in place only for kernels with at most this many buffers */
#define TERM_DIRECT_MIN_NX 32 /* in 2D: shorter rows are not worth a kernel call each */
#define TERM_WINDOW_ROWS 16   /* 2D: rows of an input read at neighbours copied at a time */
#define TERM_FLUX "face__"
static const char *const face_out[3][2] = {{"out_x0__", "out_x1__"}, {"out_y0__", "out_y1__"},
                                           {"out_z0__", "out_z1__"}};

/* An input's derivative: which output of the program's Jacobian it is. */
typedef struct term_jac {
    int found;             /* entry looked up */
    int entry;             /* the output holding d term / d field at offset 0, -1: zero */
} term_jac;

struct pj_term {
    pj_program *p;
    engine *host;          /* on the host: a cpu engine (engine.h), else NULL */
    engine *dev;           /* on the device (options.on_device): a cuda engine, else NULL */
    int n_inputs;          /* fields 0 .. n_inputs - 1; the term is field n_inputs (a face term:
                              fields n_inputs + 2a and + 2a + 1, axis a's low and high faces) */
    int faces;             /* a face term */
    int direct;            /* in place (see the top): inputs with direct_in[f] and out are the caller's */
    unsigned char *direct_in; /* 1: read in place, 2: through a window (2D, halo > 0) */
    int periodic[3];
    int dim;
    int64_t n[3];
    int64_t cells;
    int threads;
    int from_cache;
    term_jac *jac;         /* per input */
    int host_jac;          /* on the host: 1 + the Jacobian kernel's handle (engine_add_kernel), 0 until
                              first used */
    int dev_jac;           /* on the device: 1 + the Jacobian kernel's handle (engine_add_kernel), 0
                              until first used */
    double *scratch[2];    /* Jacobian outputs, in the sim's layout (allocated on first use) */
    void *dscratch[2];     /* the same on the device, at cell (0,0,0) */
    void *dscratch_mem[2]; /* their allocations (engine_alloc) */
    size_t esz;            /* on the device: bytes per value (options.single: float) */
};

static int is_identifier(const char *s)
{
    if (!s || !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_')) return 0;
    for (s++; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return 0;
    return 1;
}

/* A growing text; NULL data after a failed allocation. */
typedef struct text { char *data; size_t len, cap; int failed; } text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...)
{
    if (t->failed) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->data ? t->data + t->len : NULL, t->data ? t->cap - t->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) { t->failed = 1; return; }
        if (t->data && t->len + (size_t)n < t->cap) { t->len += (size_t)n; return; }
        size_t cap = (t->cap + (size_t)n + 1) * 2;
        char *d = realloc(t->data, cap);
        if (!d) { t->failed = 1; return; }
        t->data = d;
        t->cap = cap;
        if (t->len == 0) t->data[0] = 0;
    }
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

static pj_status fail(char **diagnostics, pj_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static pj_status fail(char **diagnostics, pj_status st, const char *fmt, ...)
{
    if (diagnostics) {
        char buf[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        size_t n = strlen(buf) + 32;
        *diagnostics = malloc(n);
        if (*diagnostics) snprintf(*diagnostics, n, "<term>: error: %s\n1 error\n", buf);
    }
    return st;
}

/* A length L along an axis of n cells with L / n as near h as can be (the sim's spacing is then
 * set to h exactly, engine_options.spacing). */
static double length_for(double h, int64_t n)
{
    double l = h * (double)n;
    for (int i = 0; i < 4 && l / (double)n != h; i++) l = nextafter(l, l / (double)n < h ? INFINITY : 0);
    return l;
}

void pj_term_free(pj_term *t)
{
    if (!t) return;
    free(t->jac);
    free(t->direct_in);
    free(t->scratch[0]);
    free(t->scratch[1]);
    for (int i = 0; t->dev && i < 2; i++) engine_free(t->dev, t->dscratch_mem[i]);
    engine_destroy(t->dev);
    engine_destroy(t->host);
    program_free(t->p);
    free(t);
}

/* Which inputs the kernel reads in place (see the top): t->direct, t->direct_in. 0, or -1 when out
 * of memory. */
static int plan_in_place(pj_term *t, const pj_term_options *o)
{
    const pj_program *p = t->p;
    t->direct = !t->faces && (o->dim == 1 || (o->dim == 2 && o->n[0] >= TERM_DIRECT_MIN_NX)) &&
                p->n_slots * p->n_fields <= TERM_DIRECT_BUFS && !knob(KNOB_TERM_COPY);
    if (t->direct && !(t->direct_in = calloc((size_t)o->n_fields, 1))) return -1;
    for (int a = 0; a < 3; a++) t->periodic[a] = a < o->dim && o->boundary[a] == PJ_TERM_PERIODIC;
    for (int f = 0; t->direct && f < o->n_fields; f++) {
        int h = p->field_halo[f];
        if (f < 64 && (h == 0 || (o->dim == 2 && h <= p->halo && h <= o->n[0] && h <= o->n[1]))) {
            t->direct_in[f] = h == 0 ? 1 : 2;
            engine_skip_fill(t->host, f, 1); /* its buffer is not read (pj_term_jacobian fills it) */
        }
    }
    /* the term's own field is not read: filling its ghost cells would touch every page of a buffer
       that is otherwise never used (the first call's cost) */
    if (t->direct && p->field_halo[t->n_inputs] == 0) engine_skip_fill(t->host, t->n_inputs, 1);
    return 0;
}

/* The term's problem on the cuda back end (see the top): an engine holding its rhs kernel alone. */
static pj_status compile_device(pj_term *t, const pj_term_options *o, pj_term **out, char **diagnostics)
{
    char err[512] = "";
    static const pj_kernel_id rhs = PJ_KERNEL_RHS; /* the term's kernel alone: no stage */
    engine_options eo = {.single = o->single, .kernels = &rhs, .n_kernels = 1, .spacing = o->h};
    t->esz = o->single ? sizeof(float) : sizeof(double);
    if (!(t->jac = calloc((size_t)t->n_inputs, sizeof *t->jac))) {
        pj_term_free(t);
        return fail(diagnostics, PJ_ERR_MEMORY, "out of memory");
    }
    int na = 0;
    t->dev = engine_create(engine_backend("cuda"), t->p, &eo, &na, err, sizeof err);
    if (!t->dev) {
        /* no device, no driver, no NVRTC: the machine cannot run it */
        int none = na == ENGINE_UNAVAILABLE || strstr(err, "NVRTC not found");
        pj_term_free(t);
        return fail(diagnostics, none ? PJ_ERR_UNAVAILABLE : PJ_ERR_BACKEND, "%s", err);
    }
    /* every buffer zeroed (slot 0's term__ is U = 0), the (empty) initial values */
    if (engine_init(t->dev, err, sizeof err) < 0 || engine_sync(t->dev, err, sizeof err) < 0) {
        pj_term_free(t);
        return fail(diagnostics, PJ_ERR_BACKEND, "%s", err);
    }
    engine_info info;
    engine_get_info(t->dev, &info);
    t->from_cache = info.n_kernels > 0 && info.from_cache == info.n_kernels;
    *out = t;
    return PJ_OK;
}

pj_status pj_term_compile(const char *expr, const pj_term_options *o, pj_term **out, char **diagnostics)
{
    static const char axis_name[3] = {'x', 'y', 'z'};
    if (diagnostics) *diagnostics = NULL;
    if (out) *out = NULL;
    if (!expr || !o || !out) return fail(diagnostics, PJ_ERR_INPUT, "pj_term_compile: NULL argument");
    if (o->dim < 1 || o->dim > 3)
        return fail(diagnostics, PJ_ERR_INPUT, "the grid must have 1, 2 or 3 axes, not %d", o->dim);
    if (o->n_fields < 1 || !o->fields) return fail(diagnostics, PJ_ERR_INPUT, "a term needs at least one input field");
    if ((unsigned)o->at > PJ_TERM_FACES) return fail(diagnostics, PJ_ERR_INPUT, "unknown term kind %d", (int)o->at);
    int faces = o->at == PJ_TERM_FACES;
    if (o->n_params < 0 || (o->n_params && (!o->params || !o->param_values)))
        return fail(diagnostics, PJ_ERR_INPUT, "params: names and values are needed");
    int n_names = o->n_fields + o->n_params;
    for (int i = 0; i < n_names; i++) {
        const char *name = i < o->n_fields ? o->fields[i] : o->params[i - o->n_fields];
        if (!is_identifier(name) || strlen(name) > 64)
            return fail(diagnostics, PJ_ERR_INPUT, "'%s' is not a name for a %s", name ? name : "(null)",
                        i < o->n_fields ? "field" : "param");
        int reserved = !strcmp(name, TERM_OUT) || !strcmp(name, TERM_FLUX);
        for (int a = 0; a < 3; a++) reserved |= !strcmp(name, face_out[a][0]) || !strcmp(name, face_out[a][1]);
        if (reserved) return fail(diagnostics, PJ_ERR_INPUT, "'%s' is reserved", name);
        for (int j = 0; j < i; j++) {
            const char *other = j < o->n_fields ? o->fields[j] : o->params[j - o->n_fields];
            if (!strcmp(name, other)) return fail(diagnostics, PJ_ERR_INPUT, "'%s' is given twice", name);
        }
        if (i >= o->n_fields && !isfinite(o->param_values[i - o->n_fields]))
            return fail(diagnostics, PJ_ERR_INPUT, "param %s is not a finite number", name);
    }
    double length[3];
    for (int a = 0; a < o->dim; a++) {
        if (o->n[a] < 1 || o->n[a] > ((int64_t)1 << 40))
            return fail(diagnostics, PJ_ERR_INPUT, "the grid needs at least one cell along %c", axis_name[a]);
        if (!(o->h[a] > 0) || !isfinite(o->h[a]))
            return fail(diagnostics, PJ_ERR_INPUT, "the spacing along %c must be a positive number", axis_name[a]);
        if ((unsigned)o->boundary[a] > PJ_TERM_PERIODIC)
            return fail(diagnostics, PJ_ERR_INPUT, "unknown boundary treatment %d along %c", (int)o->boundary[a],
                        axis_name[a]);
        length[a] = length_for(o->h[a], o->n[a]);
        if (!isfinite(length[a]))
            return fail(diagnostics, PJ_ERR_INPUT, "the spacing along %c is too large", axis_name[a]);
    }

    /* the problem: definitions first (their lines are the user's), then the grid, the inputs, the
       term's eq with the expression alone on its lines (its columns are the user's) */
    const char *defs = o->definitions ? o->definitions : "";
    text tx = {0};
    put(&tx, "%s", defs);
    if (defs[0] && defs[strlen(defs) - 1] != '\n') put(&tx, "\n");
    put(&tx, "mesh grid(");
    for (int a = 0; a < o->dim; a++) put(&tx, "n%c = %lld, ", axis_name[a], (long long)o->n[a]);
    for (int a = 0; a < o->dim; a++) put(&tx, "L%c = %.17g%s", axis_name[a], length[a], a + 1 < o->dim ? ", " : ")\n");
    for (int i = 0; i < o->n_params; i++)
        put(&tx, "%s%s = %.17g%s", i ? "" : "param ", o->params[i], o->param_values[i],
            i + 1 < o->n_params ? ", " : "\n");
    put(&tx, "field ");
    for (int f = 0; f < o->n_fields; f++) put(&tx, "%s%s", o->fields[f], f + 1 < o->n_fields || !faces ? ", " : "");
    if (faces)
        for (int a = 0; a < o->dim; a++) put(&tx, ", %s, %s", face_out[a][0], face_out[a][1]);
    put(&tx, "%s\n", faces ? "" : TERM_OUT);
    int any_periodic = 0;
    for (int a = 0; a < o->dim; a++)
        if (o->boundary[a] == PJ_TERM_PERIODIC) {
            put(&tx, "%s%c", any_periodic ? ", " : "periodic ", axis_name[a]);
            any_periodic = 1;
        }
    if (any_periodic) put(&tx, "\n");
    if (faces)
        put(&tx, "flux %s() = (\n", TERM_FLUX);
    else
        put(&tx, "eq dt(%s) = (\n", TERM_OUT);
    int expr_line = tx.failed ? 0 : count_lines(tx.data) + 1;
    put(&tx, "%s\n)\n", expr);
    for (int a = 0; faces && a < o->dim; a++)
        for (int hi = 0; hi < 2; hi++)
            put(&tx, "eq dt(%s) = face_%c%d__(%s())\n", face_out[a][hi], axis_name[a], hi, TERM_FLUX);
    if (tx.failed) {
        free(tx.data);
        return fail(diagnostics, PJ_ERR_MEMORY, "out of memory");
    }

    diag d;
    diag_init(&d, "<definitions>", tx.data, tx.len);
    diag_set_part(&d, expr_line, "<term>");
    pj_compile_options copt = {.scheme = PJ_EULER, .scheme_set = 1, .term_faces = faces};
    pj_program *p = compile_problem("<term>", tx.data, tx.len, &d, &copt);
    if (!p) {
        if (d.errors) diag_append(&d, "%d error%s\n", d.errors, d.errors == 1 ? "" : "s");
        if (diagnostics && d.log) *diagnostics = strdup(d.log);
        pj_status st = d.out_of_memory ? PJ_ERR_MEMORY : PJ_ERR_INPUT;
        diag_free(&d);
        free(tx.data);
        return st;
    }
    diag_free(&d);
    free(tx.data);

    char err[512] = "";
    pj_term *t = calloc(1, sizeof *t);
    if (!t) {
        program_free(p);
        return fail(diagnostics, PJ_ERR_MEMORY, "out of memory");
    }
    t->p = p;
    t->n_inputs = o->n_fields;
    t->faces = faces;
    t->dim = o->dim;
    for (int a = 0; a < 3; a++) t->n[a] = a < o->dim ? o->n[a] : 1;
    t->threads = o->threads;
    t->cells = p->n[0] * p->n[1] * p->n[2];
    if (o->on_device) return compile_device(t, o, out, diagnostics);
    if (o->single) {
        pj_term_free(t);
        return fail(diagnostics, PJ_ERR_INPUT, "single precision is for terms on the device (on_device) only");
    }
    t->jac = calloc((size_t)o->n_fields, sizeof *t->jac);
    if (!t->jac) {
        pj_term_free(t);
        return fail(diagnostics, PJ_ERR_MEMORY, "out of memory");
    }
    /* the cpu back end with the rhs kernel alone, at the caller's spacing */
    const pj_kernel_id rhs = PJ_KERNEL_RHS;
    engine_options eo = {.threads = o->threads, .kernels = &rhs, .n_kernels = 1, .spacing = o->h};
    int na = 0;
    if (engine_memory_check(p, 0, err, sizeof err) < 0) { /* the grid cannot hold the term's stencil, or is too large */
        pj_term_free(t);
        return fail(diagnostics, PJ_ERR_INPUT, "%s", err);
    }
    if (!(t->host = engine_create(engine_backend("cpu"), p, &eo, &na, err, sizeof err))) {
        pj_term_free(t);
        return fail(diagnostics, na == ENGINE_TOO_LARGE ? PJ_ERR_INPUT : PJ_ERR_BACKEND, "%s", err);
    }
    engine_info info;
    engine_get_info(t->host, &info);
    t->from_cache = info.n_kernels > 0 && info.kernels && info.kernels[0].from_cache;
    if (plan_in_place(t, o) < 0) {
        pj_term_free(t);
        return fail(diagnostics, PJ_ERR_MEMORY, "out of memory");
    }
    *out = t;
    return PJ_OK;
}

/* Copies the inputs into the sim's buffers: all of them, or (direct) those the kernel does not
 * read from the caller's arrays. */
static pj_status load_inputs(pj_term *t, const double *const *inputs, double *out, int direct, char *err,
                             size_t err_len)
{
    if (!t || !inputs || !out) {
        diag_set(err, err_len, "pj_term: NULL argument");
        return PJ_ERR_INPUT;
    }
    for (int f = 0; f < t->n_inputs; f++) {
        if (!inputs[f]) {
            diag_set(err, err_len, "pj_term: input %s is NULL", t->p->field_names[f]);
            return PJ_ERR_INPUT;
        }
        if ((!direct || !t->direct_in[f]) && engine_set_field(t->host, f, inputs[f], err, err_len) < 0)
            return PJ_ERR_RUN;
    }
    return PJ_OK;
}

/* 1 when arrays a and b of n doubles share memory. */
static int overlap(const double *a, const double *b, int64_t n)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b, len = (uintptr_t)n * sizeof(double);
    return x < y + len && y < x + len;
}

/* The ghost fill of the inputs the in-place kernel reads otherwise: off (skip 1) or on (0). */
static void skip_fills(pj_term *t, int skip)
{
    for (int f = 0; t->direct && f < t->n_inputs; f++)
        if (t->direct_in[f]) engine_skip_fill(t->host, f, skip);
}

/* The host address of the engine's buffer b at its cell (0,0,0). */
static const double *host_buffer(pj_term *t, int b)
{
    engine_view v;
    return engine_view_buffer(t->host, b, &v) == 0 ? v.data : NULL;
}

/* The in-place kernel run (see the top): buffer index[d] is the caller's array base[d]; buffer
 * win_index[w] a window over the caller's array win_src[w], whose halo is win_h[w]. */
typedef struct term_rows {
    pj_term *t;
    int nbuf, n_direct, n_win;
    int index[TERM_DIRECT_BUFS];
    uintptr_t base[TERM_DIRECT_BUFS];
    int win_index[TERM_DIRECT_BUFS], win_h[TERM_DIRECT_BUFS];
    const double *win_src[TERM_DIRECT_BUFS];
    int failed;            /* a window could not be allocated (atomic) */
} term_rows;

/* Rows y0 - h .. y1 - 1 + h of the caller's nx x ny array `a` into window w (row r at
 * w + r·stride), each with h ghost cells either side: zero flux mirrors the cells next to the
 * wall, periodic wraps around, along x and y (what the engine's ghost fill does for a term). */
static void fill_window(double *w, int64_t stride, const double *a, int64_t nx, int64_t ny, int h,
                        const int periodic[2], int64_t y0, int64_t y1)
{
    for (int64_t y = y0 - h; y < y1 + h; y++, w += stride) {
        int64_t src = y;
        if (y < 0) src = periodic[1] ? y + ny : -y - 1;
        if (y >= ny) src = periodic[1] ? y - ny : 2 * ny - 1 - y;
        memcpy(w, a + src * nx, sizeof(double) * (size_t)nx);
        for (int m = 1; m <= h; m++) {
            w[-m] = w[periodic[0] ? nx - m : m - 1];
            w[nx - 1 + m] = w[periodic[0] ? m - 1 : nx - m];
        }
    }
}

static void run_rows(void *ctx, exec_kernel_fn run, void *run_ctx, const kir_launch *L, int64_t begin, int64_t end)
{
    const term_rows *r = ctx;
    void *buf[TERM_DIRECT_BUFS];
    memcpy(buf, L->buf, sizeof(void *) * (size_t)r->nbuf);
    kir_launch l = *L;
    l.buf = buf;
    if (r->t->dim == 1) {
        for (int d = 0; d < r->n_direct; d++) buf[r->index[d]] = (void *)r->base[d];
        run(run_ctx, &l, begin, end);
        return;
    }
    /* row y at base + y·stride[1] is the caller's row y at array + y·nx: base = array - y·(stride[1] - nx),
       computed in unsigned arithmetic (the base lies outside the array; only base + y·stride[1] is read) */
    const int64_t S = L->stride[1], nx = L->n[0], ny = L->n[1];
    const uintptr_t shift = (uintptr_t)(S - nx) * sizeof(double);
    const int H = r->t->p->halo;
    size_t per = (size_t)((TERM_WINDOW_ROWS + 2 * H) * S + 2 * H); /* doubles a window */
    double *win = NULL;
    if (r->n_win && !(win = malloc(sizeof(double) * per * (size_t)r->n_win))) {
        __atomic_store_n((int *)&r->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    l.prefetch = 0; /* the windows are in cache; prefetching would read past them */
    for (int64_t y0 = begin; y0 < end; y0 += TERM_WINDOW_ROWS) {
        int64_t y1 = y0 + TERM_WINDOW_ROWS < end ? y0 + TERM_WINDOW_ROWS : end;
        for (int w = 0; w < r->n_win; w++) {
            /* window row k holds y0 - h + k at win + H + k·S: row y at base + y·S */
            double *first = win + per * (size_t)w + H;
            fill_window(first, S, r->win_src[w], nx, ny, r->win_h[w], r->t->periodic, y0, y1);
            uintptr_t back = (uintptr_t)(r->win_h[w] - y0) * (uintptr_t)S * sizeof(double);
            buf[r->win_index[w]] = (void *)((uintptr_t)first + back);
        }
        for (int64_t y = y0; y < y1; y++) {
            for (int d = 0; d < r->n_direct; d++) buf[r->index[d]] = (void *)(r->base[d] - (uintptr_t)y * shift);
            run(run_ctx, &l, y, y + 1);
        }
    }
    free(win);
}

/* ---- on the device ---------------------------------------------------------------------- */

/* Device address p moved by n values. */
static void *dev_at(const void *p, int64_t n, size_t esz) { return (void *)((uintptr_t)p + (uintptr_t)n * esz); }

/* planes x rows of w values from src (rows sr, planes sp values apart) to dst (dr, dp), device
 * to device (the engine's executor copies: engine_copy_rows). */
static int dev_copy(pj_term *t, void *dst, int64_t dr, int64_t dp, const void *src, int64_t sr, int64_t sp, int64_t w,
                    int64_t rows, int64_t planes, char *err, size_t err_len)
{
    const size_t e = t->esz;
    for (int64_t k = 0; k < planes; k++)
        if (engine_copy_rows(t->dev, dev_at(dst, k * dp, e), (size_t)dr * e, dev_at(src, k * sp, e), (size_t)sr * e,
                             (size_t)w * e, (size_t)rows, err, err_len) < 0)
            return -1;
    return 0;
}

/* The device address of the engine's buffer b at its cell (0,0,0). */
static void *dev_buffer(pj_term *t, int b)
{
    engine_view v;
    return engine_view_buffer(t->dev, b, &v) == 0 ? v.data : NULL;
}

/* The caller's device arrays into slot 0's buffers. */
static int device_inputs(pj_term *t, const double *const *inputs, char *err, size_t err_len)
{
    const grid_layout *g = engine_layout(t->dev);
    const int64_t nx = t->n[0], ny = t->n[1], nz = t->n[2];
    for (int f = 0; f < t->n_inputs; f++)
        if (dev_copy(t, dev_buffer(t, f), g->stride[1], g->stride[2], inputs[f], nx, nx * ny, nx, ny, nz, err,
                     err_len) < 0)
            return -1;
    return 0;
}

/* Inputs in, the rhs kernel once, the results out (out[0] for a cell term, out[a] per axis for a face
 * term); waits for the device, so that a failed launch is reported here. */
static pj_status device_eval(pj_term *t, const double *const *inputs, double time, double *const *out, char *err,
                             size_t err_len)
{
    const grid_layout *g = engine_layout(t->dev);
    const int64_t nx = t->n[0], ny = t->n[1], nz = t->n[2], S1 = g->stride[1], S2 = g->stride[2];
    const int nf = t->p->n_fields;
    char e[512] = "";
    int rc = device_inputs(t, inputs, e, sizeof e);
    if (!rc) rc = engine_run(t->dev, PJ_KERNEL_RHS, time, 1.0, e, sizeof e);
    for (int a = 0; !rc && a < (t->faces ? t->dim : 1); a++) {
        void *o = out[a];
        void *lo = dev_buffer(t, nf + t->n_inputs + (t->faces ? 2 * a : 0));
        void *hi = dev_buffer(t, nf + t->n_inputs + 2 * a + 1);
        const size_t E = t->esz;
        if (!t->faces) {
            rc = dev_copy(t, o, nx, nx * ny, lo, S1, S2, nx, ny, nz, e, sizeof e);
        } else if (a == 0) { /* rows of nx + 1: the low faces, then the last cell's high face */
            rc = dev_copy(t, o, nx + 1, (nx + 1) * ny, lo, S1, S2, nx, ny, nz, e, sizeof e);
            if (!rc)
                rc = dev_copy(t, dev_at(o, nx, E), nx + 1, (nx + 1) * ny, dev_at(hi, nx - 1, E), S1, S2, 1, ny, nz, e,
                              sizeof e);
        } else if (a == 1) { /* planes of ny + 1 rows */
            rc = dev_copy(t, o, nx, nx * (ny + 1), lo, S1, S2, nx, ny, nz, e, sizeof e);
            if (!rc)
                rc = dev_copy(t, dev_at(o, ny * nx, E), nx, nx * (ny + 1), dev_at(hi, (ny - 1) * S1, E), S1, S2, nx, 1,
                              nz, e, sizeof e);
        } else { /* nz + 1 planes */
            rc = dev_copy(t, o, nx, nx * ny, lo, S1, S2, nx, ny, nz, e, sizeof e);
            if (!rc)
                rc = dev_copy(t, dev_at(o, nz * ny * nx, E), nx, nx * ny, dev_at(hi, (nz - 1) * S2, E), S1, S2, nx, ny,
                              1, e, sizeof e);
        }
    }
    if (!rc) rc = engine_sync(t->dev, e, sizeof e);
    if (rc) {
        diag_set(err, err_len, "pj_term on the device: %s", e);
        return PJ_ERR_RUN;
    }
    return PJ_OK;
}

/* The program's Jacobian (of its rhs kernel), with t->jac[f].entry the index of its output d term
 * / d input f at the cell itself (-1: the term does not read f there). The CPU and device paths
 * share it. */
static const pj_jacobian *cell_jacobian(pj_term *t, int f, char *err, size_t err_len)
{
    const pj_jacobian *J = program_jacobian(t->p, err, err_len);
    term_jac *j = &t->jac[f];
    if (!J || j->found) return J;
    if (J->kernel->n_slots > t->p->n_slots || J->kernel->n_fields != t->p->n_fields) { /* it reads the sim's buffers */
        diag_set(err, err_len, "the Jacobian kernel reads %d slots, the term has %d", J->kernel->n_slots, t->p->n_slots);
        return NULL;
    }
    j->entry = -1;
    for (int i = 0; i < J->n; i++)
        if (J->entries[i].out_field == t->n_inputs && J->entries[i].field == f && J->entries[i].slot == 0 &&
            !J->entries[i].off[0] && !J->entries[i].off[1] && !J->entries[i].off[2])
            j->entry = i;
    j->found = 1;
    return J;
}

/* The Jacobian kernel on the device (compiled on first use: engine_add_kernel) and its two scratch
 * buffers in the engine's layout (dscratch: at cell (0,0,0); dscratch_mem: the allocations). */
static int device_prepare_jacobian(pj_term *t, char *err, size_t err_len)
{
    if (!t->dev_jac) {
        int idx = engine_add_kernel(t->dev, PJ_KERNEL_JACOBIAN, err, err_len);
        if (idx < 0) return -1;
        t->dev_jac = 1 + idx;
    }
    const grid_layout *g = engine_layout(t->dev);
    for (int i = 0; i < 2; i++)
        if (!t->dscratch_mem[i]) {
            if (!(t->dscratch_mem[i] = engine_alloc(t->dev, g->elems * t->esz, err, err_len))) return -1;
            t->dscratch[i] = dev_at(t->dscratch_mem[i], g->origin_off, t->esz);
        }
    return 0;
}

/* d term / d input f at the cell, on the device: the program's Jacobian as one more kernel of the
 * engine (compiled on first use), its wanted output into dscratch[0], the others into
 * dscratch[1], then dscratch[0]'s interior to out. */
static pj_status device_jacobian(pj_term *t, int f, const double *const *inputs, double time, double *out, char *err,
                                 size_t err_len)
{
    char e[512] = "";
    const pj_jacobian *J = cell_jacobian(t, f, e, sizeof e);
    int entry = t->jac[f].entry;
    if (J && entry >= 0 && device_prepare_jacobian(t, e, sizeof e) < 0) J = NULL;
    if (!J) {
        diag_set(err, err_len, "pj_term_jacobian on the device: %s", e);
        return PJ_ERR_BACKEND;
    }
    int rc = 0;
    const grid_layout *g = engine_layout(t->dev);
    if (entry < 0) {
        rc = engine_zero(t->dev, out, t->esz * (size_t)t->cells, e, sizeof e);
    } else {
        int first_out = J->kernel->n_slots * J->kernel->n_fields; /* its outputs follow the slots it reads */
        void **extra = malloc(sizeof *extra * (size_t)(J->n > 0 ? J->n : 1));
        if (!extra) {
            diag_set(err, err_len, "pj_term_jacobian on the device: out of memory");
            return PJ_ERR_MEMORY;
        }
        for (int o = 0; o < J->n; o++) extra[o] = t->dscratch[o == entry ? 0 : 1];
        rc = device_inputs(t, inputs, e, sizeof e);
        if (!rc) rc = engine_launch(t->dev, t->dev_jac - 1, time, 1.0, first_out, extra, J->n, e, sizeof e);
        free(extra);
        if (!rc)
            rc = dev_copy(t, out, t->n[0], t->n[0] * t->n[1], t->dscratch[0], g->stride[1], g->stride[2], t->n[0],
                          t->n[1], t->n[2], e, sizeof e);
    }
    if (!rc) rc = engine_sync(t->dev, e, sizeof e);
    if (rc) {
        diag_set(err, err_len, "pj_term_jacobian on the device: %s", e);
        return PJ_ERR_RUN;
    }
    return PJ_OK;
}

/* The arguments of a device evaluation: no NULL array. */
static pj_status device_args(pj_term *t, const double *const *inputs, const double *const *out, int n_out,
                             char *err, size_t err_len)
{
    if (!inputs || !out) {
        diag_set(err, err_len, "pj_term: NULL argument");
        return PJ_ERR_INPUT;
    }
    for (int f = 0; f < t->n_inputs; f++)
        if (!inputs[f]) {
            diag_set(err, err_len, "pj_term: input %s is NULL", t->p->field_names[f]);
            return PJ_ERR_INPUT;
        }
    for (int a = 0; a < n_out; a++)
        if (!out[a]) {
            if (n_out > 1) diag_set(err, err_len, "pj_term_eval_faces: the output for axis %c is NULL", "xyz"[a]);
            else diag_set(err, err_len, "pj_term: NULL argument");
            return PJ_ERR_INPUT;
        }
    return PJ_OK;
}

pj_status pj_term_eval(pj_term *t, const double *const *inputs, double time, double *out, char *err, size_t err_len)
{
    if (t && t->faces) {
        diag_set(err, err_len, "pj_term_eval: a face term gives face values: call pj_term_eval_faces");
        return PJ_ERR_INPUT;
    }
    if (t && t->dev) {
        double *o[1] = {out};
        pj_status st = device_args(t, inputs, (const double *const *)o, 1, err, err_len);
        return st != PJ_OK ? st : device_eval(t, inputs, time, o, err, err_len);
    }
    pj_status st = load_inputs(t, inputs, out, t ? t->direct : 0, err, err_len);
    if (st != PJ_OK) return st;
    int nf = t->p->n_fields;
    term_rows rows = {.t = t, .nbuf = t->p->n_slots * nf};
    for (int f = 0; t->direct && f < t->n_inputs; f++)
        if (t->direct_in[f] == 1) {
            rows.index[rows.n_direct] = f; /* slot 0 */
            rows.base[rows.n_direct++] = (uintptr_t)inputs[f];
        } else if (t->direct_in[f] == 2 && overlap(inputs[f], out, t->cells)) {
            /* out is this input: rows written before a later window reads them; copy it whole */
            if (engine_set_field(t->host, f, inputs[f], err, err_len) < 0) return PJ_ERR_RUN;
            engine_skip_fill(t->host, f, 0);
        } else if (t->direct_in[f] == 2) {
            rows.win_index[rows.n_win] = f;
            rows.win_h[rows.n_win] = t->p->field_halo[f];
            rows.win_src[rows.n_win++] = inputs[f];
        }
    rows.index[rows.n_direct] = nf + t->n_inputs; /* slot 1's term__ */
    rows.base[rows.n_direct++] = (uintptr_t)out;
    int rc = engine_eval(t->host, PJ_KERNEL_RHS, time, 1.0, t->direct ? run_rows : NULL, t->direct ? &rows : NULL, err,
                         err_len);
    skip_fills(t, 1);
    if (rc < 0) return PJ_ERR_RUN;
    if (__atomic_load_n(&rows.failed, __ATOMIC_RELAXED)) {
        diag_set(err, err_len, "pj_term_eval: out of memory");
        return PJ_ERR_MEMORY;
    }
    /* slot 1 */
    if (!t->direct && engine_get_buffer(t->host, nf + t->n_inputs, out, err, err_len) < 0) return PJ_ERR_RUN;
    return PJ_OK;
}

int64_t pj_term_face_count(const pj_term *t, int axis)
{
    if (!t || !t->faces || axis < 0 || axis >= t->dim) return 0;
    int64_t count = 1;
    for (int a = 0; a < 3; a++) count *= t->n[a] + (a == axis);
    return count;
}

pj_status pj_term_eval_faces(pj_term *t, const double *const *inputs, double time, double *const *out, char *err,
                             size_t err_len)
{
    if (t && !t->faces) {
        diag_set(err, err_len, "pj_term_eval_faces: a cell term gives cell values: call pj_term_eval");
        return PJ_ERR_INPUT;
    }
    if (t && t->dev) {
        pj_status st = device_args(t, inputs, (const double *const *)out, t->dim, err, err_len);
        return st != PJ_OK ? st : device_eval(t, inputs, time, out, err, err_len);
    }
    pj_status st = load_inputs(t, inputs, out ? (double *)out : NULL, 0, err, err_len);
    if (st != PJ_OK) return st;
    for (int a = 0; a < t->dim; a++)
        if (!out[a]) {
            diag_set(err, err_len, "pj_term_eval_faces: the output for axis %c is NULL", "xyz"[a]);
            return PJ_ERR_INPUT;
        }
    if (engine_eval(t->host, PJ_KERNEL_RHS, time, 1.0, NULL, NULL, err, err_len) < 0) return PJ_ERR_RUN;
    /* slot 1: face (i, j, k) normal to a is the low face of cell (i, j, k), or past the last cell
       along a the high face of the last cell */
    const grid_layout *L = engine_layout(t->host);
    int nf = t->p->n_fields;
    const int64_t *n = t->n;
    for (int a = 0; a < t->dim; a++) {
        const double *lo = host_buffer(t, nf + t->n_inputs + 2 * a), *hi = host_buffer(t, nf + t->n_inputs + 2 * a + 1);
        double *o = out[a];
        int64_t m[3] = {n[0], n[1], n[2]};
        m[a] += 1;
        for (int64_t k = 0; k < m[2]; k++)
            for (int64_t j = 0; j < m[1]; j++) {
                int64_t kk = k < n[2] ? k : k - 1, jj = j < n[1] ? j : j - 1;
                const double *src = (a == 2 && k == n[2]) || (a == 1 && j == n[1]) ? hi : lo;
                const double *row = src + jj * L->stride[1] + kk * L->stride[2];
                if (a == 0) {
                    memcpy(o, row, sizeof(double) * (size_t)n[0]);
                    o[n[0]] = hi[(n[0] - 1) + jj * L->stride[1] + kk * L->stride[2]];
                } else {
                    memcpy(o, row, sizeof(double) * (size_t)n[0]);
                }
                o += m[0];
            }
    }
    return PJ_OK;
}

/* The program's Jacobian, compiled on first use (one kernel for every input: engine_add_kernel),
 * and the scratch buffers its outputs go to. */
static const pj_jacobian *prepare_jacobian(pj_term *t, int f, pj_status *st, char *err, size_t err_len)
{
    *st = PJ_ERR_BACKEND;
    const pj_jacobian *J = cell_jacobian(t, f, err, err_len);
    if (!J || t->host_jac) return J;
    int idx = engine_add_kernel(t->host, PJ_KERNEL_JACOBIAN, err, err_len);
    if (idx < 0) return NULL;
    const grid_layout *L = engine_layout(t->host);
    int64_t last = (L->n[0] - 1) + (L->n[1] - 1) * L->stride[1] + (L->n[2] - 1) * L->stride[2] + 1;
    size_t bytes = ((size_t)last * sizeof(double) + 63) / 64 * 64;
    for (int i = 0; i < 2; i++)
        if (!t->scratch[i] && !(t->scratch[i] = aligned_alloc(64, bytes))) {
            diag_set(err, err_len, "out of memory");
            *st = PJ_ERR_MEMORY;
            return NULL;
        }
    t->host_jac = 1 + idx;
    return J;
}

pj_status pj_term_jacobian(pj_term *t, const char *field, const double *const *inputs, double time, double *out,
                           char *err, size_t err_len)
{
    if (t && t->faces) {
        diag_set(err, err_len, "pj_term_jacobian: a face term has no derivative at the cell");
        return PJ_ERR_INPUT;
    }
    pj_status st = t && t->dev ? device_args(t, inputs, (const double *const *)&out, 1, err, err_len)
                               : load_inputs(t, inputs, out, 0, err, err_len);
    if (st != PJ_OK) return st;
    int f = -1;
    for (int i = 0; field && i < t->n_inputs; i++)
        if (!strcmp(t->p->field_names[i], field)) f = i;
    if (f < 0) {
        diag_set(err, err_len, "pj_term_jacobian: the term has no input '%s'", field ? field : "(null)");
        return PJ_ERR_INPUT;
    }
    if (t->dev) return device_jacobian(t, f, inputs, time, out, err, err_len);
    const pj_jacobian *J = prepare_jacobian(t, f, &st, err, err_len);
    if (!J) return st;
    term_jac *j = &t->jac[f];
    if (j->entry < 0) {
        memset(out, 0, sizeof(double) * (size_t)t->cells);
        return PJ_OK;
    }
    /* the engine's buffers, then one buffer per derivative output: the wanted one, or scratch */
    const grid_layout *L = engine_layout(t->host);
    int nbuf = J->kernel->n_slots * J->kernel->n_fields, n_out = J->kernel->n_outputs;
    void **extra = malloc(sizeof *extra * (size_t)(n_out > 0 ? n_out : 1));
    if (!extra) {
        diag_set(err, err_len, "out of memory");
        return PJ_ERR_MEMORY;
    }
    for (int o = 0; o < n_out; o++) extra[o] = t->scratch[o == j->entry ? 0 : 1];
    skip_fills(t, 0); /* the Jacobian kernel reads the engine's buffers, ghosts included */
    int rc = engine_launch(t->host, t->host_jac - 1, time, 1.0, nbuf, extra, n_out, err, err_len);
    skip_fills(t, 1);
    free(extra);
    if (rc < 0) return PJ_ERR_RUN;
    const double *d = t->scratch[0];
    for (int64_t k = 0; k < L->n[2]; k++)
        for (int64_t jj = 0; jj < L->n[1]; jj++) {
            const double *row = d + jj * L->stride[1] + k * L->stride[2];
            memcpy(out, row, sizeof(double) * (size_t)L->n[0]);
            out += L->n[0];
        }
    return PJ_OK;
}

pj_status pj_term_set_param(pj_term *t, const char *name, double value)
{
    if (t && t->dev) return name && engine_set_param(t->dev, name, value) == 0 ? PJ_OK : PJ_ERR_INPUT;
    return t && name && engine_set_param(t->host, name, value) == 0 ? PJ_OK : PJ_ERR_INPUT;
}

pj_status pj_term_device_alloc(pj_term *t, size_t bytes, void **ptr, char *err, size_t err_len)
{
    if (ptr) *ptr = NULL;
    if (!t || !ptr || !t->dev || !bytes) {
        diag_set(err, err_len, "pj_term_device_alloc: %s", !t || !ptr ? "NULL argument" : !bytes ? "0 bytes" :
                 "the term is not on the device");
        return PJ_ERR_INPUT;
    }
    *ptr = engine_alloc(t->dev, bytes, err, err_len);
    return *ptr ? PJ_OK : PJ_ERR_MEMORY;
}

void pj_term_device_free(pj_term *t, void *ptr)
{
    if (t && t->dev && ptr) engine_free(t->dev, ptr);
}

int pj_term_on_device(const pj_term *t) { return t && t->dev; }

int pj_term_from_cache(const pj_term *t) { return t ? t->from_cache : 0; }
