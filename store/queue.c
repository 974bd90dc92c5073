/* queue.c — the queue's rules (see queue.h). */
#include "queue.h"

#include <string.h>

#include "bigendian.h"

bool
queue_hold_runs(int64_t claimed_until, int64_t now)
{
    return claimed_until > now;
}

bool
queue_ceiling_reached(int64_t max_attempts, int64_t attempts)
{
    return max_attempts > 0 && attempts >= max_attempts;
}

QueuePlace
queue_place(const StoreQueue *q, const StoreRecord *r, int64_t now)
{
    if (r->completed_at != 0)
        return (QueuePlace){.state = QUEUE_DONE, .next = QUEUE_DONE};
    bool retired = queue_ceiling_reached(q->max_attempts, r->attempts);
    if (queue_hold_runs(r->claimed_until, now)) {
        QueuePlace p = {.state = QUEUE_HELD, .wake = r->claimed_until, .next = QUEUE_READY};
        if (retired)
            p.next = QUEUE_RETIRED;
        else if (r->not_before > r->claimed_until)
            p.next = QUEUE_DELAYED, p.next_wake = r->not_before;
        return p;
    }
    if (retired)
        return (QueuePlace){.state = QUEUE_RETIRED, .next = QUEUE_RETIRED};
    if (r->not_before > now)
        return (QueuePlace){.state = QUEUE_DELAYED, .wake = r->not_before, .next = QUEUE_READY};
    return (QueuePlace){.state = QUEUE_READY, .next = QUEUE_READY};
}

QueuePlace
queue_woken(const QueuePlace *p, int64_t now)
{
    if ((p->state != QUEUE_HELD && p->state != QUEUE_DELAYED) || now < p->wake)
        return *p;
    if (p->next == QUEUE_RETIRED)
        return (QueuePlace){.state = QUEUE_RETIRED, .next = QUEUE_RETIRED};
    if (p->next == QUEUE_DELAYED && p->next_wake > now)
        return (QueuePlace){.state = QUEUE_DELAYED, .wake = p->next_wake, .next = QUEUE_READY};
    return (QueuePlace){.state = QUEUE_READY, .next = QUEUE_READY};
}

int64_t
queue_hold_deadline(const StoreQueue *q, int64_t now)
{
    return q->timeout_ns > INT64_MAX - now ? INT64_MAX : now + q->timeout_ns;
}

bool
queue_claim_lapses(const StoreRecord *r)
{
    return r->claimed_until != 0;
}

bool
queue_hold_lapsed(const StoreRecord *r, int64_t now)
{
    return r->claimed_until != 0 && !queue_hold_runs(r->claimed_until, now);
}

bool
queue_done_expired(const StoreQueue *q, const StoreRecord *r, int64_t now)
{
    if (r->completed_at == 0)
        return false;
    if (q->keep_ns <= 0)
        return true;
    /* a KEEP that runs past the end of time never ends */
    return q->keep_ns <= INT64_MAX - r->completed_at && r->completed_at + q->keep_ns <= now;
}

bool
queue_errors_next(StoreBytes *rest, QueueError *e)
{
    const unsigned char *p = rest->data;
    if (rest->len < QUEUE_ERROR_HEAD)
        return false;
    size_t n = be_get16(p + 16);
    if (rest->len - QUEUE_ERROR_HEAD < n)
        return false;
    e->attempt = (int64_t)be_get64(p);
    e->at = (int64_t)be_get64(p + 8);
    e->text = (StoreBytes){p + QUEUE_ERROR_HEAD, n};
    rest->data = p + QUEUE_ERROR_HEAD + n;
    rest->len -= QUEUE_ERROR_HEAD + n;
    return true;
}

size_t
queue_errors_count(StoreBytes errors)
{
    QueueError e;
    size_t n = 0;
    while (queue_errors_next(&errors, &e))
        n++;
    return n;
}

size_t
queue_errors_add(StoreBytes errors, const QueueError *e, unsigned char *out)
{
    QueueError skip;
    for (size_t n = queue_errors_count(errors); n >= STORE_ERRORS_KEPT; n--)
        queue_errors_next(&errors, &skip);
    size_t len = e->text.len > STORE_MAX_REASON ? STORE_MAX_REASON : e->text.len;
    if (errors.len)
        memmove(out, errors.data, errors.len);
    unsigned char *p = out + errors.len;
    be_put64(p, (uint64_t)e->attempt);
    be_put64(p + 8, (uint64_t)e->at);
    be_put16(p + 16, (uint16_t)len);
    if (len)
        memcpy(p + QUEUE_ERROR_HEAD, e->text.data, len);
    return errors.len + QUEUE_ERROR_HEAD + len;
}
