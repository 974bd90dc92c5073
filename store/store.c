/* store.c — store.h's functions, each handed to the backend of the store
 * it is called on (see store_backend.h). */
#include "store_backend.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The operations of the backend "p" (a Store or a StoreTxn) belongs to: its
 * first member. */
#define OPS(p) (*(const StoreOps *const *)(const void *)(p))

static const char *const store_messages[] = {
    [STORE_OK] = "success",
    [STORE_NOTFOUND] = "not found",
    [STORE_EXISTS] = "already exists",
    [STORE_FULL] = "store is full",
    [STORE_TOOBIG] = "key too long",
    [STORE_IO] = "store I/O error",
    [STORE_BUSY] = "store busy",
    [STORE_CORRUPT] = "not a queuefs store, or damaged",
    [STORE_INVALID] = "invalid store option",
    [STORE_READONLY] = "the store is open for reading only",
    [STORE_CONFLICT] = "the record's hold is not the one named",
    [STORE_EXHAUSTED] = "no identity is left to assign",
};

static _Thread_local char error_detail[512];

const char *
store_error_detail(void)
{
    return error_detail;
}

void
store_error_detail_set(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(error_detail, sizeof error_detail, fmt, ap);
    va_end(ap);
    size_t n = strlen(error_detail);
    while (n && (error_detail[n - 1] == '\n' || error_detail[n - 1] == ' '))
        error_detail[--n] = 0;
}

const char *
store_strerror(int status)
{
    if (status < 0 || (size_t)status >= sizeof store_messages / sizeof store_messages[0])
        return "unknown store error";
    return store_messages[status];
}

bool
store_location_is_server(const char *location)
{
    return strncmp(location, "postgresql://", 13) == 0 || strncmp(location, "postgres://", 11) == 0;
}

void
store_location_shown(const char *location, char *out, size_t len)
{
    if (!len)
        return;
    if (!store_location_is_server(location)) {
        snprintf(out, len, "%s", location);
        return;
    }
    /* scheme://[user[:password]@]host.../db[?param&param...] */
    const char *authority = strstr(location, "://") + 3;
    const char *end = authority + strcspn(authority, "/?");
    const char *at = memchr(authority, '@', (size_t)(end - authority));
    const char *colon = at ? memchr(authority, ':', (size_t)(at - authority)) : NULL;
    const char *query = strchr(end, '?');
    size_t upto = query ? (size_t)(query - location) : strlen(location);
    size_t n = 0;
    for (size_t i = 0; i < upto && n + 1 < len; i++) {
        if (colon && location + i == colon)
            i = (size_t)(at - location);   /* ":password" goes; '@' stays */
        out[n++] = location[i];
    }
    /* The parameters but password=... */
    char sep = '?';
    for (const char *q = query; q && *q && n + 1 < len;) {
        q++;
        size_t plen = strcspn(q, "&");
        if (strncmp(q, "password=", 9) != 0) {
            out[n++] = sep;
            for (size_t i = 0; i < plen && n + 1 < len; i++)
                out[n++] = q[i];
            sep = '&';
        }
        q += plen;
    }
    out[n] = 0;
}

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
    error_detail[0] = 0;
    return OPS(st)->write(st, fn, ctx);
}

int
store_txn_begin(Store *st, bool write, StoreTxn **out)
{
    error_detail[0] = 0;
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
