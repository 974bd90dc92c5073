/* content.h — how far the bytes written to a record file have come toward
 * one record: nothing yet, part of an object, one whole object, or bytes
 * that cannot be one.  The file view commits a record at the write() that
 * completes its object, so that write's error is what the shell reports
 * (SPEC section 2), and refuses at once a write that cannot begin one.
 *
 * The scan is incremental (each write's bytes are fed once) and knows only
 * the shape — braces and brackets outside strings; the record's parser
 * decides the rest when the object is complete.
 *
 *     ContentScan scan = {0};
 *     fs_content_feed(&scan, "{\"a\":", 5);    // CONTENT_PARTIAL
 *     fs_content_feed(&scan, "1}\n", 3);       // CONTENT_COMPLETE
 */
#ifndef QUEUEFS_CONTENT_H
#define QUEUEFS_CONTENT_H

#include <stdbool.h>
#include <stddef.h>

typedef enum ContentState {
    CONTENT_EMPTY,    /* only blanks so far */
    CONTENT_PARTIAL,  /* an object begun and not yet closed */
    CONTENT_COMPLETE, /* one object, closed, and blanks after it */
    CONTENT_INVALID,  /* bytes that do not begin an object, or more after one */
} ContentState;

typedef struct ContentScan {
    ContentState state;
    unsigned depth; /* open braces and brackets */
    char quote;     /* the quote of the string being read, or 0 */
    bool escape;    /* the last byte of the string was a backslash */
} ContentScan;

/* Feeds the next "len" bytes of the file's content to "scan"; the state
 * they leave it in. */
ContentState fs_content_feed(ContentScan *scan, const char *data, size_t len);

#endif
