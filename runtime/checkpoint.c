/* checkpoint.c — restarts: write and read a run's state, start from a --dump (see checkpoint.h). */
#include "checkpoint.h"
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#include "diag.h"
#include "writers.h"

#define MAGIC "pdejit checkpoint\n"
#define MAGIC_LEN 18
#define VERSION 2 /* 2: the run's dt and params after the header */

typedef struct ck_header {
    uint32_t version, dim;
    int64_t n[3];
    double length[3], origin[3];
    int32_t n_fields, single;
    double t;
    int64_t steps;
    uint64_t seed;
    uint8_t fingerprint[16];
} ck_header;

/* Format 2 on: after the header, the run's dt and its params' values (n_params doubles follow). */
typedef struct ck_run {
    double dt;
    int32_t n_params, pad;
} ck_run;

void checkpoint_fingerprint(const pj_program *p, uint8_t out[16])
{
    XXH3_state_t *st = XXH3_createState();
    if (!st) { /* out of memory: a fingerprint no checkpoint has */
        memset(out, 0xff, 16);
        return;
    }
    XXH3_128bits_reset(st);
#define ADD(v) XXH3_128bits_update(st, &(v), sizeof(v))
    int32_t v = p->dim;
    ADD(v);
    v = (int32_t)p->scheme;
    ADD(v);
    v = p->n_fields;
    ADD(v);
    for (int f = 0; f < p->n_fields; f++) XXH3_128bits_update(st, p->field_names[f], strlen(p->field_names[f]) + 1);
    v = p->n_params;
    ADD(v);
    for (int i = 0; i < p->n_params; i++) XXH3_128bits_update(st, p->param_names[i], strlen(p->param_names[i]) + 1);
    pj_kernel_id ids[PJ_KERNEL_IDS_MAX]; /* a step's: an explicit scheme's stages, an implicit one's F, J (G) */
    v = p->n_stages + 4 <= PJ_KERNEL_IDS_MAX ? program_step_kernels(p, ids) : 0;
    ADD(v);
    for (int s = 0; s < v; s++) {
        const kir_kernel *k = program_kernel(p, ids[s]);
        static const uint8_t none[16]; /* a Jacobian out of memory: a fingerprint no checkpoint has */
        XXH3_128bits_update(st, k ? k->hash : none, 16);
    }
    for (int side = 0; side < 6; side++) {
        static const uint8_t none[16];
        XXH3_128bits_update(st, p->bc_kernel[side] ? p->bc_kernel[side]->hash : none, 16);
        for (int f = 0; f < p->n_fields; f++) {
            v = (int32_t)p->bc[f][side].kind;
            ADD(v);
        }
    }
    for (int a = 0; a < 3; a++) {
        v = p->periodic[a];
        ADD(v);
    }
#undef ADD
    XXH128_hash_t h = XXH3_128bits_digest(st);
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, h);
    memcpy(out, c.digest, 16);
    XXH3_freeState(st);
}

static void grid_text(char *out, size_t len, int dim, const int64_t n[3], const double L[3], const double o[3])
{
    size_t k = 0;
    out[0] = 0;
    for (int a = 0; a < dim && k < len; a++)
        k += (size_t)snprintf(out + k, len - k, "%s%lld", a ? " x " : "", (long long)n[a]);
    if (k < len) k += (size_t)snprintf(out + k, len - k, " cells on ");
    for (int a = 0; a < dim && k < len; a++)
        k += (size_t)snprintf(out + k, len - k, "%s[%g, %g]", a ? " x " : "", o[a], o[a] + L[a]);
}

/* Writes all of buf or fails. */
static int write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* ".checkpoint.pjc.XXXXXX": a temporary of checkpoint_write (mkstemp's six letters and digits). */
static int is_checkpoint_temporary(const char *name)
{
    static const char prefix[] = "." CHECKPOINT_NAME ".";
    size_t n = sizeof prefix - 1;
    if (strncmp(name, prefix, n) || strlen(name) != n + 6) return 0;
    for (const char *c = name + n; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9'))) return 0;
    return 1;
}

int checkpoint_prepare(const char *dir, int writes, int *removed, char *err, size_t err_len)
{
    *removed = 0;
    char path[4200], tmp[4200];
    snprintf(path, sizeof path, "%s/%s", dir, CHECKPOINT_NAME);
    DIR *d = opendir(dir);
    if (!d) {
        diag_set(err, err_len, "cannot write the checkpoint %s: %s", path, strerror(errno));
        return -1;
    }
    struct dirent *ent;
    while ((ent = readdir(d))) {
        struct stat st;
        if (!is_checkpoint_temporary(ent->d_name)) continue;
        snprintf(tmp, sizeof tmp, "%s/%s", dir, ent->d_name);
        if (lstat(tmp, &st) == 0 && S_ISREG(st.st_mode) && unlink(tmp) == 0) ++*removed;
    }
    closedir(d);
    if (!writes) return 0;
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) { /* rename cannot replace a folder */
        diag_set(err, err_len, "cannot write the checkpoint %s: %s", path, strerror(EISDIR));
        return -1;
    }
    snprintf(tmp, sizeof tmp, "%s/.%s.XXXXXX", dir, CHECKPOINT_NAME);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        diag_set(err, err_len, "cannot write the checkpoint %s: %s", path, strerror(errno));
        return -1;
    }
    close(fd);
    unlink(tmp);
    return 0;
}

int checkpoint_write(engine *e, const char *dir, uint64_t seed, int single, double dt, char *err, size_t err_len)
{
    /* over MPI the fields are gathered on rank 0, which alone writes; every process takes part in
       every gather (collective), and a failure is agreed by all */
    const int root = engine_rank(e) == 0;
    const pj_program *p = engine_program(e);
    int64_t cells = engine_cells(e);
    ck_header h;
    memset(&h, 0, sizeof h);
    h.version = VERSION;
    h.dim = (uint32_t)p->dim;
    for (int a = 0; a < 3; a++) {
        h.n[a] = p->n[a];
        h.length[a] = p->length[a];
        h.origin[a] = p->origin[a];
    }
    h.n_fields = p->n_fields;
    h.single = single;
    h.t = engine_time(e);
    h.steps = engine_steps(e);
    h.seed = seed;
    checkpoint_fingerprint(p, h.fingerprint);
    ck_run run = {.dt = dt, .n_params = p->n_params};
    const double *params = engine_params(e);

    char path[4200], tmp[4200];
    snprintf(path, sizeof path, "%s/%s", dir, CHECKPOINT_NAME);
    snprintf(tmp, sizeof tmp, "%s/.%s.XXXXXX", dir, CHECKPOINT_NAME);
    double *vals = NULL;
    XXH3_state_t *st = NULL;
    int fd = -1, bad = 0, saved = 0;
    if (root) {
        vals = malloc(sizeof *vals * (size_t)(cells ? cells : 1));
        st = XXH3_createState();
        if (!vals || !st) {
            diag_set(err, err_len, "checkpoint: out of memory");
            bad = 1;
        } else if ((fd = mkstemp(tmp)) < 0) {
            diag_set(err, err_len, "cannot write a checkpoint in %s: %s", dir, strerror(errno));
            bad = 1;
        }
    }
    if (engine_agree(e, bad, err, err_len)) {
        free(vals);
        XXH3_freeState(st);
        return -1;
    }
    if (root) {
        XXH3_128bits_reset(st);
        size_t pbytes = sizeof *params * (size_t)p->n_params;
        bad = write_all(fd, MAGIC, MAGIC_LEN) || write_all(fd, &h, sizeof h) || write_all(fd, &run, sizeof run) ||
              (pbytes && write_all(fd, params, pbytes));
        saved = errno;
        XXH3_128bits_update(st, MAGIC, MAGIC_LEN);
        XXH3_128bits_update(st, &h, sizeof h);
        XXH3_128bits_update(st, &run, sizeof run);
        if (pbytes) XXH3_128bits_update(st, params, pbytes);
    }
    for (int f = 0; f < p->n_fields; f++) {
        if (engine_get_field(e, f, vals, err, err_len) < 0) {
            if (root) {
                unlink(tmp);
                close(fd);
            }
            free(vals);
            XXH3_freeState(st);
            return -1;
        }
        if (root && !bad) {
            bad = write_all(fd, vals, sizeof *vals * (size_t)cells);
            saved = errno;
            XXH3_128bits_update(st, vals, sizeof *vals * (size_t)cells);
        }
    }
    if (root) {
        XXH128_canonical_t sum;
        XXH128_canonicalFromHash(&sum, XXH3_128bits_digest(st));
        if (!bad) {
            bad = write_all(fd, sum.digest, 16) || fsync(fd) < 0;
            saved = errno;
        }
        if (close(fd) < 0 && !bad) {
            bad = 1;
            saved = errno;
        }
        if (!bad && rename(tmp, path) < 0) {
            bad = 1;
            saved = errno;
        }
        if (bad) {
            unlink(tmp);
            diag_set(err, err_len, "cannot write the checkpoint %s: %s", path, strerror(saved ? saved : EIO));
        } else {
            int dfd = open(dir, O_RDONLY | O_DIRECTORY);
            if (dfd >= 0) { /* the rename itself made durable */
                fsync(dfd);
                close(dfd);
            }
        }
    }
    free(vals);
    XXH3_freeState(st);
    return engine_agree(e, bad, err, err_len) ? -1 : 0;
}

/* The bytes of a checkpoint its header announces (magic, header, the run's dt and params from
 * format 2 on, values, checksum), or 0 when the header cannot be a checkpoint's (a dimension, a
 * count out of range). */
static uint64_t announced_length(const ck_header *h, const ck_run *run)
{
    if (h->dim < 1 || h->dim > 3 || h->n_fields < 1 || h->n_fields > (1 << 20)) return 0;
    if (run && (run->n_params < 0 || run->n_params > (1 << 20))) return 0;
    double cells = 1;
    for (int a = 0; a < 3; a++) {
        if (h->n[a] < 1 || h->n[a] > ((int64_t)1 << 40)) return 0;
        cells *= (double)h->n[a];
    }
    double bytes = cells * h->n_fields * (double)sizeof(double);
    if (!(bytes < 9e18)) return 0;
    uint64_t extra = run ? sizeof *run + sizeof(double) * (uint64_t)run->n_params : 0;
    return (uint64_t)MAGIC_LEN + sizeof *h + extra + (uint64_t)bytes + 16;
}

/* The checkpoint at path, checked against e's problem, read into *vals (every field's cells) and h.
 * What the file says is believed only once it is whole: its magic and format version first (a
 * newer format is named as such), then the length its header announces and the checksum of all of
 * it; only then the grid, problem, precision and seed, so a flipped bit reads as damage, never as
 * another problem or another seed. */
/* The checksum in the last 16 bytes of the file f (`length` bytes) against the XXH3-128 of all
 * before them. 0, or -1 with "damaged checkpoint (...)". */
static int verify_checksum(FILE *f, uint64_t length, const char *path, char *err, size_t err_len)
{
    const size_t chunk_len = 1 << 16;
    XXH3_state_t *st = XXH3_createState();
    char *chunk = malloc(chunk_len);
    int rc = -1;
    uint8_t sum[16];
    if (!st || !chunk) {
        diag_set(err, err_len, "%s: out of memory", path);
        goto done;
    }
    XXH3_128bits_reset(st);
    rewind(f);
    for (uint64_t left = length - 16; left;) {
        size_t n = left < chunk_len ? (size_t)left : chunk_len;
        if (fread(chunk, 1, n, f) != n) {
            diag_set(err, err_len, "%s: damaged checkpoint (not the length it says)", path);
            goto done;
        }
        XXH3_128bits_update(st, chunk, n);
        left -= n;
    }
    if (fread(sum, 1, 16, f) != 16) {
        diag_set(err, err_len, "%s: damaged checkpoint (not the length it says)", path);
        goto done;
    }
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits_digest(st));
    if (memcmp(c.digest, sum, 16)) diag_set(err, err_len, "%s: damaged checkpoint (checksum mismatch)", path);
    else rc = 0;
done:
    free(chunk);
    XXH3_freeState(st);
    return rc;
}

static int read_checkpoint(engine *e, const char *path, uint64_t seed, int single, ck_header *hp, double *dt_out,
                           double **vals_out, char *err, size_t err_len)
{
    const pj_program *p = engine_program(e);
    int64_t cells = engine_cells(e);
    char why[256];
    FILE *f = writers_open_regular(path, why, sizeof why); /* a FIFO is refused, not waited for */
    if (!f) {
        diag_set(err, err_len, "%s: %s", path, why);
        return -1;
    }
    char magic[MAGIC_LEN];
    ck_header h;
    int rc = -1;
    double *vals = NULL;
    struct stat sb;
    if (fread(magic, 1, MAGIC_LEN, f) != MAGIC_LEN || memcmp(magic, MAGIC, MAGIC_LEN)) {
        diag_set(err, err_len, "%s: not a pdejit checkpoint", path);
        goto done;
    }
    if (fread(&h, sizeof h, 1, f) != 1) {
        diag_set(err, err_len, "%s: damaged checkpoint (not the length it says)", path);
        goto done;
    }
    if (h.version > VERSION) {
        diag_set(err, err_len, "%s: a checkpoint of format version %u, written by a newer pdejit: this one reads "
                 "version %d", path, (unsigned)h.version, VERSION);
        goto done;
    }
    if (h.version < 1) {
        diag_set(err, err_len, "%s: damaged checkpoint (format version %u)", path, (unsigned)h.version);
        goto done;
    }
    ck_run run = {.dt = NAN};
    if (h.version >= 2 && fread(&run, sizeof run, 1, f) != 1) {
        diag_set(err, err_len, "%s: damaged checkpoint (not the length it says)", path);
        goto done;
    }
    uint64_t length = announced_length(&h, h.version >= 2 ? &run : NULL);
    if (fstat(fileno(f), &sb) < 0 || !length || (uint64_t)sb.st_size != length) {
        diag_set(err, err_len, "%s: damaged checkpoint (not the length it says)", path);
        goto done;
    }
    if (verify_checksum(f, length, path, err, err_len) < 0) goto done;
    int same_grid = (int)h.dim == p->dim;
    for (int a = 0; a < 3 && same_grid; a++)
        same_grid = h.n[a] == p->n[a] && h.length[a] == p->length[a] && h.origin[a] == p->origin[a];
    if (!same_grid) {
        char theirs[256], ours[256];
        int64_t hn[3] = {h.n[0], h.n[1], h.n[2]};
        grid_text(theirs, sizeof theirs, (int)h.dim, hn, h.length, h.origin);
        grid_text(ours, sizeof ours, p->dim, p->n, p->length, p->origin);
        diag_set(err, err_len, "%s: the checkpoint's grid is %s, this problem's is %s: a checkpoint resumes only on "
                 "the grid it was written on", path, theirs, ours);
        goto done;
    }
    uint8_t fp[16];
    checkpoint_fingerprint(p, fp);
    if (h.n_fields != p->n_fields || memcmp(fp, h.fingerprint, 16)) {
        diag_set(err, err_len, "%s: the checkpoint was written by another problem (its fields, equations, boundary "
                 "conditions or scheme differ from this one's)", path);
        goto done;
    }
    if (h.single != single) {
        diag_set(err, err_len, "%s: the checkpoint was written in %s precision, this run is in %s", path,
                 h.single ? "single" : "double", single ? "single" : "double");
        goto done;
    }
    if (h.seed != seed) {
        diag_set(err, err_len, "%s: the checkpoint was written with --seed %llu, this run has --seed %llu", path,
                 (unsigned long long)h.seed, (unsigned long long)seed);
        goto done;
    }
    if (!isfinite(h.t) || h.steps < 0) {
        diag_set(err, err_len, "%s: damaged checkpoint (t = %g, step %lld)", path, h.t, (long long)h.steps);
        goto done;
    }
    /* the params as this run set them (--set), against the values the checkpoint's run had */
    off_t values_at = (off_t)(MAGIC_LEN + sizeof h);
    if (h.version >= 2) {
        const double *params = engine_params(e);
        values_at += (off_t)(sizeof run + sizeof(double) * (size_t)run.n_params);
        if (run.n_params != p->n_params || fseeko(f, (off_t)(MAGIC_LEN + sizeof h + sizeof run), SEEK_SET) < 0) {
            diag_set(err, err_len, "%s: the checkpoint was written by another problem (its params differ from this "
                     "one's)", path);
            goto done;
        }
        for (int i = 0; i < p->n_params; i++) {
            double v;
            if (fread(&v, sizeof v, 1, f) != 1) {
                diag_set(err, err_len, "%s: damaged checkpoint (not the length it says)", path);
                goto done;
            }
            if (memcmp(&v, &params[i], sizeof v)) {
                char theirs[32], ours[32];
                diag_set(err, err_len, "%s: the checkpoint was written with %s = %s, this run has %s = %s (--set)", path,
                         p->param_names[i], diag_number(theirs, sizeof theirs, v), p->param_names[i],
                         diag_number(ours, sizeof ours, params[i]));
                goto done;
            }
        }
    }
    size_t n = (size_t)cells * (size_t)p->n_fields;
    vals = malloc(sizeof *vals * (n ? n : 1));
    if (!vals) {
        diag_set(err, err_len, "%s: out of memory", path);
        goto done;
    }
    if (fseeko(f, values_at, SEEK_SET) < 0 || fread(vals, sizeof *vals, n, f) != n) {
        diag_set(err, err_len, "%s: damaged checkpoint (not the length it says)", path);
        goto done;
    }
    *hp = h;
    *dt_out = run.dt;
    *vals_out = vals;
    vals = NULL;
    rc = 0;
done:
    fclose(f);
    free(vals);
    return rc;
}

int checkpoint_read(engine *e, const char *path, uint64_t seed, int single, double *dt, char *err, size_t err_len)
{
    /* over MPI rank 0 reads and checks the file, the fields are scattered from it */
    const int root = engine_rank(e) == 0;
    ck_header h;
    memset(&h, 0, sizeof h);
    double *vals = NULL, run_dt = NAN;
    int bad = root && read_checkpoint(e, path, seed, single, &h, &run_dt, &vals, err, err_len) < 0;
    if (engine_agree(e, bad, err, err_len)) {
        free(vals);
        return -1;
    }
    engine_bcast(e, &h, sizeof h);
    engine_bcast(e, &run_dt, sizeof run_dt);
    const pj_program *p = engine_program(e);
    size_t cells = (size_t)engine_cells(e);
    int rc = 0;
    for (int fi = 0; fi < p->n_fields && !rc; fi++)
        if (engine_set_field(e, fi, vals ? vals + (size_t)fi * cells : NULL, err, err_len) < 0) rc = -1;
    if (!rc) engine_set_clock(e, h.t, h.steps);
    if (!rc && dt) *dt = run_dt;
    free(vals);
    return rc;
}

/* ---- --init FILE.csv ------------------------------------------------------------------------ */

int checkpoint_init_from_csv(engine *e, const char *path, char *err, size_t err_len)
{
    const pj_program *p = engine_program(e);
    const kir_launch *g = engine_geometry(e);
    int64_t cells = engine_cells(e);
    char why[256];
    FILE *f = writers_open_regular(path, why, sizeof why); /* a FIFO is refused, not waited for */
    if (!f) {
        diag_set(err, err_len, "--init %s: %s", path, why);
        return -1;
    }
    int rc = -1, ncol = 0;
    int *col_field = NULL;
    double **vals = NULL, *row = NULL;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len = getline(&line, &cap, f);
    if (len <= 0) {
        diag_set(err, err_len, "--init %s: empty file", path);
        goto done;
    }
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
    /* header: x[,y[,z]],NAME... */
    for (char *c = line; *c; c++) ncol += *c == ',';
    ncol++;
    col_field = malloc(sizeof *col_field * (size_t)ncol);
    vals = calloc((size_t)p->n_fields, sizeof *vals);
    row = malloc(sizeof *row * (size_t)ncol);
    if (!col_field || !vals || !row) {
        diag_set(err, err_len, "--init %s: out of memory", path);
        goto done;
    }
    char *save = NULL;
    int i = 0;
    for (char *tok = strtok_r(line, ",", &save); tok; tok = strtok_r(NULL, ",", &save), i++) {
        col_field[i] = -1;
        if (i < p->dim) {
            int radial = p->geometry != PJ_GEOM_CARTESIAN;
            if (strcmp(tok, (radial ? (const char *[]){"r", "z", "?"} : (const char *[]){"x", "y", "z"})[i])) {
                diag_set(err, err_len, "--init %s: the header must start with the %dD coordinates %s, not '%s'", path,
                         p->dim, radial ? (p->dim == 1 ? "r" : "r,z") : p->dim == 1 ? "x" : p->dim == 2 ? "x,y" : "x,y,z", tok);
                goto done;
            }
            continue;
        }
        for (int fi = 0; fi < p->n_fields; fi++)
            if (!strcmp(tok, p->field_names[fi])) col_field[i] = fi;
        if (col_field[i] < 0) {
            diag_set(err, err_len, "--init %s: column '%s' is not a field of the problem", path, tok);
            goto done;
        }
        if (!vals[col_field[i]] && !(vals[col_field[i]] = malloc(sizeof(double) * (size_t)(cells ? cells : 1)))) {
            diag_set(err, err_len, "--init %s: out of memory", path);
            goto done;
        }
    }
    if (i != ncol || ncol <= p->dim) {
        diag_set(err, err_len, "--init %s: the header names no field", path);
        goto done;
    }
    int64_t r = 0;
    while ((len = getline(&line, &cap, f)) > 0) {
        if (len == 1 && line[0] == '\n') continue;
        if (r >= cells) {
            diag_set(err, err_len, "--init %s: more rows than the grid's %lld cells: not a dump of this grid", path,
                     (long long)cells);
            goto done;
        }
        char *c = line;
        for (int k = 0; k < ncol; k++) {
            char *end;
            row[k] = strtod(c, &end);
            if (end == c || (k + 1 < ncol && *end != ',') || (k + 1 == ncol && *end && *end != '\n' && *end != '\r')) {
                diag_set(err, err_len, "--init %s: line %lld: expected %d numbers", path, (long long)r + 2, ncol);
                goto done;
            }
            c = end + (k + 1 < ncol);
        }
        int64_t idx[3] = {r % p->n[0], (r / p->n[0]) % p->n[1], r / (p->n[0] * p->n[1])};
        for (int a = 0; a < p->dim; a++) {
            double want = p->faces[a] ? program_cell_centre(p, a, idx[a]) : g->origin[a] + ((double)idx[a] + 0.5) * g->h[a];
            if (!(fabs(row[a] - want) <= 1e-9 * fmax(fabs(want), g->h[a]))) {
                diag_set(err, err_len, "--init %s: line %lld: %c = %.17g where this grid's cell has %.17g: not a dump "
                         "of this grid", path, (long long)r + 2, "xyz"[a], row[a], want);
                goto done;
            }
        }
        for (int k = p->dim; k < ncol; k++) vals[col_field[k]][r] = row[k];
        r++;
    }
    if (r != cells) {
        diag_set(err, err_len, "--init %s: %lld rows where the grid has %lld cells: not a dump of this grid", path,
                 (long long)r, (long long)cells);
        goto done;
    }
    for (int fi = 0; fi < p->n_fields; fi++)
        if (vals[fi] && engine_set_field(e, fi, vals[fi], err, err_len) < 0) goto done;
    rc = 0;
done:
    fclose(f);
    free(line);
    free(row);
    free(col_field);
    if (vals)
        for (int fi = 0; fi < p->n_fields; fi++) free(vals[fi]);
    free(vals);
    return rc;
}

int checkpoint_due(double every, double last, double t)
{
    if (!(every > 0)) return 0;
    return floor(t / every + 1e-9) > floor(last / every + 1e-9);
}
