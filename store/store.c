/* store.c — store.h's functions, each handed to the backend of the store
 * it is called on (see backend.h): the only file that knows both backends. */
#include "backend.h"

/* The operations of the backend "p" (a Store or a StoreTxn) belongs to: its
 * first member. */
#define OPS(p) (*(const StoreOps *const *)(const void *)(p))

int
store_open(const char *location, const StoreOptions *opts, Store **out, char *errbuf,
           size_t errlen)
{
    const StoreOps *ops = store_location_is_server(location) ? &store_pg_ops : &store_lmdb_ops;
    return ops->open(location, opts, out, errbuf, errlen);
}

void
store_close(Store *st)
{
    if (st)
        OPS(st)->close(st);
}

int64_t
store_now(Store *st)
{
    return OPS(st)->now(st);
}

uint64_t
store_changes(Store *st)
{
    return OPS(st)->changes(st);
}

bool
store_wait_change(Store *st, uint64_t seen, int64_t until_ns)
{
    return OPS(st)->wait_change(st, seen, until_ns);
}

void
store_wake(Store *st)
{
    OPS(st)->wake(st);
}

void
store_stats(Store *st, StoreStats *out)
{
    OPS(st)->stats(st, out);
}

bool
store_owner(StoreTxn *txn, uint32_t *uid, uint32_t *gid)
{
    return OPS(txn)->owner(txn, uid, gid);
}

int64_t
store_txn_now(StoreTxn *txn)
{
    return OPS(txn)->txn_now(txn);
}

int
store_write(Store *st, int (*fn)(StoreTxn *txn, void *ctx), void *ctx)
{
    store_error_detail_clear();
    return OPS(st)->write(st, fn, ctx);
}

int
store_txn_begin(Store *st, bool write, StoreTxn **out)
{
    store_error_detail_clear();
    return OPS(st)->txn_begin(st, write, out);
}

int
store_txn_commit(StoreTxn *txn)
{
    return OPS(txn)->txn_commit(txn);
}

void
store_txn_abort(StoreTxn *txn)
{
    if (txn)
        OPS(txn)->txn_abort(txn);
}

void
store_txn_use_reserve(StoreTxn *txn)
{
    OPS(txn)->txn_use_reserve(txn);
}

int
store_table_create(StoreTxn *txn, const char *name, StoreBytes def, uint32_t *id_out)
{
    return OPS(txn)->table_create(txn, name, def, id_out);
}

int
store_table_redefine(StoreTxn *txn, const char *name, StoreBytes def)
{
    return OPS(txn)->table_redefine(txn, name, def);
}

int
store_table_get(StoreTxn *txn, const char *name, uint32_t *id_out, StoreBytes *def_out)
{
    return OPS(txn)->table_get(txn, name, id_out, def_out);
}

int
store_table_each(StoreTxn *txn, int (*fn)(void *ctx, const char *name, uint32_t id, StoreBytes def), void *ctx)
{
    return OPS(txn)->table_each(txn, fn, ctx);
}

int
store_table_drop(StoreTxn *txn, const char *name)
{
    return OPS(txn)->table_drop(txn, name);
}

int
store_table_rename(StoreTxn *txn, const char *from, const char *to)
{
    return OPS(txn)->table_rename(txn, from, to);
}

int
store_record_get(StoreTxn *txn, uint32_t table, StoreBytes key, StoreRecord *out)
{
    return OPS(txn)->record_get(txn, table, key, out);
}

int
store_record_create(StoreTxn *txn, uint32_t table, const StoreQueue *q, const StoreRecord *r)
{
    return OPS(txn)->record_create(txn, table, q, r);
}

int
store_record_update(StoreTxn *txn, uint32_t table, const StoreQueue *q, const StoreRecord *r)
{
    return OPS(txn)->record_update(txn, table, q, r);
}

int
store_record_delete(StoreTxn *txn, uint32_t table, const StoreQueue *q, StoreBytes key, int64_t hold)
{
    return OPS(txn)->record_delete(txn, table, q, key, hold);
}

int
store_record_each(StoreTxn *txn, uint32_t table, StoreBytes from, int (*fn)(void *ctx, const StoreRecord *r), void *ctx)
{
    return OPS(txn)->record_each(txn, table, from, fn, ctx);
}

int
store_claim(StoreTxn *txn, const StoreQueue *q, const StoreClaim *c, int (*fn)(void *ctx, const StoreRecord *now, const StoreRecord *before), void *ctx, int64_t *claimed)
{
    return OPS(txn)->claim(txn, q, c, fn, ctx, claimed);
}

int
store_release(StoreTxn *txn, const StoreQueue *q, StoreBytes key, int64_t hold, int64_t not_before, StoreRecord *out)
{
    return OPS(txn)->release(txn, q, key, hold, not_before, out);
}

int
store_release_all(StoreTxn *txn, const StoreQueue *q, StoreBytes who, StoreBytes instance, int64_t not_before, int (*fn)(void *ctx, const StoreRecord *r), void *ctx)
{
    return OPS(txn)->release_all(txn, q, who, instance, not_before, fn, ctx);
}

int
store_touch(StoreTxn *txn, const StoreQueue *q, StoreBytes key, int64_t hold, StoreRecord *out)
{
    return OPS(txn)->touch(txn, q, key, hold, out);
}

int
store_retry(StoreTxn *txn, const StoreQueue *q, StoreBytes key, int64_t not_before, StoreRecord *out)
{
    return OPS(txn)->retry(txn, q, key, not_before, out);
}

int
store_unclaim(StoreTxn *txn, const StoreQueue *q, const StoreRecord *before, int64_t hold, bool *given_back)
{
    return OPS(txn)->unclaim(txn, q, before, hold, given_back);
}

void
store_txn_lazy(StoreTxn *txn)
{
    if (OPS(txn)->txn_lazy)
        OPS(txn)->txn_lazy(txn);
}

void
store_txn_last(StoreTxn *txn)
{
    if (OPS(txn)->txn_last)
        OPS(txn)->txn_last(txn);
}

int
store_queue_refile(StoreTxn *txn, const StoreQueue *q,
                   int (*file)(void *ctx, const StoreRecord *r, StoreFiling *out), void *ctx)
{
    return OPS(txn)->queue_refile(txn, q, file, ctx);
}

int
store_queue_rate_next(StoreTxn *txn, const StoreQueue *q, int64_t *at)
{
    return OPS(txn)->queue_rate_next(txn, q, at);
}

int
store_queue_counts(StoreTxn *txn, uint32_t table, StoreQueueCounts *out)
{
    return OPS(txn)->queue_counts(txn, table, out);
}

int
store_queue_each_waiting(StoreTxn *txn, uint32_t table, int (*fn)(void *ctx, const StoreRecord *r, int64_t wake_ns), void *ctx)
{
    return OPS(txn)->queue_each_waiting(txn, table, fn, ctx);
}

int
store_identity_next(StoreTxn *txn, uint32_t table, int64_t *out)
{
    return OPS(txn)->identity_next(txn, table, out);
}

int
store_identity_note(StoreTxn *txn, uint32_t table, int64_t id)
{
    return OPS(txn)->identity_note(txn, table, id);
}

int
store_dedup_check(StoreTxn *txn, uint32_t table, StoreBytes key, int64_t window_ns, bool *repeat)
{
    return OPS(txn)->dedup_check(txn, table, key, window_ns, repeat);
}

int
store_health(StoreTxn *txn, StoreHealth *out)
{
    return OPS(txn)->health(txn, out);
}
