/* cache.c — the on-disk kernel cache; see cache.h for the layout and the guarantees.
 *
 *   put:  key text → id → write ID.src, ID.key, ID.bin as .tmp.* files (the blob fsync'd)
 *         → rename src, key, then bin (the commit point) → evict while over the cap
 *   get:  id → open ID.bin → check magic, format, sizes, key text, checksum → refresh mtime
 *
 * Any failure to create, write or rename turns the handle memory-only with one warning. */
#include "cache.h"
#include "knobs.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#define MAGIC "PJKCACHE"
#define HDR_SIZE 40
#define KEY_TEXT_MAX 65536
#define STALE_NS (3600LL * 1000000000LL) /* leftovers older than this are removed */
#define ID_LEN 32
#define TMP_NAME_MAX 96 /* ".tmp.ID.PID.SEQ.EXT" */

struct cache {
    char dir[PATH_MAX];
    int dirfd;            /* the cache folder, opened once; every file is reached through it */
    uid_t euid;           /* the only owner the cache trusts */
    uint64_t cap;
    pthread_mutex_t lock; /* guards everything below */
    int disabled;         /* memory-only: nothing read or written */
    int read_only;        /* entries are read, nothing is written */
    int has_warning;
    int state_warned;     /* the warning says the handle turned read-only or memory-only */
    char warning[PATH_MAX + 256];
    int64_t last_stamp;   /* last recency stamp handed out, ns; keeps stamps strictly increasing */
    unsigned tmp_seq;
    uint64_t hits, misses, puts, evictions, refused, rejected, crashed;
};

/* ---- small helpers ---- */

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--) v = v << 8 | p[i];
    return v;
}
static uint64_t get64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static int64_t ts_ns(struct timespec t) { return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec; }

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return ts_ns(t);
}

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

static void set_times(int fd, int64_t ns)
{
    struct timespec ts[2];
    ts[0].tv_sec = ns / 1000000000LL;
    ts[0].tv_nsec = ns % 1000000000LL;
    ts[1] = ts[0];
    (void)futimens(fd, ts); /* recency is a hint: failure (another owner) is harmless */
}

static ssize_t read_full(int fd, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (char *)buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r == 0) break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

static int write_full(int fd, const void *buf, size_t n)
{
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(fd, (const char *)buf + done, n - done);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return -1;
        if (w == 0) { errno = ENOSPC; return -1; }
        done += (size_t)w;
    }
    return 0;
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
static void warn_once(cache *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn_once(cache *c, const char *fmt, ...)
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

static int is_writable(cache *c)
{
    pthread_mutex_lock(&c->lock);
    int w = !c->disabled && !c->read_only;
    pthread_mutex_unlock(&c->lock);
    return w;
}

static int is_disabled(cache *c)
{
    pthread_mutex_lock(&c->lock);
    int d = c->disabled;
    pthread_mutex_unlock(&c->lock);
    return d;
}

static void count(cache *c, uint64_t *counter)
{
    pthread_mutex_lock(&c->lock);
    (*counter)++;
    pthread_mutex_unlock(&c->lock);
}

static int is_hex_lower(const char *s, int n)
{
    for (int i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
    return 1;
}

/* A source extension: 1–8 lowercase letters or digits, not one the cache uses itself. */
static int valid_ext(const char *e)
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
static char *key_text(const cache_key *k, size_t *len)
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

static void text_id(const char *text, size_t len, char id[ID_LEN + 1])
{
    XXH128_canonical_t cn;
    XXH128_canonicalFromHash(&cn, XXH3_128bits(text, len));
    for (int i = 0; i < 16; i++) sprintf(id + 2 * i, "%02x", cn.digest[i]);
}

static int entry_path(const cache *c, const char *id, const char *ext, char out[PATH_MAX])
{
    int n = snprintf(out, PATH_MAX, "%s/%.2s/%s.%s", c->dir, id, id, ext);
    return n > 0 && n < PATH_MAX ? 0 : -1;
}

/* ---- trust: what the cache reads, writes and removes ---- */

/* Why a file or folder found in the cache is not used, or NULL when it is: only a regular file
 * (a real folder) owned by this process's user that nobody else can write. A symbolic link is
 * never followed (it is judged as itself, a link). */
static const char *distrust(const cache *c, const struct stat *st, int want_dir)
{
    if (S_ISLNK(st->st_mode)) return "a symbolic link";
    if (want_dir && !S_ISDIR(st->st_mode)) return "not a folder";
    if (!want_dir && !S_ISREG(st->st_mode)) return "not a regular file";
    if (st->st_uid != c->euid) return "owned by another user";
    if (st->st_mode & (S_IWGRP | S_IWOTH)) return "writable by group or others";
    return NULL;
}

/* Opens prefix sub-folder `name` ("ab") of the cache folder, never through a link, creating it
 * (0700) when asked. Returns its fd; or -1 with *why set (refused: not ours, a link, ...) or
 * errno set (ENOENT: absent). */
static int open_sub(cache *c, const char *name, int create, const char **why)
{
    *why = NULL;
    const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    int fd = openat(c->dirfd, name, flags);
    if (fd < 0 && errno == ENOENT && create) {
        if (mkdirat(c->dirfd, name, 0700) < 0 && errno != EEXIST) return -1;
        fd = openat(c->dirfd, name, flags);
    }
    struct stat st;
    if (fd < 0) {
        int err = errno;
        if (err != ENOENT && fstatat(c->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            (*why = distrust(c, &st, 1)))
            return -1;
        errno = err;
        return -1;
    }
    if (fstat(fd, &st) < 0 || (*why = distrust(c, &st, 1))) {
        int err = errno;
        close(fd);
        errno = *why ? EPERM : err;
        return -1;
    }
    return fd;
}

/* Counts a refused file or folder and sets the one warning naming it. */
static void refuse(cache *c, const char *what, const char *why)
{
    count(c, &c->refused);
    warn_once(c, "kernel cache: refused %s: %s (the cache uses only files and folders of its own "
                 "that nobody else can write); compiled afresh, inspect and remove it", what, why);
}

/* ---- reading an entry ---- */

enum { ENT_OK, ENT_MISSING, ENT_DAMAGED, ENT_FORMAT, ENT_OTHER_KEY, ENT_REFUSED };

typedef struct entry_info {
    uint32_t format;     /* as found in the header */
    char *key;           /* malloc'd key text when asked for and the header is sound */
    const char *why;     /* ENT_REFUSED: the reason (static text) */
    unsigned char sum[16]; /* ENT_OK: the payload's checksum, from the header */
} entry_info;

/* Opens entry file ID.ext for reading: only a regular file of ours in a sub-folder of ours,
 * never through a link, never blocking (a named pipe is refused before it is read). Returns the
 * fd, or -1 with *rc ENT_MISSING, ENT_REFUSED (*why says why) or ENT_DAMAGED. */
static int entry_open(cache *c, const char *id, const char *ext, int *rc, const char **why)
{
    char prefix[3] = {id[0], id[1], 0}, name[ID_LEN + 16];
    snprintf(name, sizeof name, "%s.%s", id, ext);
    int sub = open_sub(c, prefix, 0, why);
    if (sub < 0) {
        *rc = *why ? ENT_REFUSED : errno == ENOENT ? ENT_MISSING : ENT_DAMAGED;
        return -1;
    }
    struct stat st;
    int fd = -1;
    if (fstatat(sub, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        *rc = errno == ENOENT ? ENT_MISSING : ENT_DAMAGED;
    } else if ((*why = distrust(c, &st, 0))) {
        *rc = ENT_REFUSED;
    } else if ((fd = openat(sub, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) < 0) {
        *rc = errno == ENOENT ? ENT_MISSING : errno == ELOOP ? ENT_REFUSED : ENT_DAMAGED;
        if (errno == ELOOP) *why = "a symbolic link";
    } else if (fstat(fd, &st) < 0 || (*why = distrust(c, &st, 0))) { /* replaced meanwhile */
        *rc = *why ? ENT_REFUSED : ENT_DAMAGED;
        close(fd);
        fd = -1;
    }
    close(sub);
    return fd;
}

/* Reads entry `id`. want: the key text it must hold (NULL: any). data: where the payload goes
 * (malloc'd; NULL: not returned). verify: check the checksum even without data. touch: mark it
 * used. info (optional): what was found. */
static int entry_read(cache *c, const char *id, const char *want, size_t want_len, void **data,
                      size_t *len, int verify, int64_t touch, entry_info *info)
{
    if (info) { info->format = 0; info->key = NULL; info->why = NULL; }
    int rc = ENT_DAMAGED;
    const char *why = NULL;
    int fd = entry_open(c, id, "bin", &rc, &why);
    if (fd < 0) {
        if (info) info->why = why;
        return rc;
    }
    rc = ENT_DAMAGED;
    char *key = NULL;
    unsigned char *payload = NULL;
    unsigned char h[HDR_SIZE];
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) goto out;
    if (read_full(fd, h, HDR_SIZE) != HDR_SIZE || memcmp(h, MAGIC, 8)) goto out;
    uint32_t format = get32(h + 8), klen = get32(h + 12);
    uint64_t plen = get64(h + 16);
    if (info) info->format = format;
    if (format != CACHE_FORMAT_VERSION) { rc = ENT_FORMAT; goto out; }
    uint64_t fsize = (uint64_t)st.st_size;
    if (klen > KEY_TEXT_MAX || fsize < HDR_SIZE + (uint64_t)klen ||
        plen != fsize - HDR_SIZE - klen || plen > SIZE_MAX - 1)
        goto out;
    key = malloc((size_t)klen + 1);
    if (!key || read_full(fd, key, klen) != (ssize_t)klen) goto out;
    key[klen] = 0;
    if (memchr(key, 0, klen)) goto out;
    if (want && (klen != want_len || memcmp(key, want, klen))) { rc = ENT_OTHER_KEY; goto out; }
    if (data || verify) {
        XXH128_canonical_t sum;
        if (data) {
            payload = malloc(plen ? (size_t)plen : 1);
            if (!payload || read_full(fd, payload, (size_t)plen) != (ssize_t)plen) goto out;
            XXH128_canonicalFromHash(&sum, XXH3_128bits(payload, (size_t)plen));
        } else {
            XXH3_state_t *s = XXH3_createState();
            unsigned char buf[16384];
            uint64_t left = plen;
            if (!s) goto out;
            XXH3_128bits_reset(s);
            while (left > 0) {
                size_t n = left < sizeof buf ? (size_t)left : sizeof buf;
                if (read_full(fd, buf, n) != (ssize_t)n) break;
                XXH3_128bits_update(s, buf, n);
                left -= n;
            }
            XXH128_canonicalFromHash(&sum, XXH3_128bits_digest(s));
            XXH3_freeState(s);
            if (left) goto out;
        }
        if (memcmp(sum.digest, h + 24, 16)) goto out;
    }
    if (touch) set_times(fd, touch);
    if (info) memcpy(info->sum, h + 24, 16);
    if (data) { *data = payload; *len = (size_t)plen; payload = NULL; }
    if (info) { info->key = key; key = NULL; }
    rc = ENT_OK;
out:
    free(payload);
    free(key);
    close(fd);
    return rc;
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
    const char *why = fstat(c->dirfd, &st) < 0 ? "cannot be examined" : distrust(c, &st, 1);
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

int cache_on_disk(cache *c) { return c && !is_disabled(c); }

int cache_writable(cache *c) { return c && is_writable(c); }

/* ---- trials: the first run of an entry's code ---- */

/* The marker's text: the payload's checksum (32 hex digits), then who wrote it. */
#define TRIAL_TEXT_MAX 96

static void sum_hex(const unsigned char sum[16], char hex[33])
{
    for (int i = 0; i < 16; i++) sprintf(hex + 2 * i, "%02x", sum[i]);
}

enum { TRIAL_NONE, TRIAL_RUNNING, TRIAL_CRASHED };

/* What the marker ID.run says about the entry whose payload has checksum sum: none (no marker,
 * or a stale one: of another payload, or removed as we looked), running (locked by a live
 * process, this one included) or crashed (unlocked: the process that wrote it died before it
 * ended the trial). settle: remove a stale marker, and a crashed one after setting the entry
 * aside as ID.crash (*set_aside: 1 when it was). who: the marker's "pid N" text. Only a regular
 * file of ours in a sub-folder of ours is read; anything else is no marker. */
static int trial_state(cache *c, const char *id, const unsigned char sum[16], int settle,
                       int *set_aside, char who[TRIAL_TEXT_MAX])
{
    char prefix[3] = {id[0], id[1], 0}, name[ID_LEN + 8];
    const char *why;
    if (set_aside) *set_aside = 0;
    who[0] = 0;
    snprintf(name, sizeof name, "%s.run", id);
    int sub = open_sub(c, prefix, 0, &why);
    if (sub < 0) return TRIAL_NONE;
    struct stat st;
    int state = TRIAL_NONE;
    int fd = openat(sub, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) < 0 || distrust(c, &st, 0)) goto out;
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        state = errno == EWOULDBLOCK ? TRIAL_RUNNING : TRIAL_NONE;
        goto out;
    }
    if (fstat(fd, &st) < 0 || st.st_nlink == 0) goto out; /* the trial ended as we looked */
    char text[TRIAL_TEXT_MAX], hex[33];
    ssize_t n = read_full(fd, text, sizeof text - 1);
    text[n > 0 ? n : 0] = 0;
    sum_hex(sum, hex);
    int ours = n >= 32 && !memcmp(text, hex, 32);
    if (ours) {
        state = TRIAL_CRASHED;
        const char *w = text + 32;
        while (*w == ' ') w++;
        snprintf(who, TRIAL_TEXT_MAX, "%.*s", (int)strcspn(w, "\n"), w);
    }
    if (settle && is_writable(c)) {
        char bin[ID_LEN + 8], crash[ID_LEN + 8];
        snprintf(bin, sizeof bin, "%s.bin", id);
        snprintf(crash, sizeof crash, "%s.crash", id);
        if (ours && set_aside)
            *set_aside = fstatat(sub, bin, &st, AT_SYMLINK_NOFOLLOW) == 0 && !distrust(c, &st, 0) &&
                         renameat(sub, bin, sub, crash) == 0;
        unlinkat(sub, name, 0); /* while locked: a trial beginning now makes a fresh marker */
    }
out:
    if (fd >= 0) close(fd); /* releases the lock */
    close(sub);
    return state;
}

int cache_trial_begin(cache *c, const cache_key *key, const void *data, size_t len, cache_trial *t)
{
    if (!t) return -1;
    t->fd = -1;
    t->id[0] = 0;
    size_t tlen;
    char *text = c && (data || !len) ? key_text(key, &tlen) : NULL;
    if (!text) return -1;
    text_id(text, tlen, t->id);
    free(text);
    if (!is_writable(c)) return -1;
    char prefix[3] = {t->id[0], t->id[1], 0}, name[ID_LEN + 8];
    const char *why;
    snprintf(name, sizeof name, "%s.run", t->id);
    int sub = open_sub(c, prefix, 0, &why);
    if (sub < 0) return -1;
    XXH128_canonical_t sum;
    XXH128_canonicalFromHash(&sum, XXH3_128bits(data ? data : "", len));
    char marker[TRIAL_TEXT_MAX], hex[33];
    sum_hex(sum.digest, hex);
    int mlen = snprintf(marker, sizeof marker, "%s pid %ld\n", hex, (long)getpid());
    int fd = -1;
    /* a marker another process removes between our open and our lock is made afresh, once */
    for (int tries = 0; tries < 2 && fd < 0; tries++) {
        struct stat st;
        fd = openat(sub, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
        if (fd < 0) break;
        if (fstat(fd, &st) < 0 || distrust(c, &st, 0) || flock(fd, LOCK_EX | LOCK_NB) < 0) {
            close(fd); /* another's, or the same entry on trial elsewhere: run it unmarked */
            fd = -1;
            break;
        }
        if (fstat(fd, &st) < 0 || st.st_nlink == 0) {
            close(fd);
            fd = -1;
            continue;
        }
        if (ftruncate(fd, 0) < 0 || write_full(fd, marker, (size_t)mlen) < 0) {
            unlinkat(sub, name, 0);
            close(fd);
            fd = -1;
            break;
        }
    }
    close(sub);
    t->fd = fd;
    return fd >= 0 ? 0 : -1;
}

void cache_trial_end(cache *c, cache_trial *t)
{
    if (!c || !t || t->fd < 0) return;
    char prefix[3] = {t->id[0], t->id[1], 0}, name[ID_LEN + 8];
    const char *why;
    snprintf(name, sizeof name, "%s.run", t->id);
    int sub = open_sub(c, prefix, 0, &why);
    struct stat mine, there;
    /* removed only when it is still our marker (eviction or a clear may have removed it) */
    if (sub >= 0 && fstat(t->fd, &mine) == 0 && fstatat(sub, name, &there, AT_SYMLINK_NOFOLLOW) == 0 &&
        mine.st_dev == there.st_dev && mine.st_ino == there.st_ino)
        unlinkat(sub, name, 0); /* before the lock goes: nobody finds it unlocked */
    if (sub >= 0) close(sub);
    close(t->fd);
    t->fd = -1;
}

/* ---- get ---- */

int cache_get(cache *c, const cache_key *key, void **data, size_t *len)
{
    if (!c || !data || !len) return 0;
    size_t tlen;
    char *text = key_text(key, &tlen);
    char id[ID_LEN + 1];
    int rc = ENT_MISSING;
    entry_info info;
    if (text && !is_disabled(c)) {
        text_id(text, tlen, id);
        rc = entry_read(c, id, text, tlen, data, len, 1, next_stamp(c), &info);
        free(info.key);
    }
    free(text);
    if (rc == ENT_REFUSED) {
        char path[PATH_MAX];
        if (entry_path(c, id, "bin", path) < 0) snprintf(path, sizeof path, "entry %s", id);
        refuse(c, path, info.why);
    }
    char who[TRIAL_TEXT_MAX];
    int set_aside;
    if (rc == ENT_OK && trial_state(c, id, info.sum, 1, &set_aside, who) == TRIAL_CRASHED) {
        /* its code killed the last process that ran it: a miss, compiled afresh */
        free(*data);
        *data = NULL;
        *len = 0;
        rc = ENT_MISSING;
        count(c, &c->crashed);
        char path[PATH_MAX];
        if (entry_path(c, id, "crash", path) < 0) snprintf(path, sizeof path, "%s.crash", id);
        warn_once(c, "kernel cache: entry %s crashed the process that last ran it (%s); %s%s, "
                     "compiled afresh", id, who[0] ? who : "unknown", set_aside ? "set aside as " :
                     "left in place", set_aside ? path : "");
    }
    count(c, rc == ENT_OK ? &c->hits : &c->misses);
    return rc == ENT_OK;
}

void cache_reject(cache *c, const cache_key *key, const char *why)
{
    size_t tlen;
    char *text = c ? key_text(key, &tlen) : NULL;
    if (!text) return;
    char id[ID_LEN + 1], bin[ID_LEN + 8], bad[ID_LEN + 8], path[PATH_MAX];
    text_id(text, tlen, id);
    free(text);
    snprintf(bin, sizeof bin, "%s.bin", id);
    snprintf(bad, sizeof bad, "%s.bad", id);
    count(c, &c->rejected);
    const char *distrusted;
    char prefix[3] = {id[0], id[1], 0};
    int sub = is_writable(c) ? open_sub(c, prefix, 0, &distrusted) : -1;
    struct stat st;
    int set_aside = sub >= 0 && fstatat(sub, bin, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                    !distrust(c, &st, 0) && renameat(sub, bin, sub, bad) == 0;
    if (sub >= 0) close(sub);
    if (entry_path(c, id, "bad", path) < 0) snprintf(path, sizeof path, "%s.bad", id);
    warn_once(c, "kernel cache: entry %s did not load (%s); %s%s, compiled afresh", id,
              why && *why ? why : "unusable", set_aside ? "set aside as " : "left in place",
              set_aside ? path : "");
}

/* ---- scanning the folder ---- */

typedef struct scan_file {
    char id[ID_LEN + 1];
    char ext[9];
    uint64_t size;
    int64_t mtime;
} scan_file;

typedef struct scan_entry {
    const char *id;      /* into files */
    int64_t mtime;       /* of the .bin: last use */
    uint64_t size;       /* of all its files */
    int first, count;    /* its files, files[first .. first+count) */
    int has_bin;
} scan_entry;

typedef struct scan {
    scan_file *files;
    int nfiles, capfiles;
    scan_entry *entries; /* only those with a .bin */
    int n;
    uint64_t total;      /* bytes of the entries */
    int refused;         /* files and sub-folders not used: links, not ours, writable by others */
    int set_aside;       /* ID.bad files: entries that did not load (cache_reject) */
    int crashed;         /* ID.crash files: entries whose code killed the process running it */
} scan;

static int cmp_file(const void *a, const void *b)
{
    const scan_file *x = a, *y = b;
    int r = strcmp(x->id, y->id);
    return r ? r : strcmp(x->ext, y->ext);
}

static int cmp_entry_old_first(const void *a, const void *b)
{
    const scan_entry *x = a, *y = b;
    if (x->mtime != y->mtime) return x->mtime < y->mtime ? -1 : 1;
    return strcmp(x->id, y->id);
}

static int cmp_entry_new_first(const void *a, const void *b) { return cmp_entry_old_first(b, a); }

static int is_prefix_dir(const char *name)
{
    return strlen(name) == 2 && is_hex_lower(name, 2);
}

/* Parses "ID.ext" in folder sub; 0 when it is one of ours. */
static int parse_name(const char *sub, const char *name, scan_file *f)
{
    size_t n = strlen(name);
    if (n < ID_LEN + 2 || n > ID_LEN + 9 || name[ID_LEN] != '.' || !is_hex_lower(name, ID_LEN) ||
        memcmp(name, sub, 2))
        return -1;
    const char *ext = name + ID_LEN + 1;
    if (strcmp(ext, "bin") && strcmp(ext, "key") && strcmp(ext, "bad") && strcmp(ext, "run") &&
        strcmp(ext, "crash") && !valid_ext(ext))
        return -1;
    memcpy(f->id, name, ID_LEN);
    f->id[ID_LEN] = 0;
    snprintf(f->ext, sizeof f->ext, "%s", ext);
    return 0;
}

static void scan_free(scan *s)
{
    free(s->files);
    free(s->entries);
    memset(s, 0, sizeof *s);
}

/* Removes an entry: the .bin first, so that it stops being visible before its companions go.
 * Only files of ours, in a sub-folder of ours reached without a link. */
static void remove_entry(cache *c, const scan *s, const scan_entry *e)
{
    char prefix[3] = {e->id[0], e->id[1], 0}, name[ID_LEN + 16];
    const char *why;
    int sub = open_sub(c, prefix, 0, &why);
    if (sub < 0) return;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < e->count; i++) {
            const scan_file *f = &s->files[e->first + i];
            struct stat st;
            if ((pass == 0) != !strcmp(f->ext, "bin")) continue;
            snprintf(name, sizeof name, "%s.%s", f->id, f->ext);
            if (fstatat(sub, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_uid == c->euid)
                unlinkat(sub, name, 0);
        }
    close(sub);
}

/* Calls visit for every file in the cache folder's prefix sub-folders (fd: its sub-folder, st:
 * the file as found, never through a link). Sub-folders that are links, not ours or writable by
 * others are not entered, and count as refused. After each sub-folder, tries to remove it when
 * rmdir_after (it stays unless empty). Returns -1 when the folder cannot be read or visit returns
 * < 0 (which ends the walk), else 0. */
typedef struct walk_counts { int unopened, refused; } walk_counts;
typedef int (*file_visitor)(void *ctx, int fd, const char *prefix, const char *name,
                            const struct stat *st);
static int walk_files(cache *c, file_visitor visit, void *ctx, int rmdir_after, walk_counts *wc)
{
    int topfd = c->dirfd >= 0 ? openat(c->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    DIR *top = topfd >= 0 ? fdopendir(topfd) : NULL;
    if (!top) {
        if (topfd >= 0) close(topfd);
        return -1;
    }
    int rc = 0;
    struct dirent *d;
    while (rc == 0 && (d = readdir(top))) {
        if (!is_prefix_dir(d->d_name)) continue;
        const char *why;
        int fd = open_sub(c, d->d_name, 0, &why);
        DIR *sub = fd >= 0 ? fdopendir(fd) : NULL;
        if (!sub) {
            if (fd >= 0) close(fd);
            if (why) wc->refused++;
            else if (errno != ENOENT) wc->unopened++;
            continue;
        }
        struct dirent *e;
        while (rc == 0 && (e = readdir(sub))) {
            struct stat st;
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
                fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                continue;
            rc = visit(ctx, fd, d->d_name, e->d_name, &st) < 0 ? -1 : 0;
        }
        closedir(sub);
        if (rmdir_after) unlinkat(dirfd(top), d->d_name, AT_REMOVEDIR); /* fails harmlessly when not empty */
    }
    closedir(top);
    return rc;
}

typedef struct scan_walk { cache *c; scan *s; int tidy; int64_t stale; } scan_walk;

/* scan_dir's visitor: a file of ours named like an entry's is listed; one that is not ours, a
 * link or not a regular file counts as refused; a temporary file is skipped, and removed when
 * tidying and stale. */
static int scan_visit(void *ctx, int fd, const char *prefix, const char *name, const struct stat *st)
{
    scan_walk *w = ctx;
    scan *s = w->s;
    int temporary = !strncmp(name, ".tmp.", 5);
    scan_file f;
    if (!temporary && parse_name(prefix, name, &f) < 0) return 0;
    if (distrust(w->c, st, 0)) {
        s->refused++;
        return 0;
    }
    if (temporary) {
        if (w->tidy && ts_ns(st->st_mtim) < w->stale) unlinkat(fd, name, 0);
        return 0;
    }
    f.size = (uint64_t)st->st_size;
    f.mtime = ts_ns(st->st_mtim);
    if (s->nfiles == s->capfiles) {
        int nc = s->capfiles ? 2 * s->capfiles : 64;
        scan_file *nf = realloc(s->files, sizeof *nf * (size_t)nc);
        if (!nf) return -1;
        s->files = nf;
        s->capfiles = nc;
    }
    s->files[s->nfiles++] = f;
    return 0;
}

/* Lists the entries of the folder. tidy: remove temporary files and companions without a .bin
 * left for over STALE_NS (by a process that died mid-put). Returns 0 or -1 (folder unreadable). */
static int scan_dir(cache *c, scan *s, int tidy)
{
    memset(s, 0, sizeof *s);
    int64_t stale = now_ns() - STALE_NS;
    scan_walk w = {c, s, tidy, stale};
    walk_counts wc = {0, 0};
    if (walk_files(c, scan_visit, &w, 0, &wc) < 0) {
        scan_free(s);
        return -1;
    }
    s->refused += wc.refused;
    if (s->nfiles == 0) return 0;
    qsort(s->files, (size_t)s->nfiles, sizeof *s->files, cmp_file);
    s->entries = malloc(sizeof *s->entries * (size_t)s->nfiles);
    if (!s->entries) { scan_free(s); return -1; }
    for (int i = 0; i < s->nfiles;) {
        scan_entry e = {.id = s->files[i].id, .first = i};
        int64_t newest = 0;
        for (; i < s->nfiles && !strcmp(s->files[i].id, e.id); i++) {
            e.count++;
            e.size += s->files[i].size;
            if (s->files[i].mtime > newest) newest = s->files[i].mtime;
            if (!strcmp(s->files[i].ext, "bin")) { e.has_bin = 1; e.mtime = s->files[i].mtime; }
            if (!strcmp(s->files[i].ext, "bad")) s->set_aside++;
            if (!strcmp(s->files[i].ext, "crash")) s->crashed++;
        }
        if (e.has_bin) {
            s->entries[s->n++] = e;
            s->total += e.size;
        } else if (tidy && newest < stale) {
            remove_entry(c, s, &e);
        }
    }
    return 0;
}

/* Removes the least recently used entries until the folder is under its cap. */
static void evict(cache *c)
{
    scan s;
    if (scan_dir(c, &s, 1) < 0) return;
    if (s.total > c->cap && s.n > 0) {
        qsort(s.entries, (size_t)s.n, sizeof *s.entries, cmp_entry_old_first);
        for (int i = 0; i < s.n && s.total > c->cap; i++) {
            remove_entry(c, &s, &s.entries[i]);
            s.total -= s.entries[i].size;
            count(c, &c->evictions);
        }
    }
    scan_free(&s);
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
    int sub = open_sub(c, prefix, 1, refused);
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
        err = write_tmp(c, sub, id, "bin", p, l, 3, 1, next_stamp(c), tmp[BIN]);
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
    if (!c || (!data && len) || (source && (!source_ext || !valid_ext(source_ext)))) return -1;
    size_t tlen;
    char *text = key_text(key, &tlen);
    if (!text) return -1;
    if (!is_writable(c)) { free(text); return -1; }
    if (!data) data = "";

    char id[ID_LEN + 1];
    text_id(text, tlen, id);
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
        refuse(c, what, refused);
        return -1;
    }
    if (err) {
        turn_read_only(c, err); /* the one warning; entries already stored are still used */
        return -1;
    }
    count(c, &c->puts);
    evict(c);
    return 0;
}

/* ---- stats, list, clear ---- */

static void format_time(int64_t ns, char *buf, size_t n)
{
    time_t t = (time_t)(ns / 1000000000LL);
    struct tm tm;
    if (!localtime_r(&t, &tm) || !strftime(buf, n, "%Y-%m-%d %H:%M:%S", &tm))
        snprintf(buf, n, "?");
}

int cache_stats(cache *c, FILE *out)
{
    if (!c || !out) return -1;
    pthread_mutex_lock(&c->lock);
    int disabled = c->disabled, read_only = c->read_only;
    uint64_t hits = c->hits, misses = c->misses, puts = c->puts, ev = c->evictions;
    uint64_t refused = c->refused, rejected = c->rejected, crashed = c->crashed;
    pthread_mutex_unlock(&c->lock);
    fprintf(out, "folder: %s\n", c->dir[0] ? c->dir : "(none)");
    if (disabled) fprintf(out, "state: memory only (%s)\n", cache_warning(c));
    else if (read_only) fprintf(out, "state: read-only (%s)\n", cache_warning(c));
    else fprintf(out, "state: on disk\n");
    scan s;
    int rc = 0;
    if (!disabled && scan_dir(c, &s, 0) == 0) {
        int damaged = 0;
        for (int i = 0; i < s.n; i++) {
            entry_info info;
            int r = entry_read(c, s.entries[i].id, NULL, 0, NULL, NULL, 1, 0, &info);
            free(info.key);
            if (r == ENT_REFUSED) s.refused++;
            else if (r != ENT_OK) damaged++;
        }
        fprintf(out, "entries: %d (%d damaged)\n", s.n, damaged);
        fprintf(out, "refused: %d (links, files or folders not yours or writable by others, "
                     "not regular files)\n", s.refused);
        fprintf(out, "failed to load: %d (set aside as ID.bad and compiled afresh)\n", s.set_aside);
        fprintf(out, "crashed: %d (killed the process that ran them: set aside as ID.crash and "
                     "compiled afresh)\n", s.crashed);
        fprintf(out, "size: %" PRIu64 " bytes (%.1f MiB) of a cap of %" PRIu64 " bytes (%.1f MiB)\n",
                s.total, (double)s.total / 1048576.0, c->cap, (double)c->cap / 1048576.0);
        scan_free(&s);
    } else {
        if (!disabled) rc = -1;
        fprintf(out, "entries: 0\n");
    }
    fprintf(out, "this session: %" PRIu64 " hits, %" PRIu64 " misses, %" PRIu64 " puts, %" PRIu64
                 " evicted, %" PRIu64 " refused, %" PRIu64 " failed to load, %" PRIu64 " crashed\n",
            hits, misses, puts, ev, refused, rejected, crashed);
    return rc;
}

int cache_list(cache *c, FILE *out)
{
    if (!c || !out) return -1;
    if (is_disabled(c)) return 0;
    scan s;
    if (scan_dir(c, &s, 0) < 0) return -1;
    if (s.n > 1) qsort(s.entries, (size_t)s.n, sizeof *s.entries, cmp_entry_new_first);
    for (int i = 0; i < s.n; i++) {
        const scan_entry *e = &s.entries[i];
        char when[64];
        entry_info info;
        format_time(e->mtime, when, sizeof when);
        fprintf(out, "%s  %10" PRIu64 "  %s  ", e->id, e->size, when);
        int r = entry_read(c, e->id, NULL, 0, NULL, NULL, 0, 0, &info);
        if (r == ENT_OK) {
            for (char *k = info.key; *k; k++)
                if (*k != '\n' || k[1]) fputc(*k == '\n' ? ' ' : *k, out);
            fputc('\n', out);
            free(info.key);
        } else if (r == ENT_REFUSED) {
            fprintf(out, "(refused: %s)\n", info.why);
        } else {
            fprintf(out, "(damaged)\n");
        }
    }
    int n = s.n;
    scan_free(&s);
    return n;
}

typedef struct clear_walk { cache *c; int removed, failed; int64_t stale; } clear_walk;

/* cache_clear's visitor: every file of ours named like an entry's goes (a link of ours is
 * removed, never what it points to); a temporary file only when it is a leftover (a fresh one
 * belongs to a put in progress). Files of other users stay, and make the clear fail. */
static int clear_visit(void *ctx, int fd, const char *prefix, const char *name, const struct stat *st)
{
    clear_walk *w = ctx;
    int temporary = !strncmp(name, ".tmp.", 5);
    scan_file f;
    if (!temporary && parse_name(prefix, name, &f) < 0) return 0;
    if (st->st_uid != w->c->euid) {
        w->failed = 1;
        return 0;
    }
    if (temporary) {
        if (ts_ns(st->st_mtim) < w->stale) unlinkat(fd, name, 0);
        return 0;
    }
    if (unlinkat(fd, name, 0) < 0) {
        if (errno != ENOENT) w->failed = 1;
    } else if (!strcmp(f.ext, "bin")) {
        w->removed++;
    }
    return 0;
}

int cache_clear(cache *c)
{
    if (!c || is_disabled(c)) return -1;
    clear_walk w = {c, 0, 0, now_ns() - STALE_NS};
    walk_counts wc = {0, 0};
    if (walk_files(c, clear_visit, &w, 1, &wc) < 0) return -1;
    if (wc.refused) {
        char what[PATH_MAX + 32];
        snprintf(what, sizeof what, "%d sub-folder%s of %s", wc.refused, wc.refused == 1 ? "" : "s",
                 c->dir);
        refuse(c, what, "links, not yours, or writable by others; left as they are");
    }
    return w.failed || wc.unopened || wc.refused ? -1 : w.removed;
}

/* ---- explain ---- */

typedef struct outbuf { char *p; size_t n, used; } outbuf;

static void out_add(outbuf *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out_add(outbuf *o, const char *fmt, ...)
{
    if (o->used >= o->n) return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(o->p + o->used, o->n - o->used, fmt, ap);
    va_end(ap);
    if (w > 0) o->used += (size_t)w;
    if (o->used >= o->n) o->used = o->n;
}

/* A value, shortened to 12 characters and "…" when longer than 16. */
static void out_value(outbuf *o, const char *v, size_t len)
{
    if (!v) out_add(o, "absent");
    else if (len > 16) out_add(o, "%.12s…", v);
    else out_add(o, "%.*s", (int)len, v);
}

/* The value of component `name` in key text, or NULL; its length in *len. */
static const char *text_value(const char *text, const char *name, size_t *len)
{
    size_t nl = strlen(name);
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        if (!end) end = line + strlen(line);
        if ((size_t)(end - line) > nl && !strncmp(line, name, nl) && line[nl] == '=') {
            *len = (size_t)(end - line) - nl - 1;
            return line + nl + 1;
        }
        line = *end ? end + 1 : end;
    }
    return NULL;
}

/* How many of key's components the key text holds with the same value. */
static int shared_components(const cache_key *key, const char *text)
{
    int shared = 0;
    for (int i = 0; i < key->n; i++) {
        size_t len;
        const char *v = text_value(text, key->names[i], &len);
        if (v && len == strlen(key->values[i]) && !memcmp(v, key->values[i], len)) shared++;
    }
    return shared;
}

static int count_lines(const char *text)
{
    int n = 0;
    for (; *text; text++) n += *text == '\n';
    return n;
}

int cache_explain(cache *c, const cache_key *key, char *out, size_t out_len)
{
    if (!c || !out || out_len == 0) return -1;
    outbuf o = {out, out_len, 0};
    out[0] = 0;
    size_t tlen;
    char *text = key_text(key, &tlen);
    if (!text) {
        out_add(&o, "invalid key: 1 to %d components with distinct non-empty names, no '=' in a "
                    "name, no newline anywhere", CACHE_KEY_MAX);
        return -1;
    }
    if (is_disabled(c)) {
        out_add(&o, "miss: %s", cache_warning(c));
        free(text);
        return 0;
    }
    char id[ID_LEN + 1];
    text_id(text, tlen, id);
    entry_info info;
    int rc = entry_read(c, id, text, tlen, NULL, NULL, 1, 0, &info);
    free(text);
    switch (rc) {
    case ENT_OK: {
        char who[TRIAL_TEXT_MAX];
        free(info.key);
        if (trial_state(c, id, info.sum, 0, NULL, who) == TRIAL_CRASHED) {
            out_add(&o, "miss: entry %s crashed the process that last ran it (%s); the next run "
                        "sets it aside and compiles afresh", id, who[0] ? who : "unknown");
            return 0;
        }
        out_add(&o, "hit: entry %s", id);
        return 1;
    }
    case ENT_DAMAGED:
        out_add(&o, "miss: entry %s is damaged (short, garbled or failing its checksum); the "
                    "next put replaces it", id);
        return 0;
    case ENT_FORMAT:
        out_add(&o, "miss: entry %s was written in cache format %" PRIu32 ", this is format %d; "
                    "the next put replaces it", id, info.format, CACHE_FORMAT_VERSION);
        return 0;
    case ENT_OTHER_KEY:
        out_add(&o, "miss: entry %s holds another key (a hash collision); the next put replaces "
                    "it", id);
        return 0;
    case ENT_REFUSED:
        out_add(&o, "miss: entry %s is refused: it or its folder is %s (the cache uses only "
                    "regular files and folders of its own that nobody else can write)", id, info.why);
        return 0;
    default:
        break;
    }
    /* No entry under this id: find the nearest one. */
    scan s;
    if (scan_dir(c, &s, 0) < 0) {
        out_add(&o, "miss: the cache folder %s cannot be read", c->dir);
        return 0;
    }
    char *best = NULL;
    int best_shared = -1;
    int64_t best_time = 0;
    char best_id[ID_LEN + 1] = "";
    for (int i = 0; i < s.n; i++) {
        if (entry_read(c, s.entries[i].id, NULL, 0, NULL, NULL, 0, 0, &info) != ENT_OK) continue;
        int sh = shared_components(key, info.key);
        if (sh > best_shared || (sh == best_shared && s.entries[i].mtime > best_time)) {
            free(best);
            best = info.key;
            best_shared = sh;
            best_time = s.entries[i].mtime;
            memcpy(best_id, s.entries[i].id, sizeof best_id);
        } else {
            free(info.key);
        }
    }
    scan_free(&s);
    if (!best) {
        out_add(&o, "miss: the cache holds no entries");
        return 0;
    }
    int stored_n = count_lines(best);
    out_add(&o, "miss: nearest entry %.12s (%d of %d components shared) differs in", best_id,
            best_shared, key->n > stored_n ? key->n : stored_n);
    const char *sep = " ";
    for (int i = 0; i < key->n; i++) {
        size_t len, alen = strlen(key->values[i]);
        const char *v = text_value(best, key->names[i], &len);
        if (v && len == alen && !memcmp(v, key->values[i], len)) continue;
        out_add(&o, "%s%s (", sep, key->names[i]);
        out_value(&o, key->values[i], alen);
        out_add(&o, " vs ");
        out_value(&o, v, v ? len : 0);
        out_add(&o, ")");
        sep = ", ";
    }
    /* components the stored entry has and the asked key lacks */
    for (const char *line = best; *line;) {
        const char *end = strchr(line, '\n'), *eq = strchr(line, '=');
        if (!end) end = line + strlen(line);
        if (eq && eq < end) {
            int found = 0;
            for (int i = 0; i < key->n && !found; i++)
                found = strlen(key->names[i]) == (size_t)(eq - line) &&
                        !strncmp(key->names[i], line, (size_t)(eq - line));
            if (!found) {
                out_add(&o, "%s%.*s (absent vs ", sep, (int)(eq - line), line);
                out_value(&o, eq + 1, (size_t)(end - eq - 1));
                out_add(&o, ")");
                sep = ", ";
            }
        }
        line = *end ? end + 1 : end;
    }
    free(best);
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
