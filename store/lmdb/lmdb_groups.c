/* lmdb_groups.c — a queue's limits on LMDB (store.h's StoreQueue):
 * AT MOST n PER group and AT MOST n EVERY window.  See "Layout" in
 * lmdb_internal.h for where they are kept.
 *
 * Groups.  Under per_group > 0 a ready record of a group is filed in the
 * "groups" database, [T][u64 hash of its group][order key] → duplicates
 * [u64 seq][record key], so each group's records sort in claim order.  Only
 * the group's next record — its first in claim order, and only while the
 * group has fewer than per_group holds — is moved into the ready index,
 * where a claim looks: the head is found in O(log n) however many records
 * wait behind groups at their limit.  The group's meta value "grp:"[group]
 * holds [i64 held][u8 full][the record key of its record in the ready
 * index, when it has one]: "held" counts the group's hold entries in the
 * deadline index (a lapsed hold counts until the claim that drains it).
 * Every change to a grouped record removes and adds its index entries
 * (lmdb_group_unfile, lmdb_group_file, lmdb_group_held_add) and then
 * settles its group (lmdb_group_settle), which puts the right record — or
 * none — in the ready index.  Groups whose hashes collide share a key
 * prefix; their entries are told apart by each record's own group.
 *
 * Rates.  Under rate > 0 the meta value "rate" holds the instants of the
 * queue's last hand-outs (at most "rate" of them, oldest first), so any
 * claim on the store — every process shares the database — sees what the
 * window has room for. */
#include "lmdb_internal.h"

#define GROUP_META_PREFIX "grp:"
#define GROUP_STATE_FIXED 9 /* [i64 held][u8 full] */
#define META_RATE "rate"
#define GROUPS_KEY_PREFIX 12 /* [T][u64 hash] */

/* ---- a group's state ---- */

/* A group's meta value, decoded (copied out of LMDB memory). */
typedef struct GroupState {
    int64_t held;
    bool full;
    bool has_head;
    unsigned char head[STORE_MAX_KEY]; /* its record in the ready index */
    size_t head_len;
} GroupState;

/* The meta name of "group" into "out". */
static StoreBytes
group_meta_name(unsigned char *out, StoreBytes group)
{
    size_t n = strlen(GROUP_META_PREFIX);
    memcpy(out, GROUP_META_PREFIX, n);
    lmdb_copy(out + n, group.data, group.len);
    return (StoreBytes){out, n + group.len};
}

static int
group_state_get(StoreTxn *t, uint32_t table, StoreBytes group, GroupState *g)
{
    unsigned char name[META_NAME_MAX];
    StoreBytes v;
    memset(g, 0, offsetof(GroupState, head));
    g->head_len = 0;
    int rc = lmdb_meta_get(t, table, group_meta_name(name, group), &v);
    if (rc == STORE_NOTFOUND)
        return STORE_OK;
    if (rc)
        return rc;
    if (v.len < GROUP_STATE_FIXED || v.len > GROUP_STATE_FIXED + STORE_MAX_KEY)
        return STORE_CORRUPT;
    const unsigned char *p = v.data;
    g->held = (int64_t)be_get64(p);
    g->full = p[8] != 0;
    g->head_len = v.len - GROUP_STATE_FIXED;
    g->has_head = g->head_len > 0;
    lmdb_copy(g->head, p + GROUP_STATE_FIXED, g->head_len);
    return STORE_OK;
}

/* Stores "g" as the state of "group"; an empty one (no hold, no record in
 * the ready index) is deleted. */
static int
group_state_put(StoreTxn *t, uint32_t table, StoreBytes group, const GroupState *g)
{
    unsigned char name[META_NAME_MAX], v[GROUP_STATE_FIXED + STORE_MAX_KEY];
    StoreBytes n = group_meta_name(name, group);
    if (g->held <= 0 && !g->has_head && !g->full) {
        int rc = lmdb_meta_del(t, table, n);
        return rc == STORE_NOTFOUND ? STORE_OK : rc;
    }
    be_put64(v, (uint64_t)g->held);
    v[8] = g->full;
    size_t len = g->has_head ? g->head_len : 0;
    lmdb_copy(v + GROUP_STATE_FIXED, g->head, len);
    return lmdb_meta_put(t, table, n, (StoreBytes){v, GROUP_STATE_FIXED + len});
}

/* ---- the groups index ---- */

/* FNV-1a: the group's part of its entries' keys. */
static uint64_t
group_hash(StoreBytes group)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < group.len; i++)
        h = (h ^ ((const unsigned char *)group.data)[i]) * 0x100000001b3ull;
    return h;
}

/* Builds a groups entry: key [T][hash][order], data [seq][rkey]. */
static void
group_entry_build(KeyBuf *k, KeyBuf *d, uint32_t table, StoreBytes group, const void *order,
                  size_t order_len, uint64_t seq, const void *rkey, size_t rkey_len)
{
    lmdb_key_set_table(k, table);
    lmdb_key_append_u64(k, group_hash(group));
    lmdb_key_append(k, order, order_len);
    d->len = 0;
    lmdb_key_append_u64(d, seq);
    lmdb_key_append(d, rkey, rkey_len);
}

/* Puts (put) or deletes the groups entry; MDB_NOTFOUND for a missing one. */
static int
group_entry(StoreTxn *t, uint32_t table, StoreBytes group, const void *order, size_t order_len,
            uint64_t seq, const void *rkey, size_t rkey_len, bool put)
{
    KeyBuf k, d;
    group_entry_build(&k, &d, table, group, order, order_len, seq, rkey, rkey_len);
    MDB_val kv = lmdb_key_val(&k), dv = lmdb_key_val(&d);
    return put ? lmdb_put(t->st, t->txn, t->st->group_index, &kv, &dv)
               : lmdb_del(t->st, t->txn, t->st->group_index, &kv, &dv);
}

/* A record's place in a group, copied out of LMDB memory. */
typedef struct GroupEntry {
    unsigned char order[STORE_MAX_KEY], rkey[STORE_MAX_KEY];
    size_t order_len, rkey_len;
    uint64_t seq;
} GroupEntry;

/* True when record "rkey" of "table" is of group "group". */
static int
record_in_group(StoreTxn *t, uint32_t table, const void *rkey, size_t rkey_len, StoreBytes group,
                bool *yes)
{
    StoreRecord r;
    int rc = lmdb_record_load(t, table, (StoreBytes){rkey, rkey_len}, &r, NULL);
    *yes = rc == STORE_OK && r.group.len == group.len &&
           (!group.len || memcmp(r.group.data, group.data, group.len) == 0);
    return rc == STORE_NOTFOUND ? STORE_OK : rc;
}

/* The first record of "group" in the groups index, in claim order, into
 * "out"; STORE_NOTFOUND when it has none there. */
static int
group_first(StoreTxn *t, uint32_t table, StoreBytes group, GroupEntry *out)
{
    MDB_cursor *cur;
    KeyBuf prefix;
    int rc = lmdb_table_cursor(t, t->st->group_index, table, &cur, &prefix);
    if (rc)
        return rc;
    lmdb_key_append_u64(&prefix, group_hash(group));
    MDB_val k = lmdb_key_val(&prefix), v;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size < GROUPS_KEY_PREFIX || memcmp(k.mv_data, prefix.data, GROUPS_KEY_PREFIX)) {
            rc = MDB_NOTFOUND;
            break;
        }
        if (v.mv_size < 8 || v.mv_size > 8 + STORE_MAX_KEY ||
            k.mv_size > GROUPS_KEY_PREFIX + STORE_MAX_KEY) {
            rc = STORE_CORRUPT;
            break;
        }
        out->order_len = k.mv_size - GROUPS_KEY_PREFIX;
        memcpy(out->order, (const unsigned char *)k.mv_data + GROUPS_KEY_PREFIX, out->order_len);
        out->seq = be_get64(v.mv_data);
        out->rkey_len = v.mv_size - 8;
        memcpy(out->rkey, (const unsigned char *)v.mv_data + 8, out->rkey_len);
        bool mine;
        if ((rc = record_in_group(t, table, out->rkey, out->rkey_len, group, &mine)) || mine)
            break;
    }
    mdb_cursor_close(cur);
    return rc == STORE_CORRUPT ? rc : rc == MDB_NOTFOUND ? STORE_NOTFOUND : lmdb_status_of(rc);
}

/* ---- what the queue indexes call ---- */

int
lmdb_group_file(StoreTxn *t, uint32_t table, StoreBytes group, const void *order, size_t order_len,
                uint64_t seq, const void *rkey, size_t rkey_len)
{
    return lmdb_status_of(
        group_entry(t, table, group, order, order_len, seq, rkey, rkey_len, true));
}

int
lmdb_group_unfile(StoreTxn *t, uint32_t table, StoreBytes group, const RecordHead *h,
                  const void *rkey, size_t rkey_len, int *cls)
{
    GroupState g;
    *cls = -1;
    int rc = group_state_get(t, table, group, &g);
    if (rc)
        return rc;
    if (g.has_head && g.head_len == rkey_len && memcmp(g.head, rkey, rkey_len) == 0) {
        rc = lmdb_ready_entry(t, table, h->order, h->order_len, h->seq, rkey, rkey_len, false);
        if (rc == 0)
            *cls = CNT_READY;
        g.has_head = false;
        if ((rc = rc == MDB_NOTFOUND ? 0 : lmdb_status_of(rc)))
            return rc;
        return group_state_put(t, table, group, &g);
    }
    rc = group_entry(t, table, group, h->order, h->order_len, h->seq, rkey, rkey_len, false);
    if (rc == 0)
        *cls = CNT_GROUPED;
    return rc == MDB_NOTFOUND ? STORE_OK : lmdb_status_of(rc);
}

int
lmdb_group_held_add(StoreTxn *t, uint32_t table, StoreBytes group, int by)
{
    GroupState g;
    int rc = group_state_get(t, table, group, &g);
    if (rc)
        return rc;
    g.held += by;
    if (g.held < 0)
        g.held = 0;
    return group_state_put(t, table, group, &g);
}

/* Moves the group's record "e" between the groups index and the ready
 * index (to_ready), noting it in "delta". */
static int
group_move(StoreTxn *t, uint32_t table, StoreBytes group, const GroupEntry *e, bool to_ready,
           int64_t delta[CNT_N])
{
    int rc = group_entry(t, table, group, e->order, e->order_len, e->seq, e->rkey, e->rkey_len,
                         !to_ready);
    if (rc == 0 || rc == MDB_NOTFOUND)
        rc = lmdb_ready_entry(t, table, e->order, e->order_len, e->seq, e->rkey, e->rkey_len,
                              to_ready);
    if (rc && rc != MDB_NOTFOUND)
        return lmdb_status_of(rc);
    lmdb_counts_note(delta, CNT_READY, to_ready ? 1 : -1);
    lmdb_counts_note(delta, CNT_GROUPED, to_ready ? -1 : 1);
    return STORE_OK;
}

/* The place of the group's record in the ready index, "g->head". */
static int
group_head_entry(StoreTxn *t, uint32_t table, const GroupState *g, GroupEntry *out)
{
    KeyBuf rk;
    RecordHead h;
    int rc = lmdb_record_find(t, table, (StoreBytes){g->head, g->head_len}, &rk, &h);
    if (rc)
        return rc == STORE_NOTFOUND || rc == STORE_TOOBIG ? STORE_CORRUPT : rc;
    out->order_len = h.order_len;
    lmdb_copy(out->order, h.order, h.order_len);
    out->seq = h.seq;
    out->rkey_len = g->head_len;
    memcpy(out->rkey, g->head, g->head_len);
    return STORE_OK;
}

/* True when "a" comes before "b" in claim order. */
static bool
entry_before(const GroupEntry *a, const GroupEntry *b)
{
    return lmdb_claim_place_before(a->order, a->order_len, a->seq, b->order, b->order_len, b->seq);
}

int
lmdb_group_settle(StoreTxn *t, uint32_t table, const StoreQueue *q, StoreBytes group,
                  int64_t delta[CNT_N])
{
    GroupState g;
    GroupEntry first, head;
    int rc = group_state_get(t, table, group, &g);
    if (rc)
        return rc;
    bool full = g.held >= q->per_group;
    rc = group_first(t, table, group, &first);
    if (rc && rc != STORE_NOTFOUND)
        return rc;
    bool has_first = rc == STORE_OK;
    if (g.has_head) {
        if ((rc = group_head_entry(t, table, &g, &head)))
            return rc;
        if (full || (has_first && entry_before(&first, &head))) {
            if ((rc = group_move(t, table, group, &head, false, delta)))
                return rc;
            g.has_head = false;
        }
    }
    if (!full && !g.has_head && has_first) {
        if ((rc = group_move(t, table, group, &first, true, delta)))
            return rc;
        g.has_head = true;
        g.head_len = first.rkey_len;
        memcpy(g.head, first.rkey, first.rkey_len);
    }
    if (full != g.full)
        lmdb_counts_note(delta, CNT_GROUPS_FULL, full ? 1 : -1);
    g.full = full;
    return group_state_put(t, table, group, &g);
}

int
lmdb_group_at_limit(StoreTxn *t, uint32_t table, const StoreQueue *q, StoreBytes group, bool *full)
{
    GroupState g;
    *full = false;
    if (!lmdb_grouped(q, group))
        return STORE_OK;
    int rc = group_state_get(t, table, group, &g);
    *full = rc == STORE_OK && g.held >= q->per_group;
    return rc;
}

int
lmdb_groups_clear(StoreTxn *t, uint32_t table)
{
    static const unsigned char meta_sub[] = "\x01" GROUP_META_PREFIX;
    int rc = lmdb_delete_prefixed(t, t->st->group_index, table, NULL, 0);
    return rc ? rc : lmdb_delete_prefixed(t, t->st->meta, table, meta_sub, sizeof meta_sub - 1);
}

/* ---- rates ---- */

/* The newest q->rate of the queue's hand-out instants into "*at" ("*n"
 * of them, oldest first; the caller frees "*at"). */
static int
rate_get(StoreTxn *t, const StoreQueue *q, int64_t **at, size_t *n)
{
    StoreBytes v;
    *at = NULL;
    *n = 0;
    int rc = lmdb_meta_get(t, q->table, (StoreBytes){META_RATE, strlen(META_RATE)}, &v);
    if (rc == STORE_NOTFOUND)
        return STORE_OK;
    if (rc)
        return rc;
    if (v.len % 8)
        return STORE_CORRUPT;
    size_t all = v.len / 8, skip = all > (size_t)q->rate ? all - (size_t)q->rate : 0;
    *n = all - skip;
    *at = lmdb_alloc((*n + 1) * 8);
    for (size_t i = 0; i < *n; i++)
        (*at)[i] = (int64_t)be_get64((const unsigned char *)v.data + 8 * (skip + i));
    return STORE_OK;
}

/* The hand-outs of "at" (n, oldest first) still in the window at "now". */
static size_t
rate_in_window(const StoreQueue *q, const int64_t *at, size_t n, int64_t now, size_t *first)
{
    size_t i = 0;
    while (i < n && at[i] <= now - q->rate_window_ns)
        i++;
    *first = i;
    return n - i;
}

int
lmdb_rate_room(StoreTxn *t, const StoreQueue *q, int64_t *room)
{
    int64_t *at;
    size_t n, first;
    *room = INT64_MAX;
    if (q->rate <= 0)
        return STORE_OK;
    int rc = rate_get(t, q, &at, &n);
    if (rc == STORE_OK)
        *room = q->rate - (int64_t)rate_in_window(q, at, n, lmdb_txn_now(t), &first);
    free(at);
    return rc;
}

int
lmdb_rate_note(StoreTxn *t, const StoreQueue *q, int64_t handed)
{
    int64_t *at, now = lmdb_txn_now(t);
    size_t n, first;
    if (q->rate <= 0 || handed <= 0)
        return STORE_OK;
    int rc = rate_get(t, q, &at, &n);
    if (rc)
        return rc;
    size_t kept = rate_in_window(q, at, n, now, &first);
    size_t total = kept + (size_t)handed,
           drop = total > (size_t)q->rate ? total - (size_t)q->rate : 0;
    size_t len = (total - drop) * 8;
    unsigned char *buf = lmdb_alloc(len);
    size_t w = 0;
    for (size_t i = 0; i < total; i++) {
        int64_t v = i < kept ? at[first + i] : now;
        if (i >= drop)
            be_put64(buf + 8 * w++, (uint64_t)v);
    }
    rc = lmdb_meta_put(t, q->table, (StoreBytes){META_RATE, strlen(META_RATE)},
                       (StoreBytes){buf, len});
    free(buf);
    free(at);
    return rc;
}

int
lmdb_queue_rate_next(StoreTxn *txn, const StoreQueue *q, int64_t *at_out)
{
    int64_t *at, now = lmdb_txn_now(txn);
    size_t n, first;
    *at_out = now;
    if (q->rate <= 0)
        return STORE_OK;
    int rc = rate_get(txn, q, &at, &n);
    if (rc == STORE_OK && (int64_t)rate_in_window(q, at, n, now, &first) >= q->rate)
        *at_out = at[n - (size_t)q->rate] + q->rate_window_ns;
    free(at);
    return rc;
}
