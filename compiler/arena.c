/* arena.c — the bump allocator behind every compile (see arena.h). */
#include "arena.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct arena_block {
    arena_block *next;
    size_t used, size;
    _Alignas(16) unsigned char data[];
};

static void *out_of_memory(arena *a)
{
    a->failed = 1;
    if (a->on_failure) longjmp(*a->on_failure, 1);
    return NULL;
}

void arena_fail(arena *a) { out_of_memory(a); }

void *arena_alloc(arena *a, size_t size)
{
    if (size > ((size_t)-1) / 2) return out_of_memory(a);
    size = (size + 15) & ~(size_t)15;
    arena_block *b = a->head;
    if (!b || b->size - b->used < size) {
        size_t bsize = size > 65536 ? size : 65536;
        b = malloc(sizeof *b + bsize);
        if (!b) return out_of_memory(a);
        b->next = a->head;
        b->used = 0;
        b->size = bsize;
        a->head = b;
    }
    void *p = b->data + b->used;
    b->used += size;
    a->total += size;
    memset(p, 0, size);
    return p;
}

void *arena_grow(arena *a, void *old, size_t old_size, size_t new_size)
{
    void *p = arena_alloc(a, new_size);
    if (!p) return NULL;
    if (old && old_size) memcpy(p, old, old_size < new_size ? old_size : new_size);
    return p;
}

char *arena_strndup(arena *a, const char *s, size_t n)
{
    char *p = arena_alloc(a, n + 1);
    if (!p) return NULL;
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

char *arena_strdup(arena *a, const char *s) { return arena_strndup(a, s, strlen(s)); }

char *arena_printf(arena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *p = n < 0 ? NULL : arena_alloc(a, (size_t)n + 1);
    if (!p) return NULL;
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

void arena_free(arena *a)
{
    arena_block *b = a->head;
    while (b) {
        arena_block *next = b->next;
        free(b);
        b = next;
    }
    a->head = NULL;
    a->total = 0;
    a->failed = 0;
}
