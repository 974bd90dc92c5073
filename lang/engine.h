/* engine.h — what the pieces of lang/ share behind lang.h: table
 * definitions (catalog.c), the stored form of a record and the queue rules
 * that decide where it waits (record.c), expression evaluation (expr.c)
 * and field paths (path.c).  What runs statements shares exec.h.  Not a
 * public interface. */
#ifndef QUEUEFS_ENGINE_H
#define QUEUEFS_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "../store/queue.h"
#include "../store/store.h"
#include "ast.h"
#include "buf.h"
#include "error.h"
#include "lang.h"
#include "view.h"
#include "value.h"

/* The engine's fields on a queue record.  "hold" is the number of the
 * record's last hold (the store's, never reused): the N of held/ID~N.
 * "errors" lists its failed attempts ({attempt, at, error}, oldest first,
 * the last STORE_ERRORS_KEPT) and "last_error" is the newest one's text. */
#define FIELD_ATTEMPTS "attempts"
#define FIELD_CLAIMED_UNTIL "claimed_until"
#define FIELD_CLAIMED_BY "claimed_by"
#define FIELD_HOLD "hold"
#define FIELD_ERRORS "errors"
#define FIELD_LAST_ERROR "last_error"
#define FIELD_COMPLETED_AT "completed_at"
/* The records a blocked record still waits for (CREATE … AFTER), as their
 * ids show: kept in its fields, set only by after.c. */
#define FIELD_AFTER "after"
/* The NOT BEFORE instant a blocked record is filed with: never, until the
 * last record it waits for finishes (after.c). */
#define AFTER_NEVER INT64_MAX
/* The NOT BEFORE instant a record passed over for a full group of an AT
 * MOST … PER key past the first is filed with, until its group has room
 * (perkeys.c). */
#define PER_PARKED (INT64_MAX - 1)
/* The tables lang keeps for itself, which no user sees or names: what
 * blocked records wait for (after.c), and the holds and passed-over
 * records of AT MOST … PER keys past the first (perkeys.c).  A control
 * character opens each name, which no statement or file name may hold. */
#define LANG_AFTER_TABLE "\001after"
#define LANG_PERKEYS_TABLE "\002perkeys"
/* True when "name" is one of those tables. */
bool lang_hidden_table_name(const char *name);
/* The id of hidden table "name" into "*id": STORE_NOTFOUND when it does
 * not exist yet, unless "make" (then it is made).  A StoreStatus. */
int lang_hidden_table(StoreTxn *txn, const char *name, bool make, uint32_t *id);

/* ---- table definitions (catalog.c) ---- */

typedef struct FieldDef {
    char *name; /* "url", or a path "a.b" */
    char *type; /* NULL = any type */
    bool required;
} FieldDef;

typedef struct IndexDef {
    char *name;
    char **fields;
    size_t nfields;
} IndexDef;

typedef struct TableDef {
    uint32_t id; /* the store's id for the table */
    bool is_queue;
    int64_t uid, gid; /* the table's owner; -1: none recorded (lang_table_def_load
                           * gives the store's owner then, when it is known) */
    int64_t mode;     /* permission bits (07777); -1: 0755 */
    bool paused;      /* PAUSE QUEUE: claims hand out nothing until RESUME */
    bool after_used;  /* a record of it waits, or waited, for others (CREATE …
                       * AFTER), or was named by one: its deletes keep the
                       * dependencies (after.c) */
    TableDecl decl;   /* name, TIMEOUT, ATTEMPTS, … as declared */
    FieldDef *fields;
    size_t nfields;
    IndexDef *indexes;
    size_t nindexes;
} TableDef;

/* Loads table "name" into "def" (free with lang_table_def_free); a table with
 * no recorded owner comes owned by the store's owner (store_owner).
 * NoSuchTable when it does not exist; StoreError when the catalog entry is
 * unreadable. */
LangErrorCode lang_table_def_load(StoreTxn *txn, const char *name, TableDef *def, LangError *err);
/* Encodes "def" (without its id) for the store's catalog. */
void lang_table_def_encode(const TableDef *def, Buf *out);
/* Stores "def" (lang_table_def_encode) as the definition of table "name": a
 * StoreStatus (STORE_NOTFOUND when there is no such table). */
int lang_table_redefine(StoreTxn *txn, const char *name, const TableDef *def);
void lang_table_def_free(TableDef *def);
/* A deep copy of "src" into "dst" (free with lang_table_def_free). */
void lang_table_def_copy(const TableDef *src, TableDef *dst);
/* Decodes a definition as lang_table_def_encode wrote it into "def" (its id
 * and name as stored; free with lang_table_def_free): -1 when unreadable. */
int lang_table_def_decode(StoreBytes bytes, TableDef *def);
/* The object INFO FOR TABLE answers. */
Value lang_table_def_info(const TableDef *def);

/* ---- stored records (record.c) ----
 * A record is its identity and its fields, which lang encodes into the
 * store's opaque value, and — on a queue — the engine's columns, which
 * the store keeps beside it (StoreRecord) and only its queue primitives
 * change.  Users see both as one object (lang_record_view). */

typedef struct Record {
    Value key;    /* VAL_INT or VAL_STRING */
    Value fields; /* VAL_OBJECT: the user's fields, the NOT BEFORE field
                         * at the store's not_before when that is set */
    int64_t attempts, hold, claimed_until, not_before; /* see StoreRecord */
    char *consumer;                                    /* who signed the last hold, or NULL */
    char *instance;                                    /* the session that took it, or NULL */
    int64_t since, written, changed, claimed;          /* see StoreRecord */
    unsigned char *errors;                             /* a copy of StoreRecord.errors, or NULL */
    size_t errors_len;
    int64_t completed_at; /* done (KEEP): the instant of its finish; 0: not done */
} Record;

void lang_record_free(Record *r);
/* Reads the store's record "sr" of table "def" into "r" (freeing what "r"
 * held).  StoreError when its value is unreadable. */
LangErrorCode lang_record_from_store(const StoreRecord *sr, const TableDef *def, Record *r,
                                     LangError *err);
/* Decodes only the identity of the store's record "sr"; -1 when
 * unreadable. */
int lang_record_key_from_store(const StoreRecord *sr, Value *key);
/* The record as users see it at "now": its fields, then on a queue the
 * engine's (attempts once claimed; hold, claimed_until and claimed_by
 * while a hold is not ended; errors and last_error once an attempt failed,
 * a hold that ran out by "now" among them as "lapsed" even before a claim
 * records it), then `id`. */
Value lang_record_view(const Record *r, const TableDef *def, int64_t now);
/* The engine's field "name" of "r" as lang_record_view shows it at "now",
 * into "*out" (false, nothing set, when it shows none). */
bool lang_record_engine_field(const Record *r, const char *name, int64_t now, Value *out);
/* True for the names of the engine's fields. */
bool lang_record_is_engine_field(const char *name);
/* The store key of identity "key" (VAL_INT or VAL_STRING). */
void lang_record_key_encode(const Value *key, Buf *out);
/* What the store's queue primitives need of queue "def" (its table id,
 * TIMEOUT, ATTEMPTS, AT MOST … PER and EVERY limits, paused); NULL for a
 * collection. */
const StoreQueue *lang_record_queue(const TableDef *def, StoreQueue *q);

/* True when "r" is held at "now". */
bool lang_record_is_held(const Record *r, int64_t now);
/* The instant "r" is delayed to (its NOT BEFORE), or 0. */
int64_t lang_record_not_before(const Record *r, const TableDef *def);
/* True when "r" has reached the queue's ATTEMPTS ceiling and is not done. */
bool lang_record_is_dead(const Record *r, const TableDef *def);
/* True when the store's record "sr" of table "def" is a done record whose
 * KEEP is over at "now" (queue_done_expired): gone to every reader, though
 * still stored until the queue's writes remove it. */
bool lang_record_expired(const TableDef *def, const StoreRecord *sr, int64_t now);
/* store_record_get of store key "key" of table "def", where an expired
 * done record (lang_record_expired) is STORE_NOTFOUND. */
int lang_record_get_stored(StoreTxn *txn, const TableDef *def, StoreBytes key, StoreRecord *sr);
/* NoSuchRecord unless "fence" (see LANG_FENCE_DEAD in view.h) holds for
 * "r" at "now". */
LangErrorCode lang_record_fence(const TableDef *def, const Record *r, int64_t fence, int64_t now,
                                LangError *err);
/* The instant "r" became (or becomes) claimable: the latest of its creation
 * or release, the end of a lapsed hold, and its NOT BEFORE instant. */
int64_t lang_record_available_at(const Record *r, const TableDef *def);

/* The value lang stores for "r" (its identity and fields) into "out", and
 * the instant its NOT BEFORE field names into "*not_before" (0: none). */
void lang_record_value_encode(const Record *r, const TableDef *def, Buf *out, int64_t *not_before);
/* Writes the fields of "r" to the store under its key — a new record when
 * "create" (its columns start empty), else the existing one's value (its
 * columns stay) — filed by lang_record_filing.
 * TooLarge for content over RECORD_MAX_BYTES or a PER group over
 * STORE_MAX_KEY; RecordExists / NoSuchRecord
 * when "create" finds it / does not; StoreError… as lang_store_error. */
LangErrorCode lang_record_store(StoreTxn *txn, const TableDef *def, const Record *r, bool create,
                                LangError *err);
/* Creates the "n" records rs[0 .. n), whose identities differ, as n
 * lang_record_store of each would in that order, in one call of the store
 * (store_records_create): the first failure's error. */
LangErrorCode lang_records_create(StoreTxn *txn, const TableDef *def, const Record *rs, size_t n,
                                  LangError *err);
/* How queue "def" files a record of identity "key" and "fields": its
 * claim-order key (PRIORITY BY) into "order", its NOT BEFORE instant into
 * "*not_before" (0: none) and its AT MOST … PER group into "group" (the
 * first AT MOST … PER key, lang_record_group 0).  TooLarge when the
 * encoding of a group of any key is longer than STORE_MAX_KEY. */
LangErrorCode lang_record_filing(const TableDef *def, const Value *key, const Value *fields,
                                 Buf *order, int64_t *not_before, Buf *group, LangError *err);
/* The group of "fields" for the "i"th AT MOST … PER key of queue "def"
 * into "out": the order encoding of the key's field's value
 * (lang_value_key_encode: equal values, 1 and 1.0 too, give equal bytes),
 * or nothing when the queue has no such key or the field is absent or
 * null.  TooLarge, naming record "key", when the encoding is longer than
 * STORE_MAX_KEY. */
LangErrorCode lang_record_group(const TableDef *def, size_t i, const Value *key,
                                const Value *fields, Buf *out, LangError *err);
/* Files every record of queue "def" anew (store_queue_refile) after ALTER
 * QUEUE changed "old" into "def": with "by_fields" (its PRIORITY BY, NOT
 * BEFORE or PER field changed) each by lang_record_filing under "def" — a
 * NOT BEFORE that stayed the same keeps each record's instant — else as
 * each is filed (its ceiling or PER limit changed).  O(n) in the records.
 * TooLarge as lang_record_filing; StoreError… as lang_store_error. */
LangErrorCode lang_record_refile(StoreTxn *txn, const TableDef *old, const TableDef *def,
                                 bool by_fields, LangError *err);
/* Reads record "key" of "def" into "r" (r->key is set to a copy of key).
 * NoSuchRecord when absent (or done and expired). */
LangErrorCode lang_record_load(StoreTxn *txn, const TableDef *def, const Value *key, Record *r,
                               LangError *err);
/* NoSuchRecord naming record "key" of "def", for a store status that says
 * it is absent (STORE_NOTFOUND, STORE_TOOBIG, STORE_CONFLICT for a fence);
 * else as lang_store_error. */
LangErrorCode lang_record_missing(int status, const TableDef *def, const Value *key,
                                  const char *what, LangError *err);
/* RecordExists naming record "key" of "def". */
LangErrorCode lang_record_taken(const TableDef *def, const Value *key, LangError *err);

/* Checks "fields" against the table's schema (SCHEMAFULL, TYPE, REQUIRED),
 * coercing datetime strings in place.  SchemaViolation when refused. */
LangErrorCode lang_record_validate(const TableDef *def, Value *fields, LangError *err);

/* True when table "def" holds a record of identity "key" that is still
 * outstanding: a done record (KEEP) is history, and a write of its
 * identity creates it anew. */
bool lang_record_exists(StoreTxn *txn, const TableDef *def, const Value *key);

/* A list of store keys in one Buf, each after its length (4 bytes): what
 * a statement collects to change or answer records after a walk. */
/* Appends "key" to the list "keys". */
void lang_keys_push(Buf *keys, StoreBytes key);
/* The key at "*off" in "keys" into "*key" (pointing into "keys"), moving
 * "*off" past it; false at the end of the list. */
bool lang_keys_next(const Buf *keys, size_t *off, StoreBytes *key);

/* Maps store status "status" to a named error, with "what" (the work it
 * stopped: "reading a record") in the message: StoreFull, TooLarge, or
 * StoreError.  Returns the code. */
LangErrorCode lang_store_error(int status, const char *what, LangError *err);

/* ---- expressions (expr.c) ---- */

typedef struct EvalContext {
    const Value *record; /* the record paths read from, or NULL */
    int64_t now;         /* the statement's instant */
} EvalContext;

/* Evaluates "e" into "*out" (caller frees).  TypeError / ParseError on
 * failure, with "*out" VAL_NONE. */
LangErrorCode lang_expr_eval(const Expr *e, const EvalContext *cx, Value *out, LangError *err);
/* The NOT BEFORE expression of value "when" (see lang_view_release): a
 * literal of a duration or a datetime, the call time::cron(EXPR[, ZONE])
 * of an object {"cron": EXPR[, "zone": ZONE]}.  A new tree (lang_expr_free). */
Expr *lang_expr_not_before(const Value *when);

/* ---- field paths (path.c) ---- */

/* A field path "a.b.c" split into its parts. */
typedef struct LangPath {
    char *copy;   /* the path, its dots made NULs */
    char **parts; /* the non-empty parts, pointing into "copy" */
    size_t len;
} LangPath;

/* Splits "path" at its dots into "out" (free with lang_path_free); empty
 * parts ("a..b") are left out. */
void lang_path_split(const char *path, LangPath *out);
void lang_path_free(LangPath *path);
/* The value at "parts" inside object "v" (NULL when absent, or when a part
 * on the way is not an object). */
const Value *lang_path_get(const Value *v, char *const *parts, size_t len);
/* Sets "v" (taking it) at "parts" inside object "o", making objects on the
 * way (replacing what is not one). */
void lang_path_set(Value *o, char *const *parts, size_t len, Value v);
/* Removes the field at "parts" inside object "o": true when there was one. */
bool lang_path_remove(Value *o, char *const *parts, size_t len);

#endif
