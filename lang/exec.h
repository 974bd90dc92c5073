/* exec.h — what the files that run statements share behind lang.h: the
 * session itself, the Exec a statement runs with, and the functions that
 * pass a statement from one concept to the next (session.c, access.c,
 * exec.c, statements.c, holds.c, identity.c, waits.c, stream.c, and the
 * file view in view.c and stats.c).  Not a public interface. */
#ifndef QUEUEFS_EXEC_H
#define QUEUEFS_EXEC_H

#include <stdbool.h>
#include <stdint.h>

#include "../store/store.h"
#include "ast.h"
#include "engine.h"
#include "lang.h"

struct LangStream;

/* A session (see lang.h).  Its fields are changed by the statements it
 * runs (USE CONSUMER) and by the lang_session_* calls only. */
struct LangSession {
    Store *store;
    char *consumer;                       /* USE CONSUMER name, or NULL */
    char instance[LANG_INSTANCE_LEN + 1]; /* minted per session and per USE CONSUMER */
    bool in_txn;                          /* between BEGIN and COMMIT / CANCEL */
    Stmt **pending;                       /* statements queued since BEGIN */
    size_t npending, cap;
    bool (*interrupted)(void *ctx); /* polled while a CLAIM … WAIT blocks */
    void *interrupt_ctx;
    LangUnclaims *undo;   /* when set, each claim adds here how to undo it */
    LangClaimed *claimed; /* when set, a claim tells here what it took */
    struct {              /* who is asking (lang_session_set_caller) */
        bool known, enforce;
        uint32_t uid, gid;
        uint32_t groups[64];
        int ngroups;
    } caller;
    struct LangStream *stream; /* work kept for lang_session_continue, or NULL */
    LangNameRule name_rule;    /* the caller's rule for table names, or NULL */
    void *name_rule_ctx;
};

/* What one statement runs with. */
typedef struct Exec {
    LangSession *s;
    StoreTxn *txn;
    int64_t now; /* the statement's instant once read (lang_exec_now);
                              0 until then */
    Buf *out;    /* the result line */
    LangError *err;
    Buf *changed; /* UPDATE: collects the changed records' store keys
                              (lang_keys_push) instead of answering them */
    bool alone;   /* the statement (a run of CREATEs: the run) is all
                              its transaction does: its last change may say
                              so (store_txn_last) */
    bool unread;  /* nobody reads its answer (a write to new): a run of
                              CREATEs (lang_exec_creates) answers nothing */
} Exec;

/* The statement's instant: the transaction's (store_txn_now), read when it
 * is first needed — a statement that needs none lets the store begin its
 * transaction with its first request. */
int64_t lang_exec_now(Exec *x);

/* ---- the session (session.c) ---- */

/* The store "s" runs on. */
Store *lang_session_store(const LangSession *s);
/* Frees the statements queued since BEGIN and leaves the transaction. */
void lang_session_drop_pending(LangSession *s);
/* ParseError unless "name" can name a table the session defines or
 * renames: lang_table_name_check, then the session's name rule. */
LangErrorCode lang_session_name_check(const LangSession *s, const char *name, LangError *err);
/* Makes the claims the session runs add to "undo" (NULL: stop) how to
 * give each back (see lang_view_unclaim; a run that fails or is run again
 * takes its own off), and tell in "claimed" (NULL: stop) what the last
 * took. */
void lang_session_capture_claim(LangSession *s, LangUnclaims *undo, LangClaimed *claimed);
/* Fills "info" with what table "def" shows (see LangTableInfo). */
void lang_table_info(const TableDef *def, LangTableInfo *info);
/* What the file of record "r", "size" bytes long, shows (see
 * LangRecordStat). */
void lang_record_stat(const Record *r, size_t size, LangRecordStat *stat);
/* Begins a read transaction on the session's store into "*txn" (abort it
 * with store_txn_abort).  The store's error, as lang_store_error names it,
 * when it cannot. */
LangErrorCode lang_session_read(LangSession *s, StoreTxn **txn, LangError *err);
/* Runs "fn" in a write transaction on the session's store (store_write:
 * "fn" may run more than once, and fills "err" whenever it returns
 * non-zero).  LANG_OK once committed; the error "fn" left, or the store's
 * failure to commit "while <what>". */
LangErrorCode lang_session_write(LangSession *s, int (*fn)(StoreTxn *txn, void *ctx), void *ctx,
                                 const char *what, LangError *err);

/* ---- who may do what (access.c) ---- */

/* The access a statement needs on the table it names. */
enum { ACCESS_READ = 4, ACCESS_WRITE = 2, ACCESS_OWNER = 8 };

/* PermissionDenied unless the session's caller may "want" on "def", as the
 * table's directory bits say (see lang_session_set_caller). */
LangErrorCode lang_access_check(const LangSession *s, const TableDef *def, int want,
                                LangError *err);
/* WrongKind unless "def" (named "table") is a queue. */
LangErrorCode lang_queue_check(const TableDef *def, const char *table, LangError *err);
/* Loads table "name" into "def" (free with lang_table_def_free) for a statement
 * that needs "want" on it: NoSuchTable, PermissionDenied, StoreError, with
 * nothing to free. */
LangErrorCode lang_table_load(Exec *x, const char *name, int want, TableDef *def);
/* lang_table_load of a queue: WrongKind for a collection. */
LangErrorCode lang_queue_load(Exec *x, const char *table, int want, TableDef *def);
/* A walk of the records a statement names one after another (DELETE
 * q:1, q:2, …; RELEASE likewise): "first" under fence "fence", then the
 * "nmore" of "more", each table's definition loaded for writing once for a
 * run of its records ("queues": as a queue, lang_queue_load). */
typedef struct TargetWalk {
    const Target *first;
    int64_t fence;
    const MoreTarget *more;
    size_t nmore;
    bool queues;
    size_t next;        /* the target lang_target_next answers next */
    const char *loaded; /* the table "def" holds, or NULL */
    TableDef def;
} TargetWalk;
/* The walk's next target into "*t" and its fence into "*fence", "w->def"
 * its table's definition, "*fresh" when that was loaded for it.  False at
 * the end, once the statement has failed, or when the load failed
 * (x->err says why). */
bool lang_target_next(Exec *x, TargetWalk *w, const Target **t, int64_t *fence, bool *fresh);
/* Frees the definition the walk holds. */
void lang_target_walk_end(TargetWalk *w);

/* ---- running statements (exec.c) ---- */

/* Runs "stmts" as session "s" in one store transaction, emitting each
 * result once it has committed (as COMMIT does); does not free them.  On
 * failure nothing is kept, not even a USE CONSUMER among them. */
LangErrorCode lang_session_run(LangSession *s, Stmt **stmts, size_t n, LangEmit emit, void *ctx,
                               LangError *err);
/* Runs one statement as the session would run it from text (queued inside
 * BEGIN, waiting for CLAIM … WAIT), taking ownership of "st". */
LangErrorCode lang_session_statement(LangSession *s, Stmt *st, LangEmit emit, void *ctx,
                                     LangError *err);
/* Appends "v" as the result line and frees it. */
void lang_exec_answer(Exec *x, Value *v);
/* Ends a data statement: its answer "records" becomes the result line, or,
 * when the statement failed, is dropped and the error returned. */
LangErrorCode lang_exec_answer_records(Exec *x, Value *records);
/* Whether "where" (NULL: always) holds for record view "view", into
 * "*yes"; the evaluation's error otherwise. */
LangErrorCode lang_exec_where(Exec *x, const Expr *where, const Value *view, bool *yes);
/* The identities target "t" names, as an array into "*keys" (caller
 * frees, also on error): its one record, or all of a table's. */
LangErrorCode lang_exec_target_keys(Exec *x, const TableDef *def, const Target *t, Value *keys);
/* What lang_exec_each_record does with one record: "r" as loaded (it may
 * change it, but not keep it) and "view", the record as users see it (it
 * may take it, leaving lang_value_none()).  It sets x->err to stop. */
typedef void RecordStep(Exec *x, const TableDef *def, Record *r, Value *view, void *ctx);
/* How lang_exec_each_record walks (flags). */
enum {
    /* a record the target names that does not exist is passed over, not
     * NoSuchRecord */
    WALK_SKIP_ABSENT = 1,
    /* each step changes no record but its own, and creates none: a whole
     * table is read a page at a time (one read of the store a page, not
     * one a record), each page before its records' steps */
    WALK_OWN_ONLY = 2,
};
/* Runs "step" on each record of "def" that target "t" names and "where"
 * (NULL: always) holds for, in turn, in key order, until x->err is set: by
 * reading the identities or a record, by WHERE, or by "step".  A record
 * "t" names that does not exist is NoSuchRecord (but see "walk", of the
 * flags above).  Returns x->err->code. */
LangErrorCode lang_exec_each_record(Exec *x, const TableDef *def, const Target *t,
                                    const Expr *where, unsigned walk, RecordStep *step, void *ctx);

/* ---- the statements (statements.c and holds.c) ----
 * Each runs "st" in x->txn, writing its result line to x->out. */
LangErrorCode lang_exec_define_table(Exec *x, const Stmt *st);
/* The statements that work on the table they name, once it is loaded for
 * the access each needs: DEFINE FIELD, DEFINE INDEX, CREATE, UPDATE,
 * UPSERT, DELETE, SELECT, PAUSE, RESUME, ALTER QUEUE, INFO and DROP.  An
 * UPDATE run with x->changed set keeps the changed records' keys there and
 * answers nothing (a streamed answer). */
LangErrorCode lang_exec_table_statement(Exec *x, const Stmt *st);
/* The length of the run of CREATEs that "stmts" (n statements) opens
 * which lang_exec_creates may run together: of one table, none naming
 * its record (the store gives their identities). */
size_t lang_creates_run(Stmt *const *stmts, size_t n);
/* Runs such a run of "n" CREATEs as each would run alone, in order, but
 * with one call of the store for their identities and one for their
 * records: each answers in x->out (unless x->unread), where its answer
 * ends going into ends[i]. */
LangErrorCode lang_exec_creates(Exec *x, Stmt *const *stmts, size_t n, size_t *ends);
LangErrorCode lang_exec_use_consumer(Exec *x, const Stmt *st);
LangErrorCode lang_exec_claim(Exec *x, const Stmt *st);
LangErrorCode lang_exec_release(Exec *x, const Stmt *st);
LangErrorCode lang_exec_release_all(Exec *x, const Stmt *st);
LangErrorCode lang_exec_touch(Exec *x, const Stmt *st);
LangErrorCode lang_exec_retry(Exec *x, const Stmt *st);
/* One row of SELECT "st": the whole record view, or the fields asked for,
 * into "*row" (caller frees); the evaluation's error otherwise. */
LangErrorCode lang_select_project(Exec *x, const Stmt *st, const Value *view, Value *row);
/* ClaimAboveCeiling when CLAIM "st" asks for more than CLAIM_CEILING. */
LangErrorCode lang_claim_ceiling_check(const Stmt *st, LangError *err);

/* ---- store-assigned identities and DEDUPLICATE (identity.c) ---- */

/* The "n" identities the store assigns in table "def" into keys[0 .. n),
 * in ascending order: each 1 + the greatest integer it ever held.
 * IdentitiesExhausted when fewer are left. */
LangErrorCode lang_identity_next(Exec *x, const TableDef *def, size_t n, Value *keys);
/* Remembers that identity "key" has been held in "def". */
LangErrorCode lang_identity_note(Exec *x, const TableDef *def, const Value *key);
/* DEDUPLICATE: "*repeat" when "key" was first written less than the
 * queue's window ago; otherwise starts a new window at the statement's
 * instant (lang_exec_now). */
LangErrorCode lang_dedup_check(Exec *x, const TableDef *def, const Value *key, bool *repeat);

/* COALESCE (coalesce.c): takes "fields", the content of a CREATE of
 * "old" — a record queue "def" holds and that is not done — as demand
 * for it.  Waiting (ready or delayed): its PRIORITY BY field becomes the
 * greater of the two, its NOT BEFORE field the earlier (an absent one is
 * now), the rest of the record and its place in arrival order stay.
 * Held: it is marked to run once more after its finish.  Dead:
 * RecordExists, as without COALESCE.  Appends the record's view to
 * "results". */
LangErrorCode lang_coalesce(Exec *x, const TableDef *def, Record *old, const Value *fields,
                            Value *results);

/* ---- CLAIM … WAIT (waits.c) ---- */

/* Runs CLAIM … WAIT "st" for the session: claims as soon as something is
 * claimable, or answers [] after its WAIT; emits the one result line. */
LangErrorCode lang_claim_wait(LangSession *s, Stmt *st, LangEmit emit, void *ctx, LangError *err);
/* lang_claim_wait waiting at most "wait_ns" (0: one attempt); its result
 * line goes to "line". */
LangErrorCode lang_claim_wait_for(LangSession *s, Stmt *st, int64_t wait_ns, Buf *line,
                                  LangError *err);
/* CLAIM … WAIT's checks that need no waiting: the ceiling, and that its
 * table is a queue the session may claim from. */
LangErrorCode lang_claim_wait_check(LangSession *s, const Stmt *st, LangError *err);

/* ---- statements run piece by piece (stream.c) ---- */

/* Frees the work the session keeps for lang_session_continue, if any. */
void lang_stream_free(LangSession *s);

/* ---- CREATE … AFTER (after.c) ---- */

/* Before the new record "r" of queue "def" is stored: the records "after"
 * names ("n" of them, read access needed) that have not finished —
 * absent, or done — become its "after" field (which files it blocked) and
 * are recorded as what it waits for; "def" and the named tables are
 * marked after_used.  WrongKind on a collection; the error of loading a
 * named table; StoreError…. */
LangErrorCode lang_after_create(Exec *x, TableDef *def, Record *r, const Target *after, size_t n);

/* store_record_delete of record "key" of "def" with "hold", which lets the
 * records waiting for it go on when the delete finishes it (see after.c):
 * a StoreStatus. */
int lang_after_delete(Exec *x, const TableDef *def, StoreBytes key, int64_t hold);

/* Before table "def" is dropped: the records waiting for any of its
 * records go on, and its count of blocked records goes.  A StoreStatus. */
int lang_after_drop(StoreTxn *txn, const TableDef *def);

/* How many records of "def" are blocked (0 when it never used AFTER). */
int64_t lang_after_blocked(StoreTxn *txn, const TableDef *def);

/* ---- AT MOST … PER keys past the first (perkeys.c) ---- */

/* True when queue "def" declares more than one AT MOST … PER key: its
 * claims go through lang_perkeys_claim and the end of each of its holds is
 * told to lang_perkeys_hold_ended. */
bool lang_perkeys_used(const TableDef *def);
/* store_claim of queue "def" (lang_perkeys_used) that also keeps the keys
 * past the first: a record taken whose group of such a key is full is
 * given back and passed over (kept out of claims until the group has
 * room), and the claim takes the next; "fn" is called only with the
 * records it keeps.  A claim of one named record passes over nothing: it
 * takes it or not.  A StoreStatus, or what "fn" returned. */
int lang_perkeys_claim(StoreTxn *txn, const TableDef *def, const StoreClaim *c,
                       int (*fn)(void *ctx, const StoreRecord *now, const StoreRecord *before),
                       void *ctx, int64_t *claimed);
/* After a hold of record "key" of "def" ended — or may have: a finish,
 * a release, a retry, a claim given back — with "value" its stored value:
 * its groups' room goes to what waits behind them.  Nothing when "def"
 * does not use several keys.  A StoreStatus. */
int lang_perkeys_hold_ended(StoreTxn *txn, const TableDef *def, StoreBytes key, StoreBytes value);
/* After ALTER QUEUE changed the keys past the first of "def" (its records
 * refiled by their fields): counts the holds of its keys anew.  A
 * StoreStatus. */
int lang_perkeys_reset(StoreTxn *txn, const TableDef *def);
/* Before table "def" is dropped: what its keys kept goes.  A StoreStatus. */
int lang_perkeys_drop(StoreTxn *txn, const TableDef *def);
/* How many records of "def" wait behind full groups of keys past the
 * first ("*parked"), and how many groups of each such key have records
 * waiting behind them (full[1 ..); full[0] is left 0). */
void lang_perkeys_counts(StoreTxn *txn, const TableDef *def, int64_t *parked,
                         int64_t full[LANG_PER_MAX]);

#endif
