/* claimed.c — the records this mount just claimed (claimed.h): a small
 * table, oldest replaced first, under one mutex. */
#include "claimed.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nodes.h"

/* As many as the workers one mount serves at once, as a rule. */
#define CLAIMED_SLOTS 64

typedef struct Slot {
    bool used;
    char table[INODE_TABLE_MAX];
    Value key;
    uint32_t uid; /* who claimed it */
    LangRecordStat stat;
    LangTableInfo info;
    long long at; /* CLOCK_MONOTONIC ns of the claim */
} Slot;

struct Claimed {
    pthread_mutex_t mu;
    Slot slots[CLAIMED_SLOTS];
    unsigned next; /* the slot the next note replaces */
    unsigned used; /* slots in use */
};

static long long
monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void
slot_clear(Claimed *c, Slot *s)
{
    if (!s->used)
        return;
    lang_value_free(&s->key);
    s->used = false;
    c->used--;
}

Claimed *
fs_claimed_new(void)
{
    Claimed *c = lang_xcalloc(1, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    return c;
}

void
fs_claimed_free(Claimed *c)
{
    if (!c)
        return;
    fs_claimed_forget(c);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

void
fs_claimed_note(Claimed *c, const char *table, uint32_t uid, const LangClaimed *told)
{
    if (told->key.kind == VAL_NONE || strlen(table) >= INODE_TABLE_MAX)
        return;
    pthread_mutex_lock(&c->mu);
    Slot *s = &c->slots[c->next];
    c->next = (c->next + 1) % CLAIMED_SLOTS;
    slot_clear(c, s);
    strcpy(s->table, table);
    s->key = lang_value_clone(&told->key);
    s->uid = uid;
    s->stat = told->stat;
    s->info = told->info;
    s->at = monotonic_ns();
    s->used = true;
    c->used++;
    pthread_mutex_unlock(&c->mu);
}

bool
fs_claimed_take(Claimed *c, const char *table, const Value *key, uint32_t uid, LangRecordStat *stat,
                LangTableInfo *info)
{
    bool found = false;
    pthread_mutex_lock(&c->mu);
    long long now = c->used ? monotonic_ns() : 0;
    for (unsigned i = 0; i < CLAIMED_SLOTS && c->used && !found; i++) {
        Slot *s = &c->slots[i];
        if (!s->used || s->uid != uid || strcmp(s->table, table) != 0 ||
            !lang_value_equal(&s->key, key))
            continue;
        found = now - s->at < CLAIMED_KEEP_NS;
        if (found) {
            *stat = s->stat;
            *info = s->info;
        }
        slot_clear(c, s);
    }
    pthread_mutex_unlock(&c->mu);
    return found;
}

void
fs_claimed_forget_record(Claimed *c, const char *table, const Value *key)
{
    pthread_mutex_lock(&c->mu);
    for (unsigned i = 0; i < CLAIMED_SLOTS && c->used; i++) {
        Slot *s = &c->slots[i];
        if (s->used && strcmp(s->table, table) == 0 && lang_value_equal(&s->key, key))
            slot_clear(c, s);
    }
    pthread_mutex_unlock(&c->mu);
}

void
fs_claimed_forget(Claimed *c)
{
    pthread_mutex_lock(&c->mu);
    for (unsigned i = 0; i < CLAIMED_SLOTS && c->used; i++)
        slot_clear(c, &c->slots[i]);
    pthread_mutex_unlock(&c->mu);
}
