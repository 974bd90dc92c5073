/* zone.h — IANA time zones read from the system's tz database
 * (/usr/share/zoneinfo, Debian's tzdata): the UTC offset in force at an
 * instant, and when it next changes.
 *
 * A zone is read from its TZif file (RFC 8536, versions 1 to 4) each time
 * it is loaded, into memory the caller owns: nothing is cached and nothing
 * global is touched (no TZ, no tzset, no localtime), so any number of
 * threads may load and use zones at once.  Instants after the file's last
 * transition follow its footer, a POSIX TZ rule ("CET-1CEST,M3.5.0,M10.5.0/3"),
 * so "slim" files, which stop their transitions early, are read right too.
 *
 * Usage:
 *
 *     Zone *z;
 *     char msg[ZONE_MSG_MAX];
 *     if (zone_load("Europe/Berlin", &z, msg, sizeof msg))
 *         fail(msg);
 *     ZoneSpan s = zone_at(z, time(NULL));  // s.offset: seconds east of UTC
 *     zone_free(z);
 */
#ifndef QUEUEFS_ZONE_H
#define QUEUEFS_ZONE_H

#include <stddef.h>
#include <stdint.h>

/* Room enough for any message zone_load writes. */
#define ZONE_MSG_MAX 256

typedef struct Zone Zone;

/* The offset in force over [start, end): seconds east of UTC, and the
 * instants (seconds since the epoch, UTC) it began and ends; INT64_MIN
 * and INT64_MAX when it has no known beginning or no end. */
typedef struct ZoneSpan {
    int32_t offset;
    int64_t start, end;
} ZoneSpan;

/* Loads zone "name" ("Asia/Tokyo", "UTC") into "*out", freed with
 * zone_free.  0, or -1 with a message in "msg" (of "msg_len" bytes) when
 * the name is not a zone name (empty, absolute, with "..", or characters
 * other than letters, digits and "/_+-"), names no file of the database,
 * or names a file that is not a TZif file this reader can use (a
 * leap-second zone of right/ is refused). */
int zone_load(const char *name, Zone **out, char *msg, size_t msg_len);

/* Parses the TZif text "data" of "len" bytes as zone_load does a file. */
int zone_parse(const unsigned char *data, size_t len, Zone **out, char *msg, size_t msg_len);

/* Frees "z" (NULL is nothing). */
void zone_free(Zone *z);

/* The span of "z" that holds instant "t" (seconds since the epoch). */
ZoneSpan zone_at(const Zone *z, int64_t t);

/* The smallest and largest offsets "z" ever has, into "*min" and "*max". */
void zone_offset_range(const Zone *z, int32_t *min, int32_t *max);

/* The proleptic Gregorian calendar (H. Hinnant's, which lang/time.c's
 * datetimes use too): the days since 1970-01-01 of "y"-"m"-"d"
 * (month 1-12, day 1-31), and back. */
int64_t zone_days_from_civil(int64_t y, int m, int d);
void zone_civil_from_days(int64_t days, int64_t *y, int *m, int *d);

/* The days of month "m" (1-12) of year "y". */
int zone_month_days(int64_t y, int m);

#endif
