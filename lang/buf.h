/* buf.h — a growable byte buffer.
 *
 * Buf is the one way lang/ builds text and bytes: JSON renderings, binary
 * encodings, result lines.  A zeroed Buf is empty and ready to use; every
 * append keeps the contents NUL-terminated (the NUL is not counted in "len"),
 * so buf.data can be handed to printf-style consumers directly.
 *
 *     Buf b = {0};
 *     lang_buf_puts(&b, "hello");
 *     lang_buf_printf(&b, " %d", 42);      // b.data is "hello 42", b.len is 8
 *     lang_buf_free(&b);
 *
 * Allocation failure aborts the process: queuefs treats out-of-memory as
 * fatal rather than threading ENOMEM through every renderer. */
#ifndef QUEUEFS_BUF_H
#define QUEUEFS_BUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct Buf {
    char *data; /* NULL while empty and never grown */
    size_t len; /* bytes in use, not counting the trailing NUL */
    size_t cap; /* bytes allocated */
} Buf;

/* Appends "len" bytes from "p". */
void lang_buf_append(Buf *b, const void *p, size_t len);
/* Appends the NUL-terminated string "s". */
void lang_buf_puts(Buf *b, const char *s);
/* Appends one byte. */
void lang_buf_putc(Buf *b, char c);
/* Appends printf-formatted text. */
void lang_buf_printf(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends "v" in decimal, as printf's "%" PRId64 does (without its cost:
 * records' numbers and datetimes are rendered on every read). */
void lang_buf_put_int(Buf *b, int64_t v);
/* Appends "v" in decimal, zero-padded to at least "width" digits. */
void lang_buf_put_digits(Buf *b, uint64_t v, int width);
/* Appends "v" as 8 big-endian bytes (so byte order equals numeric order). */
void lang_buf_put_u64be(Buf *b, uint64_t v);
/* Appends the low "n" bytes of "v" (n from 1 to 8), big-endian. */
void lang_buf_put_be(Buf *b, uint64_t v, int n);
/* Empties the buffer, keeping its allocation. */
void lang_buf_reset(Buf *b);
/* Releases the allocation; the Buf is empty and reusable afterwards. */
void lang_buf_free(Buf *b);
/* Hands the NUL-terminated contents to the caller (free() them) and
 * leaves the Buf empty.  Never returns NULL. */
char *lang_buf_steal(Buf *b);

/* Memory helpers that abort on exhaustion. */
void *lang_xmalloc(size_t n);
void *lang_xcalloc(size_t n, size_t size);
void *lang_xrealloc(void *p, size_t n);
char *lang_xstrdup(const char *s);
char *lang_xstrndup(const char *s, size_t n);

#endif
