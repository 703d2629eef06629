/* cache.c — the on-disk kernel cache's store: the handle (opening the folder, its state and the
 * one warning), keys and entry ids, get and put; see cache.h for the layout and the guarantees,
 * cache_internal.h for the other modules (trust and entries, the folder, explain).
 *
 *   put:  key text → id → write ID.src, ID.key, ID.bin as .tmp.* files (no fsync: see cache.h)
 *         → rename src, key, then bin (the commit point) → evict while over the cap
 *   get:  id → open ID.bin → check magic, format, sizes, key text, checksum → refresh mtime
 *
 * Any failure to create, write or rename turns the handle memory-only with one warning. */
#include "cache.h"
#include "cache_internal.h"
#include "knobs.h"

#include <ctype.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* ---- small helpers ---- */

/* A recency stamp: the wall clock, but strictly increasing within this handle (file systems
 * keep nanoseconds, the clock may not advance between two quick puts). */
static int64_t next_stamp(cache *c)
{
    int64_t t = now_ns();
    pthread_mutex_lock(&c->lock);
    if (t <= c->last_stamp) t = c->last_stamp + 1;
    c->last_stamp = t;
    pthread_mutex_unlock(&c->lock);
    return t;
}

/* Turns the handle memory-only, with the one warning; later failures add nothing. */
static void degrade(cache *c, int err)
{
    char eb[128];
    const char *msg = strerror_r(err, eb, sizeof eb);
    pthread_mutex_lock(&c->lock);
    if (!c->disabled) {
        c->disabled = 1;
        c->has_warning = c->state_warned = 1;
        snprintf(c->warning, sizeof c->warning,
                 "kernel cache disabled: %s: %s; kernels are kept in memory only",
                 c->dir[0] ? c->dir : "(no folder)", msg);
    }
    pthread_mutex_unlock(&c->lock);
}

/* Stops writing (the folder turned unwritable, full, or a write failed), with the one warning:
 * entries already there are still used. A warning about one entry gives way to this one. */
static void turn_read_only(cache *c, int err)
{
    char eb[128];
    const char *msg = strerror_r(err, eb, sizeof eb);
    pthread_mutex_lock(&c->lock);
    if (!c->disabled && !c->read_only) {
        c->read_only = 1;
        if (!c->state_warned) {
            c->has_warning = c->state_warned = 1;
            snprintf(c->warning, sizeof c->warning,
                     "kernel cache is read-only: %s: %s; kernels found there are used, new ones are "
                     "kept in memory only", c->dir, msg);
        }
    }
    pthread_mutex_unlock(&c->lock);
}

/* Sets the one warning about a single entry, unless the handle already has one. */
void cache_warn_once(cache *c, const char *fmt, ...)
{
    pthread_mutex_lock(&c->lock);
    if (!c->has_warning) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->warning, sizeof c->warning, fmt, ap);
        va_end(ap);
        c->has_warning = 1;
    }
    pthread_mutex_unlock(&c->lock);
}

int cache_is_writable(cache *c)
{
    pthread_mutex_lock(&c->lock);
    int w = !c->disabled && !c->read_only;
    pthread_mutex_unlock(&c->lock);
    return w;
}

int cache_is_disabled(cache *c)
{
    pthread_mutex_lock(&c->lock);
    int d = c->disabled;
    pthread_mutex_unlock(&c->lock);
    return d;
}

void cache_count(cache *c, uint64_t *counter)
{
    pthread_mutex_lock(&c->lock);
    (*counter)++;
    pthread_mutex_unlock(&c->lock);
}

/* A source extension: 1–8 lowercase letters or digits, not one the cache uses itself. */
int cache_valid_ext(const char *e)
{
    size_t n = strlen(e);
    if (n < 1 || n > 8 || !strcmp(e, "bin") || !strcmp(e, "key") || !strcmp(e, "bad") ||
        !strcmp(e, "run") || !strcmp(e, "crash"))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((e[i] >= 'a' && e[i] <= 'z') || (e[i] >= '0' && e[i] <= '9'))) return 0;
    return 1;
}

/* ---- keys ---- */

int cache_key_add(cache_key *k, const char *name, const char *value)
{
    if (!k || k->n < 0 || k->n >= CACHE_KEY_MAX) return -1;
    k->names[k->n] = name;
    k->values[k->n] = value;
    k->n++;
    return 0;
}

/* The canonical text of a key ("name=value\n" sorted by name), malloc'd; NULL when malformed. */
char *cache_key_text(const cache_key *k, size_t *len)
{
    if (!k || k->n < 1 || k->n > CACHE_KEY_MAX) return NULL;
    int order[CACHE_KEY_MAX];
    size_t total = 0;
    for (int i = 0; i < k->n; i++) {
        const char *nm = k->names[i], *v = k->values[i];
        if (!nm || !v || !*nm || strpbrk(nm, "=\n") || strchr(v, '\n')) return NULL;
        total += strlen(nm) + strlen(v) + 2;
        if (total > KEY_TEXT_MAX) return NULL;
        /* insertion sort by name; a repeated name is malformed */
        int j = i;
        for (; j > 0; j--) {
            int cmp = strcmp(k->names[order[j - 1]], nm);
            if (cmp == 0) return NULL;
            if (cmp < 0) break;
            order[j] = order[j - 1];
        }
        order[j] = i;
    }
    char *t = malloc(total + 1), *p = t;
    if (!t) return NULL;
    for (int i = 0; i < k->n; i++)
        p += sprintf(p, "%s=%s\n", k->names[order[i]], k->values[order[i]]);
    *len = total;
    return t;
}

void cache_text_id(const char *text, size_t len, char id[ID_LEN + 1])
{
    XXH128_canonical_t cn;
    XXH128_canonicalFromHash(&cn, XXH3_128bits(text, len));
    for (int i = 0; i < 16; i++) sprintf(id + 2 * i, "%02x", cn.digest[i]);
}

int cache_entry_path(const cache *c, const char *id, const char *ext, char out[PATH_MAX])
{
    int n = snprintf(out, PATH_MAX, "%s/%.2s/%s.%s", c->dir, id, id, ext);
    return n > 0 && n < PATH_MAX ? 0 : -1;
}

/* ---- opening ---- */

/* mkdir -p, each folder it creates 0700; returns 0 or an errno. */
static int mkdir_p(const char *path)
{
    char p[PATH_MAX];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof p) return ENAMETOOLONG;
    memcpy(p, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (p[i] != '/' && p[i] != 0) continue;
        char saved = p[i];
        p[i] = 0;
        if (mkdir(p, 0700) < 0) { /* what it creates, only its user may read or write */
            int err = errno;
            struct stat st;
            if (stat(p, &st) < 0) return err == EEXIST ? errno : err;
            if (!S_ISDIR(st.st_mode)) return ENOTDIR;
        }
        p[i] = saved;
    }
    return 0;
}

static int resolve_dir(const char *dir, char out[PATH_MAX])
{
    const char *e;
    int n;
    if (dir && *dir) n = snprintf(out, PATH_MAX, "%s", dir);
    else if ((e = knob(KNOB_CACHE_DIR))) n = snprintf(out, PATH_MAX, "%s", e);
    else if ((e = knob(KNOB_XDG_CACHE_HOME)) && *e == '/')
        n = snprintf(out, PATH_MAX, "%s/pdejit", e);
    else {
        const char *home = knob(KNOB_HOME);
        char buf[4096];
        struct passwd pw, *res = NULL;
        if ((!home || !*home) && getpwuid_r(getuid(), &pw, buf, sizeof buf, &res) == 0 && res)
            home = res->pw_dir;
        if (!home || !*home) { out[0] = 0; return -1; }
        n = snprintf(out, PATH_MAX, "%s/.cache/pdejit", home);
    }
    if (n <= 0 || n >= PATH_MAX - 64) { out[0] = 0; return -1; } /* room for ab/ID.ext names */
    while (n > 1 && out[n - 1] == '/') out[--n] = 0;
    return 0;
}

/* Creates and removes a file in the folder: the only sure test that it can be written. */
static int probe(cache *c)
{
    char p[64];
    snprintf(p, sizeof p, ".tmp.probe.%ld.%p", (long)getpid(), (void *)c);
    int fd = openat(c->dirfd, p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return errno;
    int err = write_full(fd, "x", 1) < 0 ? errno : 0;
    if (close(fd) < 0 && !err) err = errno;
    unlinkat(c->dirfd, p, 0);
    return err;
}

/* Opens the cache folder (the path the user chose may pass through links; the folder itself must
 * be ours and writable by nobody else). Returns 0, or -1 with the handle memory-only. */
static int open_top(cache *c)
{
    int err = mkdir_p(c->dir);
    if (!err) {
        c->dirfd = open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (c->dirfd < 0) err = errno;
    }
    if (err) {
        degrade(c, err);
        return -1;
    }
    struct stat st = {0};
    const char *why = fstat(c->dirfd, &st) < 0 ? "cannot be examined" : cache_distrust(c, &st, 1);
    if (why) {
        pthread_mutex_lock(&c->lock);
        c->disabled = c->has_warning = c->state_warned = 1;
        snprintf(c->warning, sizeof c->warning,
                 "kernel cache disabled: %s is %s (mode %04o, owner uid %ld; this is uid %ld): "
                 "anyone who can write there could run code as you; make it yours with mode "
                 "0700, or choose another folder; kernels are kept in memory only",
                 c->dir, why, (unsigned)(st.st_mode & 07777), (long)st.st_uid, (long)c->euid);
        pthread_mutex_unlock(&c->lock);
        close(c->dirfd);
        c->dirfd = -1;
        return -1;
    }
    return 0;
}

cache *cache_open(const char *dir, uint64_t cap_bytes)
{
    cache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    pthread_mutex_init(&c->lock, NULL);
    c->dirfd = -1;
    c->euid = geteuid();
    c->cap = cap_bytes;
    if (!c->cap) {
        const char *e = knob(KNOB_CACHE_MAX);
        c->cap = CACHE_DEFAULT_CAP;
        if (e && cache_parse_size(e, &c->cap) < 0) {
            c->cap = CACHE_DEFAULT_CAP;
            c->has_warning = 1;
            snprintf(c->warning, sizeof c->warning,
                     "ignoring PDEJIT_CACHE_MAX=%.200s: expected bytes, or a number with K, M or "
                     "G; the kernel cache keeps up to %" PRIu64 " MiB",
                     e, c->cap >> 20);
        }
    }
    if (resolve_dir(dir, c->dir) < 0) {
        c->disabled = c->has_warning = c->state_warned = 1;
        snprintf(c->warning, sizeof c->warning,
                 "kernel cache disabled: %s; kernels are kept in memory only",
                 dir || knob(KNOB_CACHE_DIR) ? "its folder name is too long"
                                                   : "no folder for it (HOME is not set)");
        return c;
    }
    if (open_top(c) == 0) {
        int err = probe(c);
        if (err) turn_read_only(c, err);
    }
    return c;
}

void cache_close(cache *c)
{
    if (!c) return;
    if (c->dirfd >= 0) close(c->dirfd);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

const char *cache_warning(cache *c)
{
    if (!c) return NULL;
    pthread_mutex_lock(&c->lock);
    const char *w = c->has_warning ? c->warning : NULL;
    pthread_mutex_unlock(&c->lock);
    return w;
}

const char *cache_dir(cache *c) { return c ? c->dir : ""; }

int cache_on_disk(cache *c) { return c && !cache_is_disabled(c); }

int cache_writable(cache *c) { return c && cache_is_writable(c); }

/* ---- get ---- */

int cache_get(cache *c, const cache_key *key, void **data, size_t *len)
{
    if (!c || !data || !len) return 0;
    size_t tlen;
    char *text = cache_key_text(key, &tlen);
    char id[ID_LEN + 1];
    int rc = ENT_MISSING;
    entry_info info;
    if (text && !cache_is_disabled(c)) {
        cache_text_id(text, tlen, id);
        rc = cache_entry_read(c, id, text, tlen, data, len, 1, next_stamp(c), &info);
        free(info.key);
    }
    free(text);
    if (rc == ENT_REFUSED) {
        char path[PATH_MAX];
        if (cache_entry_path(c, id, "bin", path) < 0) snprintf(path, sizeof path, "entry %s", id);
        cache_refuse(c, path, info.why);
    }
    char who[TRIAL_TEXT_MAX];
    int set_aside;
    if (rc == ENT_OK && cache_trial_state(c, id, info.sum, 1, &set_aside, who) == TRIAL_CRASHED) {
        /* its code killed the last process that ran it: a miss, compiled afresh */
        free(*data);
        *data = NULL;
        *len = 0;
        rc = ENT_MISSING;
        cache_count(c, &c->crashed);
        char path[PATH_MAX];
        if (cache_entry_path(c, id, "crash", path) < 0) snprintf(path, sizeof path, "%s.crash", id);
        cache_warn_once(c, "kernel cache: entry %s crashed the process that last ran it (%s); %s%s, "
                           "compiled afresh", id, who[0] ? who : "unknown", set_aside ? "set aside as " :
                           "left in place", set_aside ? path : "");
    }
    cache_count(c, rc == ENT_OK ? &c->hits : &c->misses);
    return rc == ENT_OK;
}

/* ---- put ---- */

/* Writes parts into a fresh temporary file (0600) in sub-folder fd sub; its name goes to tmp.
 * sync: fsync before closing; stamp (ns, 0: none): its modification time. Returns 0, or an errno
 * (and the temporary file is gone). */
static int write_tmp(cache *c, int sub, const char *id, const char *ext,
                     const void *const *parts, const size_t *lens, int nparts, int sync,
                     int64_t stamp, char tmp[TMP_NAME_MAX])
{
    int fd = -1;
    for (int tries = 0; fd < 0 && tries < 100; tries++) {
        pthread_mutex_lock(&c->lock);
        unsigned seq = c->tmp_seq++;
        pthread_mutex_unlock(&c->lock);
        int n = snprintf(tmp, TMP_NAME_MAX, ".tmp.%s.%ld.%u.%s", id, (long)getpid(), seq, ext);
        if (n <= 0 || n >= TMP_NAME_MAX) return ENAMETOOLONG;
        fd = openat(sub, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 && errno != EEXIST) return errno;
    }
    if (fd < 0) return EEXIST;
    int err = 0;
    for (int i = 0; i < nparts && !err; i++)
        if (write_full(fd, parts[i], lens[i]) < 0) err = errno;
    if (!err && stamp) set_times(fd, stamp);
    if (!err && sync && fsync(fd) < 0) err = errno;
    if (close(fd) < 0 && !err) err = errno;
    if (err) unlinkat(sub, tmp, 0);
    return err;
}

/* One attempt at writing an entry; returns 0 or an errno, never leaving a partial entry. An
 * entry file of another user's in the way, or a sub-folder the cache does not trust, is not
 * replaced: *refused says why (and 0 is returned with nothing written). */
static int put_once(cache *c, const char *id, const char *text, size_t tlen,
                    const unsigned char h[HDR_SIZE], const void *data, size_t len,
                    const char *source, const char *source_ext, const char **refused,
                    char refused_name[ID_LEN + 16])
{
    enum { SRC, KEY, BIN };
    char prefix[3] = {id[0], id[1], 0}, tmp[3][TMP_NAME_MAX] = {"", "", ""};
    char final[3][ID_LEN + 16];
    const char *exts[3] = {source_ext, "key", "bin"};
    *refused = NULL;
    int sub = cache_open_sub(c, prefix, 1, refused);
    if (sub < 0) {
        if (*refused) snprintf(refused_name, ID_LEN + 16, "%s", prefix);
        return *refused ? 0 : errno;
    }
    for (int i = SRC; i <= BIN; i++) {
        struct stat st;
        if (i == SRC && !source) continue;
        snprintf(final[i], sizeof final[i], "%s.%s", id, exts[i]);
        if (fstatat(sub, final[i], &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_uid != c->euid) {
            *refused = "owned by another user";
            snprintf(refused_name, ID_LEN + 16, "%.40s", final[i]);
            close(sub);
            return 0;
        }
    }
    int err = 0;
    if (source) {
        const void *p[1] = {source};
        size_t l[1] = {strlen(source)};
        err = write_tmp(c, sub, id, source_ext, p, l, 1, 0, 0, tmp[SRC]);
        if (err) tmp[SRC][0] = 0;
    }
    if (!err) {
        const void *p[1] = {text};
        size_t l[1] = {tlen};
        err = write_tmp(c, sub, id, "key", p, l, 1, 0, 0, tmp[KEY]);
        if (err) tmp[KEY][0] = 0;
    }
    if (!err) {
        const void *p[3] = {h, text, data};
        size_t l[3] = {HDR_SIZE, tlen, len};
        err = write_tmp(c, sub, id, "bin", p, l, 3, 0, next_stamp(c), tmp[BIN]);
        if (err) tmp[BIN][0] = 0;
    }
    /* all written: make them visible, the .bin (the commit point) last; a rename replaces a link
     * or a pipe of ours in the way, never what it points to */
    for (int i = SRC; i <= BIN && !err; i++) {
        if (!tmp[i][0]) continue;
        if (renameat(sub, tmp[i], sub, final[i]) < 0) err = errno;
        else tmp[i][0] = 0;
    }
    for (int i = SRC; i <= BIN; i++)
        if (tmp[i][0]) unlinkat(sub, tmp[i], 0);
    close(sub);
    return err;
}

int cache_put(cache *c, const cache_key *key, const void *data, size_t len, const char *source,
              const char *source_ext)
{
    if (!c || (!data && len) || (source && (!source_ext || !cache_valid_ext(source_ext)))) return -1;
    size_t tlen;
    char *text = cache_key_text(key, &tlen);
    if (!text) return -1;
    if (!cache_is_writable(c)) { free(text); return -1; }
    if (!data) data = "";

    char id[ID_LEN + 1];
    cache_text_id(text, tlen, id);
    unsigned char h[HDR_SIZE];
    memcpy(h, MAGIC, 8);
    put32(h + 8, CACHE_FORMAT_VERSION);
    put32(h + 12, (uint32_t)tlen);
    put64(h + 16, (uint64_t)len);
    XXH128_canonical_t sum;
    XXH128_canonicalFromHash(&sum, XXH3_128bits(data, len));
    memcpy(h + 24, sum.digest, 16);

    const char *refused;
    char refused_name[ID_LEN + 16];
    int err = put_once(c, id, text, tlen, h, data, len, source, source_ext, &refused, refused_name);
    if (err == ENOENT) /* the prefix folder was removed under us (a concurrent clear): once more */
        err = put_once(c, id, text, tlen, h, data, len, source, source_ext, &refused, refused_name);
    free(text);
    if (refused) {
        char what[PATH_MAX + 64];
        snprintf(what, sizeof what, "%s/%.2s%s%s", c->dir, id, strlen(refused_name) > 2 ? "/" : "",
                 strlen(refused_name) > 2 ? refused_name : "");
        cache_refuse(c, what, refused);
        return -1;
    }
    if (err) {
        turn_read_only(c, err); /* the one warning; entries already stored are still used */
        return -1;
    }
    cache_count(c, &c->puts);
    cache_evict(c, (source ? strlen(source) : 0) + 2 * (uint64_t)tlen + HDR_SIZE + len); /* the files' sizes */
    return 0;
}

/* ---- sizes ---- */

int cache_parse_size(const char *text, uint64_t *bytes)
{
    if (!text || !bytes) return -1;
    const char *p = text;
    while (isspace((unsigned char)*p)) p++;
    if (!isdigit((unsigned char)*p)) return -1;
    uint64_t v = 0;
    for (; isdigit((unsigned char)*p); p++) {
        if (v > (UINT64_MAX - 9) / 10) return -1;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    int shift = 0;
    switch (toupper((unsigned char)*p)) {
    case 'K': shift = 10; break;
    case 'M': shift = 20; break;
    case 'G': shift = 30; break;
    case 'T': shift = 40; break;
    default: break;
    }
    if (shift) {
        p++;
        if (*p == 'i' && (p[1] == 'B' || p[1] == 'b')) p += 2;
        else if (*p == 'B' || *p == 'b') p++;
    } else if (*p == 'B' || *p == 'b') {
        p++;
    }
    while (isspace((unsigned char)*p)) p++;
    if (*p || v == 0 || v > (UINT64_MAX >> shift)) return -1;
    *bytes = v << shift;
    return 0;
}
