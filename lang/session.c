/* session.c — the LangSession: its lifecycle, its instance, who is asking
 * (the caller), the rule for the table names it defines, and the store
 * transactions it opens. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "exec.h"

void
lang_instance_mint(char out[LANG_INSTANCE_LEN + 1])
{
    static _Atomic uint64_t counter;
    unsigned char raw[LANG_INSTANCE_LEN / 2];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) {
        /* No entropy: the clock, the process and a counter still make it unique. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t parts[2] = {(uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec,
                             (uint64_t)getpid() << 32 | (counter++ & 0xffffffffu)};
        memcpy(raw, parts, sizeof raw);
    }
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(out + 2 * i, 3, "%02x", raw[i]);
}

LangSession *
lang_session_new(Store *store, const char *consumer, const char *instance)
{
    LangSession *s = lang_xcalloc(1, sizeof *s);
    s->store = store;
    s->consumer = consumer ? lang_xstrdup(consumer) : NULL;
    if (instance)
        memcpy(s->instance, instance, strnlen(instance, LANG_INSTANCE_LEN));
    else
        lang_instance_mint(s->instance);
    return s;
}

void
lang_session_drop_pending(LangSession *s)
{
    for (size_t i = 0; i < s->npending; i++)
        lang_stmt_free(s->pending[i]);
    s->npending = 0;
    s->in_txn = false;
}

void
lang_session_free(LangSession *s)
{
    if (!s)
        return;
    lang_stream_free(s);
    lang_session_drop_pending(s);
    free(s->pending);
    free(s->consumer);
    free(s);
}

bool
lang_session_in_transaction(const LangSession *s)
{
    return s->in_txn;
}

void
lang_session_set_caller(LangSession *s, uint32_t uid, uint32_t gid, const uint32_t *groups,
                        int ngroups, bool enforce)
{
    s->caller.known = true;
    s->caller.enforce = enforce;
    s->caller.uid = uid;
    s->caller.gid = gid;
    s->caller.ngroups = 0;
    for (int i = 0; i < ngroups && i < 64; i++)
        s->caller.groups[s->caller.ngroups++] = groups[i];
}

void
lang_session_set_interrupt(LangSession *s, bool (*interrupted)(void *ctx), void *ctx)
{
    s->interrupted = interrupted;
    s->interrupt_ctx = ctx;
}

void
lang_session_set_name_rule(LangSession *s, LangNameRule rule, void *ctx)
{
    s->name_rule = rule;
    s->name_rule_ctx = ctx;
}

LangErrorCode
lang_session_name_check(const LangSession *s, const char *name, LangError *err)
{
    if (lang_table_name_check(name, strlen(name), err))
        return err->code;
    return s->name_rule ? s->name_rule(s->name_rule_ctx, name, err) : LANG_OK;
}

/* Evaluates record content: it must be an object. */
Store *
lang_session_store(const LangSession *s)
{
    return s->store;
}

void
lang_session_capture_claim(LangSession *s, LangUnclaims *undo, LangClaimed *claimed)
{
    s->undo = undo;
    s->claimed = claimed;
}

LangErrorCode
lang_session_read(LangSession *s, StoreTxn **txn, LangError *err)
{
    int rc = store_txn_begin(s->store, false, txn);
    return rc ? lang_store_error(rc, "beginning a transaction", err) : LANG_OK;
}

LangErrorCode
lang_session_write(LangSession *s, int (*fn)(StoreTxn *txn, void *ctx), void *ctx, const char *what,
                   LangError *err)
{
    int rc = store_write(s->store, fn, ctx);
    if (rc > 0)
        lang_store_error(rc, what, err);
    return rc ? err->code : LANG_OK;
}
