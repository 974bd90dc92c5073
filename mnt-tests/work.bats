#!/usr/bin/env bats
# work.bats — queuefs-work against a real mount: what COMMAND sees, how a
# record ends (finished, released with backoff, lost after a lapse), holds
# kept alive past TIMEOUT, several workers at once, stopping on SIGTERM or
# SIGINT, batches (--batch N), and records re-armed on a calendar
# (--rearm EXPR).
#
#   QUEUEFS_BUILD=/path/to/build bats mnt-tests/work.bats
#
# Needs what mount.bats needs.

# The commands given to bash -c are single-quoted on purpose: they expand
# $D and the QUEUEFS_* variables themselves; bats' run sets $stderr.
# shellcheck disable=SC2016,SC2154

load mount_helpers

QUEUEFS_WORK="$QUEUEFS_BUILD/queuefs-work"
export QUEUEFS_WORK

# queuefs-work processes this test started.
WORK_PIDS=()

eval "$(declare -f setup | sed '1s/^setup/mount_setup/')"
eval "$(declare -f teardown | sed '1s/^teardown/mount_teardown/')"

setup() {
    mount_setup
    [ -x "$QUEUEFS_WORK" ] || fail "no $QUEUEFS_WORK"
    D="$BATS_TEST_TMPDIR/d"
    LOG="$BATS_TEST_TMPDIR/work.log"
    OUT="$BATS_TEST_TMPDIR/work.out"
    mkdir -p "$D"
    export D
}

# Stops what a failed test left running, then unmounts.
teardown() {
    local p
    for p in "${WORK_PIDS[@]}"; do
        alive "$p" || continue
        kill -TERM "$p" 2>/dev/null
        wait_gone "$p" || kill_tree "$p"
    done
    WORK_PIDS=()
    mount_teardown
}

# kill_tree PID — SIGKILL to PID and every process below it.
kill_tree() {
    local c
    for c in $(children_of "$1"); do kill_tree "$c"; done
    kill -KILL "$1" 2>/dev/null || true
}

children_of() {
    local s
    for s in /proc/[0-9]*/stat; do
        awk -v p="$1" '{ sub(/.*\) /, ""); if ($2 == p) { split(FILENAME, f, "/"); print f[3] } }' "$s" 2>/dev/null
    done
}

# start_work ARG… — queuefs-work ARG… in the background (stdout in $OUT,
# stderr in $LOG); WPID is its pid.
start_work() {
    "$QUEUEFS_WORK" "$@" >"$OUT" 2>"$LOG" 3>&- &
    WPID=$!
    WORK_PIDS+=("$WPID")
}

# stop_work [PID] — SIGTERM to PID (default $WPID), which must exit 0
# within 10 s.
stop_work() {
    local pid=${1:-$WPID} st=0
    kill -TERM "$pid"
    wait_gone "$pid" || fail "queuefs-work still runs 10 s after SIGTERM; log: $(cat "$LOG")"
    wait "$pid" || st=$?
    [ "$st" -eq 0 ] || fail "queuefs-work exited $st after SIGTERM; log: $(cat "$LOG")"
}

# poll SECONDS CMD… — true once CMD… succeeds, polling every 0.05 s.
poll() {
    local n=$(($1 * 20)) i
    shift
    for ((i = 0; i < n; i++)); do
        "$@" && return 0
        sleep 0.05
    done
    return 1
}

log_has() {
    [ "$(grep -cE -- "$1" "$LOG")" -ge "${2:-1}" ]
}

# wait_log REGEX [N] — waits (20 s at most) for N log lines matching REGEX.
wait_log() {
    poll 20 log_has "$@" || fail "no${2:+ $2} log line(s) matching /$1/ in 20 s; log: $(cat "$LOG")"
}

# The one log line for record ID's attempt N.
log_line() {
    grep -E -- " id=$1 attempt=$2 " "$LOG"
}

record() {
    cat "$M/jobs/$1"
}

# A mount with the queue jobs, TIMEOUT and NOT BEFORE as given (e.g.
# "TIMEOUT 30s NOT BEFORE due"), and the records CREATE'd by the rest.
mount_queue() {
    sql "DEFINE QUEUE jobs $1;" >/dev/null || fail "could not define jobs"
    shift
    local s
    for s in "$@"; do
        sql "CREATE jobs:$s;" >/dev/null || fail "could not CREATE jobs:$s"
    done
    mount_fs
}

# A command that marks it started ($D/started.ID.ATTEMPT) and waits (30 s
# at most) for $D/go, or $D/$2, then exits $1 (default 0).
WAIT_GO='touch "$D/started.$QUEUEFS_ID.$QUEUEFS_ATTEMPTS"; for i in $(seq 600); do [ -e "$D/${2:-go}" ] && exit "${1:-0}"; sleep 0.05; done; exit 99'

# ---------------------------------------------------------------------------
# Usage and refusals
# ---------------------------------------------------------------------------

@test "usage: -h and --help print the usage on stdout and exit 0" {
    for opt in -h --help; do
        run --separate-stderr "$QUEUEFS_WORK" "$opt"
        assert_success
        assert_line --index 0 --partial "usage: queuefs-work [-n WORKERS]"
        assert_output --partial "--grace DURATION"
        assert_stderr_empty
    done
}

@test "usage: bad arguments exit 2 with a message and a pointer to --help" {
    mount_queue "TIMEOUT 30s"
    # args | what the message says
    while IFS='|' read -r args want; do
        eval "set -- $args"
        run --separate-stderr "$QUEUEFS_WORK" "$@"
        [ "$status" -eq 2 ] || fail "queuefs-work $args: exit $status, want 2"
        [[ $stderr == *"$want"* ]] || fail "queuefs-work $args: stderr '$stderr' does not say '$want'"
        [[ $stderr == *"--help"* ]] || fail "queuefs-work $args: stderr does not point to --help"
        assert_output ""
    done <<'EOF'
| no queue given
"$M/jobs" | expected -- and a command
"$M/jobs" -- | no command given
"$M/jobs" true | expected -- and a command
-n 0 "$M/jobs" -- true | -n wants a number of workers
-n x "$M/jobs" -- true | -n wants a number of workers
--workers=-1 "$M/jobs" -- true | --workers wants a number of workers
-b 5 "$M/jobs" -- true | -b wants a duration
--backoff-cap=1.5s "$M/jobs" -- true | --backoff-cap wants a duration
-g soon "$M/jobs" -- true | -g wants a duration
-t | option -t needs a value
-x "$M/jobs" -- true | unknown option -x
--batch 0 "$M/jobs" -- true | --batch wants a number of records (1 to 1000)
--batch=1001 "$M/jobs" -- true | --batch wants a number of records (1 to 1000)
--batch x "$M/jobs" -- true | --batch wants a number of records
--batch | option --batch needs a value
--rearm "0 3 * * *'" "$M/jobs" -- true | --rearm wants a cron expression
--rearm "" "$M/jobs" -- true | --rearm wants a cron expression
--rearm-zone UTC "$M/jobs" -- true | --rearm-zone needs --rearm
--rearm "* * * * *" --rearm-zone ../etc "$M/jobs" -- true | --rearm-zone wants an IANA time zone
--rearm "* * * * *" --batch 2 "$M/jobs" -- true | cannot be given with --batch
EOF
}

@test "usage: a directory that is not a queue of a queuefs mount is refused with exit 2" {
    mount_queue "TIMEOUT 30s"
    mkdir "$M/notes"                              # a collection
    mkdir -p "$BATS_TEST_TMPDIR/plain/jobs"       # not a mount at all
    # queue | what the message says
    while IFS='|' read -r q want; do
        q=$(eval "echo $q")
        run --separate-stderr "$QUEUEFS_WORK" "$q" -- true
        [ "$status" -eq 2 ] || fail "queuefs-work $q: exit $status, want 2"
        [[ $stderr == "queuefs-work: $q: "*"$want"* ]] || fail "queuefs-work $q: stderr '$stderr' does not say '$want'"
    done <<'EOF'
$BATS_TEST_TMPDIR/plain/jobs|not a queue of a queuefs mount
$BATS_TEST_TMPDIR/nowhere/jobs|not a queue of a queuefs mount
$M|not a queue of a queuefs mount
$M/notes|a collection, not a queue
$M/nope|no queue nope on the queuefs mount
EOF
    assert_equal "$(count_records notes)" 0
}

@test "timeout: the queue's TIMEOUT is read through ctl and a hold is touched every third of it" {
    # TIMEOUT | touch interval the start line names
    while IFS='|' read -r timeout want; do
        sql "DEFINE QUEUE q$((++n)) TIMEOUT $timeout;" >/dev/null
        cases+=("q$n|$timeout|$want")
    done <<'EOF'
30s|10s
1m30s|30s
500ms|166ms
2h|40m
1d|8h
EOF
    mount_fs
    for c in "${cases[@]}"; do
        IFS='|' read -r q timeout want <<<"$c"
        start_work "$M/$q" -- true
        wait_log "starts 1 worker"
        assert_equal "$(grep -c "on $M/$q (TIMEOUT $timeout, touching holds every $want; " "$LOG")" 1
        stop_work
    done
    start_work -t 0 "$M/q1" -- true
    wait_log "starts 1 worker"
    log_has "never touching holds" || fail "-t 0 still touches: $(cat "$LOG")"
    stop_work
}

# ---------------------------------------------------------------------------
# What COMMAND sees
# ---------------------------------------------------------------------------

@test "command: the record's JSON on stdin, QUEUEFS_* in the environment, stdout passed through" {
    mount_queue "TIMEOUT 30s" "7 = { url: 'a' }"
    start_work "$M/jobs" -- bash -c 'cat >"$D/stdin"; env | grep -E "^QUEUEFS_(ID|ATTEMPTS|HOLD|RECORD|QUEUE|WORKER)=" | sort >"$D/env"; echo "ran $QUEUEFS_ID"'
    wait_log "id=7 attempt=1 outcome=finished"
    json=$(cat "$D/stdin")
    assert_equal "$(jqr .id "$json")" "jobs:7"
    assert_equal "$(jqr .url "$json")" "a"
    assert_equal "$(jqr .attempts "$json")" 1
    assert_equal "$(jqr .hold "$json")" 1
    [ -n "$(jqr '.claimed_until | strings' "$json")" ] || fail "no claimed_until in $json"
    assert_equal "$(cat "$D/env")" "QUEUEFS_ATTEMPTS=1
QUEUEFS_HOLD=1
QUEUEFS_ID=7
QUEUEFS_QUEUE=$M/jobs
QUEUEFS_RECORD=jobs:7
QUEUEFS_WORKER=1"
    stop_work
    assert_equal "$(cat "$OUT")" "ran 7"
}

@test "command: QUEUEFS_ID is the record's file name for every kind of identity" {
    # CREATE key | file name
    keys=() names=()
    while IFS='|' read -r key name; do
        keys+=("$key") names+=("$name")
    done <<'EOF'
7|7
'a/b'|a%2Fb
'007'|%3007
'-3'|%2D3
claim|%63laim
'held'|%68eld
'done'|%64one
'.hid'|%2Ehid
'x@y~z'|x%40y%7Ez
'100%'|100%25
'it\'s'|it's
'back\\slash'|back\slash
'a b'|a b
'tab\tx'|tab%09x
'héllo'|héllo
EOF
    sql "DEFINE QUEUE jobs TIMEOUT 30s;" >/dev/null
    for k in "${keys[@]}"; do sql "CREATE jobs:$k = {};" >/dev/null || fail "CREATE jobs:$k"; done
    mount_fs
    # The command finishes a record only when QUEUEFS_ID names its file.
    start_work "$M/jobs" -- bash -c 'printf "%s\n" "$QUEUEFS_ID" >>"$D/ids"; [ "$(jq -r .id "$QUEUEFS_QUEUE/$QUEUEFS_ID")" = "$QUEUEFS_RECORD" ]'
    wait_log "outcome=" "${#keys[@]}"
    stop_work
    assert_equal "$(sort "$D/ids")" "$(printf '%s\n' "${names[@]}" | sort)"
    assert_equal "$(grep -c outcome=finished "$LOG")" "${#keys[@]}"
    assert_equal "$(count_records jobs)" 0
}

# ---------------------------------------------------------------------------
# How a record ends
# ---------------------------------------------------------------------------

@test "finish: exit status 0 deletes the record through held/ID~N and logs it" {
    mount_queue "TIMEOUT 30s" "7 = { url: 'a' }" "8 = { url: 'b' }"
    start_work "$M/jobs" -- true
    wait_log "outcome=finished" 2
    stop_work
    assert_equal "$(count_records jobs)" 0
    line=$(log_line 7 1)
    [[ $line =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z\ worker=1\ id=7\ attempt=1\ outcome=finished\ status=0\ duration=[0-9]+\.[0-9]{3}s$ ]] ||
        fail "unexpected log line: $line"
    assert_equal "$(jqr .deletes "$(cat "$M/jobs/stats")")" 2
}

@test "release: a failure releases NOT BEFORE base·2^(attempts-1), capped, and logs the status" {
    # options | attempts before | exit status | delay in seconds
    cases=()
    while IFS='|' read -r opts before st delay; do cases+=("$opts|$before|$st|$delay"); done <<'EOF'
-b 10s|0|1|10
-b 10s|2|3|40
--backoff=10s --backoff-cap=25s|2|1|25
-b 1m -c 1h|7|42|3600
-b 1500ms|1|1|3
EOF
    mount_fs
    n=0
    for c in "${cases[@]}"; do
        IFS='|' read -r opts before st delay <<<"$c"
        q=q$((++n))
        sql "DEFINE QUEUE $q TIMEOUT 30s NOT BEFORE due; CREATE $q:1 = {};" >/dev/null
        for ((i = 0; i < before; i++)); do sql "CLAIM $q:1; RELEASE $q:1;" >/dev/null; done
        : >"$LOG"
        t0=$(date +%s)
        # shellcheck disable=SC2086
        start_work $opts "$M/$q" -- sh -c "exit $st"
        wait_log "outcome=released"
        t1=$(date +%s)
        stop_work
        line=$(grep outcome= "$LOG")
        want="worker=1 id=1 attempt=$((before + 1)) outcome=released status=$st duration="
        [[ $line == *" $want"*" delay="* ]] || fail "case $c: log line '$line' lacks '$want … delay='"
        json=$(cat "$M/$q/1")
        assert_equal "$(jqr .attempts "$json")" $((before + 1))
        [ "$(jqr '.claimed_until' "$json")" = null ] || fail "case $c: still held: $json"
        due=$(epoch_of "$(jqr .due "$json")")
        [ "$due" -ge $((t0 + delay - 1)) ] && [ "$due" -le $((t1 + delay + 1)) ] ||
            fail "case $c: due $due is not $delay s after [$t0, $t1]"
    done
}

@test "release: without NOT BEFORE a failure keeps the hold, touched, for its backoff, then releases it" {
    # A backoff longer than TIMEOUT: the hold must be touched to last.
    mount_queue "TIMEOUT 2s ATTEMPTS 5" "7 = {}"
    start_work -b 3s "$M/jobs" -- bash -c '
        if [ "$QUEUEFS_ATTEMPTS" -ge 2 ]; then cat >"$D/second"; exit 0; fi
        echo "not yet" >&2; touch "$D/failed.$QUEUEFS_ATTEMPTS"; exit 1'
    wait_log "starts 1 worker.*no NOT BEFORE: a failed record is held, touched, for its backoff"
    poll 10 test -e "$D/failed.1" || fail "the command did not run; log: $(cat "$LOG")"
    # The failed record is still held, by its first claim, during the backoff.
    json=$(record 7)
    assert_equal "$(jqr .attempts "$json")" 1
    [ "$(jqr .claimed_until "$json")" != null ] || fail "released at once: $json"
    wait_log "id=7 attempt=2 outcome=finished"
    stop_work
    line=$(log_line 7 1)
    [[ $line == *" outcome=released status=1 duration="*" delay=3s" ]] || fail "unexpected log line: $line"
    assert_equal "$(jq -r .last_error "$D/second")" "exit 1: not yet"
    assert_equal "$(count_records jobs)" 0
    stats=$(cat "$M/jobs/stats")
    assert_equal "$(jqr .claims "$stats")" 2
    assert_equal "$(jqr .lapses "$stats")" 0
}

@test "release: SIGTERM during a held backoff releases the record at once" {
    mount_queue "TIMEOUT 30s" "7 = {}"
    start_work -b 1h "$M/jobs" -- bash -c 'echo "disk full" >&2; touch "$D/failed.$QUEUEFS_ATTEMPTS"; exit 1'
    poll 10 test -e "$D/failed.1" || fail "the command did not run; log: $(cat "$LOG")"
    stop_work
    line=$(log_line 7 1)
    [[ $line == *" outcome=released status=1 "* ]] || fail "unexpected log line: $(cat "$LOG")"
    json=$(record 7)
    assert_equal "$(jqr .attempts "$json")" 1
    assert_equal "$(jqr .last_error "$json")" "exit 1: disk full"
    assert_equal "$(jqr .claimed_until "$json")" null
}

@test "cancel: rm of a record while its command runs stops the command and logs outcome=cancelled" {
    mount_queue "TIMEOUT 30s" "7 = {}" "8 = {}"
    start_work -g 1s "$M/jobs" -- bash -c '
        trap "touch \"\$D/term.\$QUEUEFS_ID\"; exit 3" TERM
        touch "$D/started.$QUEUEFS_ID"
        [ "$QUEUEFS_ID" = 8 ] && exit 0
        sleep 60 & wait'
    poll 10 test -e "$D/started.7" || fail "the command did not start; log: $(cat "$LOG")"
    rm "$M/jobs/7"
    # Noticed within a second or two: the command gets SIGTERM.
    poll 5 test -e "$D/term.7" || fail "the command was not stopped; log: $(cat "$LOG")"
    wait_log "id=7 attempt=1 outcome=cancelled status=3"
    # The worker goes on with the next record.
    wait_log "id=8 attempt=1 outcome=finished"
    stop_work
    assert_equal "$(count_records jobs)" 0
}

@test "release: a failure's reason is its exit status or signal and the last line of its stderr, which still reaches the worker's stderr" {
    mount_queue "TIMEOUT 30s ATTEMPTS 2 NOT BEFORE due" "7 = {}"
    start_work -b 100ms "$M/jobs" -- bash -c '
        echo "fetching" >&2
        if [ "$QUEUEFS_ATTEMPTS" -eq 1 ]; then echo "curl: (22) HTTP 503" >&2; echo >&2; exit 3; fi
        kill -KILL $$'
    poll 10 test -e "$M/jobs/dead/7" || fail "q:7 did not die; log: $(cat "$LOG")"
    stop_work
    assert_equal "$(jq -c '[.errors[] | [.attempt, .error]]' "$M/jobs/dead/7")" \
        '[[1,"exit 3: curl: (22) HTTP 503"],[2,"signal KILL: fetching"]]'
    assert_equal "$(grep -c '^curl: (22) HTTP 503$' "$LOG")" 1
    assert_equal "$(grep -c '^fetching$' "$LOG")" 2
}

@test "release: a command that cannot be run is a failure (status 127)" {
    mount_queue "TIMEOUT 30s NOT BEFORE due" "7 = {}"
    start_work "$M/jobs" -- "$BATS_TEST_TMPDIR/no-such-command"
    wait_log "id=7 attempt=1 outcome=released status=127"
    stop_work
    assert_equal "$(jqr .attempts "$(record 7)")" 1
}

# ---------------------------------------------------------------------------
# Holds: kept alive by touch, and lost when they lapse
# ---------------------------------------------------------------------------

@test "hold: a command that runs past TIMEOUT keeps its hold: nobody else can claim the record" {
    # TIMEOUT 2s: a touch every 0.67 s has more than a second to spare even
    # on a loaded machine under the sanitizers.
    mount_queue "TIMEOUT 2s NOT BEFORE due" "7 = {}"
    start_work "$M/jobs" -- bash -c "$WAIT_GO"
    poll 10 test -e "$D/started.7.1" || fail "the command did not start; log: $(cat "$LOG")"
    first=$(epoch_of "$(jqr .claimed_until "$(record 7)")")
    # For two TIMEOUTs past the first deadline, the record stays held.  Each
    # touch moves its deadline: the record is read every 0.05 s meanwhile.
    while [ "$(date +%s)" -le $((first + 4)) ]; do
        got=$(cat "$M/jobs/claim")
        [ -z "$got" ] || fail "another claim got the record: $got"
        record 7 >>"$D/seen"
        echo >>"$D/seen"
        sleep 0.05
    done
    assert_equal "$(jq -s 'map(.attempts) | unique' "$D/seen" | jq -c .)" '[1]'
    [ "$(epoch_of "$(jqr .claimed_until "$(record 7)")")" -gt "$first" ] || fail "the hold was never extended"
    touch "$D/go"
    wait_log "id=7 attempt=1 outcome=finished status=0"
    stop_work
    assert_equal "$(count_records jobs)" 0
    # Every third of TIMEOUT: about 1.5 deadlines a second for the 4 to 6 s
    # the record was read, each read many times; never in a busy loop (a
    # deadline for every read).
    n=$(jq -s 'map(.claimed_until) | unique | length' "$D/seen")
    reads=$(jq -s length "$D/seen")
    [ "$n" -ge 6 ] && [ "$n" -le 15 ] && [ "$reads" -ge $((2 * n)) ] ||
        fail "$n deadlines of held/7~1 in $reads reads over about 5 s"
}

# lost_hold STATUS — TIMEOUT 1s: worker A (-t 0, never touching) lets its
# hold lapse while its command runs; worker B claims the record (attempt 2)
# and keeps it; then A's command exits STATUS.
lost_hold() {
    mount_queue "TIMEOUT 1s NOT BEFORE due" "7 = {}"
    start_work -t 0 "$M/jobs" -- bash -c "$WAIT_GO" _ "$1" go
    A=$WPID A_LOG=$LOG
    poll 10 test -e "$D/started.7.1" || fail "A's command did not start; log: $(cat "$LOG")"
    LOG=$BATS_TEST_TMPDIR/b.log OUT=$BATS_TEST_TMPDIR/b.out start_work -g 1s "$M/jobs" -- bash -c "$WAIT_GO" _ 0 go.b
    B=$WPID B_LOG=$BATS_TEST_TMPDIR/b.log
    poll 10 test -e "$D/started.7.2" || fail "B never got the record after A's hold lapsed; log: $(cat "$B_LOG")"
    touch "$D/go"
    wait_log "id=7 attempt=1 outcome=lost status=$1 "
    stop_work "$A"
    # B's hold is untouched: the record is there, held, attempt 2, no delay.
    json=$(record 7)
    assert_equal "$(jqr .attempts "$json")" 2
    [ "$(jqr .claimed_until "$json")" != null ] || fail "B's hold is gone: $json"
    [ "$(jqr .due "$json")" = null ] || fail "the lost worker set a delay: $json"
    assert_equal "$(ls "$M/jobs/held")" "7~2"
    assert_equal "$(grep -c outcome= "$A_LOG")" 1
    # B finishes it.
    touch "$D/go.b"
    LOG=$B_LOG wait_log "id=7 attempt=2 outcome=finished status=0"
    LOG=$B_LOG stop_work "$B"
    assert_equal "$(count_records jobs)" 0
}

@test "hold: a worker whose hold lapsed logs a lost hold and does not delete the new holder's record" {
    lost_hold 0
}

@test "hold: a worker whose hold lapsed logs a lost hold and does not release the new holder's record" {
    lost_hold 1
}

@test "hold: a worker whose record was deleted, created again and claimed by another logs a lost hold and leaves the new hold alone" {
    mount_queue "TIMEOUT 30s" "7 = {}"
    start_work -t 0 "$M/jobs" -- bash -c "$WAIT_GO" _ 0 go
    poll 10 test -e "$D/started.7.1" || fail "the command did not start; log: $(cat "$LOG")"
    # While the worker runs, the record is finished elsewhere, created
    # again and claimed: attempt 1 again, but a hold of another number.
    rm "$M/jobs/7"
    sql "CREATE jobs:7 = { again: true }; CLAIM jobs:7;" >/dev/null
    json=$(record 7)
    assert_equal "$(jqr .attempts "$json")" 1
    touch "$D/go"
    wait_log "id=7 attempt=1 outcome=lost status=0 "
    stop_work
    assert_equal "$(record 7)" "$json"
    assert_equal "$(jqr .hold "$json")" 2
    assert_equal "$(ls "$M/jobs/held")" "7~2"
}

# ---------------------------------------------------------------------------
# Several workers
# ---------------------------------------------------------------------------

@test "workers: -n 3 runs three commands at once" {
    mount_queue "TIMEOUT 30s" "1 = {}" "2 = {}" "3 = {}" "4 = {}"
    # Each command waits until three are running, then exits 0; one that
    # waits in vain exits 1.
    start_work -n 3 "$M/jobs" -- bash -c '
        touch "$D/running.$QUEUEFS_ID"
        for i in $(seq 400); do
            [ "$(ls "$D" | grep -c "^running\.")" -ge 3 ] && { echo "$QUEUEFS_WORKER" >>"$D/workers"; exit 0; }
            sleep 0.05
        done
        exit 1'
    wait_log "outcome=" 4
    stop_work
    assert_equal "$(grep -c "outcome=finished status=0" "$LOG")" 4
    assert_equal "$(sort -u "$D/workers" | tr '\n' ' ')" "1 2 3 "
    assert_equal "$(count_records jobs)" 0
}

# ---------------------------------------------------------------------------
# Stopping
# ---------------------------------------------------------------------------

@test "stop: SIGTERM while a command runs: it finishes, its record is finished, nothing more is claimed, exit 0" {
    mount_queue "TIMEOUT 30s" "1 = {}" "2 = {}"
    start_work -g 30s "$M/jobs" -- bash -c "$WAIT_GO"
    poll 10 test -e "$D/started.1.1" || fail "the command did not start; log: $(cat "$LOG")"
    kill -TERM "$WPID"
    wait_log "worker=1 stops claiming; id=1 has 30s to finish"
    touch "$D/go"
    wait_gone "$WPID" || fail "queuefs-work still runs 10 s after its command ended; log: $(cat "$LOG")"
    st=0
    wait "$WPID" || st=$?
    assert_equal "$st" 0
    log_line 1 1 | grep -q "outcome=finished status=0" || fail "record 1 was not finished: $(cat "$LOG")"
    assert_equal "$(grep -c outcome= "$LOG")" 1
    assert_equal "$(sql 'SELECT id FROM jobs' | jq -c 'map(.id)')" '["jobs:2"]'
    assert_equal "$(jqr .attempts "$(record 2)")" null
    assert_equal "$(jqr .claims "$(cat "$M/jobs/stats")")" 1
}

@test "stop: SIGTERM and a command that outlives the grace: it is killed, its record released, exit 0" {
    mount_queue "TIMEOUT 30s NOT BEFORE due" "1 = {}"
    start_work -g 1s "$M/jobs" -- bash -c 'sleep 60 & echo $! >"$D/child"; echo $$ >"$D/pid"; touch "$D/started.$QUEUEFS_ID.$QUEUEFS_ATTEMPTS"; wait'
    poll 10 test -e "$D/started.1.1" || fail "the command did not start; log: $(cat "$LOG")"
    kill -TERM "$WPID"
    wait_gone "$WPID" || fail "queuefs-work still runs 10 s after SIGTERM with a 1 s grace; log: $(cat "$LOG")"
    st=0
    wait "$WPID" || st=$?
    assert_equal "$st" 0
    log_line 1 1 | grep -q "outcome=killed status=143" || fail "record 1 was not killed: $(cat "$LOG")"
    # The command and its child are gone.
    wait_gone "$(cat "$D/pid")" || fail "the command still runs"
    wait_gone "$(cat "$D/child")" || fail "the command's child still runs"
    # Released at once, no delay: claimable by the next worker.
    json=$(record 1)
    assert_equal "$(jqr .attempts "$json")" 1
    assert_equal "$(jqr .claimed_until "$json")" null
    assert_equal "$(jqr .due "$json")" null
    assert_equal "$(jqr .id "$(cat "$M/jobs/claim")")" "jobs:1"
}

@test "stop: a command that answers the grace's SIGTERM with exit 0 has finished its record" {
    mount_queue "TIMEOUT 30s" "1 = {}"
    start_work -g 1s "$M/jobs" -- bash -c 'trap "exit 0" TERM; touch "$D/started.$QUEUEFS_ID.$QUEUEFS_ATTEMPTS"; sleep 60 & wait'
    poll 10 test -e "$D/started.1.1" || fail "the command did not start; log: $(cat "$LOG")"
    stop_work
    log_line 1 1 | grep -q "outcome=finished status=0" || fail "record 1 was not finished: $(cat "$LOG")"
    assert_equal "$(count_records jobs)" 0
}

# The pids of queuefs-work $WPID's workers waiting for a record: blocked
# in a request to the mount (the open of jobs/wait, which claims).
wait_readers() {
    local p
    for p in $(children_of "$WPID"); do
        [ "$(cat "/proc/$p/wchan" 2>/dev/null)" = request_wait_answer ] && echo "$p"
    done
    return 0
}

# stop_waiting SIGNAL — SIGNAL to a worker blocked in `cat jobs/wait`.
stop_waiting() {
    mount_queue "TIMEOUT 30s"
    # env restores SIGINT, which a background job of a script ignores.
    env --default-signal=INT "$QUEUEFS_WORK" -n 2 "$M/jobs" -- true >"$OUT" 2>"$LOG" 3>&- &
    WPID=$!
    WORK_PIDS+=("$WPID")
    poll 10 eval '[ "$(wait_readers | wc -l)" -eq 2 ]' || fail "the workers never waited for a record; log: $(cat "$LOG")"
    readers=$(wait_readers)
    kill "-$1" "$WPID"
    wait_gone "$WPID" || fail "queuefs-work still runs 10 s after SIG$1; log: $(cat "$LOG")"
    st=0
    wait "$WPID" || st=$?
    assert_equal "$st" 0
    for p in $readers; do wait_gone "$p" || fail "the worker waiting in jobs/wait (pid $p) still runs"; done
    sql "CREATE jobs:1 = {};" >/dev/null
    assert_equal "$(jqr .claims "$(cat "$M/jobs/stats")")" 0
    assert_equal "$(jqr .attempts "$(record 1)")" null
    ! grep -q outcome= "$LOG" || fail "a record was handled: $(cat "$LOG")"
}

@test "stop: SIGTERM while the workers wait for a record: exit 0, nothing claimed" {
    stop_waiting TERM
}

@test "stop: SIGINT (Ctrl-C) while the workers wait for a record: exit 0, nothing claimed" {
    stop_waiting INT
}

# ---------------------------------------------------------------------------
# Batches (--batch N)
# ---------------------------------------------------------------------------

# batch_command — writes $D/cmd, a command for --batch: it keeps its stdin
# in $D/in.K and the QUEUEFS_* variables queuefs-work gives in $D/env.K
# (K: 0 for the first batch, 1 for the next…), marks it started
# ($D/started.K), waits (30 s at most) for $D/go.K when $D/wait exists,
# then prints what $D/release holds (ids, one a line), writes what $D/say
# holds to stderr, and exits with what $D/status holds (default 0).
# SIGTERM: $D/term.K, exit 3.
batch_command() {
    cat >"$D/cmd" <<'EOF'
k=$(find "$D" -maxdepth 1 -name 'in.*' | wc -l)
cat >"$D/in.$k"
env | grep -E '^QUEUEFS_(ID|ATTEMPTS|HOLD|RECORD|QUEUE|WORKER|BATCH)=' | sort >"$D/env.$k"
trap 'touch "$D/term.$k"; exit 3' TERM
touch "$D/started.$k"
if [ -e "$D/wait" ]; then
    for _ in $(seq 600); do [ -e "$D/go.$k" ] && break; sleep 0.05; done
fi
[ ! -e "$D/release" ] || cat "$D/release"
[ ! -e "$D/say" ] || cat "$D/say" >&2
exit "$(cat "$D/status" 2>/dev/null || echo 0)"
EOF
}

# names DIR — the names ls lists in DIR, on one line.
names() {
    # shellcheck disable=SC2012 # what ls shows is what is checked; the names are plain
    ls "$1" | tr '\n' ' '
}

@test "batch: --batch 3 runs the command once for up to 3 records, a JSON line each on stdin; exit 0 finishes them all" {
    mount_queue "TIMEOUT 30s" "1 = {url: 'a'}" "2 = {url: 'b'}" "3 = {url: 'c'}" "4 = {url: 'd'}" \
        "5 = {url: 'e'}"
    batch_command
    start_work --batch 3 "$M/jobs" -- bash "$D/cmd"
    wait_log "outcome=finished" 5
    stop_work
    # Two batches: 1 to 3, then 4 and 5, each record with its hold.
    assert_equal "$(jq -c '[.id, .url, .attempts, (.hold > 0), (.claimed_until | type)]' "$D/in.0")" \
        '["jobs:1","a",1,true,"string"]
["jobs:2","b",1,true,"string"]
["jobs:3","c",1,true,"string"]'
    assert_equal "$(jq -c '[.id, .url]' "$D/in.1")" '["jobs:4","d"]
["jobs:5","e"]'
    [ ! -e "$D/in.2" ] || fail "a third batch ran: $(cat "$D/in.2")"
    assert_equal "$(cat "$D/env.0")" "QUEUEFS_BATCH=3
QUEUEFS_QUEUE=$M/jobs
QUEUEFS_WORKER=1"
    assert_equal "$(grep BATCH "$D/env.1")" "QUEUEFS_BATCH=2"
    # Finished: deleted, each logged on a line of its own.
    assert_equal "$(count_records jobs)" 0
    assert_equal "$(jqc '[.claims, .deletes, .releases]' "$(cat "$M/jobs/stats")")" '[5,5,0]'
    line=$(log_line 2 1)
    [[ $line =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z\ worker=1\ id=2\ attempt=1\ outcome=finished\ status=0\ duration=[0-9]+\.[0-9]{3}s$ ]] ||
        fail "unexpected log line: $line"
    log_has "starts 1 worker\(s\) claiming up to 3 records at once on $M/jobs" ||
        fail "the start line does not say --batch: $(cat "$LOG")"
}

@test "batch: the ids the command prints are released with their backoff and a reason, the rest finished" {
    mount_queue "TIMEOUT 30s NOT BEFORE due" "1 = {}" "2 = {}" "'a b' = {}" "3 = {}"
    batch_command
    # An id as the JSON writes it, bare or as a JSON string; a line that
    # names no record of the batch is passed over.
    printf '%s\n' 'jobs:2' "\"jobs:'a b'\"" 'jobs:9' >"$D/release"
    echo "2 and 'a b' are for later" >"$D/say"
    t0=$(date +%s)
    start_work -b 1h --batch 4 "$M/jobs" -- bash "$D/cmd"
    wait_log "outcome=" 4
    t1=$(date +%s)
    stop_work
    assert_equal "$(sql 'SELECT id FROM jobs' | jq -c 'map(.id)')" "[\"jobs:2\",\"jobs:'a b'\"]"
    for id in 2 "'a b'"; do
        json=$(sql "SELECT * FROM jobs:$id" | jq -c '.[0]')
        assert_equal "$(jqc '[.attempts, .claimed_until, .last_error]' "$json")" \
            "[1,null,\"exit 0, named on stdout: 2 and 'a b' are for later\"]"
        due=$(epoch_of "$(jqr .due "$json")")
        [ "$due" -ge $((t0 + 3599)) ] && [ "$due" -le $((t1 + 3601)) ] ||
            fail "jobs:$id is due $due, not an hour after [$t0, $t1]"
    done
    log_line 2 1 | grep -q " outcome=released status=0 duration=[0-9.]*s delay=1h$" ||
        fail "jobs:2 was not logged released: $(cat "$LOG")"
    log_line '"a b"' 1 | grep -q " outcome=released status=0 " ||
        fail "jobs:'a b' was not logged released: $(cat "$LOG")"
    log_line 1 1 | grep -q " outcome=finished status=0 " || fail "jobs:1 was not finished: $(cat "$LOG")"
    log_line 3 1 | grep -q " outcome=finished status=0 " || fail "jobs:3 was not finished: $(cat "$LOG")"
    log_has "ignores jobs:9 on the command's stdout" || fail "jobs:9 was not noted: $(cat "$LOG")"
}

@test "batch: a non-zero exit releases them all with the reason; without NOT BEFORE they are held, touched, for the backoff" {
    # TIMEOUT 2s: the holds must be touched to outlast it.
    mount_queue "TIMEOUT 2s NOT BEFORE due" "1 = {}" "2 = {}"
    sql "DEFINE QUEUE plain TIMEOUT 2s; CREATE plain:1 = {}; CREATE plain:2 = {};" >/dev/null
    batch_command
    echo 3 >"$D/status"
    echo "upstream down" >"$D/say"
    start_work -b 1h --batch 2 "$M/jobs" -- bash "$D/cmd"
    wait_log "outcome=" 2
    stop_work
    for id in 1 2; do
        assert_equal "$(jqc '[.attempts, .claimed_until, .last_error, (.due | type)]' "$(record "$id")")" \
            '[1,null,"exit 3: upstream down","string"]'
        log_line "$id" 1 | grep -q " outcome=released status=3 duration=[0-9.]*s delay=1h$" ||
            fail "jobs:$id was not logged released: $(cat "$LOG")"
    done
    # A queue without NOT BEFORE: the failed records stay held, by the same
    # holds, past TIMEOUT, until SIGTERM releases them at once.
    : >"$LOG"
    rm -f "$D"/in.* "$D"/started.*
    start_work -b 1h --batch 2 "$M/plain" -- bash "$D/cmd"
    poll 10 test -e "$D/started.0" || fail "the command did not run; log: $(cat "$LOG")"
    first=$(epoch_of "$(jqr .claimed_until "$(cat "$M/plain/1")")")
    while [ "$(date +%s)" -le $((first + 1)) ]; do sleep 0.2; done
    assert_equal "$(names "$M/plain/held")" \
        "$(jq -r '"\(.id | ltrimstr("plain:"))~\(.hold)"' "$D/in.0" | tr '\n' ' ')"
    assert_equal "$(jqr .lapses "$(cat "$M/plain/stats")")" 0
    ! grep -q outcome= "$LOG" || fail "released before the backoff: $(cat "$LOG")"
    stop_work
    for id in 1 2; do
        assert_equal "$(jqc '[.attempts, .claimed_until, .last_error]' "$(cat "$M/plain/$id")")" \
            '[1,null,"exit 3: upstream down"]'
        log_line "$id" 1 | grep -q " outcome=released status=3 " ||
            fail "plain:$id was not logged released: $(cat "$LOG")"
    done
}

@test "batch: a hold lost while the command runs is logged lost, and only that record is left alone" {
    mount_queue "TIMEOUT 30s" "1 = {}" "2 = {}" "3 = {}"
    batch_command
    touch "$D/wait"
    start_work --batch 3 "$M/jobs" -- bash "$D/cmd"
    poll 10 test -e "$D/started.0" || fail "the command did not start; log: $(cat "$LOG")"
    # Meanwhile jobs:2 is released and claimed again elsewhere: hold 4.
    assert_equal "$(names "$M/jobs/held")" "1~1 2~2 3~3 "
    sql "RELEASE jobs:2; CLAIM jobs:2;" >/dev/null
    json=$(record 2)
    touch "$D/go.0"
    wait_log "outcome=" 3
    stop_work
    log_line 2 1 | grep -q " outcome=lost status=0 " || fail "jobs:2 was not lost: $(cat "$LOG")"
    log_line 1 1 | grep -q " outcome=finished status=0 " || fail "jobs:1 was not finished: $(cat "$LOG")"
    log_line 3 1 | grep -q " outcome=finished status=0 " || fail "jobs:3 was not finished: $(cat "$LOG")"
    assert_equal "$(record 2)" "$json"
    assert_equal "$(names "$M/jobs")" "2 "
    assert_equal "$(names "$M/jobs/held")" "2~4 "
}

@test "batch: rm of a record while the command runs logs it cancelled; rm of all of them stops the command" {
    mount_queue "TIMEOUT 30s" "1 = {}" "2 = {}" "3 = {}"
    batch_command
    touch "$D/wait"
    start_work -g 1s --batch 2 "$M/jobs" -- bash "$D/cmd"
    poll 10 test -e "$D/started.0" || fail "the command did not start; log: $(cat "$LOG")"
    rm "$M/jobs/1"
    sleep 2 # the worker looks at its holds every second
    [ ! -e "$D/term.0" ] || fail "the command was stopped with a record of its batch left"
    touch "$D/go.0"
    wait_log "id=2 attempt=1 outcome=finished status=0"
    log_line 1 1 | grep -q " outcome=cancelled status=0 " || fail "jobs:1 was not cancelled: $(cat "$LOG")"
    # The next batch, jobs:3 alone, deleted: its command is stopped.
    poll 10 test -e "$D/started.1" || fail "the next batch did not start; log: $(cat "$LOG")"
    rm "$M/jobs/3"
    poll 5 test -e "$D/term.1" || fail "the command was not stopped; log: $(cat "$LOG")"
    wait_log "id=3 attempt=1 outcome=cancelled status=3"
    stop_work
    assert_equal "$(count_records jobs)" 0
    assert_equal "$(grep -c outcome= "$LOG")" 3
}

# The pids of the processes with MOUNT/ctl open (a --batch worker's claim).
ctl_readers() {
    local p f
    for p in /proc/[0-9]*; do
        for f in "$p"/fd/*; do
            if [ "$(readlink "$f" 2>/dev/null)" = "$M/ctl" ]; then
                echo "${p#/proc/}"
                break
            fi
        done
    done
    return 0
}

@test "batch: SIGTERM while the workers wait for records: exit 0, nothing claimed" {
    mount_queue "TIMEOUT 30s"
    start_work -n 2 --batch 10 "$M/jobs" -- true
    poll 10 eval '[ "$(ctl_readers | wc -l)" -eq 2 ]' || fail "the workers never waited for records; log: $(cat "$LOG")"
    readers=$(ctl_readers)
    stop_work
    for p in $readers; do wait_gone "$p" || fail "the claim (pid $p) still runs"; done
    sql "CREATE jobs:1 = {};" >/dev/null
    assert_equal "$(jqr .claims "$(cat "$M/jobs/stats")")" 0
    assert_equal "$(jqr .attempts "$(record 1)")" null
    ! grep -q outcome= "$LOG" || fail "a record was handled: $(cat "$LOG")"
}

@test "batch: SIGTERM in the midst of claims leaves no record held: each one claimed is finished or returned" {
    mount_queue "TIMEOUT 1h"
    local i stats
    for i in $(seq 20); do
        yes '{}' | head -n 100 >>"$M/jobs/new"
    done
    start_work -n 4 --batch 10 "$M/jobs" -- true
    poll 20 eval '[ "$(jqr .deletes "$(cat "$M/jobs/stats")")" -ge 100 ]' ||
        fail "the workers finished too little; log: $(tail -5 "$LOG")"
    stop_work
    stats=$(cat "$M/jobs/stats")
    assert_equal "$(jqr .held "$stats")" 0
    assert_equal "$(($(jqr .records "$stats") + $(jqr .deletes "$stats")))" 2000
}

# ---------------------------------------------------------------------------
# Re-arming on a calendar (--rearm)
# ---------------------------------------------------------------------------

@test "rearm: exit 0 releases the record NOT BEFORE the next instant of --rearm instead of finishing it; a failure backs off" {
    mount_queue "TIMEOUT 30s NOT BEFORE due" "1 = { job: 'tick' }" "2 = { job: 'fails' }"
    want=$(next_at UTC 03:00)
    start_work --rearm '0 3 * * *' -b 1h "$M/jobs" -- sh -c '[ "$QUEUEFS_ID" = 1 ]'
    wait_log "outcome=rearmed"
    wait_log "outcome=released"
    stop_work
    [[ $(log_line 1 1) == *" worker=1 id=1 attempt=1 outcome=rearmed status=0 duration="* ]] ||
        fail "unexpected log line: $(log_line 1 1)"
    assert_equal "$(count_records jobs)" 2
    json=$(record 1)
    assert_equal "$(epoch_of "$(jqr .due "$json")")" "$want"
    [ "$(jqr .claimed_until "$json")" = null ] || fail "jobs:1 is still held: $json"
    assert_equal "$(jqr .job "$json")" tick
    due=$(epoch_of "$(jqr .due "$(record 2)")")
    [ "$due" -gt $(($(date +%s) + 3500)) ] || fail "jobs:2 was not released with its 1h backoff"
    run ctl "CLAIM FROM jobs"
    assert_output '[]'
}

@test "rearm: --rearm-zone reads the expression in an IANA zone; a '/' step reaches the mount" {
    mount_queue "TIMEOUT 30s NOT BEFORE due" "1 = {}" "2 = {}"
    want=$(next_at Asia/Tokyo 09:30 1)
    start_work --rearm '30 9 * * mon' --rearm-zone Asia/Tokyo "$M/jobs" -- sh -c '[ "$QUEUEFS_ID" = 1 ]'
    wait_log "outcome=rearmed"
    stop_work
    assert_equal "$(epoch_of "$(jqr .due "$(record 1)")")" "$want"
    : >"$LOG"
    t0=$(date +%s)
    run ctl "DELETE jobs:2"
    start_work --rearm '*/15 * * * *' "$M/jobs" -- true
    run ctl "RETRY jobs:1 NOT BEFORE time::now()"
    wait_log "outcome=rearmed"
    stop_work
    got=$(epoch_of "$(jqr .due "$(record 1)")")
    q=$(((t0 / 900 + 1) * 900))
    [ "$got" -eq "$q" ] || [ "$got" -eq $((q + 900)) ] || fail "due $got is not the quarter after $t0"
}

@test "rearm: a queue without NOT BEFORE, a malformed expression or an unknown zone is refused at start" {
    mount_queue "TIMEOUT 30s NOT BEFORE due" "1 = {}"
    sql "DEFINE QUEUE plain TIMEOUT 30s;" >/dev/null
    # queue | options | what the message says
    while IFS='|' read -r q opts want; do
        eval "set -- $opts"
        run --separate-stderr "$QUEUEFS_WORK" "$@" "$M/$q" -- true
        [ "$status" -eq 2 ] || fail "queuefs-work $opts: exit $status, want 2"
        [[ $stderr == *"$want"* ]] || fail "queuefs-work $opts: stderr '$stderr' does not say '$want'"
    done <<'EOF'
plain|--rearm "0 3 * * *"|--rearm needs a queue that declares NOT BEFORE
jobs|--rearm "0 0 30 2 *"|it never matches
jobs|--rearm "0 3 * *"|five fields
jobs|--rearm "0 3 * * *" --rearm-zone Nowhere/Town|unknown time zone 'Nowhere/Town'
EOF
    # Nothing was claimed or released.
    json=$(record 1)
    assert_equal "$(jqc '[.attempts // 0, .due, .claimed_until]' "$json")" '[0,null,null]'
}
