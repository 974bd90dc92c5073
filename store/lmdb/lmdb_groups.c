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
 * Rates.  Under rate > 0 (AT MOST rate EVERY window) a claim may hand out
 * a record while fewer than "rate" of the queue's last "rate" hand-outs
 * are within the window that ends now.  The hand-outs are numbered in the
 * order they were noted, and their instants kept in chunks of 64 meta
 * values, "rate@"[u64 chunk] → i64 × up to 64 (hand-out j in slot j % 64
 * of chunk j / 64), beside a head "rate@"[u64 max] → [u64 handed][u64
 * low][i64 newest]: how many were noted, the lowest chunk kept, the newest
 * instant (its key sorts next to the newest chunk's, so the two share a
 * page: a claim rewrites one page of them).
 * Instants ascend with the numbers: a claim whose transaction's instant is
 * earlier than the newest (one that began first but noted last) is noted
 * at the newest, so it stays in windows a little longer and never lets more
 * than "rate" into one.  So the window's oldest hand-out, number handed -
 * rate, is the one that leaves it first: a claim of one reads the head and
 * that chunk, writes the newest chunk and the head, and deletes the chunks
 * the window has passed — O(1) whatever "rate" is, O(k) for a claim of k —
 * and a queue that handed out k < rate records keeps k instants.  A change
 * of "rate" (ALTER QUEUE) only moves the window's start: made larger, the
 * hand-outs it reaches back to that are no longer kept count as long gone
 * (as the array of format 5, which kept "rate" instants, made them); made
 * smaller, the chunks below the window are deleted a few at every note.
 * Format 5 kept the instants as one array, "rate" → i64 × n, rewritten by
 * every claim; the upgrade to format 6 moves it to chunks
 * (lmdb_rate_upgrade). */
#include "lmdb_internal.h"

#define GROUP_META_PREFIX "grp:"
#define GROUP_STATE_FIXED 9        /* [i64 held][u8 full] */
#define RATE_OLD "rate"            /* format 5's array of instants */
#define RATE_HEAD_CHUNK UINT64_MAX /* the head's "chunk": [u64 handed][u64 low][i64 newest] */
#define RATE_HEAD_LEN 24
#define RATE_CHUNK_PREFIX "rate@" /* [u64 chunk] → i64 × up to RATE_CHUNK */
#define RATE_CHUNK 64
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

/* The queue's hand-outs are numbered 0, 1, … in the order they were
 * noted; hand-out j's instant is slot j % RATE_CHUNK of chunk j /
 * RATE_CHUNK.  The head says how many were noted ("handed"), the lowest
 * chunk still kept ("low": every chunk from it to the newest is there) and
 * the newest instant.  The window of "rate" is the hand-outs handed - rate
 * … handed - 1, their instants ascending; one below the kept chunks (or
 * below 0) is as good as long gone. */
typedef struct RateHead {
    uint64_t handed, low;
    int64_t newest;
} RateHead;

/* One chunk of instants, copied out of LMDB memory: hand-outs
 * RATE_CHUNK * chunk … RATE_CHUNK * chunk + len - 1. */
typedef struct RateChunk {
    uint64_t chunk;
    bool loaded;
    size_t len;
    int64_t at[RATE_CHUNK];
} RateChunk;

/* The meta name of chunk "c" into "out". */
static StoreBytes
rate_chunk_name(unsigned char *out, uint64_t c)
{
    size_t n = strlen(RATE_CHUNK_PREFIX);
    memcpy(out, RATE_CHUNK_PREFIX, n);
    be_put64(out + n, c);
    return (StoreBytes){out, n + 8};
}

/* The head's meta name into "out": next to the newest chunk, so that a
 * note rewrites one leaf page for both. */
static StoreBytes
rate_head_name(unsigned char *out)
{
    return rate_chunk_name(out, RATE_HEAD_CHUNK);
}

/* The head of "table" into "h" (all 0 when nothing was noted yet). */
static int
rate_head_get(StoreTxn *t, uint32_t table, RateHead *h)
{
    unsigned char name[32];
    StoreBytes v;
    memset(h, 0, sizeof *h);
    int rc = lmdb_meta_get(t, table, rate_head_name(name), &v);
    if (rc == STORE_NOTFOUND)
        return STORE_OK;
    if (rc)
        return rc;
    if (v.len != RATE_HEAD_LEN)
        return STORE_CORRUPT;
    h->handed = be_get64(v.data);
    h->low = be_get64((const unsigned char *)v.data + 8);
    h->newest = (int64_t)be_get64((const unsigned char *)v.data + 16);
    return h->low > h->handed / RATE_CHUNK + 1 ? STORE_CORRUPT : STORE_OK;
}

static int
rate_head_put(StoreTxn *t, uint32_t table, const RateHead *h)
{
    unsigned char name[32], v[RATE_HEAD_LEN];
    be_put64(v, h->handed);
    be_put64(v + 8, h->low);
    be_put64(v + 16, (uint64_t)h->newest);
    return lmdb_meta_put(t, table, rate_head_name(name), (StoreBytes){v, sizeof v});
}

/* Reads chunk "c" into "ch" (len 0 when absent) unless it holds it. */
static int
rate_chunk_load(StoreTxn *t, uint32_t table, uint64_t c, RateChunk *ch)
{
    unsigned char name[32];
    StoreBytes v;
    if (ch->loaded && ch->chunk == c)
        return STORE_OK;
    ch->chunk = c;
    ch->loaded = true;
    ch->len = 0;
    int rc = lmdb_meta_get(t, table, rate_chunk_name(name, c), &v);
    if (rc == STORE_NOTFOUND)
        return STORE_OK;
    if (rc)
        return rc;
    if (v.len % 8 || v.len > 8 * RATE_CHUNK)
        return STORE_CORRUPT;
    ch->len = v.len / 8;
    for (size_t i = 0; i < ch->len; i++)
        ch->at[i] = (int64_t)be_get64((const unsigned char *)v.data + 8 * i);
    return STORE_OK;
}

static int
rate_chunk_put(StoreTxn *t, uint32_t table, const RateChunk *ch)
{
    unsigned char name[32], v[8 * RATE_CHUNK];
    for (size_t i = 0; i < ch->len; i++)
        be_put64(v + 8 * i, (uint64_t)ch->at[i]);
    return lmdb_meta_put(t, table, rate_chunk_name(name, ch->chunk), (StoreBytes){v, 8 * ch->len});
}

/* The instant of hand-out "j" (kept: at or above the lowest chunk, below
 * "handed") into "*at", through "ch". */
static int
rate_stamp(StoreTxn *t, uint32_t table, RateChunk *ch, uint64_t j, int64_t *at)
{
    int rc = rate_chunk_load(t, table, j / RATE_CHUNK, ch);
    if (rc)
        return rc;
    if (j % RATE_CHUNK >= ch->len)
        return STORE_CORRUPT;
    *at = ch->at[j % RATE_CHUNK];
    return STORE_OK;
}

/* Where queue "q"'s window starts: the number of its first hand-out
 * (negative while fewer than q->rate were noted), and the first kept one
 * at or after it; the hand-outs between are gone. */
static int64_t
rate_window(const StoreQueue *q, const RateHead *h, uint64_t *first_kept)
{
    int64_t ws = (int64_t)h->handed - q->rate;
    int64_t kept = (int64_t)(h->low * RATE_CHUNK);
    *first_kept = (uint64_t)(ws > kept ? ws : kept);
    return ws;
}

/* The instant the window that ends now starts after. */
static int64_t
rate_since(StoreTxn *t, const StoreQueue *q)
{
    int64_t since;
    return __builtin_sub_overflow(lmdb_txn_now(t), q->rate_window_ns, &since) ? INT64_MIN : since;
}

int
lmdb_rate_room(StoreTxn *t, const StoreQueue *q, int64_t want, int64_t *room)
{
    RateHead h;
    RateChunk ch = {.loaded = false};
    uint64_t j;
    *room = INT64_MAX;
    if (q->rate <= 0)
        return STORE_OK;
    *room = 0;
    int rc = rate_head_get(t, q->table, &h);
    if (rc)
        return rc;
    int64_t ws = rate_window(q, &h, &j), since = rate_since(t, q), at;
    int64_t gone = (int64_t)j - ws; /* the window's hand-outs no longer kept */
    *room = gone < want ? gone : want;
    for (; *room < want && j < h.handed; j++, ++*room)
        if ((rc = rate_stamp(t, q->table, &ch, j, &at)) || at > since)
            break;
    return rc;
}

/* Deletes the chunks below chunk "below", from the lowest kept one, but
 * "most" at most: what a window that moved past them leaves. */
static int
rate_reap(StoreTxn *t, uint32_t table, RateHead *h, uint64_t below, uint64_t most)
{
    unsigned char name[32];
    for (; h->low < below && most > 0; h->low++, most--) {
        int rc = lmdb_meta_del(t, table, rate_chunk_name(name, h->low));
        if (rc)
            return rc;
    }
    return STORE_OK;
}

int
lmdb_rate_note(StoreTxn *t, const StoreQueue *q, int64_t handed)
{
    RateHead h;
    RateChunk ch = {.loaded = false};
    if (q->rate <= 0 || handed <= 0)
        return STORE_OK;
    int rc = rate_head_get(t, q->table, &h);
    if (rc)
        return rc;
    int64_t now = lmdb_txn_now(t);
    /* Ascending: one noted after a later instant counts from that one. */
    int64_t at = h.handed && h.newest > now ? h.newest : now;
    for (uint64_t j = h.handed, end = h.handed + (uint64_t)handed; j < end;) {
        if ((rc = rate_chunk_load(t, q->table, j / RATE_CHUNK, &ch)))
            return rc;
        size_t from = j % RATE_CHUNK, to = from + (size_t)(end - j);
        if (to > RATE_CHUNK)
            to = RATE_CHUNK;
        for (size_t i = ch.len < from ? ch.len : from; i < to; i++)
            ch.at[i] = at; /* (a hole, never made, is filled too) */
        ch.len = to;
        if ((rc = rate_chunk_put(t, q->table, &ch)))
            return rc;
        j += to - from;
    }
    h.handed += (uint64_t)handed;
    h.newest = at;
    uint64_t first;
    int64_t ws = rate_window(q, &h, &first);
    uint64_t below = ws > 0 ? (uint64_t)ws / RATE_CHUNK : 0;
    /* Two more than the window passed: a window made smaller is reaped a
     * little at every note. */
    if ((rc = rate_reap(t, q->table, &h, below, (uint64_t)handed / RATE_CHUNK + 2)))
        return rc;
    return rate_head_put(t, q->table, &h);
}

int
lmdb_queue_rate_next(StoreTxn *txn, const StoreQueue *q, int64_t *at_out)
{
    RateHead h;
    RateChunk ch = {.loaded = false};
    uint64_t first;
    int64_t at;
    *at_out = lmdb_txn_now(txn);
    if (q->rate <= 0)
        return STORE_OK;
    int rc = rate_head_get(txn, q->table, &h);
    if (rc || rate_window(q, &h, &first) < (int64_t)first || first >= h.handed)
        return rc;
    /* The oldest of the window: room once it leaves. */
    if ((rc = rate_stamp(txn, q->table, &ch, first, &at)) == STORE_OK && at > rate_since(txn, q))
        *at_out = at > INT64_MAX - q->rate_window_ns ? INT64_MAX : at + q->rate_window_ns;
    return rc;
}

/* Moves table "id"'s instants from the array of format 5 to chunks. */
static int
rate_upgrade_table(void *ctx, const char *name, uint32_t id, StoreBytes def)
{
    (void)name;
    (void)def;
    StoreTxn *t = ctx;
    StoreBytes v;
    StoreBytes old = {RATE_OLD, strlen(RATE_OLD)};
    int rc = lmdb_meta_get(t, id, old, &v);
    if (rc)
        return rc == STORE_NOTFOUND ? STORE_OK : rc;
    if (v.len % 8)
        return STORE_CORRUPT;
    size_t n = v.len / 8;
    int64_t *at = lmdb_alloc(v.len);
    for (size_t i = 0; i < n; i++)
        at[i] = (int64_t)be_get64((const unsigned char *)v.data + 8 * i);
    RateHead h = {.handed = n, .newest = n ? at[n - 1] : 0};
    RateChunk ch;
    for (size_t j = 0; rc == STORE_OK && j < n; j += RATE_CHUNK) {
        ch = (RateChunk){.chunk = j / RATE_CHUNK, .loaded = true};
        ch.len = n - j < RATE_CHUNK ? n - j : RATE_CHUNK;
        memcpy(ch.at, at + j, 8 * ch.len);
        rc = rate_chunk_put(t, id, &ch);
    }
    free(at);
    if (rc == STORE_OK && n && (rc = rate_head_put(t, id, &h)))
        return rc;
    return rc ? rc : lmdb_meta_del(t, id, old);
}

int
lmdb_rate_upgrade(StoreTxn *t)
{
    return lmdb_table_each(t, rate_upgrade_table, t);
}
