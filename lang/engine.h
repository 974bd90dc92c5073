/* engine.h — what the pieces of lang/ share behind lang.h: table
 * definitions (catalog.c), the stored form of a record and the queue rules
 * that decide where it waits (record.c), expression evaluation (expr.c)
 * and field paths (path.c).  What runs statements shares exec.h.  Not a
 * public interface. */
#ifndef QUEUEFS_ENGINE_H
#define QUEUEFS_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "../store/store.h"
#include "ast.h"
#include "buf.h"
#include "error.h"
#include "lang.h"
#include "value.h"

/* The engine's four fields on a queue record.  "hold" is the number of
 * the record's last hold (numbered store-wide, see holds.c): the N of
 * held/ID~N. */
#define FIELD_ATTEMPTS      "attempts"
#define FIELD_CLAIMED_UNTIL "claimed_until"
#define FIELD_CLAIMED_BY    "claimed_by"
#define FIELD_HOLD          "hold"

/* ---- table definitions (catalog.c) ---- */

typedef struct FieldDef {
    char *name;       /* "url", or a path "a.b" */
    char *type;       /* NULL = any type */
    bool  required;
} FieldDef;

typedef struct IndexDef {
    char  *name;
    char **fields;
    size_t nfields;
} IndexDef;

typedef struct TableDef {
    uint32_t  id;         /* the store's id for the table */
    bool      is_queue;
    int64_t   uid, gid;   /* the table's owner; -1: none recorded (table_def_load
                           * gives the store's owner then, when it is known) */
    int64_t   mode;       /* permission bits (07777); -1: 0755 */
    TableDecl decl;       /* name, TIMEOUT, ATTEMPTS, … as declared */
    FieldDef *fields;
    size_t    nfields;
    IndexDef *indexes;
    size_t    nindexes;
} TableDef;

/* Loads table "name" into "def" (free with table_def_free); a table with
 * no recorded owner comes owned by the store's owner (store_owner).
 * NoSuchTable when it does not exist; StoreError when the catalog entry is
 * unreadable. */
LangErrorCode table_def_load(StoreTxn *txn, const char *name, TableDef *def, LangError *err);
/* Encodes "def" (without its id) for the store's catalog. */
void table_def_encode(const TableDef *def, Buf *out);
/* Stores "def" (table_def_encode) as the definition of table "name": a
 * StoreStatus (STORE_NOTFOUND when there is no such table). */
int lang_table_redefine(StoreTxn *txn, const char *name, const TableDef *def);
void table_def_free(TableDef *def);
/* The object INFO FOR TABLE answers. */
Value table_def_info(const TableDef *def);

/* ---- stored records (record.c) ----
 * A stored record is the record's fields (the engine's included, `id`
 * excluded) plus, for a held queue record, the instance of the session that
 * holds it, which is never shown: it is how RELEASE ALL finds a session's
 * own unsigned holds. */

typedef struct Record {
    Value   key;      /* VAL_INT or VAL_STRING */
    Value   fields;   /* VAL_OBJECT */
    char   *holder;   /* instance that took the live hold, or NULL */
    int64_t since;    /* when it was created or last released (ns) */
    int64_t written;  /* when its content was last written: created or updated */
    int64_t changed;  /* when its hold last changed (claim, release, touch), or
                       * it was created */
    int64_t claimed;  /* when its last hold was taken (0: never) */
} Record;

void record_free(Record *r);
/* Encodes the stored form of "r" (fields and holder). */
void record_encode(const Record *r, Buf *out);
/* Decodes a stored form into r->key, r->fields and r->holder. */
LangErrorCode record_decode(StoreBytes bytes, Record *r, LangError *err);
/* Decodes only the identity from a stored form; -1 when unreadable. */
int record_decode_key(StoreBytes bytes, Value *key);
/* The record as users see it: its fields plus `id`. */
Value record_view(const Record *r, const TableDef *def);
/* The store key of identity "key" (VAL_INT or VAL_STRING). */
void record_key_encode(const Value *key, Buf *out);

/* True when "r" is held at "now": claimed_until is a datetime after now. */
bool record_is_held(const Record *r, int64_t now);
/* The instant the queue's NOT BEFORE field delays "r" to, or 0 when it is
 * not delayed (no field declared, or its value is not a datetime). */
int64_t record_not_before(const Record *r, const TableDef *def);
/* True when "r" has reached the queue's ATTEMPTS ceiling. */
bool record_is_dead(const Record *r, const TableDef *def);
/* NoSuchRecord unless "fence" (see LANG_FENCE_DEAD in lang.h) holds for
 * "r" at "now". */
LangErrorCode record_fence(const TableDef *def, const Record *r, int64_t fence, int64_t now,
                           LangError *err);
/* The instant "r" became (or becomes) claimable: the latest of its creation
 * or release, the end of a lapsed hold, and its NOT BEFORE instant. */
int64_t record_available_at(const Record *r, const TableDef *def);

/* An 8-byte big-endian integer kept in a table's meta under "name" (0 when
 * absent), and its update. */
LangErrorCode meta_get_i64(StoreTxn *txn, uint32_t table, const void *name, size_t len,
                           int64_t *out, LangError *err);
LangErrorCode meta_put_i64(StoreTxn *txn, uint32_t table, const void *name, size_t len,
                           int64_t value, LangError *err);

/* The store's count of "what" (claims, releases, lapses, deletes) for a
 * table: kept in its meta, so every mount agrees. */
#define COUNTER_CLAIMS   "count:claims"
#define COUNTER_RELEASES "count:releases"
#define COUNTER_LAPSES   "count:lapses"
#define COUNTER_DELETES  "count:deletes"
LangErrorCode counter_add(StoreTxn *txn, const TableDef *def, const char *what, int64_t by,
                          LangError *err);
LangErrorCode counter_get(StoreTxn *txn, const TableDef *def, const char *what, int64_t *out,
                          LangError *err);

/* Writes "r" to the store under its key, filing it in the queue indexes by
 * the queue rules: a dead record is in none; a held one waits for its
 * hold's end, and is then dead, delayed until its NOT BEFORE instant if
 * that is later, or ready; otherwise it waits until its NOT BEFORE instant,
 * or is ready now. */
LangErrorCode record_store(StoreTxn *txn, const TableDef *def, const Record *r, int64_t now,
                           LangError *err);
/* Reads record "key" of "def" into "r" (r->key is set to a copy of key).
 * NoSuchRecord when absent. */
LangErrorCode record_load(StoreTxn *txn, const TableDef *def, const Value *key, Record *r,
                          LangError *err);

/* Checks "fields" against the table's schema (SCHEMAFULL, TYPE, REQUIRED),
 * coercing datetime strings in place.  SchemaViolation when refused. */
LangErrorCode record_validate(const TableDef *def, Value *fields, LangError *err);

/* True when table "def" holds a record of identity "key". */
bool record_exists(StoreTxn *txn, const TableDef *def, const Value *key);

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
    const Value *record;  /* the record paths read from, or NULL */
    int64_t      now;     /* the statement's instant */
} EvalContext;

/* Evaluates "e" into "*out" (caller frees).  TypeError / ParseError on
 * failure, with "*out" VAL_NONE. */
LangErrorCode expr_eval(const Expr *e, const EvalContext *cx, Value *out, LangError *err);

/* ---- field paths (path.c) ---- */

/* A field path "a.b.c" split into its parts. */
typedef struct LangPath {
    char  *copy;    /* the path, its dots made NULs */
    char **parts;   /* the non-empty parts, pointing into "copy" */
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

#endif
