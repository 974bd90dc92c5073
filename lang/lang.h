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
 * Store, in one process or several.
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
LangErrorCode lang_session_exec(LangSession *s, const char *text, size_t len,
                                LangEmit emit, void *ctx, LangError *err);

/* Brings a record lang wrote in a store of format 2 up to date: pass it as
 * StoreOptions.upgrade (ctx NULL) to every store_open of a store lang
 * uses, so the first that opens an old store for writing converts it — the
 * engine's fields, the holder and the times lang kept inside each
 * record's value become the store's columns.  See StoreUpgradeFn. */
int lang_record_upgrade(void *ctx, StoreBytes table_def, StoreBytes old_value,
                        StoreRecord *out);

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

/* ---- the file view ----
 * What the mount's files do, each one statement's worth of work in its own
 * transaction, acting as the session.  Tables are named by their text and
 * records by their identity ("key": VAL_INT or VAL_STRING).  Each returns
 * LANG_OK or an error code with "err" filled, as a statement would. */

/* CLAIM FROM "table": appends the claimed record as one JSON line ending in
 * "\n" to "out", or nothing when nothing is claimable.  "claimed" (may be
 * NULL): what the claim tells of the record it took (see LangClaimed). */
typedef struct LangClaimed LangClaimed;
LangErrorCode lang_view_claim(LangSession *s, const char *table, Buf *out, LangClaimed *claimed,
                              LangError *err);
/* A fence: what a name in the held/ or dead/ views promises about its
 * record.  0: nothing; N > 0: held now by hold number N, the live hold's
 * `hold` field (held/ID~N; numbers are never reused on a store, so the
 * name of a hold that lapsed, ended, or whose record was deleted and
 * created again never names a later hold); LANG_FENCE_DEAD: at the
 * ATTEMPTS ceiling and not held (dead/ID).  An operation whose fence
 * fails is NoSuchRecord and changes nothing. */
#define LANG_FENCE_DEAD (-1)

/* What a table directory shows: its kind, owner and mode. */
typedef struct LangTableInfo {
    bool     is_queue;
    bool     has_owner;   /* false: no owner is known (neither the table's nor
                           * the store's); show the mount's */
    uint32_t uid, gid;
    uint32_t mode;        /* permission bits; 0755 when never set */
} LangTableInfo;

/* What a record's file shows, from the store, so every mount agrees: its
 * size (the JSON line, newline included) and its times in ns since the
 * epoch — "written": its content last written (the file's mtime);
 * "changed": its hold last changed, by a claim, release or touch, or its
 * creation (ctime); "claimed": when its last hold was taken (the mtime of
 * its held/ID~N name; 0 when never held). */
typedef struct LangRecordStat {
    size_t  size;
    int64_t written, changed, claimed;
} LangRecordStat;

/* Appends record "key" as one JSON line ending in "\n", when "fence"
 * holds, and fills "info" (may be NULL) with its table's.  Never claims. */
LangErrorCode lang_view_read(LangSession *s, const char *table, const Value *key, int64_t fence,
                             Buf *out, LangTableInfo *info, LangRecordStat *stat,
                             LangError *err);
/* DELETE the record, when "fence" holds. */
LangErrorCode lang_view_delete(LangSession *s, const char *table, const Value *key,
                               int64_t fence, LangError *err);
/* RELEASE the record, NOT BEFORE "not_before" unless it is NULL or NONE
 * (a VAL_DURATION from now, or a VAL_DATETIME); "fence" as for delete. */
LangErrorCode lang_view_release(LangSession *s, const char *table, const Value *key,
                                const Value *not_before, int64_t fence, LangError *err);
/* TOUCH the record: its hold's deadline becomes now + the queue's
 * TIMEOUT.  NotHeld when nobody holds it, HeldByAnotherConsumer for a hold
 * another consumer signed; "fence" as for delete. */
LangErrorCode lang_view_touch(LangSession *s, const char *table, const Value *key,
                              int64_t fence, LangError *err);
/* RETRY the record — its hold ended, its attempts back to 0 — NOT BEFORE
 * "not_before" as for lang_view_release; "fence" as for delete (the dead/
 * view's LANG_FENCE_DEAD: only while it is at the ceiling). */
LangErrorCode lang_view_retry(LangSession *s, const char *table, const Value *key,
                              const Value *not_before, int64_t fence, LangError *err);
/* Whether CLAIM FROM "table" may hand out a record now ("*yes"; true too
 * when in doubt: the claim decides), without claiming or taking the
 * writer lock, and the first instant a held or delayed record of it
 * becomes claimable ("*next_wake"; INT64_MAX when none).  Refuses as the
 * claim would: NoSuchTable, WrongKind, PermissionDenied. */
LangErrorCode lang_view_claimable(LangSession *s, const char *table, bool *yes,
                                  int64_t *next_wake, LangError *err);

/* How to give back one claim: the claimed record as it was before the
 * claim (its columns; its key, consumer and instance held in "bytes") and
 * the number of the hold the claim took.  Zero-initialise; "table" is
 * NULL when nothing was claimed. */
typedef struct LangUnclaim {
    char       *table;
    StoreRecord before;
    Buf         bytes;
    int64_t     hold;
} LangUnclaim;

/* What a claim of the file view tells of the record it took, as the store
 * answered it — its identity (VAL_NONE when nothing was claimed), what its
 * file shows and its table's figures — so that the mount can answer the
 * lookup of its name that follows (rm, cat) without asking again.
 * Zero-initialise; lang_claimed_clear frees it. */
struct LangClaimed {
    Value          key;
    LangRecordStat stat;
    LangTableInfo  info;
};
void lang_claimed_clear(LangClaimed *c);

/* lang_view_claim, also filling "undo" (see LangUnclaim) for
 * lang_view_unclaim. */
LangErrorCode lang_view_claim_undoable(LangSession *s, const char *table, Buf *out,
                                       LangUnclaim *undo, LangClaimed *claimed,
                                       LangError *err);
/* Gives back the claim "undo" describes, for a caller that will never see
 * it: when the record is still exactly as that claim stored it, puts back
 * the form it had before (attempts, hold, delay, its place in the queue —
 * every field, the engine's included) and takes the claim, and the lapse
 * it counted, off the queue's counters; otherwise (finished, released,
 * changed, claimed again since) changes nothing and answers LANG_OK. */
LangErrorCode lang_view_unclaim(LangSession *s, const LangUnclaim *undo, LangError *err);
/* Frees what "undo" holds and zeroes it. */
void lang_unclaim_free(LangUnclaim *undo);
/* The queue's figures as one JSON line: records, ready, held, delayed,
 * dead, oldest_ready_age_seconds, and the store's counters of claims,
 * releases, lapses and deletes. */
LangErrorCode lang_view_stats(LangSession *s, const char *table, Buf *out, LangError *err);
/* The same figures for every queue, in Prometheus text exposition format. */
LangErrorCode lang_view_metrics(LangSession *s, Buf *out, LangError *err);
/* Calls "fn" with each record of the queue held now and the number of
 * its hold, until it returns non-zero. */
LangErrorCode lang_view_held(LangSession *s, const char *table,
                             int (*fn)(void *ctx, const Value *key, int64_t hold),
                             void *ctx, LangError *err);
/* Calls "fn" with each record of the queue at its ATTEMPTS ceiling and not
 * held, until it returns non-zero. */
LangErrorCode lang_view_dead(LangSession *s, const char *table,
                             int (*fn)(void *ctx, const Value *key), void *ctx,
                             LangError *err);
/* Writes record content "text" (JSON or a SurrealQL object literal; empty
 * text is {}; an `id` field is ignored): CREATE when the record is absent,
 * else a whole-record UPDATE — unless "exclusive", when an existing record
 * is RecordExists. */
LangErrorCode lang_view_write(LangSession *s, const char *table, const Value *key,
                              const char *text, size_t len, bool exclusive, LangError *err);
/* CREATEs one record with a store-assigned identity per line of "text"
 * (blank lines skipped, `id` fields ignored), all in one transaction: all
 * or none. */
LangErrorCode lang_view_append(LangSession *s, const char *table, const char *text, size_t len,
                               LangError *err);
/* Whether table "name" exists, and what its directory shows. */
LangErrorCode lang_view_table(LangSession *s, const char *name, LangTableInfo *info,
                              LangError *err);
/* chmod / chown of a table directory: "mode", "uid" or "gid" of -1 stays. */
LangErrorCode lang_view_chattr(LangSession *s, const char *name, int64_t mode, int64_t uid,
                               int64_t gid, LangError *err);
/* Calls "fn" with each table's name in name order until it returns
 * non-zero. */
LangErrorCode lang_view_tables(LangSession *s, int (*fn)(void *ctx, const char *name), void *ctx,
                               LangError *err);
/* Calls "fn" with the identity of each record of "table" in claim-free
 * identity order, starting after "after" (NULL: from the first), until it
 * returns non-zero.  The key passed is valid during the call only. */
LangErrorCode lang_view_keys(LangSession *s, const char *table, const Value *after,
                             int (*fn)(void *ctx, const Value *key), void *ctx, LangError *err);
/* The same as lang_view_keys, with the size of each record's file — its
 * JSON line, as lang_view_read gives it — all read in one transaction;
 * fills "info" (may be NULL) with the table's. */
LangErrorCode lang_view_listing(LangSession *s, const char *table, const Value *after,
                                int (*fn)(void *ctx, const Value *key,
                                          const LangRecordStat *stat),
                                void *ctx,
                                LangTableInfo *info, LangError *err);
/* DEFINE COLLECTION "name", with permission bits "mode". */
LangErrorCode lang_view_mkdir(LangSession *s, const char *name, uint32_t mode, LangError *err);
/* Drops table "name" when it holds no record; TableNotEmpty otherwise. */
LangErrorCode lang_view_rmdir(LangSession *s, const char *name, LangError *err);
/* Renames table "from" to "to" (mv of its directory), owner only, like a
 * drop: its records, holds, counters and definition go with it, and
 * nothing is claimed.  TableExists when "to" is taken, NoSuchTable when
 * "from" does not exist, ParseError when "to" cannot name a table. */
LangErrorCode lang_view_rename(LangSession *s, const char *from, const char *to,
                               LangError *err);

#endif
