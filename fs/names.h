/* names.h — the mount's name grammar, in one place: what names a table
 * directory reserves, what a table may be called, record identities as
 * file names (one-to-one), a held/ entry's hold number (ID~N) and a
 * released/ name's instant (ID@WHEN).
 *
 * An integer identity is its decimal digits ("7", "-3").  A string identity
 * is its text with '%', '/', '@' and '~' (and control bytes) written as
 * %XX, and with its first character written as %XX when the name would
 * otherwise read as an integer (all digits, or '-' and digits), begin with
 * '.', or equal a reserved name:
 *
 *     jobs:7              7
 *     reclaim:'bucket/key'  bucket%2Fkey
 *     jobs:'007'          %3007
 *     jobs:claim          %63laim
 *
 * Every identity has exactly one name, and a name that is not exactly the
 * name of some identity (e.g. "%41", "007") names nothing. */
#ifndef QUEUEFS_NAMES_H
#define QUEUEFS_NAMES_H

#include <stdbool.h>

#include "../lang/error.h"
#include "../lang/value.h"

/* The names a table directory reserves: "new" serves every table, the
 * rest only queues. */
typedef enum FsReserved {
    FS_NEW,
    FS_CLAIM,
    FS_WAIT,
    FS_STATS,
    FS_RELEASED,
    FS_HELD,
    FS_DEAD,
    FS_DONE,
    FS_BLOCKED,
    FS_RESERVED_N
} FsReserved;

/* The reserved name "name" is, or -1. */
int fs_name_reserved(const char *name);
/* The mount's rule for table names (a LangNameRule): a table is a
 * directory of the mount, so its name holds no '/', is not "." or "..",
 * and is not "ctl" or "metrics", the mount's own files.  ParseError
 * otherwise.  Every session that can define or rename a table uses it —
 * queuefs-sql's too, so a store's tables can all be mounted. */
LangErrorCode fs_table_name_rule(void *ctx, const char *name, LangError *err);
/* Appends the file name of identity "key" (VAL_INT or VAL_STRING).  The
 * language refuses the empty string as a key, the one key with no name:
 * for it nothing is appended. */
void fs_name_from_key(const Value *key, Buf *out);
/* The identity file name "name" stands for: 0 and "*key" set (caller
 * frees), or -1 when "name" is the name of no identity. */
int fs_name_to_key(const char *name, Value *key);

/* A held/ entry's name, ID~N: the hold number N (> 0), with "*id_len" the
 * length of ID; 0 (and "*id_len" the whole name) when it ends in no ~N.
 * An identity's name never holds '~' (it is written %7E). */
int64_t fs_name_fence(const char *name, size_t *id_len);

/* A released/ name, ID[@WHEN]: "*id_len" the length of what comes before
 * '@' (the whole name when there is none), and into "*when" the instant
 * WHEN asks for — a VAL_DURATION or VAL_DATETIME, or for "cron EXPR [in
 * ZONE]" (a '/' written %2F) the object {"cron": EXPR[, "zone": ZONE]}
 * lang_view_release takes; NONE without '@'.  0, or -EINVAL when WHEN is
 * none of these or names a malformed expression or an unknown zone (then
 * "*when" is NONE).  An identity's name never holds '@' (it is written
 * %40). */
int fs_name_when(const char *name, size_t *id_len, Value *when);

#endif
