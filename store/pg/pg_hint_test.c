/* pg_hint_test.c — where a claim of the head starts (pg_hint.c), without a
 * server: a position is handed to every connection of the server it was
 * found on, and to no other; the pool opening connections to that server
 * keeps it; a connection to a server that started at another instant (a
 * restart, a standby promoted) forgets every position, and from then on
 * only that server's are kept; a connection that could not tell when its
 * server started keeps none.  And a position is of its catalog version and
 * of a snapshot whose xmin is held back. */
#include "pg_internal.h"
#include "bigendian.h"

#include "../../tests/unit_test.h"

#include <stdlib.h>

/* The connections of the test: two to one server, one to a server that
 * started later, one that could not tell. */
static PgConn first = {.started = "2026-12-07 01:00:00.000001+00"};
static PgConn second = {.started = "2026-12-07 01:00:00.000001+00"};
static PgConn later = {.started = "2026-12-07 02:00:00.000002+00"};
static PgConn unknown = {.started = ""};

enum { TABLE = 3, CATALOG = 5 };

/* A claim of the head's answer, as pg_hint_put reads it: one row, its
 * record's arrival number "seq" and instant "claimed", its snapshot
 * "snap" (pg_snapshot's text) and whether the due records were as many as
 * it takes at once (false). */
static PGresult *
claim_answer(int64_t seq, int64_t claimed, const char *snap)
{
    PGresult *res = PQmakeEmptyPGresult(NULL, PGRES_TUPLES_OK);
    PGresAttDesc cols[PG_HINT_COL + 2];
    memset(cols, 0, sizeof cols);
    for (int i = 0; i < PG_HINT_COL + 2; i++)
        cols[i] = (PGresAttDesc){.name = "c", .format = 1, .typlen = -1, .atttypmod = -1};
    PQsetResultAttrs(res, PG_HINT_COL + 2, cols);
    for (int i = 0; i < PG_HINT_COL + 2; i++)
        PQsetvalue(res, 0, i, "", 0);
    unsigned char be[8];
    be_put64(be, (uint64_t)seq);
    PQsetvalue(res, 0, 2, (char *)be, 8);
    be_put64(be, (uint64_t)claimed);
    PQsetvalue(res, 0, PG_RECORD_CLAIMED, (char *)be, 8);
    PQsetvalue(res, 0, PG_HINT_COL, (char *)snap, (int)strlen(snap));
    PQsetvalue(res, 0, PG_HINT_COL + 1, "\0", 1);
    return res;
}

/* A snapshot whose xmin is held back (1,900 transactions behind its
 * xmax), and one whose xmin is not. */
#define HELD_BACK "100:2000:"
#define NOT_HELD "1900:2000:"

/* Files the position of a claim on "c" that started at the head and
 * claimed record "seq" at "snap", catalog CATALOG. */
static void
found(Store *st, const PgConn *c, int64_t seq, const char *snap)
{
    PGresult *res = claim_answer(seq, 1000 + seq, snap);
    PgHint head = {0};
    pg_hint_put(st, c, TABLE, CATALOG, &head, res, 1000000);
    PQclear(res);
}

/* The arrival number of the position "c" is given for TABLE under
 * "catalog", or -1 when it starts at the head. */
static int64_t
position(Store *st, const PgConn *c, int64_t catalog)
{
    PgHint h;
    pg_hint_get(st, c, TABLE, catalog, &h);
    int64_t seq = h.hinted ? h.from_seq : -1;
    if (h.hinted)
        CHECK(h.snap.len == strlen(HELD_BACK) && !memcmp(h.snap.data, HELD_BACK, h.snap.len) &&
                  h.from_wake == 1000 + seq,
              "the position's snapshot and instant are its claim's");
    pg_hint_free(&h);
    return seq;
}

int
main(void)
{
    Store st;
    memset(&st, 0, sizeof st);
    pthread_mutex_init(&st.hint_mu, NULL);

    pg_hint_server(&st, &first);
    CHECK(position(&st, &first, CATALOG) == -1, "nothing found yet: the head");
    found(&st, &first, 7, HELD_BACK);
    CHECK(position(&st, &first, CATALOG) == 7, "a position found: from there");
    CHECK(position(&st, &first, CATALOG + 1) == -1, "another catalog version: the head");

    /* The pool opens another connection to the same server. */
    pg_hint_server(&st, &second);
    CHECK(position(&st, &second, CATALOG) == 7, "a new connection to the same server keeps it");
    CHECK(position(&st, &later, CATALOG) == -1, "a connection to another server is given none");
    found(&st, &later, 9, HELD_BACK);
    CHECK(position(&st, &first, CATALOG) == 7, "nor is what it finds kept");

    /* A connection reaches a server that started at another instant. */
    pg_hint_server(&st, &later);
    CHECK(position(&st, &later, CATALOG) == -1, "a server started anew: every position forgotten");
    CHECK(position(&st, &first, CATALOG) == -1, "the old server's connections are given none");
    found(&st, &first, 11, HELD_BACK);
    CHECK(position(&st, &later, CATALOG) == -1, "nor is what they find kept");
    found(&st, &later, 13, HELD_BACK);
    CHECK(position(&st, &later, CATALOG) == 13, "the new server's positions are kept");

    /* A connection that could not tell when its server started. */
    pg_hint_server(&st, &unknown);
    CHECK(position(&st, &later, CATALOG) == -1,
          "a server that cannot tell: every position forgotten");
    found(&st, &unknown, 15, HELD_BACK);
    CHECK(position(&st, &unknown, CATALOG) == -1, "and none kept for it");

    /* A snapshot whose xmin is not held back: claims start at the head. */
    pg_hint_server(&st, &first);
    found(&st, &first, 17, NOT_HELD);
    CHECK(position(&st, &first, CATALOG) == -1, "the xmin not held back: the head");
    found(&st, &first, 19, HELD_BACK);
    CHECK(position(&st, &first, CATALOG) == 19, "held back again: from its position");
    pg_hint_forget(&st, TABLE);
    CHECK(position(&st, &first, CATALOG) == -1, "forgotten: the head");

    pg_hint_forget(&st, 0);
    pthread_mutex_destroy(&st.hint_mu);
    return unit_test_summary();
}
