/* backend.h — what a storage backend gives store.c, and what status.c
 * gives every backend.
 *
 * store.h's functions are store.c's: each hands the call to the backend
 * of the Store (or StoreTxn) it is given, through that backend's table of
 * operations.  A backend's "struct Store" and "struct StoreTxn" begin with
 * a pointer to its StoreOps (so store.c reads the table from any of them
 * without knowing the rest), and every operation has the meaning, errors
 * and memory rules store.h gives the function of the same name.
 *
 * The backends, each a library of its own that alone sees its database's
 * headers: LMDB (store/lmdb/) for a directory, PostgreSQL (store/pg/) for a
 * postgresql:// or postgres:// URI. */
#ifndef QUEUEFS_STORE_BACKEND_H
#define QUEUEFS_STORE_BACKEND_H

#include "store.h"

typedef struct StoreOps {
    const char *name;   /* "lmdb", "postgresql" */
    int (*open)(const char *location, const StoreOptions *opts, Store **out, char *errbuf,
                size_t errlen);
    void (*close)(Store *st);
    int64_t (*now)(Store *st);
    uint64_t (*changes)(Store *st);
    bool (*wait_change)(Store *st, uint64_t seen, int64_t until_ns);
    void (*wake)(Store *st);
    void (*stats)(Store *st, StoreStats *out);
    bool (*owner)(StoreTxn *txn, uint32_t *uid, uint32_t *gid);
    int64_t (*txn_now)(StoreTxn *txn);
    int (*write)(Store *st, int (*fn)(StoreTxn *txn, void *ctx), void *ctx);
    int (*txn_begin)(Store *st, bool write, StoreTxn **out);
    int (*txn_commit)(StoreTxn *txn);
    void (*txn_abort)(StoreTxn *txn);
    void (*txn_use_reserve)(StoreTxn *txn);
    int (*table_create)(StoreTxn *txn, const char *name, StoreBytes def, uint32_t *id_out);
    int (*table_redefine)(StoreTxn *txn, const char *name, StoreBytes def);
    int (*table_get)(StoreTxn *txn, const char *name, uint32_t *id_out, StoreBytes *def_out);
    int (*table_each)(StoreTxn *txn, int (*fn)(void *ctx, const char *name, uint32_t id, StoreBytes def), void *ctx);
    int (*table_drop)(StoreTxn *txn, const char *name);
    int (*table_rename)(StoreTxn *txn, const char *from, const char *to);
    int (*record_get)(StoreTxn *txn, uint32_t table, StoreBytes key, StoreRecord *out);
    int (*record_create)(StoreTxn *txn, uint32_t table, const StoreQueue *q, const StoreRecord *r);
    int (*record_update)(StoreTxn *txn, uint32_t table, const StoreQueue *q, const StoreRecord *r);
    int (*record_delete)(StoreTxn *txn, uint32_t table, const StoreQueue *q, StoreBytes key, int64_t hold);
    int (*record_each)(StoreTxn *txn, uint32_t table, StoreBytes from, int (*fn)(void *ctx, const StoreRecord *r), void *ctx);
    int (*claim)(StoreTxn *txn, const StoreQueue *q, const StoreClaim *c, int (*fn)(void *ctx, const StoreRecord *now, const StoreRecord *before), void *ctx, int64_t *claimed);
    int (*release)(StoreTxn *txn, const StoreQueue *q, StoreBytes key, int64_t hold, int64_t not_before, StoreRecord *out);
    int (*release_all)(StoreTxn *txn, const StoreQueue *q, StoreBytes who, StoreBytes instance, int64_t not_before, int (*fn)(void *ctx, const StoreRecord *r), void *ctx);
    int (*touch)(StoreTxn *txn, const StoreQueue *q, StoreBytes key, int64_t hold, StoreRecord *out);
    int (*retry)(StoreTxn *txn, const StoreQueue *q, StoreBytes key, int64_t not_before, StoreRecord *out);
    int (*unclaim)(StoreTxn *txn, const StoreQueue *q, const StoreRecord *before, int64_t hold, bool *given_back);
    void (*txn_lazy)(StoreTxn *txn);      /* NULL: every write is durable */
    void (*txn_last)(StoreTxn *txn);      /* NULL: a commit is its own step */
    int (*queue_refile)(StoreTxn *txn, const StoreQueue *q, int (*file)(void *ctx, const StoreRecord *r, StoreFiling *out), void *ctx);
    int (*queue_rate_next)(StoreTxn *txn, const StoreQueue *q, int64_t *at);
    int (*queue_counts)(StoreTxn *txn, uint32_t table, StoreQueueCounts *out);
    int (*queue_each_waiting)(StoreTxn *txn, uint32_t table, int (*fn)(void *ctx, const StoreRecord *r, int64_t wake_ns), void *ctx);
    int (*identity_next)(StoreTxn *txn, uint32_t table, int64_t *out);
    int (*identity_note)(StoreTxn *txn, uint32_t table, int64_t id);
    int (*dedup_check)(StoreTxn *txn, uint32_t table, StoreBytes key, int64_t window_ns, bool *repeat);
    int (*health)(StoreTxn *txn, StoreHealth *out);
} StoreOps;

/* Forgets what store_error_detail() answered in this thread: store.c calls
 * it as each transaction begins. */
void store_error_detail_clear(void);

/* Sets what store_error_detail() answers in this thread (printf-style;
 * trailing newlines dropped). */
void store_error_detail_set(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

extern const StoreOps store_lmdb_ops;
extern const StoreOps store_pg_ops;

#endif
