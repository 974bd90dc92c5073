/* perkeys.c — a queue's AT MOST … PER keys past the first: a record is
 * claimable only while every group it belongs to, of every key, has fewer
 * holds than the key's limit.
 *
 * The store keeps the first key itself (StoreQueue.per_group).  The others
 * live here, above the store, so both backends have them alike.  A claim
 * takes records from the store as ever; one whose group of another key is
 * full is given back (store_unclaim: no attempt, no claim counted) and
 * *parked*: filed delayed until PER_PARKED, out of every claim's path, so
 * finding the head costs what it did however many wait behind full groups.
 * A parked record is filed anew by its fields — back in its place in claim
 * order — once its group has room: when a hold of the group ends (a finish,
 * a release, a retry, a claim given back), and, for a hold that lapses,
 * when the first claim after its deadline finds the group's *watch* due.
 * What ties them together lives in a hidden table (LANG_PERKEYS_TABLE):
 *
 *   'h' G [record key]   → [i64 hold][i64 deadline]: a hold of group G, put
 *                          by the claim that took it and removed when it
 *                          ends; one that lapsed is found so when counted
 *   'p' G [place]        → [record key]: the records parked behind G, in
 *                          claim order (place: the record's order key, or
 *                          its key, escaped (put_ordered), then [u64 seq])
 *   'g' G                → [i64 watch]: G has parked records; the instant
 *                          the claims look at G again (0: none)
 *   'w' [u32 table][u64 watch][G without its table] → (empty): the watches,
 *                          by instant
 *   'l' G                → (empty): locked while G's holds are counted
 *   'c' [u32 table]      → [i64 parked][i64 groups with parked, per key]
 *
 * where G is [u32 table][u8 key][u16 len][group] (group: the order
 * encoding of the key's field, lang_record_group).  Each entry is a step
 * of the work it stands for — a claim, a hold's end, a park — so a queue
 * pays O(log n) a step, and one declaring a single key pays nothing.
 * Counting a group's holds walks its entries (at most about its limit):
 * those in the table are trusted until there are as many as the limit,
 * then each is checked against its record.  A record parked and then
 * changed by other means (rewritten, retried, deleted) leaves an entry that
 * is dropped when walked. */
#include <stdlib.h>
#include <string.h>

#include "../store/bigendian.h"
#include "engine.h"
#include "exec.h"

/* What a walk of the hidden table returns to stop early. */
enum { WALK_STOP = -1000 };

/* What one operation on a queue's keys works with. */
typedef struct Keys {
    StoreTxn *txn;
    const TableDef *def;
    StoreQueue q;
    uint32_t kt; /* the hidden table */
    int64_t now;
    /* the counters ('c'), loaded lazily and written back when dirty */
    bool loaded, dirty;
    int64_t parked, full[LANG_PER_MAX];
} Keys;

bool
lang_perkeys_used(const TableDef *def)
{
    return def->is_queue && def->decl.nper > 1;
}

/* Opens "def"'s keys: the hidden table made when "make", else
 * STORE_NOTFOUND when it does not exist. */
static int
keys_open(Keys *ks, StoreTxn *txn, const TableDef *def, bool make)
{
    *ks = (Keys){.txn = txn, .def = def, .now = store_txn_now(txn)};
    lang_record_queue(def, &ks->q);
    return lang_hidden_table(txn, LANG_PERKEYS_TABLE, make, &ks->kt);
}

/* Appends [u8 k][u16 len][g], G without its table. */
static void
put_group(Buf *out, unsigned k, StoreBytes g)
{
    lang_buf_putc(out, (char)k);
    lang_buf_put_be(out, g.len, 2);
    lang_buf_append(out, g.data, g.len);
}

/* The key "kind" G into "out" (reset first). */
static void
group_key(Buf *out, char kind, const Keys *ks, unsigned k, StoreBytes g)
{
    lang_buf_reset(out);
    lang_buf_putc(out, kind);
    lang_buf_put_be(out, ks->def->id, 4);
    put_group(out, k, g);
}

static StoreBytes
bytes(const Buf *b)
{
    return (StoreBytes){b->data, b->len};
}

/* Reads entry "key" into "val" (reset first): STORE_NOTFOUND when absent. */
static int
entry_get(const Keys *ks, const Buf *key, Buf *val)
{
    StoreRecord sr;
    int rc = store_record_get(ks->txn, ks->kt, bytes(key), &sr);
    lang_buf_reset(val);
    if (rc == STORE_OK)
        lang_buf_append(val, sr.value.data, sr.value.len);
    return rc;
}

/* Writes entry "key" = "val", made when absent. */
static int
entry_put(const Keys *ks, const Buf *key, StoreBytes val)
{
    StoreRecord w = {.key = bytes(key), .value = val};
    int rc = store_record_update(ks->txn, ks->kt, NULL, &w);
    return rc == STORE_NOTFOUND ? store_record_create(ks->txn, ks->kt, NULL, &w) : rc;
}

static int
entry_del(const Keys *ks, StoreBytes key)
{
    int rc = store_record_delete(ks->txn, ks->kt, NULL, key, 0);
    return rc == STORE_NOTFOUND ? STORE_OK : rc;
}

/* ---- walks ---- */

/* Entries of the hidden table, copied out of a walk (which may not
 * change the table): those under "prefix", up to "max", none past
 * "until" when it is set. */
typedef struct Entries {
    Buf prefix, until;
    size_t max, n, cap;
    Buf *keys, *vals;
} Entries;

static int
entry_take(void *ctx, const StoreRecord *r)
{
    Entries *e = ctx;
    if (e->n == e->max || r->key.len < e->prefix.len ||
        memcmp(r->key.data, e->prefix.data, e->prefix.len) != 0)
        return WALK_STOP;
    if (e->until.len) {
        size_t n = r->key.len < e->until.len ? r->key.len : e->until.len;
        int c = memcmp(r->key.data, e->until.data, n);
        if (c > 0 || (c == 0 && r->key.len > e->until.len))
            return WALK_STOP;
    }
    if (e->n == e->cap) {
        e->cap = e->cap ? 2 * e->cap : 8;
        e->keys = lang_xrealloc(e->keys, e->cap * sizeof *e->keys);
        e->vals = lang_xrealloc(e->vals, e->cap * sizeof *e->vals);
    }
    e->keys[e->n] = e->vals[e->n] = (Buf){0};
    lang_buf_append(&e->keys[e->n], r->key.data, r->key.len);
    lang_buf_append(&e->vals[e->n], r->value.data, r->value.len);
    e->n++;
    return 0;
}

/* Walks what "e" asks for (its entries freed first). */
static int
entries_walk(const Keys *ks, Entries *e)
{
    for (size_t i = 0; i < e->n; i++) {
        lang_buf_free(&e->keys[i]);
        lang_buf_free(&e->vals[i]);
    }
    e->n = 0;
    int rc = store_record_each(ks->txn, ks->kt, bytes(&e->prefix), entry_take, e);
    return rc == WALK_STOP ? STORE_OK : rc;
}

static void
entries_free(Entries *e)
{
    e->max = 0;
    for (size_t i = 0; i < e->n; i++) {
        lang_buf_free(&e->keys[i]);
        lang_buf_free(&e->vals[i]);
    }
    free(e->keys);
    free(e->vals);
    lang_buf_free(&e->prefix);
    lang_buf_free(&e->until);
    *e = (Entries){0};
}

/* ---- the counters ---- */

enum { COUNTS_LEN = 8 * (1 + LANG_PER_MAX) };

static int
counts_load(Keys *ks)
{
    if (ks->loaded)
        return STORE_OK;
    Buf key = {0}, val = {0};
    lang_buf_putc(&key, 'c');
    lang_buf_put_be(&key, ks->def->id, 4);
    int rc = entry_get(ks, &key, &val);
    if (rc == STORE_OK && val.len == COUNTS_LEN) {
        const unsigned char *p = (const unsigned char *)val.data;
        ks->parked = (int64_t)be_get64(p);
        for (int i = 0; i < LANG_PER_MAX; i++)
            ks->full[i] = (int64_t)be_get64(p + 8 + 8 * i);
    }
    lang_buf_free(&key);
    lang_buf_free(&val);
    ks->loaded = rc == STORE_OK || rc == STORE_NOTFOUND;
    return ks->loaded ? STORE_OK : rc;
}

/* Writes the counters back when they changed. */
static int
keys_close(Keys *ks, int rc)
{
    if (rc || !ks->dirty)
        return rc;
    Buf key = {0}, val = {0};
    lang_buf_putc(&key, 'c');
    lang_buf_put_be(&key, ks->def->id, 4);
    lang_buf_put_u64be(&val, (uint64_t)(ks->parked > 0 ? ks->parked : 0));
    for (int i = 0; i < LANG_PER_MAX; i++)
        lang_buf_put_u64be(&val, (uint64_t)(ks->full[i] > 0 ? ks->full[i] : 0));
    rc = entry_put(ks, &key, bytes(&val));
    lang_buf_free(&key);
    lang_buf_free(&val);
    return rc;
}

/* ---- a record's groups ---- */

/* The groups of record "value" (as the store keeps it) for each key past
 * the first into groups[1 ..) (empty: in no group of that key). */
static int
record_groups(const Keys *ks, const StoreRecord *sr, Buf groups[LANG_PER_MAX])
{
    LangError err = {0};
    Record r = {0};
    int rc = STORE_OK;
    if (lang_record_from_store(sr, ks->def, &r, &err))
        rc = STORE_CORRUPT;
    for (size_t i = 1; !rc && i < ks->def->decl.nper; i++)
        if (lang_record_group(ks->def, i, &r.key, &r.fields, &groups[i], &err))
            rc = STORE_TOOBIG;
    lang_record_free(&r);
    return rc;
}

static void
groups_free(Buf groups[LANG_PER_MAX])
{
    for (int i = 0; i < LANG_PER_MAX; i++)
        lang_buf_free(&groups[i]);
}

/* Appends "b" so that memcmp orders what follows it after all of "b":
 * each 0 byte as 0 0xff, then 0 0. */
static void
put_ordered(Buf *out, StoreBytes b)
{
    const unsigned char *p = b.data;
    for (size_t i = 0; i < b.len; i++) {
        lang_buf_putc(out, (char)p[i]);
        if (!p[i])
            lang_buf_putc(out, (char)0xff);
    }
    lang_buf_append(out, "\0\0", 2);
}

/* Files record "key" anew: parked when "park", else by its fields (back
 * in claim order).  A record gone, done or held is left as it is.  When
 * "place" is not NULL, its place in claim order (its order key, or its
 * key when it has none, then its arrival) is appended to it. */
static int
file_record(const Keys *ks, StoreBytes key, bool park, Buf *place)
{
    StoreRecord sr;
    int rc = store_record_get(ks->txn, ks->def->id, key, &sr);
    if (rc == STORE_NOTFOUND)
        return STORE_OK;
    if (rc || sr.completed_at || queue_hold_runs(sr.claimed_until, ks->now))
        return rc;
    LangError err = {0};
    Record r = {0};
    Buf value = {0}, order = {0}, group = {0};
    int64_t not_before;
    lang_buf_append(&value, sr.value.data, sr.value.len);
    if (lang_record_from_store(&sr, ks->def, &r, &err) ||
        lang_record_filing(ks->def, &r.key, &r.fields, &order, &not_before, &group, &err)) {
        rc = STORE_CORRUPT;
    } else {
        Buf k = {0};
        lang_buf_append(&k, key.data, key.len);
        StoreRecord w = {.key = bytes(&k),
                         .value = bytes(&value),
                         .order = bytes(&order),
                         .not_before = park ? PER_PARKED : not_before,
                         .group = bytes(&group)};
        rc = store_record_update(ks->txn, ks->def->id, &ks->q, &w);
        if (place) {
            put_ordered(place, order.len ? w.order : w.key);
            lang_buf_put_u64be(place, sr.seq);
        }
        lang_buf_free(&k);
    }
    lang_record_free(&r);
    lang_buf_free(&value);
    lang_buf_free(&order);
    lang_buf_free(&group);
    return rc;
}

/* ---- a group's holds ---- */

/* Locks group "g" of key "k" against other writers until the transaction
 * ends — on a server backend, whose transactions run side by side, its
 * row 'l' G (made on first use) — so that counting its holds and adding
 * one is one step.  (The store's one writer at a time does as much.) */
static int
group_lock(const Keys *ks, unsigned k, StoreBytes g)
{
    Buf key = {0};
    StoreRecord sr;
    group_key(&key, 'l', ks, k, g);
    int rc = store_record_get(ks->txn, ks->kt, bytes(&key), &sr);
    if (rc == STORE_NOTFOUND) {
        StoreRecord w = {.key = bytes(&key), .value = {"", 0}};
        rc = store_record_create(ks->txn, ks->kt, NULL, &w);
        if (rc == STORE_EXISTS) /* made meanwhile: wait for its maker */
            rc = store_record_get(ks->txn, ks->kt, bytes(&key), &sr);
    }
    lang_buf_free(&key);
    return rc;
}

/* The live holds of group "g" of key "k" into "*live" and the earliest of
 * their deadlines into "*first" (INT64_MAX: none), the group locked
 * (group_lock).  Unless "check", the
 * entries are counted as they are when fewer than the limit; otherwise
 * each is checked against its record, and those whose hold ended or
 * lapsed are removed. */
static int
group_holds(const Keys *ks, unsigned k, StoreBytes g, bool check, int64_t *live, int64_t *first)
{
    Entries e = {.max = SIZE_MAX};
    group_key(&e.prefix, 'h', ks, k, g);
    int rc = group_lock(ks, k, g);
    if (!rc)
        rc = entries_walk(ks, &e);
    int64_t limit = ks->def->decl.per[k].limit;
    *live = 0;
    *first = INT64_MAX;
    check = check || (int64_t)e.n >= limit;
    for (size_t i = 0; i < e.n && !rc; i++) {
        const unsigned char *v = (const unsigned char *)e.vals[i].data;
        if (e.vals[i].len != 16)
            continue;
        int64_t hold = (int64_t)be_get64(v), deadline = (int64_t)be_get64(v + 8);
        StoreRecord sr;
        StoreBytes key = {e.keys[i].data + e.prefix.len, e.keys[i].len - e.prefix.len};
        bool runs = !check;
        if (check) {
            int got = store_record_get(ks->txn, ks->def->id, key, &sr);
            if (got && got != STORE_NOTFOUND)
                rc = got;
            runs = !got && !sr.completed_at && sr.hold == hold &&
                   queue_hold_runs(sr.claimed_until, ks->now);
            if (runs)
                deadline = sr.claimed_until;
        }
        if (!runs && !rc) {
            rc = entry_del(ks, bytes(&e.keys[i]));
            continue;
        }
        ++*live;
        if (deadline < *first)
            *first = deadline;
    }
    entries_free(&e);
    return rc;
}

/* Watches group "g" of key "k" at "at" (0: not at all), in place of the
 * watch its entry 'g' had ("*meta", its value; empty: none yet, and the
 * entry is made). */
static int
watch_set(const Keys *ks, unsigned k, StoreBytes g, Buf *meta, int64_t at)
{
    int64_t was = meta->len == 8 ? (int64_t)be_get64((const unsigned char *)meta->data) : 0;
    if (meta->len == 8 && was == at)
        return STORE_OK;
    Buf w = {0}, key = {0};
    int rc = STORE_OK;
    for (int pass = 0; pass < 2 && !rc; pass++) {
        int64_t when = pass ? at : was;
        if (!when)
            continue;
        lang_buf_reset(&w);
        lang_buf_putc(&w, 'w');
        lang_buf_put_be(&w, ks->def->id, 4);
        lang_buf_put_u64be(&w, (uint64_t)when);
        put_group(&w, k, g);
        rc = pass ? entry_put(ks, &w, (StoreBytes){"", 0}) : entry_del(ks, bytes(&w));
    }
    lang_buf_reset(meta);
    lang_buf_put_u64be(meta, (uint64_t)at);
    group_key(&key, 'g', ks, k, g);
    if (!rc)
        rc = entry_put(ks, &key, bytes(meta));
    lang_buf_free(&w);
    lang_buf_free(&key);
    return rc;
}

/* Gives the room group "g" of key "k" has to the records parked behind
 * it, in claim order: its holds are checked, and up to
 * limit - live of them filed anew.  While some stay parked the group is
 * watched at its first deadline; with none its entry 'g' goes. */
static int
group_refresh(Keys *ks, unsigned k, StoreBytes g)
{
    Buf key = {0}, meta = {0};
    group_key(&key, 'g', ks, k, g);
    int rc = entry_get(ks, &key, &meta);
    if (rc) {
        lang_buf_free(&key);
        lang_buf_free(&meta);
        return rc == STORE_NOTFOUND ? STORE_OK : rc; /* nothing parked */
    }
    int64_t live, first;
    rc = group_holds(ks, k, g, true, &live, &first);
    int64_t room = ks->def->decl.per[k].limit - live;
    Entries e = {0};
    group_key(&e.prefix, 'p', ks, k, g);
    while (!rc && room > 0) {
        e.max = (size_t)room;
        if ((rc = entries_walk(ks, &e)) || (rc = counts_load(ks)) || !e.n)
            break;
        for (size_t i = 0; i < e.n && !rc; i++) {
            StoreRecord sr;
            StoreBytes rec = bytes(&e.vals[i]);
            int got = store_record_get(ks->txn, ks->def->id, rec, &sr);
            bool parked = got == STORE_OK && sr.not_before == PER_PARKED && !sr.completed_at;
            if (got && got != STORE_NOTFOUND)
                rc = got;
            else if (!(rc = entry_del(ks, bytes(&e.keys[i]))) && parked &&
                     !(rc = file_record(ks, rec, false, NULL)))
                room--;
            ks->parked--;
            ks->dirty = true;
        }
        if (e.n < e.max)
            break; /* it walked them all */
    }
    /* what is still parked behind it */
    e.max = 1;
    if (!rc)
        rc = entries_walk(ks, &e);
    if (!rc && !e.n) {
        rc = watch_set(ks, k, g, &meta, 0);
        if (!rc && !(rc = entry_del(ks, bytes(&key))) && !(rc = counts_load(ks))) {
            ks->full[k]--;
            ks->dirty = true;
        }
    } else if (!rc) {
        rc = watch_set(ks, k, g, &meta, first == INT64_MAX ? 0 : first);
    }
    entries_free(&e);
    lang_buf_free(&key);
    lang_buf_free(&meta);
    return rc;
}

/* Runs the watches of the queue that are due: each group is refreshed. */
static int
watches_due(Keys *ks)
{
    Entries e = {.max = 64};
    lang_buf_putc(&e.prefix, 'w');
    lang_buf_put_be(&e.prefix, ks->def->id, 4);
    lang_buf_append(&e.until, e.prefix.data, e.prefix.len);
    lang_buf_put_u64be(&e.until, (uint64_t)ks->now);
    lang_buf_putc(&e.until, (char)0xff);
    int rc = entries_walk(ks, &e);
    for (size_t i = 0; i < e.n && !rc; i++) {
        const unsigned char *p = (const unsigned char *)e.keys[i].data + e.prefix.len + 8;
        size_t at = e.prefix.len + 8;
        if (e.keys[i].len < at + 3)
            continue;
        unsigned k = p[0];
        StoreBytes g = {p + 3, be_get16(p + 1)};
        if (k >= ks->def->decl.nper || at + 3 + g.len != e.keys[i].len) {
            rc = entry_del(ks, bytes(&e.keys[i]));
            continue;
        }
        /* the watch is spent: the refresh sets the next one, if any */
        Buf key = {0}, meta = {0};
        group_key(&key, 'g', ks, k, g);
        if (!(rc = entry_del(ks, bytes(&e.keys[i]))) && !(rc = entry_get(ks, &key, &meta))) {
            lang_buf_reset(&meta);
            lang_buf_put_u64be(&meta, 0);
            rc = entry_put(ks, &key, bytes(&meta));
        }
        if (rc == STORE_NOTFOUND)
            rc = STORE_OK;
        if (!rc)
            rc = group_refresh(ks, k, g);
        lang_buf_free(&key);
        lang_buf_free(&meta);
    }
    entries_free(&e);
    return rc;
}

/* ---- claims ---- */

/* Records a store claim took, copied out of it. */
typedef struct Taken {
    size_t n, cap;
    StoreRecord *now, *before;
    Buf *bytes; /* each record's bytes, "now" then "before" */
} Taken;

/* Copies every StoreBytes of "r" into "b" and points "out" at them. */
static void
record_copy(const StoreRecord *r, Buf *b, StoreRecord *out)
{
    *out = *r;
    StoreBytes *parts[] = {&out->key,   &out->value, &out->consumer, &out->instance,
                           &out->order, &out->group, &out->errors};
    enum { PARTS = sizeof parts / sizeof *parts };
    size_t at[PARTS];
    for (int i = 0; i < PARTS; i++) {
        at[i] = b->len;
        lang_buf_append(b, parts[i]->data, parts[i]->len);
    }
    for (int i = 0; i < PARTS; i++)
        parts[i]->data = b->data + at[i];
}

static int
take_one(void *ctx, const StoreRecord *now, const StoreRecord *before)
{
    Taken *t = ctx;
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 8;
        t->now = lang_xrealloc(t->now, t->cap * sizeof *t->now);
        t->before = lang_xrealloc(t->before, t->cap * sizeof *t->before);
        t->bytes = lang_xrealloc(t->bytes, 2 * t->cap * sizeof *t->bytes);
    }
    t->bytes[2 * t->n] = t->bytes[2 * t->n + 1] = (Buf){0};
    record_copy(now, &t->bytes[2 * t->n], &t->now[t->n]);
    record_copy(before, &t->bytes[2 * t->n + 1], &t->before[t->n]);
    t->n++;
    return 0;
}

static void
taken_free(Taken *t)
{
    for (size_t i = 0; i < 2 * t->n; i++)
        lang_buf_free(&t->bytes[i]);
    free(t->now);
    free(t->before);
    free(t->bytes);
    *t = (Taken){0};
}

/* The first key past the first of whose group record "sr" finds no room
 * into "*full" (0: room in all), with that group's first deadline. */
static int
full_key(const Keys *ks, Buf groups[LANG_PER_MAX], unsigned *full, int64_t *first)
{
    *full = 0;
    for (unsigned k = 1; k < ks->def->decl.nper; k++) {
        if (!groups[k].len)
            continue;
        int64_t live;
        int rc = group_holds(ks, k, bytes(&groups[k]), false, &live, first);
        if (rc)
            return rc;
        if (live >= ks->def->decl.per[k].limit) {
            *full = k;
            return STORE_OK;
        }
    }
    return STORE_OK;
}

/* Notes the hold record "sr" (just claimed) has of each of its groups, and
 * watches for its deadline a group with records parked behind it. */
static int
holds_note(const Keys *ks, const StoreRecord *sr, Buf groups[LANG_PER_MAX])
{
    Buf key = {0}, val = {0}, meta = {0};
    int rc = STORE_OK;
    for (unsigned k = 1; k < ks->def->decl.nper && !rc; k++) {
        StoreBytes g = bytes(&groups[k]);
        if (!g.len)
            continue;
        group_key(&key, 'h', ks, k, g);
        lang_buf_append(&key, sr->key.data, sr->key.len);
        lang_buf_reset(&val);
        lang_buf_put_u64be(&val, (uint64_t)sr->hold);
        lang_buf_put_u64be(&val, (uint64_t)sr->claimed_until);
        if ((rc = entry_put(ks, &key, bytes(&val))))
            break;
        group_key(&key, 'g', ks, k, g);
        rc = entry_get(ks, &key, &meta);
        if (rc == STORE_OK) {
            int64_t watch = meta.len == 8 ? (int64_t)be_get64((const unsigned char *)meta.data) : 0;
            if (!watch || watch > sr->claimed_until)
                rc = watch_set(ks, k, g, &meta, sr->claimed_until);
        } else if (rc == STORE_NOTFOUND) {
            rc = STORE_OK;
        }
    }
    lang_buf_free(&key);
    lang_buf_free(&val);
    lang_buf_free(&meta);
    return rc;
}

/* Parks record "sr" behind its full group of key "full", whose first
 * deadline is "first"; then each other group of the record that has room
 * gives it to what is parked behind it (the record may have been the one
 * such a group let go). */
static int
park(Keys *ks, const StoreRecord *sr, Buf groups[LANG_PER_MAX], unsigned full, int64_t first)
{
    StoreBytes g = bytes(&groups[full]);
    Buf key = {0}, meta = {0};
    Buf place = {0};
    int rc = file_record(ks, sr->key, true, &place);
    if (!rc)
        rc = counts_load(ks);
    if (!rc) {
        group_key(&key, 'p', ks, full, g);
        lang_buf_append(&key, place.data, place.len);
        StoreRecord w = {.key = bytes(&key), .value = sr->key};
        /* an entry left by an earlier park of it (see the top) is reused */
        rc = store_record_create(ks->txn, ks->kt, NULL, &w);
        if (rc == STORE_OK) {
            ks->parked++;
            ks->dirty = true;
        } else if (rc == STORE_EXISTS) {
            rc = STORE_OK;
        }
    }
    if (!rc) {
        group_key(&key, 'g', ks, full, g);
        rc = entry_get(ks, &key, &meta);
        if (rc == STORE_NOTFOUND) {
            ks->full[full]++;
            lang_buf_reset(&meta);
            rc = STORE_OK;
        }
        /* watched at the earlier of its watch and its first deadline */
        int64_t watch = meta.len == 8 ? (int64_t)be_get64((const unsigned char *)meta.data) : 0;
        int64_t at = first == INT64_MAX ? 0 : first;
        if (!rc)
            rc = watch_set(ks, full, g, &meta, watch && (!at || watch < at) ? watch : at);
    }
    for (unsigned k = 1; k < ks->def->decl.nper && !rc; k++)
        if (k != full && groups[k].len)
            rc = group_refresh(ks, k, bytes(&groups[k]));
    lang_buf_free(&place);
    lang_buf_free(&key);
    lang_buf_free(&meta);
    return rc;
}

int
lang_perkeys_claim(StoreTxn *txn, const TableDef *def, const StoreClaim *c,
                   int (*fn)(void *ctx, const StoreRecord *now, const StoreRecord *before),
                   void *ctx, int64_t *claimed)
{
    Keys ks;
    *claimed = 0;
    int rc = keys_open(&ks, txn, def, true);
    if (!rc)
        rc = watches_due(&ks);
    while (!rc) {
        StoreClaim ask = *c;
        ask.n = c->key.len ? 1 : c->n - *claimed;
        Taken t = {0};
        int64_t got;
        bool parked = false;
        rc = store_claim(txn, &ks.q, &ask, take_one, &t, &got);
        for (size_t i = 0; i < t.n && !rc; i++) {
            Buf groups[LANG_PER_MAX] = {{0}};
            unsigned full;
            int64_t first;
            if (!(rc = record_groups(&ks, &t.now[i], groups)) &&
                !(rc = full_key(&ks, groups, &full, &first)) && !full &&
                !(rc = holds_note(&ks, &t.now[i], groups))) {
                rc = fn(ctx, &t.now[i], &t.before[i]);
                ++*claimed;
            } else if (!rc) {
                bool back;
                rc = store_unclaim(txn, &ks.q, &t.before[i], t.now[i].hold, &back);
                /* a claim of the one record named parks nothing */
                if (!rc && !c->key.len)
                    rc = park(&ks, &t.now[i], groups, full, first);
                parked = true;
            }
            groups_free(groups);
        }
        taken_free(&t);
        /* what was given back may have let records of the first key's
         * groups go, which the store passed over: another round */
        if (c->key.len || !parked)
            break;
    }
    return keys_close(&ks, rc);
}

int
lang_perkeys_hold_ended(StoreTxn *txn, const TableDef *def, StoreBytes key, StoreBytes value)
{
    if (!lang_perkeys_used(def))
        return STORE_OK;
    Keys ks;
    int rc = keys_open(&ks, txn, def, false);
    if (rc)
        return rc == STORE_NOTFOUND ? STORE_OK : rc;
    Buf copy = {0}, hk = {0};
    lang_buf_append(&copy, key.data, key.len);
    lang_buf_append(&copy, value.data, value.len);
    StoreRecord sr = {.key = {copy.data, key.len}, .value = {copy.data + key.len, value.len}};
    Buf groups[LANG_PER_MAX] = {{0}};
    rc = record_groups(&ks, &sr, groups);
    for (unsigned k = 1; k < def->decl.nper && !rc; k++) {
        if (!groups[k].len)
            continue;
        group_key(&hk, 'h', &ks, k, bytes(&groups[k]));
        lang_buf_append(&hk, sr.key.data, sr.key.len);
        if (!(rc = entry_del(&ks, bytes(&hk))))
            rc = group_refresh(&ks, k, bytes(&groups[k]));
    }
    groups_free(groups);
    lang_buf_free(&copy);
    lang_buf_free(&hk);
    return keys_close(&ks, rc);
}

/* Removes every entry of the queue's from the hidden table. */
static int
keys_wipe(Keys *ks)
{
    static const char kinds[] = {'h', 'p', 'g', 'w', 'l', 'c'};
    int rc = STORE_OK;
    for (size_t i = 0; i < sizeof kinds && !rc; i++) {
        Entries e = {.max = 256};
        lang_buf_putc(&e.prefix, kinds[i]);
        lang_buf_put_be(&e.prefix, ks->def->id, 4);
        do {
            rc = entries_walk(ks, &e);
            for (size_t j = 0; j < e.n && !rc; j++)
                rc = entry_del(ks, bytes(&e.keys[j]));
        } while (!rc && e.n == e.max);
        entries_free(&e);
    }
    return rc;
}

int
lang_perkeys_drop(StoreTxn *txn, const TableDef *def)
{
    Keys ks;
    int rc = keys_open(&ks, txn, def, false);
    return rc ? (rc == STORE_NOTFOUND ? STORE_OK : rc) : keys_wipe(&ks);
}

/* The held records of the queue, copied out of the walk of its waiting
 * ones. */
static int
held_take(void *ctx, const StoreRecord *r, int64_t wake_ns)
{
    (void)wake_ns;
    Taken *t = ctx;
    return r->hold && r->claimed_until == wake_ns ? take_one(t, r, r) : 0;
}

int
lang_perkeys_reset(StoreTxn *txn, const TableDef *def)
{
    Keys ks;
    int rc = keys_open(&ks, txn, def, lang_perkeys_used(def));
    if (rc)
        return rc == STORE_NOTFOUND ? STORE_OK : rc;
    Taken t = {0};
    if (!(rc = keys_wipe(&ks)) && lang_perkeys_used(def))
        rc = store_queue_each_waiting(txn, def->id, held_take, &t);
    for (size_t i = 0; i < t.n && !rc; i++) {
        if (!queue_hold_runs(t.now[i].claimed_until, ks.now))
            continue;
        Buf groups[LANG_PER_MAX] = {{0}};
        if (!(rc = record_groups(&ks, &t.now[i], groups)))
            rc = holds_note(&ks, &t.now[i], groups);
        groups_free(groups);
    }
    taken_free(&t);
    return rc;
}

void
lang_perkeys_counts(StoreTxn *txn, const TableDef *def, int64_t *parked, int64_t full[LANG_PER_MAX])
{
    Keys ks;
    *parked = 0;
    memset(full, 0, LANG_PER_MAX * sizeof *full);
    if (!lang_perkeys_used(def) || keys_open(&ks, txn, def, false) || counts_load(&ks))
        return;
    *parked = ks.parked > 0 ? ks.parked : 0;
    for (int i = 1; i < LANG_PER_MAX; i++)
        full[i] = ks.full[i] > 0 ? ks.full[i] : 0;
}
