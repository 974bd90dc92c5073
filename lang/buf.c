/* buf.c — growable byte buffer and aborting allocators (see buf.h). */
#include "buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../store/bigendian.h"

static void
out_of_memory(void)
{
    fputs("queuefs: out of memory\n", stderr);
    abort();
}

void *
lang_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        out_of_memory();
    return p;
}

void *
lang_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        out_of_memory();
    return p;
}

void *
lang_xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p)
        out_of_memory();
    return p;
}

char *
lang_xstrndup(const char *s, size_t n)
{
    char *d = lang_xmalloc(n + 1);
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

char *
lang_xstrdup(const char *s)
{
    return lang_xstrndup(s, strlen(s));
}

static void
buf_reserve(Buf *b, size_t extra)
{
    if (b->len + extra + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + extra + 1)
        cap *= 2;
    b->data = lang_xrealloc(b->data, cap);
    b->cap = cap;
}

void
lang_buf_append(Buf *b, const void *p, size_t len)
{
    buf_reserve(b, len);
    if (len)
        memcpy(b->data + b->len, p, len);
    b->len += len;
    b->data[b->len] = '\0';
}

void
lang_buf_puts(Buf *b, const char *s)
{
    lang_buf_append(b, s, strlen(s));
}

void
lang_buf_putc(Buf *b, char c)
{
    lang_buf_append(b, &c, 1);
}

void
lang_buf_printf(Buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    buf_reserve(b, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void
lang_buf_put_digits(Buf *b, uint64_t v, int width)
{
    char digits[20]; /* UINT64_MAX has 20 */
    int n = 0;
    do {
        digits[sizeof digits - 1 - n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (; width > n; width--)
        lang_buf_putc(b, '0');
    lang_buf_append(b, digits + sizeof digits - n, (size_t)n);
}

void
lang_buf_put_int(Buf *b, int64_t v)
{
    if (v < 0)
        lang_buf_putc(b, '-');
    /* The magnitude as unsigned, so INT64_MIN too. */
    lang_buf_put_digits(b, v < 0 ? -(uint64_t)v : (uint64_t)v, 1);
}

void
lang_buf_put_u64be(Buf *b, uint64_t v)
{
    lang_buf_put_be(b, v, 8);
}

void
lang_buf_put_be(Buf *b, uint64_t v, int n)
{
    unsigned char bytes[8];
    be_put(bytes, v, n);
    lang_buf_append(b, bytes, (size_t)n);
}

void
lang_buf_reset(Buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

void
lang_buf_free(Buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

char *
lang_buf_steal(Buf *b)
{
    char *s = b->data ? b->data : lang_xstrdup("");
    b->data = NULL;
    b->len = b->cap = 0;
    return s;
}
