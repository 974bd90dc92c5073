/* store.c — store.h's functions, each handed to the backend of the store
 * it is called on (see backend.h): the only file that knows both backends. */
#include "backend.h"

/* The operations of the backend "p" (a Store or a StoreTxn) belongs to: its
 * first member. */
#define OPS(p) (*(const StoreOps *const *)(const void *)(p))

int
store_open(const char *location, const StoreOptions *opts, Store **out, char *errbuf, size_t errlen)
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

void
store_txn_abort(StoreTxn *txn)
{
    if (txn)
        OPS(txn)->txn_abort(txn);
}

/* Every other operation is handed on as it is. */
#define STORE_OWN_OP(ret, op, params, args, self)
#define STORE_OWN_VOID_OP(op, params, args, self)
#define STORE_OP(ret, op, params, args, self) \
    ret store_##op params \
    { \
        return OPS(self)->op args; \
    }
#define STORE_VOID_OP(op, params, args, self) \
    void store_##op params \
    { \
        OPS(self)->op args; \
    }
#include "ops.def"
