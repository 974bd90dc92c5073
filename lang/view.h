/* view.h — the file view's interface to the statement engine: what each
 * file and directory of a mount does (SPEC section 2), each one
 * statement's worth of work on a session of lang.h — claims, reads,
 * releases and deletes by file name, listings, table directories made,
 * renamed and chmod'ed, the figures of stats and metrics.  fs/ is its one
 * caller; lang/view.c and lang/stats.c hold it.
 *
 *     Buf out = {0};
 *     LangError err = {0};
 *     if (lang_view_claim(s, "jobs", &out, NULL, &err) == LANG_OK && out.len)
 *         reply(out.data, out.len);     // one JSON line, or nothing claimable
 */
#ifndef QUEUEFS_LANG_VIEW_H
#define QUEUEFS_LANG_VIEW_H

#include "lang.h"

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
 * ATTEMPTS ceiling and not held (dead/ID); LANG_FENCE_DONE: done, on a
 * queue that KEEPs (done/ID).  An operation whose fence fails is
 * NoSuchRecord and changes nothing. */
#define LANG_FENCE_DEAD (-1)
#define LANG_FENCE_DONE (-2)
/* blocked/ID: waiting for other records to finish (CREATE … AFTER) */
#define LANG_FENCE_BLOCKED (-3)

/* What a table directory shows: its kind, owner and mode. */
typedef struct LangTableInfo {
    bool is_queue;
    bool has_delay; /* a queue that declares NOT BEFORE */
    bool has_owner; /* false: no owner is known (neither the table's nor
                           * the store's); show the mount's */
    uint32_t uid, gid;
    uint32_t mode; /* permission bits; 0755 when never set */
} LangTableInfo;

/* What a record's file shows, from the store, so every mount agrees: its
 * size (the JSON line, newline included) and its times in ns since the
 * epoch — "written": its content last written (the file's mtime);
 * "changed": its hold last changed, by a claim, release or touch, or its
 * creation (ctime); "claimed": when its last hold was taken (the mtime of
 * its held/ID~N name; 0 when never held). */
typedef struct LangRecordStat {
    size_t size;
    int64_t written, changed, claimed;
} LangRecordStat;

/* Appends record "key" as one JSON line ending in "\n", when "fence"
 * holds, and fills "info" (may be NULL) with its table's.  Never claims. */
LangErrorCode lang_view_read(LangSession *s, const char *table, const Value *key, int64_t fence,
                             Buf *out, LangTableInfo *info, LangRecordStat *stat, LangError *err);
/* DELETE the record, when "fence" holds. */
LangErrorCode lang_view_delete(LangSession *s, const char *table, const Value *key, int64_t fence,
                               LangError *err);
/* RELEASE the record, NOT BEFORE "not_before" unless it is NULL or NONE
 * (a VAL_DURATION from now, a VAL_DATETIME, or an object {"cron": EXPR[,
 * "zone": ZONE]}: CRON EXPR [IN ZONE]), BECAUSE "because" unless it is
 * NULL; "fence" as for delete. */
LangErrorCode lang_view_release(LangSession *s, const char *table, const Value *key,
                                const Value *not_before, int64_t fence, const char *because,
                                LangError *err);
/* TOUCH the record: its hold's deadline becomes now + the queue's
 * TIMEOUT.  NotHeld when nobody holds it, HeldByAnotherConsumer for a hold
 * another consumer signed; "fence" as for delete. */
LangErrorCode lang_view_touch(LangSession *s, const char *table, const Value *key, int64_t fence,
                              LangError *err);
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
LangErrorCode lang_view_claimable(LangSession *s, const char *table, bool *yes, int64_t *next_wake,
                                  LangError *err);

/* How to give back one claim: the claimed record as it was before the
 * claim (its columns; its key, consumer and instance held in "bytes") and
 * the number of the hold the claim took.  "at" is the caller's: where it
 * put the answer that told of the claim. */
typedef struct LangUnclaim {
    char *table;
    StoreRecord before;
    Buf bytes;
    int64_t hold;
    size_t at;
} LangUnclaim;

/* How to give back the claims of a run of statements, in the order they
 * were made.  Zero-initialise; lang_unclaims_truncate frees. */
typedef struct LangUnclaims {
    LangUnclaim *v;
    size_t n, cap;
} LangUnclaims;
/* Forgets the claims from the n-th on (all of them with 0, which also
 * frees the list's memory). */
void lang_unclaims_truncate(LangUnclaims *u, size_t n);

/* What a claim of the file view tells of the record it took, as the store
 * answered it — its identity (VAL_NONE when nothing was claimed), what its
 * file shows and its table's figures — so that the mount can answer the
 * lookup of its name that follows (rm, cat) without asking again.
 * Zero-initialise; lang_claimed_clear frees it. */
struct LangClaimed {
    Value key;
    LangRecordStat stat;
    LangTableInfo info;
};
void lang_claimed_clear(LangClaimed *c);

/* Makes every claim the session runs from now on — its statements' as
 * well as its files' — add to "undo" how to give it back (NULL: stop). */
void lang_view_keep_claims(LangSession *s, LangUnclaims *undo);
/* lang_view_claim, also filling "undo" (see LangUnclaims: none, or the
 * one claim) for lang_view_unclaim. */
LangErrorCode lang_view_claim_undoable(LangSession *s, const char *table, Buf *out,
                                       LangUnclaims *undo, LangClaimed *claimed, LangError *err);
/* Gives back the claims of "undo" from the "from"-th on, in one
 * transaction, for a caller that will never see them: each record still
 * exactly as its claim stored it gets back the form it had before
 * (attempts, hold, delay, its place in the queue — every field, the
 * engine's included), and the claim, and the lapse it counted, come off
 * the queue's counters; one finished, released, changed or claimed again
 * since is left as it is. */
LangErrorCode lang_view_unclaim(LangSession *s, const LangUnclaims *undo, size_t from,
                                LangError *err);
/* The queue's figures as one JSON line: records (outstanding), ready,
 * held, delayed, dead, done, oldest_ready_age_seconds, and the store's counters of claims,
 * releases, lapses and deletes. */
LangErrorCode lang_view_stats(LangSession *s, const char *table, Buf *out, LangError *err);
/* The same figures for every queue, in Prometheus text exposition format. */
LangErrorCode lang_view_metrics(LangSession *s, Buf *out, LangError *err);
/* Calls "fn" with each record of the queue held now and the number of
 * its hold, until it returns non-zero. */
LangErrorCode lang_view_held(LangSession *s, const char *table,
                             int (*fn)(void *ctx, const Value *key, int64_t hold), void *ctx,
                             LangError *err);
/* Calls "fn" with each record of the queue at its ATTEMPTS ceiling and not
 * held, until it returns non-zero. */
LangErrorCode lang_view_dead(LangSession *s, const char *table,
                             int (*fn)(void *ctx, const Value *key), void *ctx, LangError *err);
/* Calls "fn" with each done record of the queue (KEEP) whose KEEP is not
 * over, until it returns non-zero. */
LangErrorCode lang_view_done(LangSession *s, const char *table,
                             int (*fn)(void *ctx, const Value *key), void *ctx, LangError *err);
/* Calls "fn" with each blocked record of the queue (CREATE … AFTER: it
 * waits for others to finish), until it returns non-zero. */
LangErrorCode lang_view_blocked(LangSession *s, const char *table,
                                int (*fn)(void *ctx, const Value *key), void *ctx, LangError *err);
/* Writes record content "text" (JSON or a SurrealQL object literal; empty
 * text is {}; an `id` field is ignored): CREATE when the record is absent,
 * else a whole-record UPDATE — unless "exclusive", when an existing record
 * is RecordExists. */
LangErrorCode lang_view_write(LangSession *s, const char *table, const Value *key, const char *text,
                              size_t len, bool exclusive, LangError *err);
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
                                int (*fn)(void *ctx, const Value *key, const LangRecordStat *stat),
                                void *ctx, LangTableInfo *info, LangError *err);
/* DEFINE COLLECTION "name", with permission bits "mode". */
LangErrorCode lang_view_mkdir(LangSession *s, const char *name, uint32_t mode, LangError *err);
/* Drops table "name" when it holds no record; TableNotEmpty otherwise. */
LangErrorCode lang_view_rmdir(LangSession *s, const char *name, LangError *err);
/* Renames table "from" to "to" (mv of its directory), owner only, like a
 * drop: its records, holds, counters and definition go with it, and
 * nothing is claimed.  TableExists when "to" is taken, NoSuchTable when
 * "from" does not exist, ParseError when "to" cannot name a table. */
LangErrorCode lang_view_rename(LangSession *s, const char *from, const char *to, LangError *err);

#endif
