/* bigendian.h — big-endian integers in byte strings: the one codec of queuefs.
 *
 * Keys that hold integers store them big-endian so that memcmp order is
 * numeric order; every encoder and decoder of such bytes uses these.  "p"
 * needs 2, 4 or 8 bytes of room; nothing is aligned. */
#ifndef QUEUEFS_BIGENDIAN_H
#define QUEUEFS_BIGENDIAN_H

#include <stdint.h>

/* Writes the low "n" bytes of "v" big-endian at "p" (n <= 8). */
static inline void
be_put(unsigned char *p, uint64_t v, int n)
{
    for (int i = n - 1; i >= 0; i--, v >>= 8)
        p[i] = (unsigned char)v;
}

/* The "n" big-endian bytes at "p" (n <= 8). */
static inline uint64_t
be_get(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* Writes "v" as 2, 4 or 8 big-endian bytes at "p". */
static inline void
be_put16(unsigned char *p, uint16_t v)
{
    be_put(p, v, 2);
}

static inline void
be_put32(unsigned char *p, uint32_t v)
{
    be_put(p, v, 4);
}

static inline void
be_put64(unsigned char *p, uint64_t v)
{
    be_put(p, v, 8);
}

/* The 2, 4 or 8 big-endian bytes at "p". */
static inline uint16_t
be_get16(const unsigned char *p)
{
    return (uint16_t)be_get(p, 2);
}

static inline uint32_t
be_get32(const unsigned char *p)
{
    return (uint32_t)be_get(p, 4);
}

static inline uint64_t
be_get64(const unsigned char *p)
{
    return be_get(p, 8);
}

#endif
