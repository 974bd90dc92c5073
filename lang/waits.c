/* waits.c — CLAIM … WAIT: whether a queue has something to claim, looked
 * at without the writer lock (lang_view_claimable), and the wait itself,
 * which sleeps on the store's commits until a claim succeeds or its time
 * is up. */
#include <string.h>

#include "exec.h"

/* Whether CLAIM FROM "table" may hand out something at "now" (see
 * lang.h), looked at in a read transaction: a waiting claim does not take
 * the writer lock until there is something to take, nor spins on a queue
 * whose AT MOST … EVERY window is full (its next_wake is then the instant
 * the window admits the next).  On any doubt about
 * the queue's indexes it answers true and lets the claim decide. */
LangErrorCode
lang_view_claimable(LangSession *s, const char *table, bool *yes, int64_t *next_wake,
                    LangError *err)
{
    StoreTxn *txn;
    *yes = true;
    *next_wake = INT64_MAX;
    if (lang_session_read(s, &txn, err))
        return err->code;
    TableDef def;
    if (!lang_table_def_load(txn, table, &def, err)) {
        StoreQueueCounts c;
        if (!lang_queue_check(&def, table, err) && !lang_access_check(s, &def, ACCESS_WRITE, err) &&
            store_queue_counts(txn, def.id, &c) == STORE_OK) {
            /* A paused queue hands out nothing: its wait sleeps until the
             * commit that resumes it.  Records held back by their AT MOST …
             * PER group are not ready: the wait sleeps until a commit (a
             * finish, a release) or a hold's deadline (next_wake). */
            *yes = c.ready > 0 && !def.paused;
            *next_wake = def.paused ? INT64_MAX : c.next_wake;
            /* AT MOST … EVERY with no room: until the window admits one. */
            StoreQueue q;
            int64_t at;
            if (*yes && def.decl.rate &&
                store_queue_rate_next(txn, lang_record_queue(&def, &q), &at) == STORE_OK &&
                at > store_txn_now(txn)) {
                *yes = false;
                if (at < *next_wake)
                    *next_wake = at;
            }
        }
        lang_table_def_free(&def);
    }
    store_txn_abort(txn);
    return err->code;
}

/* Keeps one result line whole in the Buf "ctx". */
static void
keep_line(void *ctx, const char *line, size_t len)
{
    lang_buf_append(ctx, line, len);
}

/* How long a waiting claim with an interrupt hook sleeps between looks at
 * the hook. */
#define INTERRUPT_LOOK_NS (100 * 1000 * 1000)

/* CLAIM … WAIT d: claims as soon as something is claimable — created,
 * released, or a hold lapsing, through any process on the store — or
 * answers [] after "d".  Refuses at once what the claim would refuse (no
 * such queue, no permission to claim from it).  Sleeps on the store's
 * notification of a commit (store_wait_change) or until the first waiting
 * record's instant, costing no CPU meanwhile; with an interrupt hook it
 * looks at the hook every INTERRUPT_LOOK_NS too, and ends with Interrupted
 * when it says so. */
LangErrorCode
lang_claim_wait(LangSession *s, Stmt *st, LangEmit emit, void *ctx, LangError *err)
{
    int64_t now = store_now(s->store), deadline, next_wake;
    if (__builtin_add_overflow(now, st->u.claim.wait_ns, &deadline))
        deadline = INT64_MAX;
    Buf line = {0};
    for (;;) {
        uint64_t seen = store_changes(s->store);
        bool yes;
        if (lang_view_claimable(s, st->u.claim.target.table, &yes, &next_wake, err))
            break;
        if (yes) {
            lang_buf_reset(&line);
            if (lang_session_run(s, &st, 1, keep_line, &line, err))
                break;
            if (strcmp(line.data, "[]") != 0)
                break;
            continue; /* another worker got there first: look again */
        }
        int64_t until = deadline < next_wake ? deadline : next_wake;
        if (s->interrupted && until - now > INTERRUPT_LOOK_NS)
            until = now + INTERRUPT_LOOK_NS;
        store_wait_change(s->store, seen, until);
        now = store_now(s->store);
        if (s->interrupted && s->interrupted(s->interrupt_ctx)) {
            lang_error_set(err, LANG_INTERRUPTED, "the wait was interrupted");
            break;
        }
        if (now >= deadline) {
            lang_buf_reset(&line);
            lang_buf_puts(&line, "[]");
            break;
        }
    }
    if (!err->code && emit)
        emit(ctx, line.data, line.len);
    lang_buf_free(&line);
    return err->code;
}

/* Made when a CLAIM … WAIT is written, so it refuses at once. */
LangErrorCode
lang_claim_wait_check(LangSession *s, const Stmt *st, LangError *err)
{
    StoreTxn *txn;
    if (lang_claim_ceiling_check(st, err) || lang_session_read(s, &txn, err))
        return err->code;
    Exec x = {s, txn, 0, NULL, err, NULL, false, false};
    TableDef def;
    if (!lang_queue_load(&x, st->u.claim.target.table, ACCESS_WRITE, &def))
        lang_table_def_free(&def);
    store_txn_abort(txn);
    return err->code;
}

/* Waits as lang_claim_wait does, with the statement's WAIT put back
 * after. */
LangErrorCode
lang_claim_wait_for(LangSession *s, Stmt *st, int64_t wait_ns, Buf *line, LangError *err)
{
    int64_t whole = st->u.claim.wait_ns;
    st->u.claim.wait_ns = wait_ns > 0 ? wait_ns : 0;
    LangErrorCode rc = lang_claim_wait(s, st, keep_line, line, err);
    st->u.claim.wait_ns = whole;
    return rc;
}
