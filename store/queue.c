/* queue.c — the queue's rules (see queue.h). */
#include "queue.h"

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
