/* cache.h — the on-disk kernel cache: opaque blobs (object files, cubins) kept under a key of
 * named components, so that the next run loads its kernels in milliseconds.
 *
 * The key is a set of components "name=value" filled by the caller: the hash of the canonical
 * kernel IR, the back end, the target, toolchain versions, every codegen option and the caller's
 * own format version. Its canonical text is one "name=value\n" line per component, sorted by
 * name (so the order the caller adds them in does not matter); the entry id is the XXH3-128 of
 * that text, written as 32 lowercase hex digits.
 *
 * Layout under the cache folder (cache_open says how the folder is chosen):
 *     ab/ab12…ef.bin        the entry: header, key text, payload; its presence is the commit point
 *     ab/ab12…ef.key        the canonical key text, for people and `pdejit cache explain`
 *     ab/ab12…ef.ll | .cu   the generated source (LLVM IR text, CUDA C), for inspection
 *     ab/.tmp.*             files being written; renamed into place once complete
 *     ab/ab12…ef.bad        an entry that did not load (cache_reject), set aside
 *     ab/ab12…ef.run        the entry's code on trial in a running process (cache_trial_begin)
 *     ab/ab12…ef.crash      an entry whose code killed the process that ran it, set aside
 * where "ab" is the first two hex digits of the id. The .bin file starts with a 40-byte header,
 * little-endian: magic "PJKCACHE" (8 bytes), CACHE_FORMAT_VERSION (u32), key text length (u32),
 * payload length (u64), XXH3-128 of the payload (16 bytes, canonical big-endian form); then the
 * key text, then the payload. A load checks all of it: a short, zeroed, garbled or foreign-format
 * file, or one whose key text differs (a hash collision), is a miss, and the next put replaces it.
 *
 * Writes go to a temporary file in the entry's folder and are rename()d into place, so readers
 * and concurrent writers (threads or processes) only ever see complete entries. The blob is not
 * fsync'd (that took 5-20 ms of a cold run on a busy machine): an entry torn by a power loss
 * fails the load's length and checksum checks, is a miss, and is compiled and stored again. The
 * .bin file's modification time is its last use: a hit refreshes it, and a put that takes the
 * folder over its size cap removes the least recently used entries until it fits.
 *
 * Trust (docs/cache.md): the folders it creates are 0700 and the files 0600. The cache uses only
 * what this process's user owns and nobody else can write: a cache folder, prefix sub-folder or
 * entry that is writable by group or others, owned by another user, a symbolic link, or not a
 * regular file (folder) is refused: a miss, counted, with the one warning; it is never followed,
 * opened in a blocking way, replaced or removed. Every file is reached through the cache folder's
 * descriptor (openat, O_NOFOLLOW), so eviction and cache_clear never remove outside the folder.
 *
 * A folder that cannot be created, or is not trusted, turns the handle memory-only: gets miss,
 * puts keep nothing. A folder that cannot be written (read-only, full, no permission), at open or
 * when a put fails part-way, turns the handle read-only: gets still hit, puts keep nothing. Either
 * way cache_warning() holds one message for the caller to print. Library code never prints.
 *
 * All functions are safe to call from several threads on one handle. */
#ifndef PJ_CACHE_H
#define PJ_CACHE_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CACHE_FORMAT_VERSION 1             /* of the .bin container, not of the payload */
#define CACHE_KEY_MAX 16                   /* components in one key */
#define CACHE_DEFAULT_CAP (256ull << 20)   /* bytes */

/* A key: n components; the strings are the caller's (not copied beyond the call). A name is
 * non-empty and holds neither '=' nor '\n'; a value holds no '\n'; names are distinct. */
typedef struct cache_key {
    const char *names[CACHE_KEY_MAX];
    const char *values[CACHE_KEY_MAX];
    int n;
} cache_key;

typedef struct cache cache;

/* Appends name=value to k (pointers kept, not copied). Returns 0, or -1 when k is full. */
int cache_key_add(cache_key *k, const char *name, const char *value);

/* Opens the cache in `dir`, created with its parents when missing. dir NULL: $PDEJIT_CACHE_DIR,
 * else $XDG_CACHE_HOME/pdejit, else $HOME/.cache/pdejit. cap_bytes 0: $PDEJIT_CACHE_MAX (bytes,
 * or with a K/M/G/T suffix, powers of 1024), else CACHE_DEFAULT_CAP. Always returns a handle
 * (memory-only when the folder is unusable; see cache_warning), NULL only when out of memory.
 * Free it with cache_close. */
cache *cache_open(const char *dir, uint64_t cap_bytes);
void cache_close(cache *c);

/* NULL, or the one message the caller should print (e.g. "kernel cache is read-only: /x:
 * Read-only file system; kernels found there are used, new ones are kept in memory only"). Owned
 * by the handle. It holds the first problem found (a bad $PDEJIT_CACHE_MAX, the folder unusable,
 * an entry refused or set aside by cache_reject) and is replaced at most once, when the handle
 * turns read-only or memory-only after another warning; later problems are counted (cache_stats)
 * without a new message. A caller that printed it once need print it again only if it changed. */
const char *cache_warning(cache *c);
/* The folder in use (owned by the handle; "" when none could be determined). */
const char *cache_dir(cache *c);
/* 1 while entries are read from disk (read-only or not), 0 once memory-only. */
int cache_on_disk(cache *c);
/* 1 while puts are written to disk, 0 once read-only or memory-only. */
int cache_writable(cache *c);

/* Looks a key up. Returns 1 on a hit, with *data a malloc'd copy of the payload (the caller frees
 * it) and *len its length; 0 on a miss (nothing allocated), including a damaged entry, a
 * malformed key, a memory-only handle, an entry refused (see Trust: the one warning) or one
 * whose code crashed on trial (see Trials). A hit marks the entry most recently used. */
int cache_get(cache *c, const cache_key *key, void **data, size_t *len);

/* The caller could not use what cache_get returned for key (an object that does not load: made
 * for another CPU, or corrupt under a valid checksum). The entry is set aside as ID.bad (when
 * the handle can write), so the next put stores a fresh one, cache_stats counts it ("failed to
 * load") and eviction or cache_clear removes it; the one warning names it. why: the loader's
 * message (may be NULL). */
void cache_reject(cache *c, const cache_key *key, const char *why);

/* Trials. A checksum cannot tell whether an entry's code crashes (an object for a newer CPU under
 * the same key dies with SIGILL; a loader may abort on a bad object). So the caller puts a hit on
 * trial before it loads and first runs its code, and ends the trial once that code ran and
 * returned (or will not run). The trial is the marker ab/ID.run, holding the payload's checksum
 * and the process id, locked (flock) by this process. A process that dies in between (a crash, an
 * abort, a kill) leaves the marker unlocked behind it: the next cache_get of that entry treats
 * the entry as crashed — a miss; the entry set aside as ID.crash (when the handle can write), so
 * the next put stores a fresh one; counted by cache_stats ("crashed"); the one warning names it.
 * A marker locked by a live process (the same entry on trial there) is left alone; one holding
 * another checksum (the entry was replaced since) is removed. */
typedef struct cache_trial {
    int fd;                /* the locked marker, -1 when none */
    char id[33];
} cache_trial;

/* Puts the entry of key, whose payload cache_get returned as data[0..len), on trial. Returns 0
 * with *t holding the marker, or -1 with t->fd = -1 when none was made (a read-only or
 * memory-only handle, the same entry on trial in another process or handle, a write failure):
 * the code then runs unmarked. */
int cache_trial_begin(cache *c, const cache_key *key, const void *data, size_t len, cache_trial *t);
/* Ends a trial: the marker removed (nothing when t->fd < 0). */
void cache_trial_end(cache *c, cache_trial *t);

/* Stores data[0..len) under key, replacing any entry there, with `source` (NUL-terminated, may be
 * NULL) kept beside it as ID.<source_ext> ("ll", "cu": 1–8 lowercase letters or digits, not "bin",
 * "key" or "bad"). Nothing is kept from the caller's buffers. Returns 0 once stored; -1 when not stored:
 * a malformed key or extension, a read-only or memory-only handle, a failed write (the handle turns
 * read-only and cache_warning says why; no part of the entry becomes visible), or an entry file
 * of another user's in the way (not replaced; the one warning). May evict the least recently
 * used entries to keep the folder under its cap. */
int cache_put(cache *c, const cache_key *key, const void *data, size_t len, const char *source,
              const char *source_ext);

/* The work eviction did on this handle (tests): the folder scans it made, and the files those
 * scans examined (stat'ed). Only the cache's own files are examined: a name that is not an
 * entry's is passed over unread, and a put that leaves the folder under its cap scans nothing. */
void cache_scan_work(cache *c, uint64_t *scans, uint64_t *examined);

/* For `pdejit cache stats|list|clear|explain`. */
/* Folder, state, entry count (every entry's checksum verified), the files and sub-folders
 * refused, the entries set aside by cache_reject and as crashed, size against the cap, and this
 * handle's hits, misses, puts, evictions, refusals, rejections and crashes found. Returns 0, or -1 when the folder cannot be
 * read. */
int cache_stats(cache *c, FILE *out);
/* One line per entry, most recently used first: id, bytes, last use (local time), key text on
 * one line. Returns the number of entries, or -1. */
int cache_list(cache *c, FILE *out);
/* Removes every entry of its own (and leftover temporary files), never through a link and never
 * another user's file. Returns the number of entries removed, or -1 when memory-only or something
 * could not be removed (a file or sub-folder refused stays, with the one warning). */
int cache_clear(cache *c);
/* Explains a lookup in out (always NUL-terminated): "hit: entry ID", or "miss: …" saying why —
 * the entry is damaged or of another format, its code crashed the process that last ran it, or naming the nearest stored entry (the one sharing
 * the most components, the most recent on a tie) and each component that differs, as
 * "name (asked vs stored)", e.g. "miss: nearest entry 3fa2c1d09e8b (5 of 6 components shared)
 * differs in ir (a1b2… vs 77c0…)". Long values are shortened with "…". Returns 1 hit, 0 miss,
 * -1 for a malformed key. */
int cache_explain(cache *c, const cache_key *key, char *out, size_t out_len);

/* Parses a size: decimal bytes, optionally followed by K, M, G or T (powers of 1024, either case,
 * with an optional "B" or "iB"). Returns 0 with *bytes > 0, or -1. */
int cache_parse_size(const char *text, uint64_t *bytes);

#endif
