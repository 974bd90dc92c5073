/* lang.h — the queuefs statement engine: sessions that run statements
 * against a store.
 *
 * A LangSession is what one ctl file description or one queuefs-sql run
 * is: a consumer identity (USE CONSUMER), an instance minted for it, and a
 * pending transaction (BEGIN … COMMIT).  Statements run one at a time, each
 * in its own store transaction, except those between BEGIN and COMMIT, which
 * are parsed when written and run together, as one transaction, at COMMIT.
 *
 *     LangSession *s = lang_session_new(store, NULL);
 *     LangError err = {0};
 *     if (lang_session_exec(s, "CLAIM FROM jobs;", 16, print_line, NULL, &err))
 *         fprintf(stderr, "%s: %s\n", lang_error_name(err.code), err.message);
 *     lang_session_free(s);
 *
 * A session is used by one thread at a time.  Many sessions may share a
 * Store, in one process or several.  What the mount's files do is a second
 * interface, on the same sessions: lang/view.h.
 */
#ifndef QUEUEFS_LANG_H
#define QUEUEFS_LANG_H

#include <stdbool.h>
#include <stddef.h>

#include "../store/store.h"
#include "buf.h"
#include "error.h"
#include "value.h"

typedef struct LangSession LangSession;

/* Receives one result line: compact JSON, no newline, "len" bytes. */
typedef void (*LangEmit)(void *ctx, const char *line, size_t len);

/* The length of an instance name: 32 hex digits. */
#define LANG_INSTANCE_LEN 32
/* The largest record: content whose stored form is larger is TooLarge
 * (EFBIG), through every statement and file. */
#define RECORD_MAX_BYTES ((size_t)16 << 20)

/* Writes a fresh, unique instance name (LANG_INSTANCE_LEN hex digits and a
 * NUL) to "out". */
void lang_instance_mint(char out[LANG_INSTANCE_LEN + 1]);

/* A new session on "store".  "consumer" (may be NULL) starts the session
 * as if it had run USE CONSUMER with that name: its holds are signed with
 * the name.  "instance" (may be NULL: one is minted) is the instance the
 * session's holds carry, so sessions given the same instance act as one
 * holder (a mount's files and its ctl sessions).  The store must outlive the
 * session. */
LangSession *lang_session_new(Store *store, const char *consumer, const char *instance);
/* Ends the session; a transaction still pending is cancelled. */
void lang_session_free(LangSession *s);
/* True while the session is between BEGIN and COMMIT/CANCEL. */
bool lang_session_in_transaction(const LangSession *s);

/* Who is asking.  Tables the session defines are owned by "uid" and
 * "gid".  With "enforce", every statement is checked against the owner
 * and mode of the table it names, as a directory's would be: read (r) to
 * read records, list or see figures, write (w) to claim, create, update,
 * release, touch or delete, ownership to define fields and indexes, drop,
 * chmod or chown.  uid 0 may do anything.  Refusals are PermissionDenied
 * (EACCES). */
void lang_session_set_caller(LangSession *s, uint32_t uid, uint32_t gid, const uint32_t *groups,
                             int ngroups, bool enforce);

/* The longest table name, in bytes. */
#define LANG_TABLE_NAME_MAX 255

/* ParseError unless "name" ("len" bytes) can name a table: 1 to
 * LANG_TABLE_NAME_MAX bytes of well-formed UTF-8 without control
 * characters (what a `backticked` identifier can spell).  The parser and
 * the evaluator both hold names to this one rule. */
LangErrorCode lang_table_name_check(const char *name, size_t len, LangError *err);

/* A rule of the caller's for the names of the tables a session defines or
 * renames, checked after lang_table_name_check: LANG_OK, or an error code
 * with "err" filled.  A mount's rule keeps out what cannot be one of its
 * directories. */
typedef LangErrorCode (*LangNameRule)(void *ctx, const char *name, LangError *err);
/* Makes the session hold the tables it defines or renames to "rule" (NULL:
 * none but lang_table_name_check). */
void lang_session_set_name_rule(LangSession *s, LangNameRule rule, void *ctx);

/* Makes a blocking CLAIM … WAIT look at "interrupted(ctx)" — when it
 * wakes, and every 100 ms while it sleeps — and end with Interrupted
 * (EINTR) when it answers true. */
void lang_session_set_interrupt(LangSession *s, bool (*interrupted)(void *ctx), void *ctx);

/* Runs every statement in "text" (see parse.h for the syntax) in order,
 * calling "emit" once for each statement that ran with its result line.
 * Stops at the first error: returns its code with "err" filled, and the
 * statements before it keep their effects (a failed statement itself
 * changes nothing).  Returns LANG_OK when all ran. */
LangErrorCode lang_session_exec(LangSession *s, const char *text, size_t len, LangEmit emit,
                                void *ctx, LangError *err);

/* Brings a record lang wrote in a store of format 2 up to date: pass it as
 * StoreOptions.upgrade (ctx NULL) to every store_open of a store lang
 * uses, so the first that opens an old store for writing converts it — the
 * engine's fields, the holder and the times lang kept inside each
 * record's value become the store's columns.  See StoreUpgradeFn. */
int lang_record_upgrade(void *ctx, StoreBytes table_def, StoreBytes old_value, StoreRecord *out);

/* ---- statements run piece by piece (the ctl file, queuefs-sql) ----
 * lang_session_exec runs all of its text before it returns, holding every
 * result line whole.  lang_session_start runs the same statements, in the
 * same order, but appends their result lines (each ending in "\n") to a
 * Buf and may stop early, keeping the rest on the session for
 * lang_session_continue:
 *
 *   - a SELECT of a whole table in identity order (no ORDER BY, outside
 *     BEGIN) is streamed: each piece of it is produced in a read
 *     transaction of its own, resuming after the last record's key, until
 *     "out" holds "room" bytes (or 4096 records were looked at), so a
 *     result of any size needs about "room" plus one record of memory.  It
 *     is not one snapshot: a record changed while the result is read shows
 *     as it is when its piece is produced, one created or deleted behind
 *     the cursor is missed.  A table dropped meanwhile ends the result;
 *   - an UPDATE of a whole table (outside BEGIN) changes its records in one
 *     write transaction as before, keeping only their keys, and its answer
 *     is streamed from them the same way (each record as it is when its
 *     piece is produced; one deleted since is left out);
 *   - a CLAIM … WAIT that cannot claim at once (outside BEGIN) is checked
 *     (ClaimAboveCeiling, NoSuchTable, WrongKind, PermissionDenied),
 *     tried once, and kept: its wait (counted from lang_session_start)
 *     happens in lang_session_continue with "block";
 *   - the statements after any of those, and a ParseError in the text
 *     after them, are kept and run (or reported) in order once it ends.
 *
 * Errors met in the first piece of a statement (its checks) are returned
 * and leave "out" as it was; an error met in a later piece of a streamed
 * result ends its line where it stopped (a valid JSON array) and is
 * returned.  Every error frees what was kept: nothing after it runs.
 * Memory kept lives until the work ends or lang_session_free.
 * SessionBusy (EBUSY) when the session still keeps work from an earlier
 * start. */
LangErrorCode lang_session_start(LangSession *s, const char *text, size_t len, Buf *out,
                                 size_t room, LangError *err);
/* Goes on with the work kept: returns once "out" holds "room" bytes, the
 * work ended (lang_session_pending false) or an error ended it, or — when
 * "block" is false — the claim in progress would have to wait (it is tried
 * once).  With "block" a CLAIM … WAIT blocks until it claims, answers []
 * at its deadline, or the interrupt hook ends it with Interrupted.  May
 * return having appended nothing while work remains (a piece whose records
 * WHERE refused): call again.  LANG_OK when nothing is kept. */
LangErrorCode lang_session_continue(LangSession *s, Buf *out, size_t room, bool block,
                                    LangError *err);
/* True while the session keeps work for lang_session_continue. */
bool lang_session_pending(const LangSession *s);
/* True while that work is a CLAIM … WAIT still waiting. */
bool lang_session_waiting(const LangSession *s);

#endif
