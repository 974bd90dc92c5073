#!/usr/bin/env bats
# sql.bats — queuefs-sql, the command-line front end: every example of
# seed 000 (the queue reference) driven through it, the decisions SPEC.md
# sections 1, 3, 4 and 5 add, and the output contract (one compact JSON line
# per statement on stdout; one error line on stderr and exit status 1).
#
#   QUEUEFS_BUILD=/path/to/build bats mnt-tests/sql.bats

# $stderr is set by bats' run --separate-stderr.
# shellcheck disable=SC2154
load helpers

# ---------------------------------------------------------------------------
# The command line and the output contract
# ---------------------------------------------------------------------------

@test "cli: one compact JSON line per statement; DEFINE answers null" {
    run --separate-stderr sql "DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:1 = { url: 'a' }; SELECT * FROM jobs"
    assert_success
    assert_stderr_empty
    assert_equal "${#lines[@]}" 3
    assert_line -n 0 'null'
    assert_line -n 1 '[{"id":"jobs:1","url":"a"}]'
    assert_line -n 2 '[{"id":"jobs:1","url":"a"}]'
}

@test "cli: object keys come out sorted" {
    run sql "DEFINE COLLECTION notes; CREATE notes:1 = { zeta: 1, alpha: { y: 2, b: 3 }, mid: 'm' }"
    assert_success
    assert_line -n 1 '[{"alpha":{"b":3,"y":2},"id":"notes:1","mid":"m","zeta":1}]'
}

@test "cli: several arguments, each with several statements, run in order in one session" {
    run sql "DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:1 = {url:'a'}" \
        "CREATE jobs:2 = {url:'b'}; CLAIM FROM jobs" "CLAIM FROM jobs"
    assert_success
    assert_equal "${#lines[@]}" 5
    assert_equal "$(jqr '.[0].id' "${lines[3]}")" "jobs:1"
    assert_equal "$(jqr '.[0].id' "${lines[4]}")" "jobs:2"
}

@test "cli: with no statement arguments, statements are read from standard input" {
    run bash -c 'printf '\''DEFINE QUEUE jobs TIMEOUT 30s;\nCREATE jobs:1 = {url:"a"};\nSELECT * FROM jobs;\n'\'' | "$QUEUEFS_SQL" "$STORE"'
    assert_success
    assert_equal "${#lines[@]}" 3
    assert_line -n 0 'null'
    assert_line -n 1 '[{"id":"jobs:1","url":"a"}]'
    assert_line -n 2 '[{"id":"jobs:1","url":"a"}]'
}

@test "cli: empty standard input runs nothing and succeeds" {
    run bash -c '"$QUEUEFS_SQL" "$STORE" </dev/null'
    assert_success
    assert_output ''
}

@test "cli: the store persists across invocations" {
    run sql "DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:1 = { url: 'a' }"
    assert_success
    run sql "SELECT url FROM jobs"
    assert_success
    assert_output '[{"url":"a"}]'
}

@test "cli: the first error stops execution; earlier lines print, the error goes to stderr, exit 1" {
    run --separate-stderr sql "DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:1 = {url:'a'}; CREATE jobs:1 = {url:'again'}; CREATE jobs:2 = {url:'b'}"
    assert_error RecordExists
    assert_equal "${#lines[@]}" 2
    assert_line -n 0 'null'
    assert_line -n 1 '[{"id":"jobs:1","url":"a"}]'
    # the statement after the failing one never ran
    run sql "SELECT * FROM jobs"
    assert_output '[{"id":"jobs:1","url":"a"}]'
}

@test "cli: an error in one argument stops the arguments after it" {
    run --separate-stderr sql "DEFINE QUEUE jobs TIMEOUT 30s" "CLAIM FROM nosuch" "CREATE jobs:1 = {url:'a'}"
    assert_error NoSuchTable
    assert_output 'null'
    run sql "SELECT * FROM jobs"
    assert_output '[]'
}

@test "cli: a statement that does not parse is a ParseError" {
    run --separate-stderr sql "DEFINE QUEUE jobs TIMEOUT 30s; FROBNICATE jobs"
    assert_error ParseError
    assert_output 'null'
}

@test "cli: -o sync=none works and its writes are kept" {
    run "$QUEUEFS_SQL" -o sync=none "$STORE" "DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:1 = {url:'a'}"
    assert_success
    assert_line -n 1 '[{"id":"jobs:1","url":"a"}]'
    run sql "SELECT url FROM jobs"
    assert_output '[{"url":"a"}]'
}

# ---------------------------------------------------------------------------
# Declaring one
# ---------------------------------------------------------------------------

@test "seed: DEFINE QUEUE jobs TIMEOUT 30s answers null and INFO reports a queue with that timeout" {
    run sql "DEFINE QUEUE jobs TIMEOUT 30s;" "INFO FOR TABLE jobs"
    assert_success
    assert_line -n 0 'null'
    assert_equal "$(jqr '.kind' "${lines[1]}")" queue
    assert_equal "$(jqr '.name' "${lines[1]}")" jobs
    assert_equal "$(jqr '.timeout' "${lines[1]}")" 30s
    assert_equal "$(jqr '.definition' "${lines[1]}")" "DEFINE QUEUE jobs TIMEOUT 30s"
}

@test "seed: TIMEOUT is required — DEFINE QUEUE without it is a ParseError and defines nothing" {
    run --separate-stderr sql "DEFINE QUEUE jobs;"
    assert_error ParseError
    run --separate-stderr sql "INFO FOR TABLE jobs"
    assert_error NoSuchTable
}

@test "seed: DEFINE QUEUE jobs ATTEMPTS 3 (no TIMEOUT) is a ParseError" {
    run --separate-stderr sql "DEFINE QUEUE jobs ATTEMPTS 3"
    assert_error ParseError
}

@test "define: DEFINE QUEUE of a name already taken is TableExists; IF NOT EXISTS answers null" {
    run sql "DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:1 = {url:'a'}"
    assert_success
    run --separate-stderr sql "DEFINE QUEUE jobs TIMEOUT 1m"
    assert_error TableExists
    run --separate-stderr sql "DEFINE COLLECTION jobs"
    assert_error TableExists
    run sql "DEFINE QUEUE IF NOT EXISTS jobs TIMEOUT 1m"
    assert_success
    assert_output 'null'
    # neither changed the table nor its records
    run sql "INFO FOR TABLE jobs" "SELECT url FROM jobs"
    assert_equal "$(jqr '.timeout' "${lines[0]}")" 30s
    assert_line -n 1 '[{"url":"a"}]'
}

@test "define: DEFINE QUEUE IF NOT EXISTS of a collection's name is WrongKind, and the other way round" {
    sql "DEFINE COLLECTION payroll; CREATE payroll:1 = {n: 1}; DEFINE QUEUE jobs TIMEOUT 30s" >/dev/null
    run --separate-stderr sql "DEFINE QUEUE IF NOT EXISTS payroll TIMEOUT 1m"
    assert_error WrongKind
    run --separate-stderr sql "DEFINE COLLECTION IF NOT EXISTS jobs"
    assert_error WrongKind
    run --separate-stderr sql "DEFINE TABLE IF NOT EXISTS jobs"
    assert_error WrongKind
    # The same kind is still an answer, and neither table changed.
    run sql "DEFINE QUEUE IF NOT EXISTS jobs TIMEOUT 1m; DEFINE COLLECTION IF NOT EXISTS payroll"
    assert_success
    run sql "INFO FOR TABLE payroll" "INFO FOR TABLE jobs" "SELECT * FROM payroll"
    assert_equal "$(jqr '.kind' "${lines[0]}")" collection
    assert_equal "$(jqr '.kind + " " + .timeout' "${lines[1]}")" "queue 30s"
    assert_line -n 2 '[{"id":"payroll:1","n":1}]'
}

@test "seed: on a collection, attempts and claimed_until are ordinary fields" {
    run --separate-stderr sql "DEFINE COLLECTION notes;
CREATE notes:2 = { attempts: 3, claimed_until: 'whenever' };"
    assert_success
    assert_line -n 0 'null'
    assert_line -n 1 '[{"attempts":3,"claimed_until":"whenever","id":"notes:2"}]'
    run sql "UPDATE notes:2 MERGE { attempts: 9, claimed_by: 'me' }"
    assert_success
    assert_output '[{"attempts":9,"claimed_by":"me","claimed_until":"whenever","id":"notes:2"}]'
}

@test "seed: CREATE jobs:9 with claimed_until on a queue is QueueFieldIsTheEngines and writes nothing" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s" >/dev/null
    run --separate-stderr sql "CREATE jobs:9 = { url: 'd', claimed_until: 1 };"
    assert_error QueueFieldIsTheEngines
    run sql "SELECT * FROM jobs"
    assert_output '[]'
}

@test "engine fields: CREATE with attempts or claimed_by on a queue is refused too" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s" >/dev/null
    run --separate-stderr sql "CREATE jobs:1 = { url: 'a', attempts: 0 }"
    assert_error QueueFieldIsTheEngines
    run --separate-stderr sql "CREATE jobs = { url: 'a', claimed_by: { consumer: 'x', instance: 'y' } }"
    assert_error QueueFieldIsTheEngines
    run sql "SELECT * FROM jobs"
    assert_output '[]'
}

@test "engine fields: UPDATE … MERGE {attempts: 9} on a queue is refused and changes nothing" {
    seed_jobs
    run sql "CLAIM FROM jobs"
    assert_success
    run --separate-stderr sql "UPDATE jobs:1 MERGE { attempts: 9 }"
    assert_error QueueFieldIsTheEngines
    run --separate-stderr sql "UPDATE jobs:2 MERGE { claimed_until: d'2200-01-01T00:00:00Z' }"
    assert_error QueueFieldIsTheEngines
    run sql "SELECT attempts, url FROM jobs:1" "SELECT * FROM jobs:2"
    assert_line -n 0 '[{"attempts":1,"url":"a"}]'
    assert_line -n 1 '[{"id":"jobs:2","url":"b"}]'
}

@test "engine fields: a whole-record UPDATE that changes attempts is refused" {
    seed_jobs
    sql "CLAIM FROM jobs" >/dev/null
    run --separate-stderr sql "UPDATE jobs:1 = { url: 'b', attempts: 7 }"
    assert_error QueueFieldIsTheEngines
    run sql "SELECT attempts, url FROM jobs:1"
    assert_output '[{"attempts":1,"url":"a"}]'
}

@test "seed: a whole-record UPDATE jobs:7 = { url: 'b' } keeps attempts, claimed_until and the live hold" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:7 = { url: 'a', extra: 1 }; CREATE jobs:8 = { url: 'c' }" >/dev/null
    run sql "CLAIM FROM jobs"
    assert_equal "$(jqr '.[0].id' "$output")" jobs:7
    local until
    until=$(jqr '.[0].claimed_until' "$output")
    run --separate-stderr sql "UPDATE jobs:7 = { url: 'b' }"
    assert_success
    assert_equal "$(jqr '.[0] | keys | join(",")' "$output")" "attempts,claimed_until,hold,id,url"
    assert_equal "$(jqr '.[0] | [.url, .attempts, .claimed_until, .hold] | join(" ")' "$output")" "b 1 $until 1"
    # the hold is still live: the next claim passes over jobs:7
    run sql "CLAIM FROM jobs"
    assert_equal "$(jqr '.[0].id' "$output")" jobs:8
    run sql "SELECT * FROM jobs:7"
    assert_equal "$(jqr '.[0] | [.attempts, .claimed_until, .url] | join(" ")' "$output")" "1 $until b"
}

@test "engine fields: a whole-record UPDATE carries claimed_by forward, so the holder can still RELEASE" {
    seed_jobs
    run sql "USE CONSUMER 'billing'; CLAIM FROM jobs; UPDATE jobs:1 = { url: 'z' }; RELEASE jobs:1"
    assert_success
    assert_equal "$(jqr '.[0].claimed_by.consumer' "${lines[2]}")" billing
    assert_equal "$(jqr '.[0].claimed_by.instance' "${lines[2]}")" "$(jqr '.[0].claimed_by.instance' "${lines[1]}")"
    assert_line -n 3 '[{"attempts":1,"id":"jobs:1","url":"z"}]'
}

@test "engine fields: a whole-record write repeating their current values is accepted" {
    seed_jobs
    run sql "CLAIM FROM jobs"
    local until
    until=$(jqr '.[0].claimed_until' "$output")
    run --separate-stderr sql "UPDATE jobs:1 = { url: 'b', attempts: 1, claimed_until: d'$until' }"
    assert_success
    assert_equal "$(jqr '.[0] | [.attempts, .claimed_until, .url] | join(" ")' "$output")" "1 $until b"
}

@test "engine fields: a write may not remove them — clearing claimed_until is refused, the hold stays" {
    seed_jobs
    sql "CLAIM FROM jobs" >/dev/null
    run --separate-stderr sql "UPDATE jobs:1 MERGE { claimed_until: null }"
    assert_error QueueFieldIsTheEngines
    # NONE in a MERGE removes nothing here: whether refused or a no-op, the fields stay
    run sql "UPDATE jobs:1 MERGE { attempts: NONE }"
    run sql "SELECT attempts FROM jobs:1 WHERE claimed_until > time::now()" "CLAIM jobs:1"
    assert_line -n 0 '[{"attempts":1}]'
    assert_line -n 1 '[]'
}

@test "engine fields: a write may not introduce attempts on a record never claimed" {
    seed_jobs
    run --separate-stderr sql "UPDATE jobs:2 = { url: 'b', attempts: 0 }"
    assert_error QueueFieldIsTheEngines
}

@test "engine fields: hold may not be introduced, changed or removed by CREATE or UPDATE; repeating it is accepted" {
    seed_jobs
    run --separate-stderr sql "CREATE jobs:9 = { url: 'd', hold: 1 }"
    assert_error QueueFieldIsTheEngines
    run --separate-stderr sql "UPDATE jobs:2 MERGE { hold: 1 }"
    assert_error QueueFieldIsTheEngines
    sql "CLAIM jobs:1" >/dev/null
    run --separate-stderr sql "UPDATE jobs:1 MERGE { hold: 2 }"
    assert_error QueueFieldIsTheEngines
    run --separate-stderr sql "UPDATE jobs:1 = { url: 'a', hold: 7 }"
    assert_error QueueFieldIsTheEngines
    run --separate-stderr sql "UPDATE jobs:1 MERGE { hold: null }"
    assert_error QueueFieldIsTheEngines
    run --separate-stderr sql "UPDATE jobs:1 = { url: 'z', hold: 1 }"
    assert_success
    run sql "SELECT hold, url FROM jobs ORDER BY id"
    assert_output '[{"hold":1,"url":"z"},{"url":"b"},{"url":"c"}]'
}

@test "hold: every claim numbers its hold anew, CLAIM n included, across queues; RELEASE and RELEASE ALL take the number away" {
    seed_jobs
    sql "DEFINE QUEUE other TIMEOUT 30s; CREATE other:1 = {};" >/dev/null
    run sql "CLAIM 2 FROM jobs" "CLAIM other:1" "CLAIM FROM jobs" \
        "SELECT id, hold FROM jobs ORDER BY id" "RELEASE jobs:1" "RELEASE ALL FROM jobs" \
        "SELECT id, hold FROM jobs ORDER BY id"
    assert_success
    assert_equal "$(jqc 'map([.id, .hold])' "${lines[0]}")" '[["jobs:1",1],["jobs:2",2]]'
    assert_equal "$(jqc 'map([.id, .hold])' "${lines[1]}")" '[["other:1",3]]'
    assert_equal "$(jqc 'map([.id, .hold])' "${lines[2]}")" '[["jobs:3",4]]'
    assert_equal "${lines[3]}" '[{"hold":1,"id":"jobs:1"},{"hold":2,"id":"jobs:2"},{"hold":4,"id":"jobs:3"}]'
    assert_equal "$(jqc 'map(has("hold"))' "${lines[4]}")" '[false]'
    assert_equal "$(jqc 'map([.id, has("hold")])' "${lines[5]}")" '[["jobs:2",false],["jobs:3",false]]'
    assert_equal "${lines[6]}" '[{"id":"jobs:1"},{"id":"jobs:2"},{"id":"jobs:3"}]'
    # A record finished and created again is held under a new number.
    run sql "DELETE jobs:2; CREATE jobs:2 = {}; CLAIM jobs:2"
    assert_equal "$(jqc 'map([.id, .attempts, .hold])' "${lines[2]}")" '[["jobs:2",1,5]]'
}

# ---------------------------------------------------------------------------
# Putting work in, and taking it out
# ---------------------------------------------------------------------------

@test "seed: CREATE jobs:1..3 answer each record" {
    run --separate-stderr sql "DEFINE QUEUE jobs TIMEOUT 30s;
CREATE jobs:1 = { url: 'a' };
CREATE jobs:2 = { url: 'b' };
CREATE jobs:3 = { url: 'c' };"
    assert_success
    assert_equal "${#lines[@]}" 4
    assert_line -n 1 '[{"id":"jobs:1","url":"a"}]'
    assert_line -n 2 '[{"id":"jobs:2","url":"b"}]'
    assert_line -n 3 '[{"id":"jobs:3","url":"c"}]'
}

@test "seed: CLAIM FROM jobs takes the head and holds it (attempts 1, claimed_until = now + TIMEOUT)" {
    seed_jobs
    local before after
    before=$(date +%s)
    run --separate-stderr sql "CLAIM FROM jobs;"
    after=$(date +%s)
    assert_success
    assert_equal "$(jqr 'length' "$output")" 1
    assert_equal "$(jqr '.[0] | keys | join(",")' "$output")" "attempts,claimed_until,hold,id,url"
    assert_equal "$(jqr '.[0] | [.id, .url, .attempts, .hold] | join(" ")' "$output")" "jobs:1 a 1 1"
    local until
    until=$(epoch_of "$(jqr '.[0].claimed_until' "$output")")
    [ "$until" -ge $((before + 29)) ] && [ "$until" -le $((after + 31)) ] ||
        fail "claimed_until $until is not 30s after the claim ($before..$after)"
    [[ "$(jqr '.[0].claimed_until' "$output")" == *Z ]] || fail "claimed_until is not UTC: $output"
}

@test "seed: the hold is written onto the record (SELECT shows it)" {
    seed_jobs
    sql "CLAIM FROM jobs" >/dev/null
    run sql "SELECT * FROM jobs:1"
    assert_equal "$(jqr '.[0].attempts' "$output")" 1
    assert_equal "$(jqr '.[0].claimed_until | type' "$output")" string
    run sql "SELECT * FROM jobs:2"
    assert_output '[{"id":"jobs:2","url":"b"}]'
}

@test "seed: the next CLAIM FROM passes over what the first claim holds" {
    seed_jobs
    run sql "CLAIM FROM jobs;" "CLAIM FROM jobs;"
    assert_success
    assert_equal "$(jqr '.[0].id' "${lines[0]}")" jobs:1
    assert_equal "$(jqr '.[0].id' "${lines[1]}")" jobs:2
    # and across processes too
    run sql "CLAIM FROM jobs;"
    assert_equal "$(jqr '.[0].id' "$output")" jobs:3
}

@test "seed: CLAIM FROM answers no records and no error once everything is held" {
    seed_jobs
    run sql "CLAIM FROM jobs; CLAIM FROM jobs; CLAIM FROM jobs"
    assert_success
    run --separate-stderr sql "CLAIM FROM jobs;   -- rows 0, once everything is held"
    assert_success
    assert_stderr_empty
    assert_output '[]'
}

@test "claim: CLAIM FROM an empty queue answers [] with exit 0" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s" >/dev/null
    run --separate-stderr sql "CLAIM FROM jobs"
    assert_success
    assert_stderr_empty
    assert_output '[]'
}

@test "seed: CLAIM 5 FROM jobs answers at most 5 distinct records" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s" >/dev/null
    for i in 1 2 3 4 5 6 7; do sql "CREATE jobs:$i = { n: $i }" >/dev/null; done
    run sql "CLAIM 5 FROM jobs;"
    assert_success
    assert_equal "$(jqr '[.[].id] | join(" ")' "$output")" "jobs:1 jobs:2 jobs:3 jobs:4 jobs:5"
    assert_equal "$(jqr '[.[].attempts] | unique | join(" ")' "$output")" "1"
    run sql "CLAIM 5 FROM jobs;"
    assert_equal "$(jqr '[.[].id] | join(" ")' "$output")" "jobs:6 jobs:7"
}

@test "seed: CLAIM 5 on a queue of 3 answers the 3" {
    seed_jobs
    run sql "CLAIM 5 FROM jobs"
    assert_success
    assert_equal "$(jqr '[.[].id] | join(" ")' "$output")" "jobs:1 jobs:2 jobs:3"
}

@test "seed: CLAIM 1000 is within the ceiling" {
    seed_jobs
    run --separate-stderr sql "CLAIM 1000 FROM jobs"
    assert_success
    assert_equal "$(jqr 'length' "$output")" 3
}

@test "seed: CLAIM 1001 is ClaimAboveCeiling and claims nothing" {
    seed_jobs
    run --separate-stderr sql "CLAIM 1001 FROM jobs"
    assert_error ClaimAboveCeiling
    assert_output ''
    run sql "CLAIM 3 FROM jobs"
    assert_equal "$(jqr 'length' "$output")" 3
}

@test "seed: CLAIM 0 is a ParseError" {
    seed_jobs
    run --separate-stderr sql "CLAIM 0 FROM jobs"
    assert_error ParseError
    run sql "SELECT * FROM jobs WHERE attempts >= 1"
    assert_output '[]'
}

@test "order: CLAIM FROM hands out integers ascending, then strings" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s" >/dev/null
    run sql "CREATE jobs:'b' = {}; CREATE jobs:10 = {}; CREATE jobs:2 = {}; CREATE jobs:'a' = {}; CREATE jobs:1 = {}"
    assert_success
    run sql "CLAIM FROM jobs" "CLAIM FROM jobs" "CLAIM FROM jobs" "CLAIM FROM jobs" "CLAIM FROM jobs" "CLAIM FROM jobs"
    assert_success
    assert_equal "$(printf '%s\n' "${lines[@]}" | jq -r '.[].id' | paste -sd' ')" "jobs:1 jobs:2 jobs:10 jobs:a jobs:b"
    assert_line -n 5 '[]'
}

@test "identity: CREATE without an id is 1 + the greatest integer identity ever held" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s" >/dev/null
    run sql "CREATE jobs = {n: 1}; CREATE jobs = {n: 2}"
    assert_line -n 0 '[{"id":"jobs:1","n":1}]'
    assert_line -n 1 '[{"id":"jobs:2","n":2}]'
    run sql "CREATE jobs:10 = {}; CREATE jobs = {}"
    assert_line -n 1 '[{"id":"jobs:11"}]'
    run sql "DELETE jobs:11; CREATE jobs = {}"
    assert_success
    assert_line -n 1 '[{"id":"jobs:12"}]'
}

@test "identity: at the largest integer a store-assigned CREATE is IdentitiesExhausted and replaces nothing" {
    sql "DEFINE COLLECTION ov; CREATE ov:9223372036854775806 = {n: 1}" >/dev/null
    run sql "CREATE ov = {n: 2}"
    assert_success
    assert_output '[{"id":"ov:9223372036854775807","n":2}]'
    run --separate-stderr sql "CREATE ov = {n: 3}"
    assert_error IdentitiesExhausted
    # A batch that would pass the top is refused whole.
    run --separate-stderr sql "BEGIN; CREATE ov:5 = {n: 5}; CREATE ov = {n: 4}; COMMIT;"
    assert_error IdentitiesExhausted
    # Named identities still work; the store still assigns none.
    run sql "CREATE ov:3 = {n: 6}"
    assert_success
    run --separate-stderr sql "CREATE ov = {n: 7}"
    assert_error IdentitiesExhausted
    assert_equal "$(sql 'SELECT id, n FROM ov ORDER BY n' | jq -c '[.[] | [.id, .n]]')" \
        '[["ov:9223372036854775806",1],["ov:9223372036854775807",2],["ov:3",6]]'
}

@test "identity: after a named CREATE of the largest integer the store assigns none, even once it is deleted" {
    sql "DEFINE QUEUE top TIMEOUT 30s; CREATE top:9223372036854775807 = {n: 1}" >/dev/null
    run --separate-stderr sql "CREATE top = {n: 2}"
    assert_error IdentitiesExhausted
    sql "DELETE top:9223372036854775807" >/dev/null
    run --separate-stderr sql "CREATE top = {n: 3}"
    assert_error IdentitiesExhausted
    assert_equal "$(sql 'SELECT * FROM top')" '[]'
}

@test "identity: store-assigned identities follow arrival order, so CLAIM FROM does too" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s" >/dev/null
    sql "CREATE jobs = {url:'first'}" >/dev/null
    sql "CREATE jobs = {url:'second'}" >/dev/null
    sql "CREATE jobs = {url:'third'}" >/dev/null
    run sql "CLAIM 3 FROM jobs"
    assert_equal "$(jqr '[.[].url] | join(" ")' "$output")" "first second third"
}

# ---------------------------------------------------------------------------
# Handing a record back
# ---------------------------------------------------------------------------

@test "seed: RELEASE jobs:1 ends the hold at once; the record is claimable again (attempts 2)" {
    seed_jobs
    sql "CLAIM FROM jobs" >/dev/null
    run --separate-stderr sql "RELEASE jobs:1;"
    assert_success
    assert_output '[{"attempts":1,"id":"jobs:1","url":"a"}]'
    run sql "CLAIM FROM jobs"
    assert_equal "$(jqr '.[0] | [.id, .attempts] | join(" ")' "$output")" "jobs:1 2"
}

@test "release: RELEASE of a record nobody holds answers []" {
    seed_jobs
    run --separate-stderr sql "RELEASE jobs:2"
    assert_success
    assert_output '[]'
}

@test "release: RELEASE of a missing record is NoSuchRecord" {
    seed_jobs
    run --separate-stderr sql "RELEASE jobs:99"
    assert_error NoSuchRecord
}

@test "release: RELEASE on a missing table is NoSuchTable; on a collection WrongKind" {
    run --separate-stderr sql "RELEASE nosuch:1"
    assert_error NoSuchTable
    sql "DEFINE COLLECTION notes; CREATE notes:1 = {}" >/dev/null
    run --separate-stderr sql "RELEASE notes:1"
    assert_error WrongKind
}

@test "seed: the later example — RELEASE … NOT BEFORE 10m sets due and the next claim answers no records" {
    local before after
    before=$(date +%s)
    run --separate-stderr sql "DEFINE QUEUE later TIMEOUT 30s NOT BEFORE due;
CREATE later:1 = { job: 'resize' };
CLAIM FROM later;
RELEASE later:1 NOT BEFORE 10m;
CLAIM FROM later;"
    after=$(date +%s)
    assert_success
    assert_equal "${#lines[@]}" 5
    assert_line -n 0 'null'
    assert_line -n 1 '[{"id":"later:1","job":"resize"}]'
    assert_equal "$(jqr '.[0] | [.id, .attempts] | join(" ")' "${lines[2]}")" "later:1 1"
    assert_equal "$(jqr '.[0] | has("claimed_until")' "${lines[3]}")" false
    assert_equal "$(jqr '.[0].attempts' "${lines[3]}")" 1
    local due
    due=$(epoch_of "$(jqr '.[0].due' "${lines[3]}")")
    [ "$due" -ge $((before + 599)) ] && [ "$due" -le $((after + 601)) ] ||
        fail "due $due is not 10 minutes after the release ($before..$after)"
    assert_line -n 4 '[]'
    # still delayed for the next session
    run sql "CLAIM FROM later"
    assert_output '[]'
}

@test "release: RELEASE … NOT BEFORE a datetime in the past makes the record claimable at once" {
    run sql "DEFINE QUEUE later TIMEOUT 30s NOT BEFORE due; CREATE later:1 = { job: 'resize' }; CLAIM FROM later"
    assert_success
    run --separate-stderr sql "RELEASE later:1 NOT BEFORE d'2000-01-01T00:00:00Z'"
    assert_success
    assert_equal "$(jqr '.[0].due' "$output")" "2000-01-01T00:00:00Z"
    run sql "CLAIM FROM later"
    assert_equal "$(jqr '.[0] | [.id, .attempts] | join(" ")' "$output")" "later:1 2"
}

@test "release: RELEASE … NOT BEFORE a future datetime delays until then" {
    run sql "DEFINE QUEUE later TIMEOUT 30s NOT BEFORE due; CREATE later:1 = {}; CLAIM FROM later"
    run sql "RELEASE later:1 NOT BEFORE d'2200-01-01T00:00:00Z'; CLAIM FROM later"
    assert_success
    assert_equal "$(jqr '.[0].due' "${lines[0]}")" "2200-01-01T00:00:00Z"
    assert_line -n 1 '[]'
}

@test "release: NOT BEFORE on a queue that declares none is NoDelayField and the hold stays" {
    seed_jobs
    sql "CLAIM FROM jobs" >/dev/null
    run --separate-stderr sql "RELEASE jobs:1 NOT BEFORE 10m"
    assert_error NoDelayField
    run sql "SELECT attempts, url FROM jobs:1 WHERE claimed_until > time::now()"
    assert_output '[{"attempts":1,"url":"a"}]'
    run --separate-stderr sql "RELEASE ALL FROM jobs NOT BEFORE 10m"
    assert_error NoDelayField
}

@test "release: NOT BEFORE with a value that is neither datetime nor duration is a TypeError" {
    run sql "DEFINE QUEUE later TIMEOUT 30s NOT BEFORE due; CREATE later:1 = {}; CLAIM FROM later"
    run --separate-stderr sql "RELEASE later:1 NOT BEFORE 'tomorrow'"
    assert_error TypeError
}

@test "seed: RELEASE ALL FROM later NOT BEFORE 10m delays every hold of the session" {
    run sql "DEFINE QUEUE later TIMEOUT 30s NOT BEFORE due; CREATE later:1 = {}; CREATE later:2 = {}; CREATE later:3 = {}"
    run --separate-stderr sql "CLAIM 2 FROM later; RELEASE ALL FROM later NOT BEFORE 10m; CLAIM FROM later; CLAIM FROM later"
    assert_success
    assert_equal "$(jqr '[.[].id] | sort | join(" ")' "${lines[1]}")" "later:1 later:2"
    assert_equal "$(jqr '[.[] | has("claimed_until")] | unique | join(" ")' "${lines[1]}")" false
    assert_equal "$(jqr '[.[] | .due | type] | unique | join(" ")' "${lines[1]}")" string
    assert_equal "$(jqr '.[0].id' "${lines[2]}")" later:3
    assert_line -n 3 '[]'
}

# ---------------------------------------------------------------------------
# The hold that lapses
# ---------------------------------------------------------------------------

@test "seed: TIMEOUT 1ns — the same record is handed out twice in a row" {
    run --separate-stderr sql "DEFINE QUEUE fast TIMEOUT 1ns ATTEMPTS 2; CREATE fast:1 = { url: 'a' }; CREATE fast:2 = { url: 'b' }; CLAIM FROM fast; CLAIM FROM fast"
    assert_success
    assert_equal "$(jqr '.[0] | [.id, .attempts] | join(" ")' "${lines[3]}")" "fast:1 1"
    assert_equal "$(jqr '.[0] | [.id, .attempts] | join(" ")' "${lines[4]}")" "fast:1 2"
}

@test "lapse: a hold whose deadline passed is handed out by another process" {
    run sql "DEFINE QUEUE fast TIMEOUT 1ns; CREATE fast:1 = { url: 'a' }; CLAIM FROM fast"
    assert_success
    run sql "CLAIM FROM fast"
    assert_equal "$(jqr '.[0] | [.id, .attempts] | join(" ")' "$output")" "fast:1 2"
}

@test "lapse: a 1s hold lapses on its own after 1s, with nothing running" {
    run sql "DEFINE QUEUE slow TIMEOUT 1s; CREATE slow:1 = {}; CLAIM FROM slow; CLAIM FROM slow"
    assert_success
    assert_line -n 3 '[]'
    sleep 1.1
    run sql "CLAIM FROM slow"
    assert_equal "$(jqr '.[0] | [.id, .attempts] | join(" ")' "$output")" "slow:1 2"
}

@test "lapse: RELEASE of a signed hold that has lapsed answers [] — nobody holds it any more" {
    run sql "DEFINE QUEUE fast TIMEOUT 1ns; CREATE fast:1 = {}; USE CONSUMER 'billing'; CLAIM FROM fast"
    run --separate-stderr sql "RELEASE fast:1"
    assert_success
    assert_output '[]'
}

# ---------------------------------------------------------------------------
# The attempt ceiling, and the dead letter that is a predicate
# ---------------------------------------------------------------------------

@test "seed: ATTEMPTS — after the ceiling a record is not handed out and the claim moves on" {
    run sql "DEFINE QUEUE fast TIMEOUT 1ns ATTEMPTS 2; CREATE fast:1 = { url: 'a' }; CREATE fast:2 = { url: 'b' }"
    run sql "CLAIM FROM fast; CLAIM FROM fast; CLAIM FROM fast; CLAIM FROM fast; CLAIM FROM fast"
    assert_success
    assert_equal "$(printf '%s\n' "${lines[@]}" | jq -r '.[] | "\(.id)/\(.attempts)"' | paste -sd' ')" \
        "fast:1/1 fast:1/2 fast:2/1 fast:2/2"
    assert_line -n 4 '[]'
}

@test "seed: retries TIMEOUT 30s ATTEMPTS 5 — every hand-out counts, released or not" {
    run sql "DEFINE QUEUE retries TIMEOUT 30s ATTEMPTS 5; CREATE retries:1 = {url:'a'}; CREATE retries:2 = {url:'b'}"
    assert_success
    run sql "CLAIM FROM retries; RELEASE retries:1; CLAIM FROM retries; RELEASE retries:1; CLAIM FROM retries; RELEASE retries:1; CLAIM FROM retries; RELEASE retries:1; CLAIM FROM retries; RELEASE retries:1; CLAIM FROM retries"
    assert_success
    assert_equal "$(jqr '.[0] | [.id, .attempts] | join(" ")' "${lines[8]}")" "retries:1 5"
    assert_equal "$(jqr '.[0] | [.id, .attempts] | join(" ")' "${lines[10]}")" "retries:2 1"
    # and the record at the ceiling is never handed out again
    run sql "RELEASE retries:2; CLAIM 10 FROM retries"
    assert_equal "$(jqr '[.[].id] | join(" ")' "${lines[1]}")" "retries:2"
}

@test "seed: the dead letter is a predicate — SELECT url FROM fast WHERE attempts >= 2" {
    run sql "DEFINE QUEUE fast TIMEOUT 1ns ATTEMPTS 2; CREATE fast:1 = { url: 'a' }; CREATE fast:2 = { url: 'b' }; CLAIM FROM fast; CLAIM FROM fast"
    assert_success
    run --separate-stderr sql "SELECT url FROM fast WHERE attempts >= 2;"
    assert_success
    assert_output '[{"url":"a"}]'
    # the record was not moved anywhere: it is still in the table
    run sql "SELECT url FROM fast"
    assert_output '[{"url":"a"},{"url":"b"}]'
}

@test "attempts: a targeted CLAIM of a record at the ceiling answers []" {
    run sql "DEFINE QUEUE fast TIMEOUT 1ns ATTEMPTS 1; CREATE fast:1 = {}; CLAIM FROM fast"
    run --separate-stderr sql "CLAIM fast:1"
    assert_success
    assert_output '[]'
}

@test "attempts: without ATTEMPTS the record is handed out without limit" {
    sql "DEFINE QUEUE fast TIMEOUT 1ns; CREATE fast:1 = {}" >/dev/null
    local i
    for i in 1 2 3 4 5 6 7 8; do sql "CLAIM FROM fast" >/dev/null; done
    run sql "CLAIM FROM fast"
    assert_equal "$(jqr '.[0] | [.id, .attempts] | join(" ")' "$output")" "fast:1 9"
    run sql "INFO FOR TABLE fast"
    assert_equal "$(jqr '.attempts' "$output")" null
}

# ---------------------------------------------------------------------------
# The order work is handed out in
# ---------------------------------------------------------------------------

@test "seed: PRIORITY BY severity hands out the severity 9 alert first, though it arrived later" {
    run --separate-stderr sql "DEFINE QUEUE alerts TIMEOUT 1m PRIORITY BY severity;
DEFINE INDEX by_severity ON alerts FIELDS severity;
DEFINE QUEUE mail TIMEOUT 5m ATTEMPTS 3 NOT BEFORE send_at;

CREATE alerts = { severity: 2, text: 'disk at 80%' };
CREATE alerts = { severity: 9, text: 'disk full' };
CREATE mail = { to: 'ada@example.test', send_at: time::from_unix(time::unix(time::now()) + 600) };

CLAIM FROM alerts;
CLAIM FROM mail;"
    assert_success
    assert_equal "${#lines[@]}" 8
    assert_line -n 0 'null'
    assert_line -n 1 'null'
    assert_line -n 2 'null'
    assert_line -n 3 '[{"id":"alerts:1","severity":2,"text":"disk at 80%"}]'
    assert_line -n 4 '[{"id":"alerts:2","severity":9,"text":"disk full"}]'
    assert_equal "$(jqr '.[0].id' "${lines[5]}")" mail:1
    local send_at now
    now=$(date +%s)
    send_at=$(epoch_of "$(jqr '.[0].send_at' "${lines[5]}")")
    assert_near "$send_at" $((now + 600)) 5
    assert_equal "$(jqr '.[0] | [.id, .severity, .attempts] | join(" ")' "${lines[6]}")" "alerts:2 9 1"
    # NOT BEFORE send_at: the mail is held back ten minutes
    assert_line -n 7 '[]'
    run sql "CLAIM FROM alerts"
    assert_equal "$(jqr '.[0] | [.id, .severity] | join(" ")' "$output")" "alerts:1 2"
}

@test "priority: records sharing a value go in arrival order; records without the field go last" {
    sql "DEFINE QUEUE alerts TIMEOUT 1m PRIORITY BY severity" >/dev/null
    run sql "CREATE alerts = { text: 'none' }; CREATE alerts = { severity: 5, text: 'five-a' }; CREATE alerts = { severity: 1, text: 'one' }; CREATE alerts = { severity: 5, text: 'five-b' }; CREATE alerts = { severity: 7, text: 'seven' }; CREATE alerts = { severity: 5, text: 'five-c' }"
    assert_success
    run sql "CLAIM FROM alerts" "CLAIM FROM alerts" "CLAIM FROM alerts" "CLAIM FROM alerts" "CLAIM FROM alerts" "CLAIM FROM alerts" "CLAIM FROM alerts"
    assert_success
    assert_equal "$(printf '%s\n' "${lines[@]}" | jq -r '.[].text' | paste -sd' ')" "seven five-a five-b five-c one none"
    assert_line -n 6 '[]'
}

@test "priority: CLAIM n FROM takes the greatest n in priority order" {
    sql "DEFINE QUEUE alerts TIMEOUT 1m PRIORITY BY severity; DEFINE INDEX by_severity ON alerts FIELDS severity" >/dev/null
    sql "CREATE alerts = { severity: 1 }; CREATE alerts = { severity: 3 }; CREATE alerts = { severity: 2 }; CREATE alerts = { severity: 4 }" >/dev/null
    run sql "CLAIM 3 FROM alerts"
    assert_equal "$(jqr '[.[].severity] | join(" ")' "$output")" "4 3 2"
}

@test "priority: the index changes the plan, never which records a claim takes" {
    local q order_idx order_scan
    for q in with without; do
        sql "DEFINE QUEUE $q TIMEOUT 1m PRIORITY BY severity" >/dev/null
        sql "CREATE $q = { severity: 2, n: 1 }; CREATE $q = { n: 2 }; CREATE $q = { severity: 9, n: 3 }; CREATE $q = { severity: 2, n: 4 }; CREATE $q = { severity: -1, n: 5 }" >/dev/null
    done
    sql "DEFINE INDEX by_severity ON with FIELDS severity" >/dev/null
    run sql "CLAIM 5 FROM with"
    order_idx=$(jqr '[.[].n] | join(" ")' "$output")
    run sql "CLAIM 5 FROM without"
    order_scan=$(jqr '[.[].n] | join(" ")' "$output")
    assert_equal "$order_idx" "3 1 4 5 2"
    assert_equal "$order_scan" "3 1 4 5 2"
}

@test "priority: a release puts a record back in its priority place" {
    sql "DEFINE QUEUE alerts TIMEOUT 1m PRIORITY BY severity" >/dev/null
    sql "CREATE alerts:1 = { severity: 1 }; CREATE alerts:2 = { severity: 9 }" >/dev/null
    run sql "CLAIM FROM alerts; RELEASE alerts:2; CLAIM FROM alerts"
    assert_equal "$(jqr '.[0] | [.id, .attempts] | join(" ")' "${lines[2]}")" "alerts:2 2"
}

@test "seed: CLAIM … EXPLAIN reports ordered by the PRIORITY BY field's index, and claims nothing" {
    sql "DEFINE QUEUE alerts TIMEOUT 1m PRIORITY BY severity; DEFINE INDEX by_severity ON alerts FIELDS severity; CREATE alerts = { severity: 2 }" >/dev/null
    run --separate-stderr sql "CLAIM FROM alerts EXPLAIN"
    assert_success
    assert_output '[{"index":"by_severity","plan":"ordered"}]'
    run sql "SELECT * FROM alerts"
    assert_output '[{"id":"alerts:1","severity":2}]'
}

@test "explain: a PRIORITY BY queue without an index on the field reports scan" {
    sql "DEFINE QUEUE alerts TIMEOUT 1m PRIORITY BY severity; DEFINE INDEX by_text ON alerts FIELDS text; CREATE alerts = { severity: 2 }" >/dev/null
    run --separate-stderr sql "CLAIM FROM alerts EXPLAIN"
    assert_success
    assert_output '[{"plan":"scan"}]'
    run sql "CLAIM FROM alerts"
    assert_equal "$(jqr '.[0].attempts' "$output")" 1
}

@test "explain: a queue without PRIORITY BY reports ordered by id" {
    seed_jobs
    run --separate-stderr sql "CLAIM FROM jobs EXPLAIN"
    assert_success
    assert_output '[{"index":"id","plan":"ordered"}]'
    run sql "CLAIM 3 FROM jobs EXPLAIN; CLAIM jobs:1 EXPLAIN; CLAIM 5 FROM jobs"
    assert_success
    assert_equal "$(jqr '[.[].attempts] | join(" ")' "${lines[2]}")" "1 1 1"
}

@test "seed: NOT BEFORE send_at — a record with send_at in the past is claimable" {
    sql "DEFINE QUEUE mail TIMEOUT 5m ATTEMPTS 3 NOT BEFORE send_at" >/dev/null
    run sql "CREATE mail = { to: 'a', send_at: d'2000-01-01T00:00:00Z' }; CREATE mail = { to: 'b', send_at: time::now() }; CLAIM 5 FROM mail"
    assert_success
    assert_equal "$(jqr '[.[].to] | join(" ")' "${lines[2]}")" "a b"
}

@test "seed: a NOT BEFORE value that is not a datetime is no delay at all" {
    sql "DEFINE QUEUE mail TIMEOUT 5m NOT BEFORE send_at" >/dev/null
    run sql "CREATE mail:1 = { send_at: 'soon' }; CREATE mail:2 = { send_at: 42 }; CREATE mail:3 = { send_at: '2200-01-01T00:00:00Z' }; CLAIM 5 FROM mail"
    assert_success
    assert_equal "$(jqr '[.[].id] | join(" ")' "${lines[3]}")" "mail:1 mail:2 mail:3"
}

@test "not before: a field declared TYPE datetime coerces an ISO-8601 string, which then delays" {
    sql "DEFINE QUEUE mail TIMEOUT 5m NOT BEFORE at; DEFINE FIELD at ON mail TYPE datetime" >/dev/null
    run --separate-stderr sql "CREATE mail:1 = { at: '2200-12-01T09:00:00+01:00' }; CREATE mail:2 = { at: '2000-12-01T08:00:00Z' }; CLAIM 5 FROM mail"
    assert_success
    # stored as a datetime: rendered in UTC
    assert_equal "$(jqr '.[0].at' "${lines[0]}")" "2200-12-01T08:00:00Z"
    assert_equal "$(jqr '[.[].id] | join(" ")' "${lines[2]}")" "mail:2"
}

@test "not before: an UPDATE of the field re-arms or frees a delayed record" {
    sql "DEFINE QUEUE mail TIMEOUT 5m NOT BEFORE send_at; CREATE mail:1 = { send_at: d'2200-01-01T00:00:00Z' }" >/dev/null
    run sql "CLAIM FROM mail; UPDATE mail:1 MERGE { send_at: d'2001-01-01T00:00:00Z' }; CLAIM FROM mail"
    assert_success
    assert_line -n 0 '[]'
    assert_equal "$(jqr '.[0].id' "${lines[2]}")" mail:1
}

# ---------------------------------------------------------------------------
# Work on a schedule
# ---------------------------------------------------------------------------

@test "seed: a tick — CLAIM takes it, RELEASE … NOT BEFORE 1h re-arms it an hour ahead" {
    local now
    now=$(date +%s)
    run --separate-stderr sql "DEFINE QUEUE ticks TIMEOUT 5m NOT BEFORE next;
CREATE ticks:1 = { job: 'cleanup', next: time::now() };
CLAIM FROM ticks;
RELEASE ticks:1 NOT BEFORE 1h;"
    assert_success
    assert_equal "${#lines[@]}" 4
    assert_equal "$(jqr '.[0] | [.id, .job] | join(" ")' "${lines[1]}")" "ticks:1 cleanup"
    assert_near "$(epoch_of "$(jqr '.[0].next' "${lines[1]}")")" "$now" 5
    assert_equal "$(jqr '.[0] | [.id, .attempts] | join(" ")' "${lines[2]}")" "ticks:1 1"
    assert_near "$(epoch_of "$(jqr '.[0].claimed_until' "${lines[2]}")")" $((now + 300)) 5
    assert_near "$(epoch_of "$(jqr '.[0].next' "${lines[3]}")")" $((now + 3600)) 5
    run sql "CLAIM FROM ticks"
    assert_output '[]'
}

@test "seed: two workers cannot both hold the tick" {
    sql "DEFINE QUEUE ticks TIMEOUT 5m NOT BEFORE next; CREATE ticks:1 = { job: 'cleanup', next: time::now() }" >/dev/null
    run sql "CLAIM FROM ticks"
    assert_equal "$(jqr '.[0].id' "$output")" ticks:1
    run sql "CLAIM FROM ticks"
    assert_output '[]'
    run sql "CLAIM ticks:1"
    assert_output '[]'
}

# ---------------------------------------------------------------------------
# Enqueueing once
# ---------------------------------------------------------------------------

@test "seed: DEDUPLICATE — the second CREATE of reclaim:'bucket/key' writes nothing and answers []" {
    run --separate-stderr sql "DEFINE QUEUE reclaim TIMEOUT 1m DEDUPLICATE 10m;
CREATE reclaim:'bucket/key' = { reason: 'overwritten' };
CREATE reclaim:'bucket/key' = { reason: 'overwritten' };
SELECT * FROM reclaim;"
    assert_success
    assert_equal "${#lines[@]}" 4
    assert_line -n 0 'null'
    assert_line -n 1 "[{\"id\":\"reclaim:'bucket/key'\",\"reason\":\"overwritten\"}]"
    assert_line -n 2 '[]'
    assert_line -n 3 "[{\"id\":\"reclaim:'bucket/key'\",\"reason\":\"overwritten\"}]"
}

@test "dedup: a repeat with other content writes nothing either" {
    sql "DEFINE QUEUE reclaim TIMEOUT 1m DEDUPLICATE 10m; CREATE reclaim:'k' = { reason: 'first' }" >/dev/null
    run sql "CREATE reclaim:'k' = { reason: 'second' }"
    assert_success
    assert_output '[]'
    run sql "SELECT reason FROM reclaim"
    assert_output '[{"reason":"first"}]'
}

@test "dedup: a repeat while the identity is held writes nothing and leaves the hold" {
    sql "DEFINE QUEUE reclaim TIMEOUT 1m DEDUPLICATE 10m; CREATE reclaim:'bucket/key' = { reason: 'overwritten' }" >/dev/null
    run sql "CLAIM FROM reclaim"
    local until
    until=$(jqr '.[0].claimed_until' "$output")
    run --separate-stderr sql "CREATE reclaim:'bucket/key' = { reason: 'overwritten' }"
    assert_success
    assert_output '[]'
    run sql "SELECT * FROM reclaim"
    assert_equal "$(jqr 'length' "$output")" 1
    assert_equal "$(jqr '.[0] | [.attempts, .claimed_until] | join(" ")' "$output")" "1 $until"
}

@test "dedup: a repeat after the identity was done and deleted writes nothing" {
    sql "DEFINE QUEUE reclaim TIMEOUT 1m DEDUPLICATE 10m; CREATE reclaim:'bucket/key' = { reason: 'overwritten' }" >/dev/null
    run sql "CLAIM FROM reclaim; DELETE reclaim:'bucket/key'"
    assert_success
    run --separate-stderr sql "CREATE reclaim:'bucket/key' = { reason: 'overwritten' }"
    assert_success
    assert_output '[]'
    run sql "SELECT * FROM reclaim" "CLAIM FROM reclaim"
    assert_line -n 0 '[]'
    assert_line -n 1 '[]'
}

@test "dedup: without DEDUPLICATE a queued identity is RecordExists and a finished one is queued again" {
    sql "DEFINE QUEUE reclaim TIMEOUT 1m; CREATE reclaim:'bucket/key' = { reason: 'overwritten' }" >/dev/null
    run --separate-stderr sql "CREATE reclaim:'bucket/key' = { reason: 'again' }"
    assert_error RecordExists
    run sql "SELECT reason FROM reclaim"
    assert_output '[{"reason":"overwritten"}]'
    run sql "DELETE reclaim:'bucket/key'; CREATE reclaim:'bucket/key' = { reason: 'again' }"
    assert_success
    assert_line -n 1 "[{\"id\":\"reclaim:'bucket/key'\",\"reason\":\"again\"}]"
}

@test "dedup: once the window has passed, the identity is an ordinary CREATE again" {
    sql "DEFINE QUEUE reclaim TIMEOUT 1m DEDUPLICATE 1ns; CREATE reclaim:1 = { n: 1 }" >/dev/null
    run --separate-stderr sql "CREATE reclaim:1 = { n: 2 }"
    assert_error RecordExists
    run sql "DELETE reclaim:1; CREATE reclaim:1 = { n: 3 }"
    assert_success
    assert_line -n 1 '[{"id":"reclaim:1","n":3}]'
}

@test "dedup: a record the store names is never deduplicated" {
    sql "DEFINE QUEUE reclaim TIMEOUT 1m DEDUPLICATE 10m" >/dev/null
    run sql "CREATE reclaim = { reason: 'x' }; CREATE reclaim = { reason: 'x' }"
    assert_success
    assert_line -n 0 '[{"id":"reclaim:1","reason":"x"}]'
    assert_line -n 1 '[{"id":"reclaim:2","reason":"x"}]'
}

@test "seed: INFO FOR TABLE reports deduplicate" {
    sql "DEFINE QUEUE reclaim TIMEOUT 1m DEDUPLICATE 10m" >/dev/null
    run sql "INFO FOR TABLE reclaim"
    assert_success
    assert_equal "$(jqr '.deduplicate' "$output")" 10m
    assert_equal "$(jqr '.definition' "$output")" "DEFINE QUEUE reclaim TIMEOUT 1m DEDUPLICATE 10m"
}

# ---------------------------------------------------------------------------
# Claiming the record you name
# ---------------------------------------------------------------------------

@test "seed: CLAIM jobs:1 takes the record named, and CLAIM FROM then passes over it" {
    seed_jobs
    run --separate-stderr sql "CLAIM jobs:1;"
    assert_success
    assert_equal "$(jqr '.[0] | [.id, .url, .attempts] | join(" ")' "$output")" "jobs:1 a 1"
    assert_equal "$(jqr '.[0].claimed_until | type' "$output")" string
    run sql "CLAIM FROM jobs"
    assert_equal "$(jqr '.[0].id' "$output")" jobs:2
}

@test "targeted: CLAIM of a record that is not the head takes it; the walk passes over it" {
    seed_jobs
    run sql "CLAIM jobs:3; CLAIM 5 FROM jobs"
    assert_success
    assert_equal "$(jqr '.[0].id' "${lines[0]}")" jobs:3
    assert_equal "$(jqr '[.[].id] | join(" ")' "${lines[1]}")" "jobs:1 jobs:2"
}

@test "targeted: contention is an answer — CLAIM of a held record answers [] with exit 0" {
    seed_jobs
    sql "CLAIM FROM jobs" >/dev/null
    run --separate-stderr sql "CLAIM jobs:1"
    assert_success
    assert_stderr_empty
    assert_output '[]'
    run sql "SELECT attempts FROM jobs:1"
    assert_output '[{"attempts":1}]'
}

@test "targeted: existence is an error — CLAIM of a missing record is NoSuchRecord" {
    seed_jobs
    run --separate-stderr sql "CLAIM jobs:99"
    assert_error NoSuchRecord
    run --separate-stderr sql "CLAIM nosuch:1"
    assert_error NoSuchTable
}

@test "targeted: RELEASE ends a targeted hold like any other" {
    seed_jobs
    run sql "CLAIM jobs:2; RELEASE jobs:2; CLAIM jobs:2"
    assert_success
    assert_line -n 1 '[{"attempts":1,"id":"jobs:2","url":"b"}]'
    assert_equal "$(jqr '.[0] | [.id, .attempts] | join(" ")' "${lines[2]}")" "jobs:2 2"
}

@test "targeted: CLAIM of a record delayed by NOT BEFORE answers []" {
    sql "DEFINE QUEUE later TIMEOUT 30s NOT BEFORE due; CREATE later:1 = { due: d'2200-01-01T00:00:00Z' }" >/dev/null
    run --separate-stderr sql "CLAIM later:1"
    assert_success
    assert_output '[]'
}

# ---------------------------------------------------------------------------
# Saying who you are
# ---------------------------------------------------------------------------

@test "seed: USE CONSUMER 'billing' signs the holds the session takes" {
    seed_jobs
    run --separate-stderr sql "USE CONSUMER 'billing';
CLAIM FROM jobs;"
    assert_success
    assert_line -n 0 'null'
    assert_equal "$(jqr '.[0] | keys | join(",")' "${lines[1]}")" "attempts,claimed_by,claimed_until,hold,id,url"
    assert_equal "$(jqr '.[0].claimed_by | keys | join(",")' "${lines[1]}")" "consumer,instance"
    assert_equal "$(jqr '.[0].claimed_by.consumer' "${lines[1]}")" billing
    [[ "$(jqr '.[0].claimed_by.instance' "${lines[1]}")" =~ ^[0-9a-f]{32}$ ]] ||
        fail "the instance is not 32 hex characters: ${lines[1]}"
}

@test "consumers: a session that says nothing signs nothing" {
    seed_jobs
    run sql "CLAIM FROM jobs"
    assert_equal "$(jqr '.[0] | has("claimed_by")' "$output")" false
}

@test "consumers: a new instance per USE CONSUMER and per session" {
    seed_jobs
    run sql "USE CONSUMER 'billing'; CLAIM FROM jobs; CLAIM FROM jobs; USE CONSUMER 'billing'; CLAIM FROM jobs"
    assert_success
    local a b c d
    a=$(jqr '.[0].claimed_by.instance' "${lines[1]}")
    b=$(jqr '.[0].claimed_by.instance' "${lines[2]}")
    c=$(jqr '.[0].claimed_by.instance' "${lines[4]}")
    assert_equal "$a" "$b"
    [ "$a" != "$c" ] || fail "USE CONSUMER did not mint a new instance: $a"
    sql "RELEASE ALL FROM jobs FOR CONSUMER 'billing'" >/dev/null
    run sql "USE CONSUMER 'billing'; CLAIM FROM jobs"
    d=$(jqr '.[0].claimed_by.instance' "${lines[1]}")
    [ "$d" != "$a" ] && [ "$d" != "$c" ] || fail "a new session reused an instance: $d"
}

@test "consumers: USE CONSUMER lasts only one queuefs-sql run" {
    seed_jobs
    sql "USE CONSUMER 'billing'" >/dev/null
    run sql "CLAIM FROM jobs"
    assert_equal "$(jqr '.[0] | has("claimed_by")' "$output")" false
}

@test "seed: the consumer block — USE CONSUMER, CLAIM, RELEASE … FOR CONSUMER, RELEASE ALL, RELEASE ALL … FOR CONSUMER" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:7 = { url: 'seven' }; CREATE jobs:8 = { url: 'eight' }" >/dev/null
    # an earlier billing worker (another session) holds jobs:7
    run sql "USE CONSUMER 'billing'; CLAIM FROM jobs"
    assert_equal "$(jqr '.[0].id' "${lines[1]}")" jobs:7
    run --separate-stderr sql "USE CONSUMER 'billing';
CLAIM FROM jobs;
RELEASE jobs:7 FOR CONSUMER 'billing';
RELEASE ALL FROM jobs;
RELEASE ALL FROM jobs FOR CONSUMER 'billing';"
    assert_success
    assert_equal "${#lines[@]}" 5
    assert_line -n 0 'null'
    assert_equal "$(jqr '.[0] | [.id, .claimed_by.consumer] | join(" ")' "${lines[1]}")" "jobs:8 billing"
    assert_line -n 2 '[{"attempts":1,"id":"jobs:7","url":"seven"}]'
    assert_line -n 3 '[{"attempts":1,"id":"jobs:8","url":"eight"}]'
    assert_line -n 4 '[]'
    run sql "SELECT * FROM jobs WHERE claimed_until > time::now()"
    assert_output '[]'
}

@test "consumers: a bare RELEASE of a hold signed by another consumer is HeldByAnotherConsumer, naming it" {
    seed_jobs
    sql "USE CONSUMER 'billing'; CLAIM FROM jobs" >/dev/null
    run --separate-stderr sql "USE CONSUMER 'audit'; RELEASE jobs:1"
    assert_error HeldByAnotherConsumer
    assert_output 'null'
    [[ "$(jqr '.message' "$stderr")" == *billing* ]] || fail "the message does not name billing: $stderr"
    # and from a session with no consumer at all
    run --separate-stderr sql "RELEASE jobs:1"
    assert_error HeldByAnotherConsumer
    [[ "$(jqr '.message' "$stderr")" == *billing* ]] || fail "the message does not name billing: $stderr"
    run sql "CLAIM jobs:1"
    assert_output '[]'
}

@test "consumers: another instance of the same consumer is refused by a bare RELEASE" {
    seed_jobs
    sql "USE CONSUMER 'billing'; CLAIM FROM jobs" >/dev/null
    run --separate-stderr sql "USE CONSUMER 'billing'; RELEASE jobs:1"
    assert_error HeldByAnotherConsumer
    [[ "$(jqr '.message' "$stderr")" == *billing* ]] || fail "the message does not name billing: $stderr"
    # within one session, after a second USE CONSUMER, likewise
    run --separate-stderr sql "USE CONSUMER 'billing'; CLAIM jobs:2; USE CONSUMER 'billing'; RELEASE jobs:2"
    assert_error HeldByAnotherConsumer
}

@test "consumers: RELEASE jobs:7 FOR CONSUMER 'billing' frees a billing hold from any session" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:7 = { url: 'x' }" >/dev/null
    sql "USE CONSUMER 'billing'; CLAIM FROM jobs" >/dev/null
    run --separate-stderr sql "RELEASE jobs:7 FOR CONSUMER 'billing'"
    assert_success
    assert_output '[{"attempts":1,"id":"jobs:7","url":"x"}]'
    run sql "CLAIM FROM jobs"
    assert_equal "$(jqr '.[0] | [.id, .attempts] | join(" ")' "$output")" "jobs:7 2"
}

@test "consumers: RELEASE … FOR CONSUMER naming another group does not free the hold" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:7 = { url: 'x' }" >/dev/null
    sql "USE CONSUMER 'billing'; CLAIM FROM jobs" >/dev/null
    run --separate-stderr sql "RELEASE jobs:7 FOR CONSUMER 'audit'"
    assert_error HeldByAnotherConsumer
    run sql "CLAIM FROM jobs"
    assert_output '[]'
}

@test "consumers: a hold nobody signed is freed by any bare RELEASE" {
    seed_jobs
    sql "CLAIM FROM jobs" >/dev/null
    run --separate-stderr sql "USE CONSUMER 'billing'; RELEASE jobs:1"
    assert_success
    assert_line -n 1 '[{"attempts":1,"id":"jobs:1","url":"a"}]'
}

@test "consumers: the FOR CONSUMER forms leave a hold nobody signed where it is" {
    seed_jobs
    sql "CLAIM FROM jobs" >/dev/null
    run --separate-stderr sql "RELEASE jobs:1 FOR CONSUMER 'billing'; RELEASE ALL FROM jobs FOR CONSUMER 'billing'"
    assert_success
    assert_line -n 0 '[]'
    assert_line -n 1 '[]'
    run sql "CLAIM jobs:1"
    assert_output '[]'
}

@test "consumers: RELEASE ALL FROM jobs frees exactly this session's unsigned holds and answers them" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s" >/dev/null
    sql "CREATE jobs:1 = {}; CREATE jobs:2 = {}; CREATE jobs:3 = {}; CREATE jobs:4 = {}" >/dev/null
    sql "CLAIM FROM jobs" >/dev/null   # another session holds jobs:1
    run --separate-stderr sql "CLAIM 2 FROM jobs; RELEASE ALL FROM jobs"
    assert_success
    assert_equal "$(jqr '[.[].id] | sort | join(" ")' "${lines[1]}")" "jobs:2 jobs:3"
    assert_equal "$(jqr '[.[] | has("claimed_until")] | unique | join(" ")' "${lines[1]}")" false
    assert_equal "$(jqr '[.[].attempts] | unique | join(" ")' "${lines[1]}")" 1
    # jobs:1 is still held by the other session
    run sql "CLAIM 5 FROM jobs"
    assert_equal "$(jqr '[.[].id] | join(" ")' "$output")" "jobs:2 jobs:3 jobs:4"
}

@test "consumers: RELEASE ALL FROM jobs frees this session's signed holds, not its group's other instances" {
    seed_jobs
    sql "USE CONSUMER 'billing'; CLAIM FROM jobs" >/dev/null   # jobs:1, another instance
    run --separate-stderr sql "USE CONSUMER 'billing'; CLAIM FROM jobs; RELEASE ALL FROM jobs"
    assert_success
    assert_line -n 2 '[{"attempts":1,"id":"jobs:2","url":"b"}]'
    run sql "CLAIM 5 FROM jobs"
    assert_equal "$(jqr '[.[].id] | join(" ")' "$output")" "jobs:2 jobs:3"
}

@test "consumers: RELEASE ALL FROM in a new run does not reach the previous run's holds" {
    seed_jobs
    sql "CLAIM FROM jobs" >/dev/null
    run --separate-stderr sql "RELEASE ALL FROM jobs"
    assert_success
    assert_output '[]'
}

@test "consumers: RELEASE ALL FROM jobs FOR CONSUMER 'billing' frees every billing hold, and only those" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s" >/dev/null
    sql "CREATE jobs:1 = {}; CREATE jobs:2 = {}; CREATE jobs:3 = {}; CREATE jobs:4 = {}; CREATE jobs:5 = {}" >/dev/null
    sql "USE CONSUMER 'billing'; CLAIM FROM jobs" >/dev/null   # 1
    sql "USE CONSUMER 'billing'; CLAIM FROM jobs" >/dev/null   # 2
    sql "USE CONSUMER 'audit'; CLAIM FROM jobs" >/dev/null     # 3
    sql "CLAIM FROM jobs" >/dev/null                           # 4, unsigned
    run --separate-stderr sql "RELEASE ALL FROM jobs FOR CONSUMER 'billing'"
    assert_success
    assert_equal "$(jqr '[.[].id] | sort | join(" ")' "$output")" "jobs:1 jobs:2"
    run sql "CLAIM 5 FROM jobs"
    assert_equal "$(jqr '[.[].id] | join(" ")' "$output")" "jobs:1 jobs:2 jobs:5"
}

@test "consumers: RELEASE ALL … FOR CONSUMER … NOT BEFORE 10m delays what it frees" {
    sql "DEFINE QUEUE later TIMEOUT 30s NOT BEFORE due; CREATE later:1 = {}; CREATE later:2 = {}" >/dev/null
    sql "USE CONSUMER 'billing'; CLAIM 2 FROM later" >/dev/null
    run --separate-stderr sql "RELEASE ALL FROM later FOR CONSUMER 'billing' NOT BEFORE 10m"
    assert_success
    assert_equal "$(jqr 'length' "$output")" 2
    assert_near "$(epoch_of "$(jqr '.[0].due' "$output")")" $(( $(date +%s) + 600 )) 5
    run sql "CLAIM FROM later"
    assert_output '[]'
}

@test "consumers: RELEASE ALL names its queue and leaves other queues alone" {
    sql "DEFINE QUEUE a TIMEOUT 30s; DEFINE QUEUE b TIMEOUT 30s; CREATE a:1 = {}; CREATE b:1 = {}" >/dev/null
    run sql "CLAIM FROM a; CLAIM FROM b; RELEASE ALL FROM a; CLAIM b:1"
    assert_success
    assert_line -n 2 '[{"attempts":1,"id":"a:1"}]'
    assert_line -n 3 '[]'
    run --separate-stderr sql "RELEASE ALL FROM nosuch"
    assert_error NoSuchTable
}

# ---------------------------------------------------------------------------
# A queue says whether it is strict and which graph it is in
# ---------------------------------------------------------------------------

@test "seed: SCHEMAFULL and IN — the three declarations answer null and INFO reports them" {
    run --separate-stderr sql "DEFINE QUEUE jobs  TIMEOUT 30s SCHEMAFULL;
DEFINE QUEUE tasks TIMEOUT 10m SCHEMAFULL IN work;
DEFINE FIELD url ON jobs TYPE string REQUIRED;"
    assert_success
    assert_output "null
null
null"
    run sql "INFO FOR TABLE jobs" "INFO FOR TABLE tasks"
    assert_success
    assert_equal "$(jqr '.schemafull' "${lines[0]}")" true
    assert_equal "$(jqr '.graph' "${lines[0]}")" null
    assert_equal "$(jqr '.definition' "${lines[0]}")" "DEFINE QUEUE jobs TIMEOUT 30s SCHEMAFULL"
    assert_equal "$(jqr '.fields.url' "${lines[0]}")" "DEFINE FIELD url ON jobs TYPE string REQUIRED"
    assert_equal "$(jqr '.schemafull' "${lines[1]}")" true
    assert_equal "$(jqr '.graph' "${lines[1]}")" work
    assert_equal "$(jqr '.definition' "${lines[1]}")" "DEFINE QUEUE tasks TIMEOUT 10m SCHEMAFULL IN work"
}

@test "info: INFO FOR TABLE answers every key, sorted, for a plain queue" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s" >/dev/null
    run --separate-stderr sql "INFO FOR TABLE jobs"
    assert_success
    assert_output '{"attempts":null,"deduplicate":null,"definition":"DEFINE QUEUE jobs TIMEOUT 30s","fields":{},"graph":null,"indexes":{},"kind":"queue","name":"jobs","not_before":null,"paused":false,"priority_by":null,"schemafull":false,"timeout":"30s"}'
}

@test "info: INFO FOR TABLE reports attempts, priority_by, not_before and indexes" {
    sql "DEFINE QUEUE alerts TIMEOUT 1m ATTEMPTS 3 PRIORITY BY severity NOT BEFORE at; DEFINE INDEX by_severity ON alerts FIELDS severity" >/dev/null
    run sql "INFO FOR TABLE alerts"
    assert_success
    assert_equal "$(jqr '[.attempts, .priority_by, .not_before, .timeout] | join(" ")' "$output")" "3 severity at 1m"
    assert_equal "$(jqr '.indexes.by_severity' "$output")" "DEFINE INDEX by_severity ON alerts FIELDS severity"
    assert_equal "$(jqr '.definition' "$output")" "DEFINE QUEUE alerts TIMEOUT 1m ATTEMPTS 3 PRIORITY BY severity NOT BEFORE at"
}

@test "info: INFO FOR TABLE of a collection says kind collection; of a missing table NoSuchTable" {
    sql "DEFINE COLLECTION notes" >/dev/null
    run sql "INFO FOR TABLE notes"
    assert_success
    assert_equal "$(jqr '[.kind, .name, .definition] | join("|")' "$output")" "collection|notes|DEFINE COLLECTION notes"
    run --separate-stderr sql "INFO FOR TABLE nosuch"
    assert_error NoSuchTable
}

@test "define: ATTEMPTS must follow TIMEOUT — the scrambled declaration is a ParseError" {
    run --separate-stderr sql "DEFINE QUEUE q TIMEOUT 5m IN work SCHEMAFULL DEDUPLICATE 1m NOT BEFORE at ATTEMPTS 3"
    assert_error ParseError
    run --separate-stderr sql "INFO FOR TABLE q"
    assert_error NoSuchTable
}

@test "define: the other clauses are order-free; INFO writes them back in canonical order" {
    run --separate-stderr sql "DEFINE QUEUE q TIMEOUT 5m ATTEMPTS 3 IN work SCHEMAFULL DEDUPLICATE 1m NOT BEFORE at" "INFO FOR TABLE q"
    assert_success
    assert_line -n 0 'null'
    assert_equal "$(jqr '.definition' "${lines[1]}")" "DEFINE QUEUE q TIMEOUT 5m ATTEMPTS 3 NOT BEFORE at DEDUPLICATE 1m SCHEMAFULL IN work"
}

@test "define: every clause in canonical order" {
    run sql "DEFINE QUEUE q TIMEOUT 90s ATTEMPTS 4 PRIORITY BY p NOT BEFORE at DEDUPLICATE 1h30m SCHEMALESS IN g" "INFO FOR TABLE q"
    assert_success
    assert_equal "$(jqr '.definition' "${lines[1]}")" "DEFINE QUEUE q TIMEOUT 1m30s ATTEMPTS 4 PRIORITY BY p NOT BEFORE at DEDUPLICATE 1h30m SCHEMALESS IN g"
}

@test "define: SCHEMAFULL twice, IN twice or SCHEMAFULL with SCHEMALESS is a ParseError" {
    run --separate-stderr sql "DEFINE QUEUE q TIMEOUT 5m SCHEMAFULL SCHEMAFULL"
    assert_error ParseError
    run --separate-stderr sql "DEFINE QUEUE q TIMEOUT 5m IN a IN b"
    assert_error ParseError
    run --separate-stderr sql "DEFINE QUEUE q TIMEOUT 5m SCHEMAFULL SCHEMALESS"
    assert_error ParseError
    run --separate-stderr sql "DEFINE QUEUE q TIMEOUT 5m DEDUPLICATE 1m DEDUPLICATE 2m"
    assert_error ParseError
}

@test "define: IN work SCHEMAFULL and SCHEMAFULL IN work declare the same table" {
    run sql "DEFINE QUEUE a TIMEOUT 10m IN work SCHEMAFULL; DEFINE QUEUE b TIMEOUT 10m SCHEMAFULL IN work; INFO FOR TABLE a; INFO FOR TABLE b"
    assert_success
    assert_equal "$(jqr '.definition' "${lines[2]}")" "DEFINE QUEUE a TIMEOUT 10m SCHEMAFULL IN work"
    assert_equal "$(jqr '.definition' "${lines[3]}")" "DEFINE QUEUE b TIMEOUT 10m SCHEMAFULL IN work"
}

@test "define: the INFO definition recreates the table exactly, after a DROP and on a fresh store" {
    sql "DEFINE QUEUE q TIMEOUT 5m ATTEMPTS 3 IN work SCHEMAFULL DEDUPLICATE 1m NOT BEFORE at PRIORITY BY p" >/dev/null
    run sql "INFO FOR TABLE q"
    local def
    def=$(jqr '.definition' "$output")
    run sql "DROP QUEUE q" "$def" "INFO FOR TABLE q"
    assert_success
    assert_equal "$(jqr '.definition' "${lines[2]}")" "$def"
    local fresh="$BATS_TEST_TMPDIR/fresh"
    run "$QUEUEFS_SQL" "$fresh" "$def" "INFO FOR TABLE q"
    rm -rf "$fresh"
    assert_success
    assert_equal "$(jqr '.definition' "${lines[1]}")" "$def"
    assert_equal "$(jqr '[.attempts, .priority_by, .not_before, .deduplicate, .schemafull, .graph, .timeout] | map(tostring) | join(" ")' "${lines[1]}")" "3 p at 1m true work 5m"
}

@test "define: leaving out SCHEMAFULL and IN means lenient and in no graph" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s; DEFINE FIELD url ON jobs TYPE string" >/dev/null
    run sql "INFO FOR TABLE jobs"
    assert_equal "$(jqr '[.schemafull, .graph] | map(tostring) | join(" ")' "$output")" "false null"
    run sql "CREATE jobs = { url: 'a', other: 1 }"
    assert_success
    assert_output '[{"id":"jobs:1","other":1,"url":"a"}]'
}

@test "schema: CREATE jobs = {} on a strict queue with a REQUIRED url is SchemaViolation" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s SCHEMAFULL; DEFINE FIELD url ON jobs TYPE string REQUIRED" >/dev/null
    run --separate-stderr sql "CREATE jobs = {}"
    assert_error SchemaViolation
    run sql "SELECT * FROM jobs"
    assert_output '[]'
}

@test "schema: a url of the wrong TYPE is SchemaViolation" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s SCHEMAFULL; DEFINE FIELD url ON jobs TYPE string REQUIRED" >/dev/null
    run --separate-stderr sql "CREATE jobs = { url: 1 }"
    assert_error SchemaViolation
    run sql "SELECT * FROM jobs"
    assert_output '[]'
}

@test "schema: an undeclared field on a SCHEMAFULL queue is SchemaViolation" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s SCHEMAFULL; DEFINE FIELD url ON jobs TYPE string REQUIRED" >/dev/null
    run --separate-stderr sql "CREATE jobs = { url: 'a', other: 1 }"
    assert_error SchemaViolation
    run sql "SELECT * FROM jobs"
    assert_output '[]'
}

@test "schema: a strict queue accepts a valid record and does not refuse the claim's engine fields" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s SCHEMAFULL; DEFINE FIELD url ON jobs TYPE string REQUIRED" >/dev/null
    run --separate-stderr sql "CREATE jobs = { url: 'a' }; CLAIM FROM jobs; UPDATE jobs:1 = { url: 'b' }; USE CONSUMER 'billing'; RELEASE jobs:1; CLAIM FROM jobs"
    assert_success
    assert_line -n 0 '[{"id":"jobs:1","url":"a"}]'
    assert_equal "$(jqr '.[0] | [.id, .attempts] | join(" ")' "${lines[1]}")" "jobs:1 1"
    assert_equal "$(jqr '.[0] | [.url, .attempts] | join(" ")' "${lines[2]}")" "b 1"
    assert_equal "$(jqr '.[0] | [.id, .attempts, .claimed_by.consumer] | join(" ")' "${lines[5]}")" "jobs:1 2 billing"
}

@test "schema: an UPDATE that breaks the schema is refused and changes nothing" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s SCHEMAFULL; DEFINE FIELD url ON jobs TYPE string REQUIRED; CREATE jobs:1 = { url: 'a' }" >/dev/null
    run --separate-stderr sql "UPDATE jobs:1 = { other: 1 }"
    assert_error SchemaViolation
    run --separate-stderr sql "UPDATE jobs:1 MERGE { url: 5 }"
    assert_error SchemaViolation
    run sql "SELECT * FROM jobs"
    assert_output '[{"id":"jobs:1","url":"a"}]'
}

@test "schema: DEFINE FIELD on a missing table is NoSuchTable" {
    run --separate-stderr sql "DEFINE FIELD url ON nosuch TYPE string"
    assert_error NoSuchTable
}

# ---------------------------------------------------------------------------
# Dropping one
# ---------------------------------------------------------------------------

@test "seed: DROP QUEUE fast removes the table and its records, held ones included" {
    run sql "DEFINE QUEUE fast TIMEOUT 30s; CREATE fast:1 = {}; CREATE fast:2 = {}; CLAIM FROM fast"
    assert_success
    run --separate-stderr sql "DROP QUEUE fast;"
    assert_success
    assert_output 'null'
    run --separate-stderr sql "SELECT * FROM fast"
    assert_error NoSuchTable
    run sql "DEFINE QUEUE fast TIMEOUT 30s; SELECT * FROM fast; CLAIM FROM fast"
    assert_success
    assert_line -n 1 '[]'
    assert_line -n 2 '[]'
}

@test "drop: DROP QUEUE refuses a collection (WrongKind) and leaves it intact" {
    sql "DEFINE COLLECTION notes; CREATE notes:1 = { a: 1 }" >/dev/null
    run --separate-stderr sql "DROP QUEUE notes"
    assert_error WrongKind
    run sql "SELECT * FROM notes"
    assert_output '[{"a":1,"id":"notes:1"}]'
}

@test "drop: DROP COLLECTION notes works" {
    sql "DEFINE COLLECTION notes; CREATE notes:1 = { a: 1 }" >/dev/null
    run --separate-stderr sql "DROP COLLECTION notes"
    assert_success
    assert_output 'null'
    run --separate-stderr sql "INFO FOR TABLE notes"
    assert_error NoSuchTable
}

@test "drop: DROP COLLECTION refuses a queue (WrongKind)" {
    seed_jobs
    run --separate-stderr sql "DROP COLLECTION jobs"
    assert_error WrongKind
    run sql "SELECT url FROM jobs"
    assert_output '[{"url":"a"},{"url":"b"},{"url":"c"}]'
}

@test "drop: DROP QUEUE of a missing table is NoSuchTable" {
    run --separate-stderr sql "DROP QUEUE nosuch"
    assert_error NoSuchTable
}

@test "kind: CLAIM FROM a collection is WrongKind" {
    sql "DEFINE COLLECTION notes; CREATE notes:1 = {}" >/dev/null
    run --separate-stderr sql "CLAIM FROM notes"
    assert_error WrongKind
    run --separate-stderr sql "CLAIM notes:1"
    assert_error WrongKind
}

@test "kind: every statement on a missing table is NoSuchTable" {
    local st
    for st in "CREATE nosuch:1 = {}" "CREATE nosuch = {}" "UPDATE nosuch:1 = {}" "DELETE nosuch:1" \
        "SELECT * FROM nosuch" "CLAIM FROM nosuch" "CLAIM nosuch:1" "CLAIM FROM nosuch EXPLAIN" \
        "RELEASE nosuch:1" "RELEASE ALL FROM nosuch" "INFO FOR TABLE nosuch" "DROP QUEUE nosuch" \
        "DROP COLLECTION nosuch" "DEFINE INDEX i ON nosuch FIELDS a"; do
        run --separate-stderr sql "$st"
        assert_error NoSuchTable
    done
}

# ---------------------------------------------------------------------------
# What a claim is, underneath: transactions
# ---------------------------------------------------------------------------

@test "seed: a second claim inside one BEGIN sees the hold the first one wrote" {
    seed_jobs
    run --separate-stderr sql "BEGIN; CLAIM FROM jobs; CLAIM FROM jobs; COMMIT;"
    assert_success
    assert_equal "${#lines[@]}" 4
    assert_line -n 0 'null'
    assert_equal "$(jqr '.[0] | [.id, .attempts] | join(" ")' "${lines[1]}")" "jobs:1 1"
    assert_equal "$(jqr '.[0] | [.id, .attempts] | join(" ")' "${lines[2]}")" "jobs:2 1"
    assert_line -n 3 'null'
    run sql "CLAIM FROM jobs"
    assert_equal "$(jqr '.[0].id' "$output")" jobs:3
}

@test "txn: a claim inside a transaction sees a record created earlier in it" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s" >/dev/null
    run sql "BEGIN; CREATE jobs:1 = { url: 'a' }; CLAIM FROM jobs; COMMIT"
    assert_success
    assert_equal "$(jqr '.[0] | [.id, .attempts] | join(" ")' "${lines[2]}")" "jobs:1 1"
}

@test "txn: BEGIN … COMMIT may span several arguments of one run" {
    seed_jobs
    run sql "BEGIN" "CLAIM FROM jobs" "CREATE jobs:4 = {url:'d'}" "COMMIT"
    assert_success
    assert_equal "${#lines[@]}" 4
    run sql "SELECT url FROM jobs:4"
    assert_output '[{"url":"d"}]'
}

@test "txn: CANCEL discards the transaction — nothing is written" {
    seed_jobs
    run --separate-stderr sql "BEGIN; CLAIM FROM jobs; CREATE jobs:4 = { url: 'd' }; CANCEL"
    assert_success
    assert_output "null
null"
    run sql "SELECT * FROM jobs:4" "SELECT * FROM jobs WHERE attempts >= 1"
    assert_line -n 0 '[]'
    assert_line -n 1 '[]'
}

@test "txn: a failing statement inside BEGIN … COMMIT keeps nothing of the transaction" {
    seed_jobs
    run --separate-stderr sql "BEGIN; CREATE jobs:4 = { url: 'd' }; CLAIM FROM jobs; CREATE jobs:1 = { url: 'dup' }; COMMIT"
    assert_error RecordExists
    run sql "SELECT * FROM jobs:4" "SELECT * FROM jobs WHERE attempts >= 1"
    assert_line -n 0 '[]'
    assert_line -n 1 '[]'
}

@test "txn: input ending inside BEGIN is an error and writes nothing" {
    seed_jobs
    run --separate-stderr sql "BEGIN; CREATE jobs:4 = { url: 'd' }; CLAIM FROM jobs"
    assert_failure 1
    jq -e '.error | strings' <<<"$stderr" >/dev/null || fail "no JSON error line on stderr: $stderr"
    run sql "SELECT * FROM jobs:4" "SELECT * FROM jobs WHERE attempts >= 1"
    assert_line -n 0 '[]'
    assert_line -n 1 '[]'
}

@test "txn: stdin ending inside BEGIN is an error and writes nothing" {
    seed_jobs
    # shellcheck disable=SC2016 # the script's $ are its own
    run --separate-stderr bash -c 'printf "BEGIN;\nCREATE jobs:4 = {url:\"d\"};\n" | "$QUEUEFS_SQL" "$STORE"'
    assert_failure 1
    run sql "SELECT * FROM jobs:4"
    assert_output '[]'
}

@test "txn: COMMIT without BEGIN is an error" {
    seed_jobs
    run --separate-stderr sql "COMMIT"
    assert_failure 1
    jq -e '.error | strings' <<<"$stderr" >/dev/null || fail "no JSON error line on stderr: $stderr"
}

@test "txn: outside BEGIN each statement is its own transaction — a later failure keeps earlier effects" {
    seed_jobs
    run --separate-stderr sql "CREATE jobs:4 = { url: 'd' }; CLAIM FROM jobs; CREATE jobs:1 = { url: 'dup' }"
    assert_error RecordExists
    assert_equal "${#lines[@]}" 2
    run sql "SELECT url FROM jobs:4" "SELECT url FROM jobs WHERE attempts >= 1"
    assert_line -n 0 '[{"url":"d"}]'
    assert_line -n 1 '[{"url":"a"}]'
}

@test "txn: a failed statement changes nothing (an UPDATE of many records refused midway)" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s; DEFINE FIELD n ON jobs TYPE int; CREATE jobs:1 = { url: 'a', m: 1 }; CREATE jobs:2 = { url: 'b', m: 'x' }" >/dev/null
    run --separate-stderr sql "UPDATE jobs MERGE { url: 'changed', n: m }"
    assert_error SchemaViolation
    run sql "SELECT url FROM jobs"
    assert_output '[{"url":"a"},{"url":"b"}]'
}

# ---------------------------------------------------------------------------
# SELECT, UPDATE, DELETE
# ---------------------------------------------------------------------------

@test "select: fields, WHERE, ORDER BY … DESC and LIMIT" {
    sql "DEFINE COLLECTION items" >/dev/null
    sql "CREATE items:1 = { n: 3, name: 'c' }; CREATE items:2 = { n: 1, name: 'a' }; CREATE items:3 = { n: 5, name: 'e' }; CREATE items:4 = { n: 2, name: 'b' }; CREATE items:5 = { n: 4, name: 'd' }" >/dev/null
    run --separate-stderr sql "SELECT name FROM items WHERE n > 1 ORDER BY n DESC LIMIT 3"
    assert_success
    assert_output '[{"name":"e"},{"name":"d"},{"name":"c"}]'
    run sql "SELECT name, n FROM items ORDER BY name LIMIT 2"
    assert_output '[{"n":1,"name":"a"},{"n":2,"name":"b"}]'
}

@test "select: SELECT * FROM jobs:1 answers the record; a missing record answers []" {
    seed_jobs
    run --separate-stderr sql "SELECT * FROM jobs:1; SELECT * FROM jobs:99"
    assert_success
    assert_line -n 0 '[{"id":"jobs:1","url":"a"}]'
    assert_line -n 1 '[]'
}

@test "select: SELECT returns held records too and never claims" {
    seed_jobs
    sql "CLAIM FROM jobs" >/dev/null
    run sql "SELECT * FROM jobs; SELECT * FROM jobs"
    assert_equal "$(jqr 'length' "${lines[0]}")" 3
    assert_equal "$(jqr '[.[] | .attempts // 0] | join(" ")' "${lines[1]}")" "1 0 0"
}

@test "select: WHERE combines AND, OR and NOT" {
    sql "DEFINE COLLECTION items" >/dev/null
    sql "CREATE items:1 = { n: 1, ok: true }; CREATE items:2 = { n: 2, ok: false }; CREATE items:3 = { n: 3, ok: true }; CREATE items:4 = { n: 4, ok: false }" >/dev/null
    run --separate-stderr sql "SELECT n FROM items WHERE (n > 1 AND n < 4) OR NOT ok ORDER BY n"
    assert_success
    assert_output '[{"n":2},{"n":3},{"n":4}]'
    run sql "SELECT n FROM items WHERE ok AND NOT (n = 1) ORDER BY n"
    assert_output '[{"n":3}]'
}

@test "update: MERGE changes the fields named and keeps the rest; whole-record = replaces" {
    sql "DEFINE COLLECTION notes; CREATE notes:1 = { a: 1, b: 2 }" >/dev/null
    run --separate-stderr sql "UPDATE notes:1 MERGE { b: 3, c: 4 }; UPDATE notes:1 = { z: 0 }"
    assert_success
    assert_line -n 0 '[{"a":1,"b":3,"c":4,"id":"notes:1"}]'
    assert_line -n 1 '[{"id":"notes:1","z":0}]'
}

@test "update: UPDATE of a missing record is NoSuchRecord" {
    seed_jobs
    run --separate-stderr sql "UPDATE jobs:99 MERGE { url: 'x' }"
    assert_error NoSuchRecord
}

@test "delete: DELETE jobs:2 removes the record, held or not; DELETE … WHERE removes matches" {
    seed_jobs
    sql "CLAIM jobs:2" >/dev/null
    run --separate-stderr sql "DELETE jobs:2"
    assert_success
    run sql "SELECT url FROM jobs"
    assert_output '[{"url":"a"},{"url":"c"}]'
    run sql "DELETE FROM jobs WHERE url = 'c'"
    assert_success
    run sql "SELECT url FROM jobs" "CLAIM 5 FROM jobs"
    assert_line -n 0 '[{"url":"a"}]'
    assert_equal "$(jqr '[.[].id] | join(" ")' "${lines[1]}")" "jobs:1"
}

# ---------------------------------------------------------------------------
# Expressions and literals
# ---------------------------------------------------------------------------

@test "expr: time::from_unix(0) is 1970-01-01T00:00:00Z" {
    sql "DEFINE COLLECTION notes" >/dev/null
    run --separate-stderr sql "CREATE notes:1 = { t: time::from_unix(0) }"
    assert_success
    assert_output '[{"id":"notes:1","t":"1970-01-01T00:00:00Z"}]'
}

@test "expr: time::now() is the store's clock, as a UTC datetime; time::unix gives its seconds" {
    sql "DEFINE COLLECTION notes" >/dev/null
    local now
    now=$(date +%s)
    run --separate-stderr sql "CREATE notes:1 = { t: time::now(), u: time::unix(time::now()) }"
    assert_success
    [[ "$(jqr '.[0].t' "$output")" == *Z ]] || fail "time::now() is not UTC: $output"
    assert_near "$(epoch_of "$(jqr '.[0].t' "$output")")" "$now" 5
    assert_equal "$(jqr '.[0].u | type' "$output")" number
    assert_near "$(jqr '.[0].u' "$output")" "$now" 5
}

@test "expr: datetime + duration, and integer arithmetic" {
    sql "DEFINE COLLECTION notes" >/dev/null
    run --separate-stderr sql "CREATE notes:1 = { a: d'2026-01-01T00:00:00Z' + 1h30m, b: 1 + 2 * 3, c: (1 + 2) * 3, d: 10 - 4 - 3, e: time::from_unix(600 + 60) }"
    assert_success
    assert_output '[{"a":"2026-01-01T01:30:00Z","b":7,"c":9,"d":3,"e":"1970-01-01T00:11:00Z","id":"notes:1"}]'
}

@test "expr: a datetime plus a string is a TypeError and writes nothing" {
    sql "DEFINE COLLECTION notes" >/dev/null
    run --separate-stderr sql "CREATE notes:1 = { a: d'2026-01-01T00:00:00Z' + 'tomorrow' }"
    assert_error TypeError
    run sql "SELECT * FROM notes"
    assert_output '[]'
}

@test "literal: JSON content with double-quoted keys and strings" {
    sql "DEFINE COLLECTION notes" >/dev/null
    run --separate-stderr sql 'CREATE notes:1 = {"url": "a", "n": [1, 2.5, true, null], "o": {"k": "v"}}'
    assert_success
    assert_output '[{"id":"notes:1","n":[1,2.5,true,null],"o":{"k":"v"},"url":"a"}]'
}

@test "literal: SurrealQL content — single quotes, unquoted keys, d'…', durations, record ids" {
    sql "DEFINE COLLECTION notes" >/dev/null
    run --separate-stderr sql "CREATE notes:1 = { s: 'it\\'s', at: d'2026-12-01T08:00:00Z', wait: 1h30m, short: 30s, long: 90m, ref: jobs:1, nested: { list: ['x', 2], }, }"
    assert_success
    assert_equal "$(jqr '.[0].s' "$output")" "it's"
    assert_equal "$(jqr '.[0] | [.at, .wait, .short, .long, .ref] | join(" ")' "$output")" "2026-12-01T08:00:00Z 1h30m 30s 1h30m jobs:1"
    assert_equal "$(jqc '.[0].nested' "$output")" '{"list":["x",2]}'
}

@test "literal: string record keys are quoted unless plain identifiers" {
    sql "DEFINE QUEUE reclaim TIMEOUT 1m" >/dev/null
    run --separate-stderr sql "CREATE reclaim:'bucket/key' = {}; CREATE reclaim:plain = {}; CREATE reclaim:'with space' = {}"
    assert_success
    assert_line -n 0 "[{\"id\":\"reclaim:'bucket/key'\"}]"
    assert_line -n 1 '[{"id":"reclaim:plain"}]'
    assert_line -n 2 "[{\"id\":\"reclaim:'with space'\"}]"
    run sql "SELECT * FROM reclaim:'bucket/key'; CLAIM reclaim:'bucket/key'; RELEASE reclaim:'bucket/key'"
    assert_success
    assert_line -n 0 "[{\"id\":\"reclaim:'bucket/key'\"}]"
    assert_line -n 2 "[{\"attempts\":1,\"id\":\"reclaim:'bucket/key'\"}]"
}

@test "literal: content that does not parse is a ParseError and writes nothing" {
    sql "DEFINE COLLECTION notes" >/dev/null
    run --separate-stderr sql "CREATE notes:1 = { a: "
    assert_error ParseError
    run sql "SELECT * FROM notes"
    assert_output '[]'
}

# ---------------------------------------------------------------------------
# Several processes on one store
# ---------------------------------------------------------------------------

make_hundred() {
    local i stmts=""
    for i in $(seq 1 100); do stmts+="CREATE jobs:$i = { n: $i };"; done
    sql "DEFINE QUEUE jobs TIMEOUT 5m; $stmts" >/dev/null || fail "could not create 100 records"
}

@test "processes: two parallel CLAIM 50 FROM a queue of 100 take 100 distinct records" {
    make_hundred
    local a="$BATS_TEST_TMPDIR/a" b="$BATS_TEST_TMPDIR/b"
    sql "CLAIM 50 FROM jobs" >"$a" 2>&1 &
    local pa=$!
    sql "CLAIM 50 FROM jobs" >"$b" 2>&1 &
    local pb=$!
    wait "$pa" || fail "the first claimer failed: $(cat "$a")"
    wait "$pb" || fail "the second claimer failed: $(cat "$b")"
    assert_equal "$(jq -r 'length' "$a")" 50
    assert_equal "$(jq -r 'length' "$b")" 50
    assert_equal "$(jq -r '.[].id' "$a" "$b" | sort -u | wc -l)" 100
    run sql "CLAIM FROM jobs"
    assert_output '[]'
}

@test "processes: four workers claiming one at a time until empty take every record exactly once" {
    make_hundred
    local w pids=""
    for w in 1 2 3 4; do
        (
            out="$BATS_TEST_TMPDIR/worker$w"
            : >"$out"
            while :; do
                if ! line=$(sql_fast "CLAIM FROM jobs" 2>&1); then
                    echo "ERROR $line" >>"$out"
                    exit 1
                fi
                [ "$line" = "[]" ] && break
                jq -r '.[].id' <<<"$line" >>"$out"
            done
        ) &
        pids+=" $!"
    done
    local pid failed=0
    for pid in $pids; do wait "$pid" || failed=1; done
    [ "$failed" -eq 0 ] || fail "a worker failed: $(grep -h ERROR "$BATS_TEST_TMPDIR"/worker*)"
    assert_equal "$(cat "$BATS_TEST_TMPDIR"/worker* | wc -l)" 100
    assert_equal "$(cat "$BATS_TEST_TMPDIR"/worker* | sort -u | wc -l)" 100
    run sql "SELECT * FROM jobs WHERE attempts != 1"
    assert_output '[]'
}

@test "processes: a store opened by several queuefs-sql at once stays consistent for writes" {
    sql "DEFINE QUEUE jobs TIMEOUT 5m" >/dev/null
    local w pids=""
    for w in 1 2 3 4; do
        (
            for i in 1 2 3 4 5 6 7 8 9 10; do sql_fast "CREATE jobs = { w: $w }" >/dev/null || exit 1; done
        ) &
        pids+=" $!"
    done
    local pid
    for pid in $pids; do wait "$pid" || fail "a writer failed"; done
    run sql "SELECT * FROM jobs"
    assert_equal "$(jqr 'length' "$output")" 40
    assert_equal "$(jqr '[.[].id] | unique | length' "$output")" 40
    run sql "CREATE jobs = {}"
    assert_output '[{"id":"jobs:41"}]'
}

@test "streaming: SELECT * of 200,000 records prints them all, in order, holding little more than the store's pages" {
    python3 -c '
pad = "x" * 400
print("DEFINE COLLECTION big; BEGIN;")
for i in range(1, 200001):
    print("CREATE big = { n: %d, pad: \"%s\" };" % (i, pad))
print("COMMIT;")' | sql_fast >/dev/null || fail "could not fill big"
    # On a sanitizer build, ASan's quarantine of freed memory is kept small.
    export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=1"
    # shellcheck disable=SC2016 # the script's $ are its own
    run --separate-stderr bash -c '/usr/bin/time -f "%M" "$QUEUEFS_SQL" "$STORE" "SELECT * FROM big;" |
        python3 -c "
import json, sys
r = json.loads(sys.stdin.readline())
print(len(r), [x[\"n\"] for x in r] == list(range(1, 200001)), len({x[\"id\"] for x in r}), sys.stdin.read() == \"\")"'
    assert_success
    assert_output "200000 True 200000 True"
    # Its peak resident size counts the store's pages it read (LMDB's map;
    # on PostgreSQL a page of rows at a time), not the records it printed.
    peak=$(tail -n 1 <<<"$stderr")
    map=0
    on_postgresql || map=$(($(stat -c %s "$STORE/data.mdb") / 1024))
    echo "# queuefs-sql peak ${peak} KiB, the store's data file ${map} KiB" >&3
    [ "$peak" -lt $((map + 65536)) ] || fail "queuefs-sql peaked at $peak KiB for a $map KiB store"
}

@test "streaming: UPDATE of a whole table answers every changed record, in order, once, in many pieces; one transaction all the same" {
    python3 -c '
pad = "x" * 400
print("DEFINE QUEUE big TIMEOUT 30s; BEGIN;")
for i in range(1, 20001):
    print("CREATE big = { n: %d, pad: \"%s\" };" % (i, pad))
print("COMMIT;")' | sql_fast >/dev/null || fail "could not fill big"
    # shellcheck disable=SC2016 # the script's $ are its own
    run --separate-stderr bash -c '"$QUEUEFS_SQL" "$STORE" "UPDATE big MERGE { m: 1 } WHERE n > 10000; SELECT n FROM big WHERE n = 10001;" |
        python3 -c "
import json, sys
r = json.loads(sys.stdin.readline())
print(len(r), [x[\"n\"] for x in r] == list(range(10001, 20001)), all(x[\"m\"] == 1 and len(x[\"pad\"]) == 400 for x in r))
print(sys.stdin.read().strip())"'
    assert_success
    assert_line -n 0 "10000 True True"
    assert_line -n 1 '[{"n":10001}]'
    # A refused write in the middle of the table changes nothing at all.
    run --separate-stderr sql "UPDATE big MERGE { attempts: 9 } WHERE n > 5000;"
    assert_error QueueFieldIsTheEngines
    assert_equal "$(sql 'SELECT n FROM big WHERE m = 1' | jq length)" 10000
    assert_equal "$(sql 'SELECT n FROM big WHERE attempts = 9' | jq length)" 0
}
