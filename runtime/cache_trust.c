/* cache_trust.c — what the kernel cache trusts (cache.h, Trust; cache_internal.h): only files and
 * folders of this process's user that nobody else can write, reached through the cache folder's
 * descriptor without following a link; reading and verifying an entry (header, key text,
 * checksum); trials of an entry's code (cache_trial_*) and entries set aside (cache_reject). */
#include "cache_internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <xxhash.h>

/* ---- trust: what the cache reads, writes and removes ---- */

/* Why a file or folder found in the cache is not used, or NULL when it is: only a regular file
 * (a real folder) owned by this process's user that nobody else can write. A symbolic link is
 * never followed (it is judged as itself, a link). */
const char *cache_distrust(const cache *c, const struct stat *st, int want_dir)
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
int cache_open_sub(cache *c, const char *name, int create, const char **why)
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
            (*why = cache_distrust(c, &st, 1)))
            return -1;
        errno = err;
        return -1;
    }
    if (fstat(fd, &st) < 0 || (*why = cache_distrust(c, &st, 1))) {
        int err = errno;
        close(fd);
        errno = *why ? EPERM : err;
        return -1;
    }
    return fd;
}

/* Counts a refused file or folder and sets the one warning naming it. */
void cache_refuse(cache *c, const char *what, const char *why)
{
    cache_count(c, &c->refused);
    cache_warn_once(c, "kernel cache: refused %s: %s (the cache uses only files and folders of its own "
                       "that nobody else can write); compiled afresh, inspect and remove it", what, why);
}

/* ---- reading an entry ---- */

/* Opens entry file ID.ext for reading: only a regular file of ours in a sub-folder of ours,
 * never through a link, never blocking (a named pipe is refused before it is read). Returns the
 * fd, or -1 with *rc ENT_MISSING, ENT_REFUSED (*why says why) or ENT_DAMAGED. */
/* cache_distrust's reason for an entry's prefix sub-folder, said of the folder (the warning
 * names the entry's file). */
static const char *folder_why(const char *why)
{
    static const char *const said[][2] = {
        {"a symbolic link", "its folder is a symbolic link"},
        {"not a folder", "its folder is not a folder"},
        {"owned by another user", "its folder is owned by another user"},
        {"writable by group or others", "its folder is writable by group or others"},
    };
    for (size_t i = 0; i < sizeof said / sizeof *said; i++)
        if (!strcmp(why, said[i][0])) return said[i][1];
    return why;
}

static int entry_open(cache *c, const char *id, const char *ext, int *rc, const char **why)
{
    char prefix[3] = {id[0], id[1], 0}, name[ID_LEN + 16];
    snprintf(name, sizeof name, "%s.%s", id, ext);
    int sub = cache_open_sub(c, prefix, 0, why);
    if (sub < 0) {
        *rc = *why ? ENT_REFUSED : errno == ENOENT ? ENT_MISSING : ENT_DAMAGED;
        if (*why) *why = folder_why(*why);
        return -1;
    }
    struct stat st;
    int fd = -1;
    if (fstatat(sub, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        *rc = errno == ENOENT ? ENT_MISSING : ENT_DAMAGED;
    } else if ((*why = cache_distrust(c, &st, 0))) {
        *rc = ENT_REFUSED;
    } else if ((fd = openat(sub, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) < 0) {
        *rc = errno == ENOENT ? ENT_MISSING : errno == ELOOP ? ENT_REFUSED : ENT_DAMAGED;
        if (errno == ELOOP) *why = "a symbolic link";
    } else if (fstat(fd, &st) < 0 || (*why = cache_distrust(c, &st, 0))) { /* replaced meanwhile */
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
int cache_entry_read(cache *c, const char *id, const char *want, size_t want_len, void **data,
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

/* ---- trials: the first run of an entry's code ---- */

static void sum_hex(const unsigned char sum[16], char hex[33])
{
    for (int i = 0; i < 16; i++) sprintf(hex + 2 * i, "%02x", sum[i]);
}

/* What the marker ID.run says about the entry whose payload has checksum sum: none (no marker,
 * or a stale one: of another payload, or removed as we looked), running (locked by a live
 * process, this one included) or crashed (unlocked: the process that wrote it died before it
 * ended the trial). settle: remove a stale marker, and a crashed one after setting the entry
 * aside as ID.crash (*set_aside: 1 when it was). who: the marker's "pid N" text. Only a regular
 * file of ours in a sub-folder of ours is read; anything else is no marker. */
int cache_trial_state(cache *c, const char *id, const unsigned char sum[16], int settle,
                      int *set_aside, char who[TRIAL_TEXT_MAX])
{
    char prefix[3] = {id[0], id[1], 0}, name[ID_LEN + 8];
    const char *why;
    if (set_aside) *set_aside = 0;
    who[0] = 0;
    snprintf(name, sizeof name, "%s.run", id);
    int sub = cache_open_sub(c, prefix, 0, &why);
    if (sub < 0) return TRIAL_NONE;
    struct stat st;
    int state = TRIAL_NONE;
    int fd = openat(sub, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) < 0 || cache_distrust(c, &st, 0)) goto out;
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
    if (settle && cache_is_writable(c)) {
        char bin[ID_LEN + 8], crash[ID_LEN + 8];
        snprintf(bin, sizeof bin, "%s.bin", id);
        snprintf(crash, sizeof crash, "%s.crash", id);
        if (ours && set_aside)
            *set_aside = fstatat(sub, bin, &st, AT_SYMLINK_NOFOLLOW) == 0 && !cache_distrust(c, &st, 0) &&
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
    char *text = c && (data || !len) ? cache_key_text(key, &tlen) : NULL;
    if (!text) return -1;
    cache_text_id(text, tlen, t->id);
    free(text);
    if (!cache_is_writable(c)) return -1;
    char prefix[3] = {t->id[0], t->id[1], 0}, name[ID_LEN + 8];
    const char *why;
    snprintf(name, sizeof name, "%s.run", t->id);
    int sub = cache_open_sub(c, prefix, 0, &why);
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
        if (fstat(fd, &st) < 0 || cache_distrust(c, &st, 0) || flock(fd, LOCK_EX | LOCK_NB) < 0) {
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
    int sub = cache_open_sub(c, prefix, 0, &why);
    struct stat mine, there;
    /* removed only when it is still our marker (eviction or a clear may have removed it) */
    if (sub >= 0 && fstat(t->fd, &mine) == 0 && fstatat(sub, name, &there, AT_SYMLINK_NOFOLLOW) == 0 &&
        mine.st_dev == there.st_dev && mine.st_ino == there.st_ino)
        unlinkat(sub, name, 0); /* before the lock goes: nobody finds it unlocked */
    if (sub >= 0) close(sub);
    close(t->fd);
    t->fd = -1;
}

/* ---- entries that did not load ---- */

void cache_reject(cache *c, const cache_key *key, const char *why)
{
    size_t tlen;
    char *text = c ? cache_key_text(key, &tlen) : NULL;
    if (!text) return;
    char id[ID_LEN + 1], bin[ID_LEN + 8], bad[ID_LEN + 8], path[PATH_MAX];
    cache_text_id(text, tlen, id);
    free(text);
    snprintf(bin, sizeof bin, "%s.bin", id);
    snprintf(bad, sizeof bad, "%s.bad", id);
    cache_count(c, &c->rejected);
    const char *distrusted;
    char prefix[3] = {id[0], id[1], 0};
    int sub = cache_is_writable(c) ? cache_open_sub(c, prefix, 0, &distrusted) : -1;
    struct stat st;
    int set_aside = sub >= 0 && fstatat(sub, bin, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                    !cache_distrust(c, &st, 0) && renameat(sub, bin, sub, bad) == 0;
    if (sub >= 0) close(sub);
    if (cache_entry_path(c, id, "bad", path) < 0) snprintf(path, sizeof path, "%s.bad", id);
    cache_warn_once(c, "kernel cache: entry %s did not load (%s); %s%s, compiled afresh", id,
                    why && *why ? why : "unusable", set_aside ? "set aside as " : "left in place",
                    set_aside ? path : "");
}
