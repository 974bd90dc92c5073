/* cron.h — five-field cron expressions as Vixie cron and cronie read them,
 * and the next instant one names, in UTC or in an IANA time zone (zone.h).
 *
 * An expression is "minute hour day-of-month month day-of-week", fields
 * apart by blanks.  A field is a list of items apart by ','; an item is
 * '*', a value or a range "a-b", and '*' or a range may take a step "/n"
 * ("*" + "/15", "1-30/5").  Minutes are 0-59, hours 0-23, days of the
 * month 1-31, months 1-12 or jan-dec, days of the week 0-7 or sun-sat (0
 * and 7 are both Sunday); names are three letters in any case and may end
 * ranges.  When both day fields are restricted (neither begins with '*') a
 * day matches when either does; otherwise when both do.
 *
 * Daylight saving time, as cronie runs jobs across a change of the clock:
 * an expression whose minute and hour fields both begin with something
 * other than '*' is "fixed-time".  A fixed-time local time that a change
 * skips names the first instant after the gap; one that a change repeats
 * names its first occurrence only.  Any other expression follows real
 * time: skipped local times name nothing, repeated ones name both
 * occurrences.
 *
 * Usage:
 *
 *     int64_t next;
 *     char msg[CRON_MSG_MAX];
 *     if (cron_next_text("30 9 * * mon", "Asia/Tokyo", time(NULL), &next, msg, sizeof msg))
 *         fail(msg);
 *
 * Everything here is reentrant: no state outside the caller's memory. */
#ifndef QUEUEFS_CRON_H
#define QUEUEFS_CRON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zone.h"

/* Room enough for any message of this module. */
#define CRON_MSG_MAX 384

/* A parsed expression: bit n of a set is value n. */
typedef struct CronExpr {
    uint64_t minutes;  /* 0-59 */
    uint32_t hours;    /* 0-23 */
    uint32_t days;     /* 1-31 */
    uint16_t months;   /* 1-12 */
    uint8_t weekdays;  /* 0-6, Sunday 0 (a 7 is folded into 0) */
    bool day_star;     /* the day-of-month field begins with '*' */
    bool weekday_star; /* the day-of-week field begins with '*' */
    bool fixed_time;   /* neither the minute nor the hour field begins with '*' */
} CronExpr;

/* Parses "text" into "*out": 0, or -1 with a message in "msg" (of
 * "msg_len" bytes) that names the field and what is wrong: not five
 * fields, a value out of its field's range or unknown name, a range that
 * runs backwards, a step of 0 or above the field's largest value, a step
 * after a single value ("5/15": write 5-59/15), or days that no month of
 * the expression has ("0 0 30 2 *": it could never match). */
int cron_parse(const char *text, CronExpr *out, char *msg, size_t msg_len);

/* The first instant strictly after "after" (seconds since the epoch) that
 * "e" names, into "*next": in UTC when "zone" is NULL, else in "zone"'s
 * local time with the rules above.  0, or -1 with a message when none
 * comes within 400 years. */
int cron_next(const CronExpr *e, const Zone *zone, int64_t after, int64_t *next, char *msg,
              size_t msg_len);

/* cron_parse "expr", zone_load "zone" unless it is NULL, and cron_next:
 * 0, or -1 with the message of the step that failed. */
int cron_next_text(const char *expr, const char *zone, int64_t after, int64_t *next, char *msg,
                   size_t msg_len);

#endif
