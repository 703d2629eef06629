/* cache_internal.h — what the kernel cache's modules share (not part of its interface: cache.h).
 *
 *   cache.c          the store: the handle (open, state, the one warning), keys and entry ids,
 *                    get and put (atomic writes), sizes
 *   cache_trust.c    what the cache trusts: ownership and mode checks, reading and verifying an
 *                    entry, trials (cache_trial_*), entries set aside (cache_reject)
 *   cache_scan.c     the folder as a whole: walking and listing its entries, eviction under the
 *                    cap, cache_stats, cache_list, cache_clear
 *   cache_explain.c  why a lookup hits or misses (cache_explain)
 *
 * Every function here is internal to the library (hidden from libpdejit.so). */
#ifndef PJ_CACHE_INTERNAL_H
#define PJ_CACHE_INTERNAL_H
#include "cache.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

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
    /* what eviction knows of the folder: the total of its last scan plus the bytes put since
       (known: a scan was made) */
    int known;
    uint64_t known_total;
    uint64_t scans, examined; /* eviction's scans, and the files they examined (cache_scan_work) */
};

/* ---- small helpers (byte order, clocks, whole reads and writes) ---- */

static inline void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static inline void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static inline uint32_t get32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--) v = v << 8 | p[i];
    return v;
}
static inline uint64_t get64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static inline int64_t ts_ns(struct timespec t) { return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec; }

static inline int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return ts_ns(t);
}

static inline void set_times(int fd, int64_t ns)
{
    struct timespec ts[2];
    ts[0].tv_sec = ns / 1000000000LL;
    ts[0].tv_nsec = ns % 1000000000LL;
    ts[1] = ts[0];
    (void)futimens(fd, ts); /* recency is a hint: failure (another owner) is harmless */
}

static inline ssize_t read_full(int fd, void *buf, size_t n)
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

static inline int write_full(int fd, const void *buf, size_t n)
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

static inline int is_hex_lower(const char *s, int n)
{
    for (int i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
    return 1;
}

/* ---- the handle (cache.c) ---- */

/* Sets the one warning about a single entry, unless the handle already has one. */
void cache_warn_once(cache *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* 1 while puts are written (neither read-only nor memory-only). */
int cache_is_writable(cache *c);
/* 1 once memory-only. */
int cache_is_disabled(cache *c);
/* One more of a handle's counters (c->hits ...), under its lock. */
void cache_count(cache *c, uint64_t *counter);
/* A source extension: 1–8 lowercase letters or digits, not one the cache uses itself. */
int cache_valid_ext(const char *e);
/* The canonical text of a key ("name=value\n" sorted by name), malloc'd; NULL when malformed. */
char *cache_key_text(const cache_key *k, size_t *len);
/* The entry id of a key text: its XXH3-128, 32 lowercase hex digits. */
void cache_text_id(const char *text, size_t len, char id[ID_LEN + 1]);
/* DIR/ab/ID.ext, for messages. 0, or -1 when too long. */
int cache_entry_path(const cache *c, const char *id, const char *ext, char out[PATH_MAX]);

/* ---- trust and entries (cache_trust.c) ---- */

/* Why a file or folder found in the cache is not used, or NULL when it is. */
const char *cache_distrust(const cache *c, const struct stat *st, int want_dir);
/* Opens prefix sub-folder `name` ("ab") of the cache folder, never through a link, creating it
 * when asked. Returns its fd; or -1 with *why set (refused) or errno set (ENOENT: absent). */
int cache_open_sub(cache *c, const char *name, int create, const char **why);
/* Counts a refused file or folder and sets the one warning naming it. */
void cache_refuse(cache *c, const char *what, const char *why);

enum { ENT_OK, ENT_MISSING, ENT_DAMAGED, ENT_FORMAT, ENT_OTHER_KEY, ENT_REFUSED };

typedef struct entry_info {
    uint32_t format;     /* as found in the header */
    char *key;           /* malloc'd key text when asked for and the header is sound */
    const char *why;     /* ENT_REFUSED: the reason (static text) */
    unsigned char sum[16]; /* ENT_OK: the payload's checksum, from the header */
} entry_info;

/* Reads entry `id` (see cache_trust.c). Returns an ENT_ code. */
int cache_entry_read(cache *c, const char *id, const char *want, size_t want_len, void **data,
                     size_t *len, int verify, int64_t touch, entry_info *info);

/* The marker's text: the payload's checksum (32 hex digits), then who wrote it. */
#define TRIAL_TEXT_MAX 96

enum { TRIAL_NONE, TRIAL_RUNNING, TRIAL_CRASHED };

/* What the marker ID.run says about an entry: TRIAL_NONE, TRIAL_RUNNING or TRIAL_CRASHED (see
 * cache_trust.c). */
int cache_trial_state(cache *c, const char *id, const unsigned char sum[16], int settle,
                      int *set_aside, char who[TRIAL_TEXT_MAX]);

/* ---- the folder (cache_scan.c) ---- */

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

/* Lists the entries of the folder (tidy: leftovers removed). Returns 0 or -1 (unreadable). */
int cache_scan_dir(cache *c, scan *s, int tidy);
void cache_scan_free(scan *s);
/* After a put of `added` bytes: removes the least recently used entries until the folder is
 * under its cap, scanning it only when this handle's count says it may be over (cache_scan.c). */
void cache_evict(cache *c, uint64_t added);

#endif
