/* pg_sql.c — every statement the PostgreSQL backend prepares, as data.
 *
 * Each is one fixed text, whatever it acts on: arguments are bound (in
 * binary), never spliced, and every instant is the transaction's now():
 * bound as $now once read (store/pg/pg_txn.c), or written as NOW_NS by the
 * statements that may begin a transaction — the claim of the head and the
 * delete — so that BEGIN goes with them in one round trip (and COMMIT too,
 * when they are all the transaction changes: they count themselves, and
 * check the cached definitions they were given are current, CATALOG_IS).  A queue record's
 * placement is computed by queuefs.place_state / place_wake (see
 * store/pg/pg_schema.c) from its deadline, not_before and "dead" (at the
 * ATTEMPTS ceiling), the last recomputed from the queue's ceiling at each
 * write that files the record. */
#include "pg_internal.h"

/* The record columns, qualified by the alias "r". */
#define R_COLS \
    "r.key, r.value, r.seq, r.since, r.written, r.changed, r.claimed, r.attempts, r.hold, " \
    "r.claimed_until, r.consumer, r.instance, r.ord, r.not_before, r.grp"

/* The transaction's now() in nanoseconds, as the clock's read at BEGIN
 * answers it (pg_txn.c: microseconds, times 1,000). */
#define NOW_NS "((extract(epoch FROM now()) * 1000000)::int8 * 1000)"
/* The instant duration D after NOW_NS, or the end of time when that is
 * past it. */
#define NOW_PLUS(d) \
    "(CASE WHEN " NOW_NS " > 9223372036854775807 - " d " THEN 9223372036854775807" \
    " ELSE " NOW_NS " + " d " END)"

/* True when the catalog's version is V (an int8 argument), or V is 0: a
 * statement that may begin its transaction uses definitions cached at
 * version V, and changes nothing when they have changed since (the clock's
 * read beside it then has the transaction run again). */
#define CATALOG_IS(v) \
    "(" v "::int8 = 0 OR EXISTS (SELECT 1 FROM queuefs.catalog WHERE version = " v "::int8))"

/* What makes an INSERT of a counter row (table, slot, claims, releases,
 * lapses, deletes) add to the row there. */
#define COUNTS_ADDED \
    " ON CONFLICT (table_id, slot) DO UPDATE SET" \
    " claims = queuefs.counts.claims + EXCLUDED.claims," \
    " releases = queuefs.counts.releases + EXCLUDED.releases," \
    " lapses = queuefs.counts.lapses + EXCLUDED.lapses," \
    " deletes = queuefs.counts.deletes + EXCLUDED.deletes"

/* "dead" for attempts expression A under ceiling $M: store/queue.h's
 * queue_ceiling_reached, in SQL. */
#define DEAD(a, m) "(" m "::int8 > 0 AND " a " >= " m "::int8)"

/* The columns of a record whose hold ends at instant NOW, delayed until NB
 * when it is not 0, under ceiling M: what a release sets. */
#define NB_OR_KEPT(nb) "CASE WHEN " nb "::int8 <> 0 THEN " nb "::int8 ELSE r.not_before END"
#define RELEASED(now, nb, m) \
    "hold = 0, claimed_until = 0, consumer = '', instance = ''," \
    " since = " now "::int8, changed = " now "::int8, not_before = " NB_OR_KEPT(nb) "," \
    " dead = " DEAD("r.attempts", m) "," \
    " state = queuefs.place_state(0, " NB_OR_KEPT(nb) ", " DEAD("r.attempts", m) ", " now "::int8)," \
    " wake = queuefs.place_wake(0, " NB_OR_KEPT(nb) ", " DEAD("r.attempts", m) ", " now "::int8)"

static const char *const stmt_sql[PG_STMT_COUNT] = {
    /* ---- the catalog ---- */
    [PG_TABLE_CREATE] =
        "INSERT INTO queuefs.tables SELECT nextval('queuefs.table_ids'), $1::bytea, $2::bytea"
        " ON CONFLICT (name) DO NOTHING RETURNING id",
    [PG_TABLE_REDEFINE] = "UPDATE queuefs.tables SET def = $2::bytea WHERE name = $1::bytea"
                          " RETURNING id",
    [PG_TABLE_GET] = "SELECT id, def FROM queuefs.tables WHERE name = $1::bytea",
    [PG_TABLE_EACH] = "SELECT name, id, def FROM queuefs.tables ORDER BY name",
    [PG_TABLE_DROP] =
        "WITH t AS (DELETE FROM queuefs.tables WHERE name = $1::bytea RETURNING id),"
        " r AS (DELETE FROM queuefs.records WHERE table_id IN (SELECT id FROM t)),"
        " c AS (DELETE FROM queuefs.counts WHERE table_id IN (SELECT id FROM t)),"
        " d AS (DELETE FROM queuefs.dedup WHERE table_id IN (SELECT id FROM t)),"
        " g AS (DELETE FROM queuefs.groups WHERE table_id IN (SELECT id FROM t)),"
        " l AS (DELETE FROM queuefs.rates WHERE table_id IN (SELECT id FROM t))"
        " SELECT id FROM t",
    [PG_TABLE_RENAME] =
        "UPDATE queuefs.tables SET name = $2::bytea WHERE name = $1::bytea"
        " AND NOT EXISTS (SELECT 1 FROM queuefs.tables WHERE name = $2::bytea) RETURNING id",
    [PG_TABLE_NAMED] = "SELECT 1 FROM queuefs.tables WHERE name = $1::bytea",

    /* ---- records ---- */
    [PG_RECORD_GET] = "SELECT " R_COLS " FROM queuefs.records r"
                      " WHERE r.table_id = $1::int8 AND r.key = $2::bytea",
    [PG_RECORD_LOCK] = "SELECT " R_COLS ", r.state, r.wake, r.dead FROM queuefs.records r"
                       " WHERE r.table_id = $1::int8 AND r.key = $2::bytea FOR NO KEY UPDATE",
    /* $1 table, $2 key, $3 value, $4 now, $5 ord, $6 not_before, $7 grp,
     * $8 a queue's */
    [PG_RECORD_CREATE] =
        "INSERT INTO queuefs.records (table_id, key, value, seq, since, written, changed,"
        " ord, not_before, grp, state, wake)"
        " SELECT $1::int8, $2::bytea, $3::bytea,"
        " nextval(('queuefs.arrivals_' || $1::int8)::regclass), $4::int8,"
        " $4::int8, $4::int8, $5::bytea, $6::int8, $7::bytea,"
        " CASE WHEN $8::bool THEN queuefs.place_state(0, $6::int8, false, $4::int8) END,"
        " CASE WHEN $8::bool THEN queuefs.place_wake(0, $6::int8, false, $4::int8) ELSE 0 END"
        /* (no arrival number drawn for a key that is there) */
        " WHERE NOT EXISTS (SELECT 1 FROM queuefs.records"
        "  WHERE table_id = $1::int8 AND key = $2::bytea)"
        " ON CONFLICT (table_id, key) DO NOTHING RETURNING 1",
    /* ... and $9 the ceiling */
    [PG_RECORD_UPDATE] =
        "UPDATE queuefs.records r SET value = $3::bytea, written = $4::int8, ord = $5::bytea,"
        " not_before = $6::int8, grp = $7::bytea, dead = " DEAD("r.attempts", "$9") ","
        " state = CASE WHEN $8::bool THEN queuefs.place_state(r.claimed_until, $6::int8, "
        DEAD("r.attempts", "$9") ", $4::int8) END,"
        " wake = CASE WHEN $8::bool THEN queuefs.place_wake(r.claimed_until, $6::int8, "
        DEAD("r.attempts", "$9") ", $4::int8) ELSE 0 END"
        " WHERE r.table_id = $1::int8 AND r.key = $2::bytea RETURNING 1",
    /* $3 hold (<= 0: any), $4 whether it counts itself (a queue's delete
     * whose commit goes with it), $5 the counters' slot, $6 the catalog
     * version it may begin under (CATALOG_IS) */
    [PG_RECORD_DELETE] =
        "WITH d AS (DELETE FROM queuefs.records WHERE table_id = $1::int8 AND key = $2::bytea"
        "  AND ($3::int8 <= 0 OR (hold = $3::int8 AND claimed_until > " NOW_NS "))"
        "  AND " CATALOG_IS("$6") " RETURNING 1),"
        " counted AS (INSERT INTO queuefs.counts SELECT $1::int8, $5::int8::int4, 0, 0, 0, count(*)"
        "  FROM d HAVING $4::bool AND count(*) > 0" COUNTS_ADDED ")"
        " SELECT 1 FROM d",
    [PG_RECORD_FROM] = "SELECT " R_COLS " FROM queuefs.records r WHERE r.table_id = $1::int8"
                       " AND r.key >= $2::bytea ORDER BY r.key LIMIT $3::int8",
    [PG_RECORD_AFTER] = "SELECT " R_COLS " FROM queuefs.records r WHERE r.table_id = $1::int8"
                        " AND r.key > $2::bytea ORDER BY r.key LIMIT $3::int8",

    /* ---- the queue ----
     * The claim of n from the head, in one statement: the waiting records
     * whose instant has come (a thousand at most: the rest wait for the
     * next claim) and the first n ready ones, locked and skipped when
     * another transaction has them; the first n claimable of both in claim
     * order are claimed, the other due ones refiled.  $1 table, $2 the
     * queue's TIMEOUT (the new deadline is NOW_NS + it), $3 n, $4 ceiling,
     * $5 consumer, $6 instance, $7 the catalog version it may begin under
     * (CATALOG_IS), $8 the counters' slot, $9 whether it counts its claims
     * and lapses itself (when its commit goes with it).
     * The records are rewritten by key = ANY (ARRAY(…)), never by a join
     * with a CTE: queuefs's sessions use generic plans, which estimate a
     * LIMIT $n at a tenth of its input, and a join with "pick" was planned
     * as a hash join over a scan of the whole table — every claim read
     * every record (PG_RELEASE_ALL likewise). */
    [PG_CLAIM_HEAD] =
        "WITH clock AS MATERIALIZED (SELECT " NOW_NS " AS now, " NOW_PLUS("$2::int8") " AS until,"
        "  " CATALOG_IS("$7") " AS current),"
        " due AS ("
        "  SELECT key, ord, seq, attempts, hold, claimed_until, consumer, instance, since,"
        "         changed, claimed, not_before, dead FROM queuefs.records"
        "  WHERE table_id = $1::int8 AND state = 1 AND wake <= (SELECT now FROM clock)"
        "  AND (SELECT current FROM clock) ORDER BY wake LIMIT 1000 FOR NO KEY UPDATE SKIP LOCKED),"
        " ready AS ("
        "  SELECT key, ord, seq, attempts, hold, claimed_until, consumer, instance, since,"
        "         changed, claimed FROM queuefs.records"
        "  WHERE table_id = $1::int8 AND state = 0 AND (SELECT current FROM clock)"
        "  ORDER BY ord, seq LIMIT $3::int8 FOR NO KEY UPDATE SKIP LOCKED),"
        " pick AS ("
        "  SELECT * FROM (SELECT * FROM ready UNION ALL"
        "    SELECT key, ord, seq, attempts, hold, claimed_until, consumer, instance, since,"
        "           changed, claimed FROM due"
        "    WHERE queuefs.place_state(claimed_until, not_before, dead,"
        "                              (SELECT now FROM clock)) = 0) c"
        "  ORDER BY ord, seq LIMIT $3::int8),"
        " settle AS ("
        "  UPDATE queuefs.records r"
        "  SET state = queuefs.place_state(r.claimed_until, r.not_before, r.dead, k.now),"
        "      wake = queuefs.place_wake(r.claimed_until, r.not_before, r.dead, k.now)"
        "  FROM clock k WHERE r.table_id = $1::int8"
        "  AND r.key = ANY (ARRAY(SELECT key FROM due WHERE key NOT IN (SELECT key FROM pick)))),"
        " claimed AS ("
        "  UPDATE queuefs.records r SET attempts = r.attempts + 1,"
        "   hold = nextval('queuefs.holds'), claimed_until = k.until, consumer = $5::bytea,"
        "   instance = $6::bytea, changed = k.now, claimed = k.now, state = 1,"
        "   wake = k.until, dead = " DEAD("r.attempts + 1", "$4")
        "  FROM clock k WHERE r.table_id = $1::int8 AND r.key = ANY (ARRAY(SELECT key FROM pick))"
        "  RETURNING " R_COLS "),"
        " counted AS (INSERT INTO queuefs.counts SELECT $1::int8, $8::int8::int4, count(*), 0,"
        "  count(*) FILTER (WHERE claimed_until <> 0), 0 FROM pick HAVING $9::bool AND count(*) > 0"
        COUNTS_ADDED ")"
        " SELECT c.*, p.attempts AS o_attempts, p.hold AS o_hold,"
        "  p.claimed_until AS o_claimed_until, p.consumer AS o_consumer,"
        "  p.instance AS o_instance, p.since AS o_since, p.changed AS o_changed,"
        "  p.claimed AS o_claimed FROM claimed c JOIN pick p ON p.key = c.key"
        " ORDER BY c.ord, c.seq",
    /* The claim of one record, locked (PG_RECORD_LOCK) and found claimable. */
    [PG_CLAIM_ONE] =
        "UPDATE queuefs.records r SET attempts = r.attempts + 1,"
        " hold = nextval('queuefs.holds'), claimed_until = $5::int8, consumer = $6::bytea,"
        " instance = $7::bytea, changed = $3::int8, claimed = $3::int8, state = 1,"
        " wake = $5::int8, dead = " DEAD("r.attempts + 1", "$4")
        " WHERE r.table_id = $1::int8 AND r.key = $2::bytea RETURNING " R_COLS,
    /* $1 table, $2 key, $3 hold, $4 now, $5 not_before (0: as it is),
     * $6 ceiling */
    [PG_RELEASE] =
        "UPDATE queuefs.records r SET " RELEASED("$4", "$5", "$6") " WHERE r.table_id = $1::int8 AND r.key = $2::bytea AND r.hold = $3::int8"
        " AND r.claimed_until > $4::int8 RETURNING " R_COLS,
    /* $1 table, $2 key, $3 now, $4 not_before (0: as it is); answers
     * whether a live hold ended */
    [PG_RETRY] =
        "WITH o AS (SELECT claimed_until AS ocu FROM queuefs.records"
        "  WHERE table_id = $1::int8 AND key = $2::bytea FOR NO KEY UPDATE)"
        " UPDATE queuefs.records r SET attempts = 0, hold = 0, claimed_until = 0,"
        " consumer = '', instance = '', since = $3::int8, changed = $3::int8,"
        " not_before = CASE WHEN $4::int8 <> 0 THEN $4::int8 ELSE r.not_before END,"
        " dead = false,"
        " state = queuefs.place_state(0, CASE WHEN $4::int8 <> 0 THEN $4::int8"
        "  ELSE r.not_before END, false, $3::int8),"
        " wake = queuefs.place_wake(0, CASE WHEN $4::int8 <> 0 THEN $4::int8"
        "  ELSE r.not_before END, false, $3::int8)"
        " FROM o WHERE r.table_id = $1::int8 AND r.key = $2::bytea"
        " RETURNING " R_COLS ", o.ocu > $3::int8",
    /* $1 table, $2 key, $3 hold, $4 now, $5 the new deadline */
    [PG_TOUCH] =
        "UPDATE queuefs.records r SET claimed_until = $5::int8, changed = $4::int8,"
        " wake = $5::int8"
        " WHERE r.table_id = $1::int8 AND r.key = $2::bytea AND r.hold = $3::int8"
        " AND r.claimed_until > $4::int8 RETURNING " R_COLS,
    /* $1 table, $2 now, $3 not_before, $4 consumer (empty: by instance),
     * $5 instance, $6 ceiling; in deadline order */
    [PG_RELEASE_ALL] =
        "WITH o AS (SELECT key, claimed_until AS ocu FROM queuefs.records"
        "  WHERE table_id = $1::int8 AND state = 1 AND claimed_until > $2::int8"
        "  AND CASE WHEN length($4::bytea) > 0 THEN consumer = $4::bytea"
        "      ELSE instance = $5::bytea END FOR NO KEY UPDATE),"
        " x AS (UPDATE queuefs.records r SET " RELEASED("$2", "$3", "$6")
        "  WHERE r.table_id = $1::int8 AND r.key = ANY (ARRAY(SELECT key FROM o))"
        "  RETURNING " R_COLS ")"
        " SELECT x.*, o.ocu FROM x JOIN o ON o.key = x.key ORDER BY o.ocu, x.key",
    /* $1 table, $2 key, $3 the claim's hold, $4 written before it, and the
     * columns before it: $5 attempts, $6 hold, $7 claimed_until,
     * $8 consumer, $9 instance, $10 since, $11 changed, $12 claimed;
     * $13 now, $14 ceiling */
    [PG_UNCLAIM] =
        "UPDATE queuefs.records r SET attempts = $5::int8, hold = $6::int8,"
        " claimed_until = $7::int8, consumer = $8::bytea, instance = $9::bytea,"
        " since = $10::int8, changed = $11::int8, claimed = $12::int8,"
        " dead = " DEAD("$5::int8", "$14") ","
        " state = queuefs.place_state($7::int8, r.not_before, " DEAD("$5::int8", "$14")
        ", $13::int8),"
        " wake = queuefs.place_wake($7::int8, r.not_before, " DEAD("$5::int8", "$14")
        ", $13::int8)"
        " WHERE r.table_id = $1::int8 AND r.key = $2::bytea AND r.hold = $3::int8"
        " AND r.changed = r.claimed AND r.written = $4::int8 AND r.attempts = $5::int8 + 1"
        " RETURNING r.grp",
    /* $1 table, $2 now, $3 ceiling, $4 per_group: a parked record found
     * ready stays parked for PG_REFILE_GROUPED to place; a record whose
     * place does not change is not rewritten */
    [PG_REFILE] =
        "UPDATE queuefs.records r SET dead = p.dead, state = p.state, wake = p.wake"
        " FROM (SELECT key, " DEAD("attempts", "$3") " AS dead,"
        "   CASE WHEN state = 3 AND grp <> '' AND $4::int8 > 0 AND queuefs.place_state("
        "    claimed_until, not_before, " DEAD("attempts", "$3") ", $2::int8) = 0 THEN 3::int2"
        "   ELSE queuefs.place_state(claimed_until, not_before, " DEAD("attempts", "$3")
        ", $2::int8) END AS state,"
        "   queuefs.place_wake(claimed_until, not_before, " DEAD("attempts", "$3")
        ", $2::int8) AS wake"
        "  FROM queuefs.records WHERE table_id = $1::int8 AND state IS NOT NULL) p"
        " WHERE r.table_id = $1::int8 AND r.key = p.key"
        " AND (r.dead, r.state, r.wake) IS DISTINCT FROM (p.dead, p.state, p.wake)",
    /* $1 table, $2 now: records, ready, held, delayed, idle, next wake,
     * the head's key, claims, releases, lapses, deletes, and whether the
     * queue is grouped (then PG_COUNTS_GROUPED tells ready from parked) */
    [PG_COUNTS] =
        "SELECT count(*), count(*) FILTER (WHERE e = 0),"
        "  count(*) FILTER (WHERE e = 1 AND claimed_until > $2::int8),"
        "  count(*) FILTER (WHERE e = 1 AND claimed_until <= $2::int8),"
        "  count(*) FILTER (WHERE e = 2),"
        "  coalesce(min(CASE WHEN e = 1 AND claimed_until > $2::int8 THEN claimed_until"
        "   WHEN e = 1 THEN not_before END), 9223372036854775807),"
        "  (SELECT h.key FROM ("
        "    (SELECT key, ord, seq FROM queuefs.records WHERE table_id = $1::int8 AND state = 0"
        "     ORDER BY ord, seq LIMIT 1)"
        "    UNION ALL SELECT key, ord, seq FROM queuefs.records"
        "     WHERE table_id = $1::int8 AND state = 1 AND wake <= $2::int8"
        "     AND queuefs.place_state(claimed_until, not_before, dead, $2::int8) = 0) h"
        "   ORDER BY h.ord, h.seq LIMIT 1),"
        "  (SELECT coalesce(sum(claims), 0)::int8 FROM queuefs.counts WHERE table_id = $1::int8),"
        "  (SELECT coalesce(sum(releases), 0)::int8 FROM queuefs.counts WHERE table_id = $1::int8),"
        "  (SELECT coalesce(sum(lapses), 0)::int8 FROM queuefs.counts WHERE table_id = $1::int8),"
        "  (SELECT coalesce(sum(deletes), 0)::int8 FROM queuefs.counts WHERE table_id = $1::int8),"
        "  EXISTS (SELECT 1 FROM queuefs.groups WHERE table_id = $1::int8 AND lim > 0)"
        " FROM (SELECT claimed_until, not_before, CASE WHEN state = 1 AND wake <= $2::int8"
        "   THEN queuefs.place_state(claimed_until, not_before, dead, $2::int8) ELSE state END e"
        "   FROM queuefs.records WHERE table_id = $1::int8) s",
    /* $1 table, after ($2 wake, $3 key), $4 how many, $5 now: what still
     * waits (not what a claim would find due) */
    [PG_WAITING] = "SELECT " R_COLS ", r.wake FROM queuefs.records r"
                   " WHERE r.table_id = $1::int8 AND r.state = 1"
                   " AND (r.wake, r.key) > ($2::int8, $3::bytea)"
                   " AND (r.wake > $5::int8 OR queuefs.place_state(r.claimed_until, r.not_before,"
                   " r.dead, $5::int8) = 1)"
                   " ORDER BY r.wake, r.key LIMIT $4::int8",

    /* ---- AT MOST … PER: a grouped queue's records (store/pg/pg_schema.c) ----
     * $1 table, $2 key, $3 the group it is being moved to (or empty),
     * $4 per_group: locks the groups, then the record; its group (NULL:
     * no such record) */
    [PG_GROUP_LOCK_OF] = "SELECT queuefs.group_lock_of($1::int8, $2::bytea, $3::bytea, $4::int8)",
    /* $1 table, groups $2 and $3 (empty: none), $4 per_group, $5 now:
     * puts them right after a change of their records, in group order */
    [PG_GROUP_FIX] =
        "SELECT queuefs.group_fix($1::int8, g, $4::int8, $5::int8) FROM (SELECT DISTINCT g"
        "  FROM unnest(ARRAY[$2::bytea, $3::bytea]) g WHERE g <> '' ORDER BY g) s",
    /* The arguments of PG_CLAIM_HEAD and $8 per_group; its columns. */
    [PG_CLAIM_GROUPED] = "SELECT * FROM queuefs.claim_grouped($1::int8, $2::int8, $3::int8, $4::int8,"
                         " $5::int8, $6::bytea, $7::bytea, $8::int8)",
    /* $1 table, $2 key, $3 now, $4 ceiling, $5 the new deadline,
     * $6 consumer, $7 instance, $8 per_group */
    [PG_CLAIM_NAMED] = "SELECT * FROM queuefs.claim_named($1::int8, $2::bytea, $3::int8, $4::int8,"
                       " $5::int8, $6::bytea, $7::bytea, $8::int8)",
    /* $1 table: its groups, locked before a refile counts their holds */
    [PG_REFILE_LOCK] = "SELECT 1 FROM queuefs.groups WHERE table_id = $1::int8 ORDER BY grp"
                       " FOR NO KEY UPDATE",
    /* $1 table, arrays $2 keys, $3 ords, $4 not_befores, $5 grps: a page
     * of records' filings */
    [PG_REFILE_PAGE] = "UPDATE queuefs.records r SET ord = v.o, not_before = v.nb, grp = v.g"
                       " FROM unnest($2::bytea[], $3::bytea[], $4::int8[], $5::bytea[])"
                       " AS v(k, o, nb, g) WHERE r.table_id = $1::int8 AND r.key = v.k",
    /* $1 table, $2 per_group: after PG_REFILE, each group's first ready
     * record in state 0 when it has room, the others parked; the groups'
     * rows counted anew (none when per_group is 0) */
    [PG_REFILE_GROUPED] =
        /* Window functions, not joins of CTEs, whose row counts the
         * planner cannot know: a join of two 100,000-row CTEs planned as
         * a nested loop is quadratic. */
        "WITH a AS (SELECT key, grp, state, count(*) FILTER (WHERE state = 1 AND claimed_until <> 0"
        "   AND wake = claimed_until) OVER (PARTITION BY grp) AS held,"
        "   row_number() OVER (PARTITION BY grp, state IN (0, 3) ORDER BY ord, seq) AS rn"
        "  FROM queuefs.records WHERE table_id = $1::int8 AND grp <> '' AND state IS NOT NULL),"
        " k AS (SELECT key, state, CASE WHEN held < $2::int8 AND rn = 1 THEN 0 ELSE 3 END AS place"
        "  FROM a WHERE state IN (0, 3)),"
        " h AS (SELECT DISTINCT grp, held FROM a),"
        " placed AS (UPDATE queuefs.records r SET state = k.place FROM k"
        "  WHERE $2::int8 > 0 AND r.table_id = $1::int8 AND r.key = k.key AND k.state <> k.place),"
        " gone AS (DELETE FROM queuefs.groups g WHERE g.table_id = $1::int8"
        "  AND ($2::int8 <= 0 OR NOT EXISTS (SELECT 1 FROM h WHERE h.grp = g.grp)))"
        " INSERT INTO queuefs.groups (table_id, grp, held, lim)"
        " SELECT $1::int8, grp, held, $2::int8 FROM h WHERE $2::int8 > 0"
        " ON CONFLICT (table_id, grp) DO UPDATE SET held = EXCLUDED.held, lim = EXCLUDED.lim",
    /* $1 table, $2 now: ready (what a claim may take now), parked, the
     * groups at their limit and the head's key, as a claim then would find
     * them (a lapsed hold frees its place) */
    [PG_COUNTS_GROUPED] =
        "WITH s AS (SELECT key, grp, ord, seq, claimed_until,"
        "   CASE WHEN state = 1 AND wake <= $2::int8"
        "    THEN queuefs.place_state(claimed_until, not_before, dead, $2::int8) ELSE state END e"
        "  FROM queuefs.records WHERE table_id = $1::int8 AND state IS NOT NULL),"
        " h AS (SELECT grp, count(*) FILTER (WHERE e = 1 AND claimed_until > $2::int8) AS held"
        "  FROM s WHERE grp <> '' GROUP BY grp),"
        " l AS (SELECT g.grp, g.lim, coalesce(h.held, 0) AS held FROM queuefs.groups g"
        "  LEFT JOIN h ON h.grp = g.grp WHERE g.table_id = $1::int8 AND g.lim > 0),"
        " c AS (SELECT s.key, s.ord, s.seq, CASE WHEN l.grp IS NULL THEN 0 WHEN l.held < l.lim"
        "   AND row_number() OVER (PARTITION BY s.grp ORDER BY s.ord, s.seq) = 1 THEN 0 ELSE 3 END f"
        "  FROM s LEFT JOIN l ON l.grp = s.grp AND s.grp <> '' WHERE s.e IN (0, 3))"
        " SELECT count(*) FILTER (WHERE f = 0), count(*) FILTER (WHERE f = 3),"
        "  (SELECT count(*) FROM l WHERE held >= lim),"
        "  (SELECT key FROM c WHERE f = 0 ORDER BY ord, seq LIMIT 1) FROM c",

    /* ---- AT MOST … EVERY ----
     * $1 table, $2 the window's start (exclusive), $3 rate: locks the
     * queue's row of hand-outs; the room left in the window */
    [PG_RATE_ROOM] = "SELECT queuefs.rate_room($1::int8, $2::int8, $3::int8)",
    /* $1 table, $2 rate, $3 now, $4 how many were handed out now: the
     * greatest $2 instants kept, in ascending order */
    [PG_RATE_NOTE] =
        "UPDATE queuefs.rates r SET stamps = coalesce((SELECT array_agg(s ORDER BY s) FROM"
        "  (SELECT s FROM (SELECT unnest(r.stamps) s UNION ALL"
        "    SELECT $3::int8 FROM generate_series(1, $4::int8)) a"
        "   ORDER BY s DESC LIMIT $2::int8) b), '{}')"
        " WHERE r.table_id = $1::int8",
    /* $1 table, $2 the window's start, $3 rate: the hand-out whose leaving
     * the window admits the next one (NULL: there is room now) */
    [PG_RATE_NEXT] =
        "SELECT (SELECT s FROM queuefs.rates r, unnest(r.stamps) s WHERE r.table_id = $1::int8"
        "  AND s > $2::int8 ORDER BY s DESC OFFSET $3::int8 - 1 LIMIT 1)",

    /* ---- identities and deduplication ---- */
    /* NULL, rather than an error that would end the transaction, when the
     * sequence is at its end */
    [PG_ID_NEXT] = "SELECT CASE WHEN coalesce(pg_sequence_last_value(s), 0) < 9223372036854775807"
                   " THEN nextval(s) END"
                   " FROM (SELECT ('queuefs.ids_' || $1::int8)::regclass s) q",
    /* $1 table, $2 id: true when the sequence is at or past it */
    [PG_ID_HELD] = "SELECT coalesce(pg_sequence_last_value(('queuefs.ids_' || $1::int8)::regclass), 0)"
                   " >= $2::int8",
    [PG_ID_NOTE] = "SELECT setval(s, $2::int8) FROM (SELECT ('queuefs.ids_' || $1::int8)::regclass s) q"
                   " WHERE coalesce(pg_sequence_last_value(s), 0) < $2::int8",
    /* $1 table, $2 key, $3 now, $4 the window's start: a row answered when
     * the key is new in the window (and recorded); a few expired entries
     * pruned on the way */
    [PG_DEDUP] =
        "WITH pruned AS (DELETE FROM queuefs.dedup WHERE table_id = $1::int8 AND key IN ("
        "   SELECT key FROM queuefs.dedup WHERE table_id = $1::int8 AND seen <= $4::int8"
        "   AND key <> $2::bytea ORDER BY seen LIMIT 8 FOR UPDATE SKIP LOCKED))"
        " INSERT INTO queuefs.dedup VALUES ($1::int8, $2::bytea, $3::int8)"
        " ON CONFLICT (table_id, key) DO UPDATE SET seen = EXCLUDED.seen"
        " WHERE queuefs.dedup.seen <= $4::int8 RETURNING 1",

    /* What BEGIN is sent with: the transaction's now() in microseconds and
     * the catalog's version, for the cache of definitions. */
    [PG_TXN_CLOCK] = "SELECT (extract(epoch FROM now()) * 1000000)::int8,"
                     " (SELECT version FROM queuefs.catalog)",
    /* $1 table, $2 slot, $3 claims, $4 releases, $5 lapses, $6 deletes: a
     * transaction's changes to the counters, sent with its COMMIT */
    [PG_COUNT_ADD] =
        "INSERT INTO queuefs.counts VALUES ($1::int8, $2::int8::int4, $3::int8, $4::int8,"
        " $5::int8, $6::int8)" COUNTS_ADDED,
    /* The statistics collector's figures of queuefs's tables */
    [PG_HEALTH] = "SELECT coalesce(sum(n_live_tup), 0)::int8, coalesce(sum(n_dead_tup), 0)::int8"
                  " FROM pg_stat_user_tables WHERE schemaname = 'queuefs'",
};

const char *
pg_stmt_sql(PgStmt s)
{
    return stmt_sql[s];
}
