/* fuzz_restart_seeds.c — writes the seed corpora of the restart fuzz targets:
 *
 *   fuzz_restart_seeds checkpoint DIR   checkpoints of the fixture's problem (restart_fixture.h)
 *                                       written by checkpoint_write: whole, cut short where each
 *                                       part of it ends, and with one header field at a time
 *                                       changed (the checksum made right again, so the reader's
 *                                       later checks are reached)
 *   fuzz_restart_seeds init_csv DIR     the fixture's --dump (writers_csv) and variants of it: a
 *                                       column left out, renamed, rows cut, added or broken, CRLF
 *
 * Nothing generated is committed: ctest and the fuzz build write them into the build folder. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>
#include "checkpoint.h"
#include "restart_fixture.h"
#include "writers.h"

static const char *out_dir;
static int written;

static void put(const char *name, const void *bytes, size_t len)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", out_dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || (len && fwrite(bytes, 1, len, f) != len) || fclose(f) != 0) {
        fprintf(stderr, "fuzz_restart_seeds: cannot write %s\n", path);
        exit(1);
    }
    written++;
}

static void *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t r;
    while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0)
        if ((n += r) == cap) buf = realloc(buf, cap *= 2);
    fclose(f);
    *len = n;
    return buf;
}

/* A copy of the checkpoint ck with `n` bytes at `at` replaced and its checksum made right. */
static void patched(const char *name, const uint8_t *ck, size_t len, size_t at, const void *v, size_t n)
{
    uint8_t *b = malloc(len);
    memcpy(b, ck, len);
    memcpy(b + at, v, n);
    XXH128_canonical_t sum;
    XXH128_canonicalFromHash(&sum, XXH3_128bits(b, len - 16));
    memcpy(b + len - 16, sum.digest, 16);
    put(name, b, len);
    free(b);
}

static int checkpoints(restart_fixture *fx)
{
    char err[1024], path[PATH_MAX + 64];
    for (int s = 0; s < 3; s++)
        if (engine_step(fx->e, 0.01, err, sizeof err) < 0) break;
    if (checkpoint_write(fx->e, fx->root, 0, 0, 0.01, err, sizeof err) < 0) {
        fprintf(stderr, "fuzz_restart_seeds: %s\n", err);
        return -1;
    }
    snprintf(path, sizeof path, "%s/checkpoint.pjc", fx->root);
    size_t len;
    uint8_t *ck = slurp(path, &len);
    if (!ck || len < 200) return -1;
    put("whole.pjc", ck, len);
    /* the layout (checkpoint.c): magic 18 bytes; version 18, dim 22, n 26, length 50, origin 74,
       n_fields 98, single 102, t 106, steps 114, seed 122, fingerprint 130; dt 146, n_params 154,
       pad 158, the params from 162; the values; the checksum (16) */
    const size_t cuts[] = {0, 1, 17, 18, 22, 26, 98, 106, 130, 146, 154, 162, 170, len - 17, len - 16, len - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
        char name[64];
        snprintf(name, sizeof name, "cut-%zu.pjc", cuts[i]);
        put(name, ck, cuts[i]);
    }
    uint8_t *longer = malloc(len + 1);
    memcpy(longer, ck, len);
    longer[len] = 0;
    put("one-more-byte.pjc", longer, len + 1);
    free(longer);
    const uint32_t versions[] = {0, 1, 3};
    for (int i = 0; i < 3; i++) {
        char name[64];
        snprintf(name, sizeof name, "version-%u.pjc", versions[i]);
        patched(name, ck, len, 18, &versions[i], 4);
    }
    const uint32_t dims[] = {0, 2, 4};
    for (int i = 0; i < 3; i++) {
        char name[64];
        snprintf(name, sizeof name, "dim-%u.pjc", dims[i]);
        patched(name, ck, len, 22, &dims[i], 4);
    }
    const int64_t ns[] = {-1, 0, 7, (int64_t)1 << 41};
    for (int i = 0; i < 4; i++) {
        char name[64];
        snprintf(name, sizeof name, "nx-%d.pjc", i);
        patched(name, ck, len, 26, &ns[i], 8);
    }
    const double lx = 4;
    patched("length.pjc", ck, len, 50, &lx, 8);
    const int32_t fields[] = {0, 1, 3, 1 << 30};
    for (int i = 0; i < 4; i++) {
        char name[64];
        snprintf(name, sizeof name, "fields-%d.pjc", i);
        patched(name, ck, len, 98, &fields[i], 4);
    }
    const int32_t single = 1;
    patched("single.pjc", ck, len, 102, &single, 4);
    const double times[] = {INFINITY, NAN, 1e300, -1};
    for (int i = 0; i < 4; i++) {
        char name[64];
        snprintf(name, sizeof name, "t-%d.pjc", i);
        patched(name, ck, len, 106, &times[i], 8);
    }
    const int64_t steps = -1;
    patched("steps.pjc", ck, len, 114, &steps, 8);
    const uint64_t seed = 4096;
    patched("seed.pjc", ck, len, 122, &seed, 8);
    const uint8_t fp = 0x5a;
    patched("fingerprint.pjc", ck, len, 130, &fp, 1);
    const double dt = NAN;
    patched("dt.pjc", ck, len, 146, &dt, 8);
    const int32_t params[] = {-1, 0, 2, 1 << 21};
    for (int i = 0; i < 4; i++) {
        char name[64];
        snprintf(name, sizeof name, "params-%d.pjc", i);
        patched(name, ck, len, 154, &params[i], 4);
    }
    const double D = 0.5;
    patched("param-value.pjc", ck, len, 162, &D, 8);
    uint8_t flipped = ck[200] ^ 1;
    uint8_t *b = malloc(len);
    memcpy(b, ck, len);
    b[200] = flipped;
    put("flipped-value.pjc", b, len); /* the checksum left as it was: damage */
    free(b);
    free(ck);
    return 0;
}

static int field_of(void *obj, int f, double *out, char *err, size_t len)
{
    return engine_get_field(obj, f, out, err, len);
}

/* The lines of text with each line passed through edit (NULL: dropped) into a seed. */
static void edited(const char *name, const char *text, const char *(*edit)(int line, const char *l, char *buf))
{
    size_t cap = strlen(text) * 2 + 256, n = 0;
    char *out = malloc(cap), buf[1024], line[1024];
    int k = 0;
    for (const char *c = text; *c; k++) {
        const char *e = strchr(c, '\n');
        size_t m = e ? (size_t)(e - c) : strlen(c);
        snprintf(line, sizeof line, "%.*s", (int)m, c);
        const char *r = edit(k, line, buf);
        if (r) n += (size_t)snprintf(out + n, cap - n, "%s\n", r);
        c += m + (e != NULL);
    }
    put(name, out, n);
    free(out);
}

static const char *drop_v(int k, const char *l, char *buf)
{
    (void)k;
    snprintf(buf, 1024, "%s", l);
    char *last = strrchr(buf, ',');
    if (last) *last = 0;
    return buf;
}
static const char *rename_u(int k, const char *l, char *buf)
{
    return k == 0 ? strcpy(buf, "x,w,v") : l;
}
static const char *header_only(int k, const char *l, char *buf)
{
    (void)buf;
    return k == 0 ? l : NULL;
}
static const char *first_rows(int k, const char *l, char *buf)
{
    (void)buf;
    return k < 4 ? l : NULL;
}
static const char *row_twice(int k, const char *l, char *buf)
{
    snprintf(buf, 1024, k == 3 ? "%s\n%s" : "%s", l, l);
    return buf;
}
static const char *short_row(int k, const char *l, char *buf)
{
    return k == 2 ? drop_v(k, l, buf) : l;
}
static const char *crlf(int k, const char *l, char *buf)
{
    (void)k;
    snprintf(buf, 1024, "%s\r", l);
    return buf;
}
static const char *blank_line(int k, const char *l, char *buf)
{
    snprintf(buf, 1024, k == 2 ? "\n%s" : "%s", l);
    return buf;
}
static const char *moved_cell(int k, const char *l, char *buf)
{
    if (k != 3) return l;
    snprintf(buf, 1024, "9%s", l);
    return buf;
}
static const char *nan_value(int k, const char *l, char *buf)
{
    if (k != 2) return l;
    snprintf(buf, 1024, "%s", l);
    char *last = strrchr(buf, ',');
    if (last) strcpy(last + 1, "nan");
    return buf;
}

static int csvs(restart_fixture *fx)
{
    char err[1024], path[PATH_MAX + 64];
    writers_frame fr;
    if (writers_frame_build(&fr, fx->p, engine_geometry(fx->e), 0, NULL, 0, field_of, fx->e, err, sizeof err) < 0)
        return -1;
    snprintf(path, sizeof path, "%s/dump.csv", fx->root);
    int rc = writers_csv(path, &fr, err, sizeof err);
    writers_frame_free(&fr);
    size_t len;
    char *text = rc < 0 ? NULL : slurp(path, &len);
    remove(path);
    if (!text) {
        fprintf(stderr, "fuzz_restart_seeds: %s\n", err);
        return -1;
    }
    text = realloc(text, len + 1);
    text[len] = 0;
    put("dump.csv", text, len);
    put("empty.csv", "", 0);
    put("x-only.csv", "x\n", 2);
    edited("only-u.csv", text, drop_v);
    edited("renamed.csv", text, rename_u);
    edited("header-only.csv", text, header_only);
    edited("first-rows.csv", text, first_rows);
    edited("row-twice.csv", text, row_twice);
    edited("short-row.csv", text, short_row);
    edited("crlf.csv", text, crlf);
    edited("blank-line.csv", text, blank_line);
    edited("moved-cell.csv", text, moved_cell);
    edited("nan-value.csv", text, nan_value);
    free(text);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[1], "checkpoint") && strcmp(argv[1], "init_csv"))) {
        fprintf(stderr, "usage: %s checkpoint|init_csv DIR\n", argv[0]);
        return 2;
    }
    out_dir = argv[2];
    char parent[PATH_MAX]; /* mkdir -p */
    snprintf(parent, sizeof parent, "%s", out_dir);
    for (char *c = parent + 1; *c; c++)
        if (*c == '/') {
            *c = 0;
            mkdir(parent, 0755);
            *c = '/';
        }
    if (mkdir(out_dir, 0755) < 0 && errno != EEXIST) {
        perror(out_dir);
        return 1;
    }
    restart_fixture fx;
    char err[1024];
    if (restart_fixture_open(&fx, err, sizeof err) < 0) {
        fprintf(stderr, "fuzz_restart_seeds: %s\n", err);
        return 1;
    }
    int rc = !strcmp(argv[1], "checkpoint") ? checkpoints(&fx) : csvs(&fx);
    restart_fixture_close(&fx);
    if (rc < 0) return 1;
    printf("%d seeds in %s\n", written, out_dir);
    return 0;
}
