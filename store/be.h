/* be.h — big-endian integers in byte strings: the one codec of queuefs.
 *
 * Keys that hold integers store them big-endian so that memcmp order is
 * numeric order; every encoder and decoder of such bytes uses these.  "p"
 * needs 2, 4 or 8 bytes of room; nothing is aligned. */
#ifndef QUEUEFS_BE_H
#define QUEUEFS_BE_H

#include <stdint.h>

/* Writes "v" as 2 big-endian bytes at "p". */
static inline void
be_put16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)(v >> 8);
    p[1] = (unsigned char)v;
}

/* Writes "v" as 4 big-endian bytes at "p". */
static inline void
be_put32(unsigned char *p, uint32_t v)
{
    for (int i = 3; i >= 0; i--, v >>= 8)
        p[i] = (unsigned char)v;
}

/* Writes "v" as 8 big-endian bytes at "p". */
static inline void
be_put64(unsigned char *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (unsigned char)v;
}

/* The 2 big-endian bytes at "p". */
static inline uint16_t
be_get16(const unsigned char *p)
{
    return (uint16_t)((unsigned)p[0] << 8 | p[1]);
}

/* The 4 big-endian bytes at "p". */
static inline uint32_t
be_get32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v = v << 8 | p[i];
    return v;
}

/* The 8 big-endian bytes at "p". */
static inline uint64_t
be_get64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

#endif
