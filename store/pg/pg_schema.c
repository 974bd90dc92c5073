/* pg_schema.c — the PostgreSQL backend's schema, created on first use.
 *
 * Everything lives in the schema "queuefs" of the database the URI names;
 * queuefs.version holds the schema's version, so that a later release can
 * migrate it (a schema of an earlier version is brought to this one in
 * place by the first process that opens it for writing).  Creating it needs CREATE
 * on the database (see the README for the grants); processes opening the
 * store at once serialise on an advisory lock, so one of them creates
 * it. */
#include "pg_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The advisory lock the creation holds: "qfs\0" */
#define SCHEMA_LOCK "1903522560"

static const char schema_sql[] =
    "CREATE SCHEMA IF NOT EXISTS queuefs;"
    "CREATE TABLE queuefs.version (version int8 NOT NULL);"
    "CREATE TABLE queuefs.tables ("
    "  id int8 PRIMARY KEY, name bytea NOT NULL UNIQUE, def bytea NOT NULL);"
    "CREATE SEQUENCE queuefs.table_ids;"
    /* Moved on by every change of a definition: what caches of them check. */
    "CREATE TABLE queuefs.catalog (version int8 NOT NULL);"
    "INSERT INTO queuefs.catalog VALUES (1);"
    "CREATE SEQUENCE queuefs.holds;"
    /* A record; instants are int8 nanoseconds since the epoch (0: none). */
    "CREATE TABLE queuefs.records ("
    "  table_id int8 NOT NULL, key bytea NOT NULL, value bytea NOT NULL,"
    "  seq int8 NOT NULL, since int8 NOT NULL, written int8 NOT NULL,"
    "  changed int8 NOT NULL, claimed int8 NOT NULL DEFAULT 0,"
    "  attempts int8 NOT NULL DEFAULT 0, hold int8 NOT NULL DEFAULT 0,"
    "  claimed_until int8 NOT NULL DEFAULT 0,"
    "  consumer bytea NOT NULL DEFAULT '', instance bytea NOT NULL DEFAULT '',"
    "  ord bytea NOT NULL DEFAULT '', not_before int8 NOT NULL DEFAULT 0,"
    "  grp bytea NOT NULL DEFAULT '',"
    "  state int2, wake int8 NOT NULL DEFAULT 0, dead bool NOT NULL DEFAULT false,"
    "  PRIMARY KEY (table_id, key))"
    /* Vacuumed once 1% of it (and 1,000 rows) is dead, not the default
     * 20%: a busy queue's claims walk the dead rows at the head of
     * records_ready until a vacuum takes them away. */
    "  WITH (fillfactor = 80, autovacuum_vacuum_scale_factor = 0.01,"
    "        autovacuum_vacuum_threshold = 1000);"
    "CREATE INDEX records_ready ON queuefs.records (table_id, ord, seq) WHERE state = 0;"
    "CREATE INDEX records_waiting ON queuefs.records (table_id, wake, key) WHERE state = 1;"
    /* Counters: a row per table and connection slot, so no row is every
     * claim's; pages mostly empty, so their updates stay in the page (HOT)
     * and go on when the tablespace is full. */
    "CREATE TABLE queuefs.counts ("
    "  table_id int8 NOT NULL, slot int4 NOT NULL,"
    "  claims int8 NOT NULL DEFAULT 0, releases int8 NOT NULL DEFAULT 0,"
    "  lapses int8 NOT NULL DEFAULT 0, deletes int8 NOT NULL DEFAULT 0,"
    "  PRIMARY KEY (table_id, slot)) WITH (fillfactor = 10);"
    "CREATE TABLE queuefs.dedup ("
    "  table_id int8 NOT NULL, key bytea NOT NULL, seen int8 NOT NULL,"
    "  PRIMARY KEY (table_id, key));"
    "CREATE INDEX dedup_seen ON queuefs.dedup (table_id, seen);"
    /* Where a queue record is filed at instant "now": held until its
     * deadline; retired when dead (at the ceiling); delayed until its
     * not_before; or ready — store/queue.h's queue_place, restated in SQL
     * (conformance_test.c's "queue's rules" checks the two agree). */
    "CREATE FUNCTION queuefs.place_state(cu int8, nb int8, dead bool, now int8)"
    "  RETURNS int2 LANGUAGE sql IMMUTABLE AS $$"
    "  SELECT (CASE WHEN cu > now THEN 1 WHEN dead THEN 2 WHEN nb > now THEN 1 ELSE 0 END)::int2"
    "  $$;"
    "CREATE FUNCTION queuefs.place_wake(cu int8, nb int8, dead bool, now int8)"
    "  RETURNS int8 LANGUAGE sql IMMUTABLE AS $$"
    "  SELECT CASE WHEN cu > now THEN cu WHEN dead THEN 0 WHEN nb > now THEN nb ELSE 0 END"
    "  $$;"
    "INSERT INTO queuefs.version VALUES (1);";

/* Version 2: AT MOST … PER and AT MOST … EVERY, added to a version 1
 * schema in place (and so to a new one).
 *
 * A grouped queue (per_group > 0) files in state 0 only each group's next
 * record — its first ready record in claim order, while the group has
 * fewer than per_group holds — and "parks" its other ready records in
 * state 3, so that the claim's index holds at most one record of a group.
 * A row of queuefs.groups per group is the lock of whatever changes the
 * group's holds or places (taken before the records' row locks, except by
 * a claim, which takes both SKIP LOCKED and so never waits), its "held"
 * the holds counted at the last change and "lim" the per_group it was
 * filed under.  A record holds its group's place while it is filed as held
 * (state 1, woken at its deadline): a lapse is found, and the place freed,
 * by the claim that settles it.  queuefs.rates keeps the instants of a
 * rate-limited queue's last hand-outs.  (Its claim functions are made by
 * version 4.) */
static const char schema_v2_sql[] =
    "CREATE TABLE IF NOT EXISTS queuefs.groups ("
    "  table_id int8 NOT NULL, grp bytea NOT NULL, held int8 NOT NULL DEFAULT 0,"
    "  lim int8 NOT NULL DEFAULT 0, PRIMARY KEY (table_id, grp)) WITH (fillfactor = 50);"
    "CREATE TABLE IF NOT EXISTS queuefs.rates ("
    "  table_id int8 PRIMARY KEY, stamps int8[] NOT NULL DEFAULT '{}') WITH (fillfactor = 50);"
    /* A group's next record (state 0) and those parked behind it (3). */
    "CREATE INDEX IF NOT EXISTS records_grouped ON queuefs.records (table_id, grp, state, ord, seq)"
    "  WHERE state IN (0, 3) AND grp <> '';"
    /* The records holding their group's place. */
    "CREATE INDEX IF NOT EXISTS records_holding ON queuefs.records (table_id, grp)"
    "  WHERE state = 1 AND grp <> '' AND claimed_until <> 0 AND wake = claimed_until;"
    /* Locks the row of group g of table tid (made when absent). */
    "CREATE OR REPLACE FUNCTION queuefs.group_lock(tid int8, g bytea, glim int8)"
    "  RETURNS void LANGUAGE plpgsql AS $$"
    "BEGIN"
    "  PERFORM 1 FROM queuefs.groups WHERE table_id = tid AND grp = g FOR NO KEY UPDATE;"
    "  IF NOT FOUND THEN"
    "    INSERT INTO queuefs.groups (table_id, grp, lim) VALUES (tid, g, glim)"
    "      ON CONFLICT DO NOTHING;"
    "    PERFORM 1 FROM queuefs.groups WHERE table_id = tid AND grp = g FOR NO KEY UPDATE;"
    "  END IF;"
    "END $$;"
    /* The same without waiting: false when another transaction has it. */
    "CREATE OR REPLACE FUNCTION queuefs.group_try_lock(tid int8, g bytea, glim int8)"
    "  RETURNS bool LANGUAGE plpgsql AS $$"
    "BEGIN"
    "  PERFORM 1 FROM queuefs.groups WHERE table_id = tid AND grp = g"
    "    FOR NO KEY UPDATE SKIP LOCKED;"
    "  IF FOUND THEN RETURN true; END IF;"
    "  PERFORM 1 FROM queuefs.groups WHERE table_id = tid AND grp = g;"
    "  IF FOUND THEN RETURN false; END IF;"
    "  INSERT INTO queuefs.groups (table_id, grp, lim) VALUES (tid, g, glim)"
    "    ON CONFLICT DO NOTHING;"
    "  PERFORM 1 FROM queuefs.groups WHERE table_id = tid AND grp = g"
    "    FOR NO KEY UPDATE SKIP LOCKED;"
    "  RETURN FOUND;"
    "END $$;"
    /* Locks the groups of record k (as it is) and g2 (non-empty: the group
     * it is being moved to), in group order, then the record; its group
     * (NULL when there is no such record). */
    "CREATE OR REPLACE FUNCTION queuefs.group_lock_of(tid int8, k bytea, g2 bytea, glim int8)"
    "  RETURNS bytea LANGUAGE plpgsql AS $$"
    "DECLARE g bytea; now_g bytea;"
    "BEGIN"
    "  LOOP"
    "    SELECT grp INTO g FROM queuefs.records WHERE table_id = tid AND key = k;"
    "    PERFORM queuefs.group_lock(tid, x, glim) FROM (SELECT DISTINCT x FROM"
    "      unnest(ARRAY[coalesce(g, ''::bytea), g2]) x WHERE x <> '' ORDER BY x) s;"
    "    SELECT grp INTO now_g FROM queuefs.records WHERE table_id = tid AND key = k"
    "      FOR NO KEY UPDATE;"
    "    IF now_g IS NOT DISTINCT FROM g THEN RETURN g; END IF;"
    "  END LOOP;"
    "END $$;"
    /* Puts group g right after a change of its records: counts its holds,
     * files its first ready record in state 0 when it has fewer than glim,
     * the others in 3.  Its holds. */
    "CREATE OR REPLACE FUNCTION queuefs.group_fix(tid int8, g bytea, glim int8, at_ns int8)"
    "  RETURNS int8 LANGUAGE plpgsql AS $$"
    "DECLARE h int8; head bytea;"
    "BEGIN"
    "  IF g = '' OR glim <= 0 THEN RETURN 0; END IF;"
    "  PERFORM queuefs.group_lock(tid, g, glim);"
    "  SELECT count(*) INTO h FROM queuefs.records WHERE table_id = tid AND grp = g"
    "    AND state = 1 AND grp <> '' AND claimed_until <> 0 AND wake = claimed_until;"
    "  IF h < glim THEN"
    "    SELECT c.key INTO head FROM ("
    "      (SELECT key, ord, seq FROM queuefs.records WHERE table_id = tid AND grp = g"
    "        AND state = 0 AND grp <> '')"
    "      UNION ALL (SELECT key, ord, seq FROM queuefs.records WHERE table_id = tid"
    "        AND grp = g AND state = 3 AND grp <> '' ORDER BY ord, seq LIMIT 1)) c"
    "      ORDER BY c.ord, c.seq LIMIT 1;"
    "  END IF;"
    "  UPDATE queuefs.records SET state = 3 WHERE table_id = tid AND grp = g AND state = 0"
    "    AND grp <> '' AND key IS DISTINCT FROM head;"
    "  UPDATE queuefs.records SET state = 0 WHERE table_id = tid AND key = head AND state = 3;"
    "  UPDATE queuefs.groups SET held = h, lim = glim WHERE table_id = tid AND grp = g"
    "    AND (held, lim) IS DISTINCT FROM (h, glim);"
    "  RETURN h;"
    "END $$;"
    /* Refiles the waiting records of a grouped queue whose instant has
     * come (a thousand at most), as the ungrouped claim does, and puts
     * their groups right; one whose group another transaction has is left
     * for the next claim. */
    "CREATE OR REPLACE FUNCTION queuefs.settle_due(tid int8, at_ns int8, glim int8)"
    "  RETURNS void LANGUAGE plpgsql AS $$"
    "DECLARE r record; gs bytea[] := '{}';"
    "BEGIN"
    "  FOR r IN SELECT key, grp FROM queuefs.records WHERE table_id = tid AND state = 1"
    "    AND wake <= at_ns ORDER BY wake LIMIT 1000 FOR NO KEY UPDATE SKIP LOCKED LOOP"
    "    IF r.grp <> '' AND NOT r.grp = ANY (gs) THEN"
    "      IF NOT queuefs.group_try_lock(tid, r.grp, glim) THEN CONTINUE; END IF;"
    "      gs := gs || r.grp;"
    "    END IF;"
    "    UPDATE queuefs.records"
    "      SET state = queuefs.place_state(claimed_until, not_before, dead, at_ns),"
    "          wake = queuefs.place_wake(claimed_until, not_before, dead, at_ns)"
    "      WHERE table_id = tid AND key = r.key;"
    "  END LOOP;"
    "  PERFORM queuefs.group_fix(tid, g, glim, at_ns) FROM unnest(gs) g;"
    "END $$;"
    /* Locks the rate row of table tid (made when absent); how many
     * hand-outs the window that starts after "since" has room for. */
    "CREATE OR REPLACE FUNCTION queuefs.rate_room(tid int8, since int8, rate int8)"
    "  RETURNS int8 LANGUAGE plpgsql AS $$"
    "DECLARE st int8[];"
    "BEGIN"
    "  SELECT stamps INTO st FROM queuefs.rates WHERE table_id = tid FOR UPDATE;"
    "  IF NOT FOUND THEN"
    "    INSERT INTO queuefs.rates VALUES (tid, '{}') ON CONFLICT DO NOTHING;"
    "    SELECT stamps INTO st FROM queuefs.rates WHERE table_id = tid FOR UPDATE;"
    "  END IF;"
    "  RETURN greatest(rate - (SELECT count(*) FROM unnest(st) s WHERE s > since), 0);"
    "END $$;"
    "UPDATE queuefs.version SET version = 2;";

/* Version 3: a record's errors (StoreRecord.errors, in the same
 * encoding), added to a version 2 schema in place (and so to a new one).
 * (The claim functions, which answer them too, are made by version 4.) */
static const char schema_v3_sql[] =
    "ALTER TABLE queuefs.records ADD COLUMN IF NOT EXISTS errors bytea NOT NULL DEFAULT '';"
    /* store/queue.h's queue_errors_add in SQL: errs with the entry
     * (attempt, at_ns, txt) appended, the oldest dropped so that 20
     * remain. */
    "CREATE OR REPLACE FUNCTION queuefs.errors_add(errs bytea, attempt int8, at_ns int8, txt bytea)"
    "  RETURNS bytea LANGUAGE plpgsql IMMUTABLE AS $$"
    "DECLARE p int := 0; starts int[] := '{}'; n int; t bytea := substring(txt FROM 1 FOR 4096);"
    "BEGIN"
    "  WHILE p + 18 <= length(errs) LOOP"
    "    starts := starts || p;"
    "    p := p + 18 + get_byte(errs, p + 16) * 256 + get_byte(errs, p + 17);"
    "  END LOOP;"
    "  n := coalesce(array_length(starts, 1), 0);"
    "  IF n >= 20 THEN errs := substring(errs FROM starts[n - 18] + 1); END IF;"
    "  RETURN errs || int8send(attempt) || int8send(at_ns)"
    "    || substring(int4send(length(t)) FROM 3 FOR 2) || t;"
    "END $$;"
    /* store/queue.h's queue_hold_lapsed, and the lapse a claim or retry
     * records: errs with "lapsed" added, as the failure of attempt att at
     * its deadline cu, when the hold was never released and ran out by
     * now. */
    "CREATE OR REPLACE FUNCTION queuefs.errors_lapsed(errs bytea, att int8, cu int8, now int8)"
    "  RETURNS bytea LANGUAGE sql IMMUTABLE AS $$"
    "  SELECT CASE WHEN cu <> 0 AND cu <= now"
    "    THEN queuefs.errors_add(errs, att, cu, '" QUEUE_LAPSED "'::bytea) ELSE errs END"
    "  $$;"
    "UPDATE queuefs.version SET version = 3;";

/* Version 4: KEEP and COALESCE (StoreRecord.completed_at and .rerun),
 * added to a version 3 schema in place (and so to a new one).  A finish
 * on a queue that keeps files the record done, in state 4 with its
 * completed_at, out of the claim's indexes; the queue's writes remove the
 * expired ones, oldest first (finishes of one instant in arrival order),
 * through records_done (pg_stmts.def's REAPED), one probe of it when none
 * has expired.  The claim functions answer the new columns too, so they
 * are made anew. */
/* What a claim function answers: the record as now stored (PG_RECORD_COLS)
 * and its columns before the claim. */
#define CLAIMED_TABLE \
    "RETURNS TABLE (c_key bytea, c_value bytea, c_seq int8, c_since int8, c_written int8," \
    " c_changed int8, c_claimed int8, c_attempts int8, c_hold int8, c_claimed_until int8," \
    " c_consumer bytea, c_instance bytea, c_ord bytea, c_not_before int8, c_errors bytea," \
    " c_grp bytea, c_completed_at int8, c_rerun bool, o_attempts int8, o_hold int8," \
    " o_claimed_until int8, o_consumer bytea, o_instance bytea, o_since int8, o_changed int8," \
    " o_claimed int8, o_errors bytea)"

static const char schema_v4_sql[] =
    "ALTER TABLE queuefs.records ADD COLUMN IF NOT EXISTS completed_at int8 NOT NULL DEFAULT 0,"
    "  ADD COLUMN IF NOT EXISTS rerun bool NOT NULL DEFAULT false;"
    "CREATE INDEX IF NOT EXISTS records_done ON queuefs.records (table_id, completed_at, seq)"
    "  WHERE state = 4;"
    "DROP FUNCTION IF EXISTS queuefs.claim_named(int8, bytea, int8, int8, int8, bytea, bytea, int8);"
    "DROP FUNCTION IF EXISTS queuefs.claim_grouped(int8, int8, int8, int8, int8, bytea, bytea, int8);"
    "DROP FUNCTION IF EXISTS queuefs.claim_key(int8, bytea, int8, int8, int8, bytea, bytea);"
    /* Claims record k (locked, claimable) as PG_CLAIM_HEAD does: the record
     * as now stored and its columns before. */
    "CREATE OR REPLACE FUNCTION queuefs.claim_key(tid int8, k bytea, at_ns int8, ceiling_n int8,"
    "    until int8, who bytea, inst bytea)" CLAIMED_TABLE "  LANGUAGE sql AS $$"
    "  WITH p AS (SELECT attempts, hold, claimed_until, consumer, instance, since, changed,"
    "      claimed, errors FROM queuefs.records WHERE table_id = tid AND key = k),"
    "   u AS (UPDATE queuefs.records r SET attempts = r.attempts + 1,"
    "      errors = queuefs.errors_lapsed(r.errors, r.attempts, r.claimed_until, at_ns),"
    "      hold = nextval('queuefs.holds'), claimed_until = until, consumer = who,"
    "      instance = inst, changed = at_ns, claimed = at_ns, state = 1, wake = until,"
    "      dead = (ceiling_n > 0 AND r.attempts + 1 >= ceiling_n)"
    "      WHERE r.table_id = tid AND r.key = k"
    "      RETURNING r.key, r.value, r.seq, r.since, r.written, r.changed, r.claimed,"
    "       r.attempts, r.hold, r.claimed_until, r.consumer, r.instance, r.ord,"
    "       r.not_before, r.errors, r.grp, r.completed_at, r.rerun)"
    "  SELECT u.*, p.* FROM u, p"
    "  $$;"
    /* The claim of up to n records of a grouped queue from the head, one
     * at a time: after each its group is put right, so that the group's
     * next record takes its place in claim order when the group has room.
     * A record or group another transaction has locked is passed over. */
    "CREATE OR REPLACE FUNCTION queuefs.claim_grouped(tid int8, at_ns int8, n int8, ceiling_n int8,"
    "    until int8, who bytea, inst bytea, glim int8)"
    "  " CLAIMED_TABLE " LANGUAGE plpgsql AS $$"
    "DECLARE c record; skipped bytea[] := '{}'; got int8 := 0;"
    "BEGIN"
    "  PERFORM queuefs.settle_due(tid, at_ns, glim);"
    "  WHILE got < n LOOP"
    "    LOOP"
    "      SELECT key, grp INTO c FROM queuefs.records WHERE table_id = tid AND state = 0"
    "        AND key <> ALL (skipped) ORDER BY ord, seq LIMIT 1"
    "        FOR NO KEY UPDATE SKIP LOCKED;"
    "      EXIT WHEN NOT FOUND OR c.grp = '' OR queuefs.group_try_lock(tid, c.grp, glim);"
    "      skipped := skipped || c.key;"
    "    END LOOP;"
    "    EXIT WHEN NOT FOUND;"
    "    RETURN QUERY SELECT * FROM queuefs.claim_key(tid, c.key, at_ns, ceiling_n, until, who, inst);"
    "    got := got + 1;"
    "    PERFORM queuefs.group_fix(tid, c.grp, glim, at_ns);"
    "  END LOOP;"
    "END $$;"
    /* The claim of record k of a grouped queue: when it is ready (or parked)
     * and its group has room. */
    "CREATE OR REPLACE FUNCTION queuefs.claim_named(tid int8, k bytea, at_ns int8, ceiling_n int8,"
    "    until int8, who bytea, inst bytea, glim int8)"
    "  " CLAIMED_TABLE " LANGUAGE plpgsql AS $$"
    "DECLARE s int2; w int8; g bytea;"
    "BEGIN"
    "  SELECT state, wake, grp INTO s, w, g FROM queuefs.records"
    "    WHERE table_id = tid AND key = k FOR NO KEY UPDATE;"
    "  IF NOT FOUND THEN RETURN; END IF;"
    "  IF s = 1 AND w <= at_ns THEN"
    "    UPDATE queuefs.records"
    "      SET state = queuefs.place_state(claimed_until, not_before, dead, at_ns),"
    "          wake = queuefs.place_wake(claimed_until, not_before, dead, at_ns)"
    "      WHERE table_id = tid AND key = k RETURNING state INTO s;"
    "  END IF;"
    "  IF (s = 0 OR s = 3) AND (g = '' OR queuefs.group_fix(tid, g, glim, at_ns) < glim) THEN"
    "    RETURN QUERY SELECT * FROM queuefs.claim_key(tid, k, at_ns, ceiling_n, until, who, inst);"
    "  END IF;"
    "  PERFORM queuefs.group_fix(tid, g, glim, at_ns);"
    "END $$;"
    "UPDATE queuefs.version SET version = 4;";

/* Version 5: where a claim of the head starts (pg_stmts.def's
 * CLAIM_HEAD).  A record's "filed_xid" is the transaction that last filed
 * it ready or waiting — that changed its state, its place in claim order
 * or brought its wake earlier — and records_filed finds, of the ready and
 * waiting records, those a transaction a claim's snapshot did not see
 * filed.  A record made before it is of transaction 0, which every
 * snapshot sees.  (The claim functions of a grouped queue, whose claims
 * start at the head, leave it as it is.) */
static const char schema_v5_sql[] =
    "ALTER TABLE queuefs.records ADD COLUMN IF NOT EXISTS filed_xid xid8 NOT NULL DEFAULT '0';"
    "ALTER TABLE queuefs.records ALTER COLUMN filed_xid SET DEFAULT pg_current_xact_id();"
    "CREATE INDEX IF NOT EXISTS records_filed ON queuefs.records (table_id, filed_xid)"
    "  WHERE state IN (0, 1);"
    "UPDATE queuefs.version SET version = 5;";

/* Version 6: AT MOST … EVERY's instants in rows of 64, so that a claim
 * reads and writes O(1) of them whatever the rate (version 2 kept them as
 * one array in the queue's row of queuefs.rates, rewritten, sorted, by
 * every claim).  The queue's hand-outs are numbered in the order they are
 * noted; hand-out j's instant is element j % 64 + 1 of the row (table_id,
 * j / 64) of queuefs.rate_slots.  The queue's row of queuefs.rates is the
 * lock claims take turns on (rate_room) and the head: "handed" (how many
 * were noted), "low" (the lowest chunk kept: every one from it to the
 * newest is there) and "newest" (the newest instant).  Instants ascend
 * with the numbers: a claim whose transaction began before the newest
 * hand-out's but takes the lock after it is noted at that newest instant,
 * so it stays in windows a little longer and never lets more than the rate
 * into one.  The window of rate n is then the hand-outs handed - n …
 * handed - 1, oldest first; one below the kept chunks (or below 0) is as
 * good as long gone, so a rate made larger has room for the difference
 * (as the array, which kept n instants, had), and a rate made smaller
 * looks only at the newest n, the chunks below them deleted a few at a
 * time by the notes that follow.  The upgrade moves each array into
 * chunks, in order. */
static const char schema_v6_sql[] =
    "ALTER TABLE queuefs.rates ADD COLUMN IF NOT EXISTS handed int8 NOT NULL DEFAULT 0,"
    "  ADD COLUMN IF NOT EXISTS low int8 NOT NULL DEFAULT 0,"
    "  ADD COLUMN IF NOT EXISTS newest int8 NOT NULL DEFAULT 0;"
    "CREATE TABLE IF NOT EXISTS queuefs.rate_slots ("
    "  table_id int8 NOT NULL REFERENCES queuefs.rates ON DELETE CASCADE,"
    "  chunk int8 NOT NULL, stamps int8[] NOT NULL, PRIMARY KEY (table_id, chunk))"
    "  WITH (fillfactor = 50);"
    "INSERT INTO queuefs.rate_slots (table_id, chunk, stamps)"
    "  SELECT r.table_id, (u.i - 1) / 64, array_agg(u.s ORDER BY u.i)"
    "  FROM queuefs.rates r, unnest(r.stamps) WITH ORDINALITY u(s, i) GROUP BY 1, 2;"
    "UPDATE queuefs.rates SET handed = cardinality(stamps),"
    "  newest = coalesce(stamps[cardinality(stamps)], 0);"
    "ALTER TABLE queuefs.rates DROP COLUMN stamps;"
    "DROP FUNCTION IF EXISTS queuefs.rate_room(int8, int8, int8);"
    /* Locks the rate row of table tid (made when absent); how many
     * hand-outs the window of rate lim that starts after "since" has room
     * for, but "want" at most. */
    "CREATE OR REPLACE FUNCTION queuefs.rate_room(tid int8, since int8, lim int8, want int8)"
    "  RETURNS int8 LANGUAGE plpgsql AS $$"
    "DECLARE h record; ws int8; j int8; room int8; st int8[]; c int8 := -1;"
    "BEGIN"
    "  SELECT handed, low INTO h FROM queuefs.rates WHERE table_id = tid FOR UPDATE;"
    "  IF NOT FOUND THEN"
    "    INSERT INTO queuefs.rates (table_id) VALUES (tid) ON CONFLICT DO NOTHING;"
    "    SELECT handed, low INTO h FROM queuefs.rates WHERE table_id = tid FOR UPDATE;"
    "  END IF;"
    "  ws := h.handed - lim;"
    "  j := greatest(ws, h.low * 64);"
    "  room := least(j - ws, want);"
    "  WHILE room < want AND j < h.handed LOOP"
    "    IF j / 64 <> c THEN"
    "      c := j / 64;"
    "      SELECT stamps INTO st FROM queuefs.rate_slots WHERE table_id = tid AND chunk = c;"
    "    END IF;"
    "    EXIT WHEN st[j % 64 + 1] IS NULL OR st[j % 64 + 1] > since;"
    "    room := room + 1;"
    "    j := j + 1;"
    "  END LOOP;"
    "  RETURN room;"
    "END $$;"
    /* Notes n hand-outs of table tid at at_ns (rate_room locked its row and
     * found room for them): the chunks they go in written, the head moved
     * on, and the chunks the window of rate lim has passed deleted, two
     * more than it passed at most. */
    "CREATE OR REPLACE FUNCTION queuefs.rate_note(tid int8, lim int8, at_ns int8, n int8)"
    "  RETURNS void LANGUAGE plpgsql AS $$"
    "DECLARE h record; v int8; j int8; e int8; c int8; st int8[]; b int8; lo int8;"
    "BEGIN"
    "  SELECT handed, low, newest INTO h FROM queuefs.rates WHERE table_id = tid FOR UPDATE;"
    "  IF NOT FOUND OR n <= 0 THEN RETURN; END IF;"
    "  v := CASE WHEN h.handed > 0 AND h.newest > at_ns THEN h.newest ELSE at_ns END;"
    "  j := h.handed;"
    "  e := h.handed + n;"
    "  WHILE j < e LOOP"
    "    c := j / 64;"
    "    SELECT stamps INTO st FROM queuefs.rate_slots WHERE table_id = tid AND chunk = c;"
    "    IF FOUND THEN"
    "      st := st[1:j % 64];"
    "      st := st || array_fill(v, ARRAY[(least(64, e - c * 64) - cardinality(st))::int4]);"
    "      UPDATE queuefs.rate_slots SET stamps = st WHERE table_id = tid AND chunk = c;"
    "    ELSE"
    "      st := array_fill(v, ARRAY[least(64, e - c * 64)::int4]);"
    "      INSERT INTO queuefs.rate_slots VALUES (tid, c, st);"
    "    END IF;"
    "    j := c * 64 + cardinality(st);"
    "  END LOOP;"
    "  b := CASE WHEN e - lim > 0 THEN (e - lim) / 64 ELSE 0 END;"
    "  lo := greatest(h.low, least(b, h.low + n / 64 + 2));"
    "  IF lo > h.low THEN"
    "    DELETE FROM queuefs.rate_slots WHERE table_id = tid AND chunk >= h.low AND chunk < lo;"
    "  END IF;"
    "  UPDATE queuefs.rates SET handed = e, low = lo, newest = v WHERE table_id = tid;"
    "END $$;"
    /* The instant of the hand-out whose leaving the window of rate lim
     * (after "since") admits the next one: the oldest of the window, when
     * it is full; NULL when there is room now. */
    "CREATE OR REPLACE FUNCTION queuefs.rate_next(tid int8, since int8, lim int8)"
    "  RETURNS int8 LANGUAGE plpgsql STABLE AS $$"
    "DECLARE h record; ws int8; v int8;"
    "BEGIN"
    "  SELECT handed, low INTO h FROM queuefs.rates WHERE table_id = tid;"
    "  IF NOT FOUND THEN RETURN NULL; END IF;"
    "  ws := h.handed - lim;"
    "  IF ws < h.low * 64 THEN RETURN NULL; END IF;"
    "  SELECT stamps[ws % 64 + 1] INTO v FROM queuefs.rate_slots"
    "    WHERE table_id = tid AND chunk = ws / 64;"
    "  RETURN CASE WHEN v > since THEN v END;"
    "END $$;"
    "UPDATE queuefs.version SET version = 6;";

/* Version 7: records_filed leaves out the records filed to wait for their
 * hold's deadline (state 1, wake = claimed_until), so that a claim, which
 * files its record so, writes two index entries, not three (the primary
 * key's and records_waiting's).  A claim from a position finds such a
 * record by its deadline (CLAIM_FROM's "due_on": at or after the
 * position's instant) — one whose claim committed after its own deadline
 * passed (a transaction held open past TIMEOUT) may so be found lapsed
 * only once a claim starts at the head again (pg_hint.c: PG_HINT_LIFE at
 * most). */
static const char schema_v7_sql[] =
    "DROP INDEX IF EXISTS queuefs.records_filed;"
    "CREATE INDEX records_filed ON queuefs.records (table_id, filed_xid)"
    "  WHERE " PG_FILED_PREDICATE ";"
    "UPDATE queuefs.version SET version = 7;";

/* Runs "sql" (simple protocol); 0, or STORE_IO with the server's message. */
static int
exec_ok(PGconn *conn, const char *sql, char *errbuf, size_t errlen, PGresult **keep)
{
    PGresult *res = PQexec(conn, sql);
    ExecStatusType s = PQresultStatus(res);
    if (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK) {
        if (keep)
            *keep = res;
        else
            PQclear(res);
        return 0;
    }
    const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    int rc = state && !strcmp(state, "42501") ? STORE_READONLY : STORE_IO;
    if (errbuf)
        snprintf(errbuf, errlen, "%s", PQerrorMessage(conn));
    PQclear(res);
    PQexec(conn, "ROLLBACK");
    return rc;
}

/* True in *exists when the schema's version table is there. */
static int
schema_exists(PGconn *conn, bool *exists, char *errbuf, size_t errlen)
{
    PGresult *res = NULL;
    int rc = exec_ok(conn,
                     "SELECT 1 FROM pg_namespace n, pg_class c WHERE n.nspname = 'queuefs'"
                     " AND c.relnamespace = n.oid AND c.relname = 'version'",
                     errbuf, errlen, &res);
    if (!rc) {
        *exists = PQntuples(res) == 1;
        PQclear(res);
    }
    return rc;
}

/* The schema's version into *version. */
static int
schema_version(PGconn *conn, long *version, char *errbuf, size_t errlen)
{
    PGresult *res = NULL;
    int rc = exec_ok(conn, "SELECT max(version) FROM queuefs.version", errbuf, errlen, &res);
    if (!rc) {
        *version = atol(PQgetvalue(res, 0, 0));
        PQclear(res);
    }
    return rc;
}

/* Brings a schema of an earlier version to this one, step by step, in
 * one transaction, unless another process did while this one waited for
 * the lock. */
static int
schema_upgrade(PGconn *conn, char *errbuf, size_t errlen)
{
    long version = 0;
    int rc =
        exec_ok(conn, "BEGIN; SELECT pg_advisory_xact_lock(" SCHEMA_LOCK ")", errbuf, errlen, NULL);
    if (!rc)
        rc = schema_version(conn, &version, errbuf, errlen);
    if (!rc && version == 1)
        rc = exec_ok(conn, schema_v2_sql, errbuf, errlen, NULL);
    if (!rc && version <= 2)
        rc = exec_ok(conn, schema_v3_sql, errbuf, errlen, NULL);
    if (!rc && version <= 3)
        rc = exec_ok(conn, schema_v4_sql, errbuf, errlen, NULL);
    if (!rc && version <= 4)
        rc = exec_ok(conn, schema_v5_sql, errbuf, errlen, NULL);
    if (!rc && version <= 5)
        rc = exec_ok(conn, schema_v6_sql, errbuf, errlen, NULL);
    if (!rc && version <= 6)
        rc = exec_ok(conn, schema_v7_sql, errbuf, errlen, NULL);
    if (!rc)
        rc = exec_ok(conn, "COMMIT", errbuf, errlen, NULL);
    return rc;
}

int
pg_schema_ensure(PGconn *conn, bool read_only, char *errbuf, size_t errlen)
{
    bool exists;
    int rc = schema_exists(conn, &exists, errbuf, errlen);
    if (!rc && !exists && read_only) {
        snprintf(errbuf, errlen, "no schema queuefs in the database yet");
        return STORE_NOTFOUND;
    }
    if (!rc && !exists) {
        rc = exec_ok(conn, "BEGIN; SELECT pg_advisory_xact_lock(" SCHEMA_LOCK ")", errbuf, errlen,
                     NULL);
        /* Another process may have made it while this one waited. */
        if (!rc)
            rc = schema_exists(conn, &exists, errbuf, errlen);
        if (!rc && !exists && !(rc = exec_ok(conn, schema_sql, errbuf, errlen, NULL)) &&
            !(rc = exec_ok(conn, schema_v2_sql, errbuf, errlen, NULL)) &&
            !(rc = exec_ok(conn, schema_v3_sql, errbuf, errlen, NULL)) &&
            !(rc = exec_ok(conn, schema_v4_sql, errbuf, errlen, NULL)) &&
            !(rc = exec_ok(conn, schema_v5_sql, errbuf, errlen, NULL)) &&
            !(rc = exec_ok(conn, schema_v6_sql, errbuf, errlen, NULL)))
            rc = exec_ok(conn, schema_v7_sql, errbuf, errlen, NULL);
        if (!rc)
            rc = exec_ok(conn, "COMMIT", errbuf, errlen, NULL);
    }
    long version = 0;
    if (rc || (rc = schema_version(conn, &version, errbuf, errlen)))
        return rc;
    if (version < PG_SCHEMA_VERSION && !read_only && !(rc = schema_upgrade(conn, errbuf, errlen)))
        rc = schema_version(conn, &version, errbuf, errlen);
    if (rc)
        return rc;
    if (version != PG_SCHEMA_VERSION) {
        snprintf(errbuf, errlen, "schema queuefs is version %ld; this queuefs knows %d", version,
                 PG_SCHEMA_VERSION);
        return STORE_CORRUPT;
    }
    return 0;
}
