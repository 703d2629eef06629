/* fuzz_cache_entry.c — libFuzzer target: the bytes are the contents of a cache entry file.
 *
 * They are written as the entry of a fixed key in a temporary cache folder (cache_fixture.h),
 * then read back through the public cache API as a run and `pdejit cache` would: cache_get,
 * cache_explain, cache_stats and cache_list; the folder is emptied after each input. Nothing
 * may crash, leak or hand back a payload that fails the checks cache.h promises: on a hit the
 * bytes must hold the header's magic and format, the payload must be the bytes after the key
 * text, of the header's length, with the header's XXH3-128. A payload that passes a lookup
 * without them ends the run (abort), as a crash does. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include "cache.h"
#include "cache_fixture.h"

enum { HEADER_BYTES = 40 }; /* magic 8, format 4, key length 4, payload length 8, XXH3-128 16 */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static cache_fixture fixture;
static int fixture_ready;
static FILE *sink; /* /dev/null: where stats and list write */

static void close_fixture(void)
{
    fixture_close(&fixture);
    if (sink) fclose(sink);
}

static uint64_t little_endian(const uint8_t *p, int bytes)
{
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* The checks a hit must pass (see cache.h); aborts when the loader let a payload through
 * without them. */
static void check_hit(const uint8_t *entry, size_t size, const void *payload, size_t len)
{
    int sound = size >= HEADER_BYTES && !memcmp(entry, "PJKCACHE", 8) &&
                little_endian(entry + 8, 4) == CACHE_FORMAT_VERSION;
    uint64_t key_len = sound ? little_endian(entry + 12, 4) : 0;
    sound = sound && key_len <= size - HEADER_BYTES && little_endian(entry + 16, 8) == len &&
            len == size - HEADER_BYTES - key_len &&
            (len == 0 || !memcmp(payload, entry + HEADER_BYTES + key_len, len));
    if (sound) {
        XXH128_canonical_t sum;
        XXH128_canonicalFromHash(&sum, XXH3_128bits(payload, len));
        sound = !memcmp(sum.digest, entry + 24, 16);
    }
    if (!sound) {
        fprintf(stderr, "fuzz_cache_entry: cache_get handed back a %zu-byte payload from an entry that fails "
                        "its checks\n", len);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!fixture_ready) {
        char err[PATH_MAX + 128];
        static const char seed_payload[] = "an object file";
        if (fixture_open(&fixture, seed_payload, sizeof seed_payload, err, sizeof err) < 0) {
            fprintf(stderr, "fuzz_cache_entry: %s\n", err);
            abort();
        }
        sink = fopen("/dev/null", "w");
        fixture_ready = 1;
        atexit(close_fixture);
    }
    if (fixture_write_entry(&fixture, data, size) < 0) {
        fprintf(stderr, "fuzz_cache_entry: cannot write %s\n", fixture.entry_path);
        abort();
    }
    cache *c = cache_open(fixture.root, 0);
    if (!c) return 0;
    void *payload = NULL;
    size_t len = 0;
    if (cache_get(c, &fixture.key, &payload, &len)) check_hit(data, size, payload, len);
    free(payload);
    char why[1024];
    (void)cache_explain(c, &fixture.key, why, sizeof why);
    if (sink) {
        (void)cache_stats(c, sink);
        (void)cache_list(c, sink);
    }
    (void)cache_clear(c);
    cache_close(c);
    return 0;
}
