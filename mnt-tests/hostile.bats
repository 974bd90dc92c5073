#!/usr/bin/env bats
# hostile.bats — queuefs against bad input: every case of the table below is
# delivered to a mounted fixture store and must meet its named error (the
# ctl error line or queuefs-sql's stderr names it; a system call gets its
# errno), leave the daemon running and answering `ls`, and leave the store
# as it was (every table, record and definition, compared through
# queuefs-sql before and after).
#
# Decisions where SPEC is silent (doc/reliability.md, "Hostile input"):
#  - a record whose content is larger than 16 MiB is TooLarge (EFBIG);
#  - a write() to ctl carries at most 1 MiB - 4 KiB of statements (the
#    kernel cuts longer ones in pieces, and only the first piece's error
#    reaches the writer): a longer one is TooLarge (EFBIG), nothing run;
#  - a table name that cannot be a directory (holding '/' or a control
#    byte, '.', '..', longer than 255 bytes, `ctl`, `metrics`) or that no
#    statement can spell (not valid UTF-8, or holding DEL) and the empty
#    record key (`jobs:''`, which no file name can stand for) are ParseError
#    (mkdir of such a name is EINVAL);
#  - a file name that is not exactly the name of an identity is EINVAL for
#    a create and ENOENT for a lookup; a rename target naming another
#    identity, or an @ suffix that is not a duration or a datetime, EINVAL.
#  - a file name longer than any identity's (4 KiB) is ENAMETOOLONG (from
#    the kernel or from queuefs); one that could be a name but stands for
#    an identity longer than 400 bytes is TooLarge (EFBIG).

load mount_helpers
load hostile_helpers

# The table: HOW ERRNO NAME INPUT…, one case a line.  HOW is how the input is
# delivered (hostile_helpers.bash: ctl sql record update new rename create
# lookup mkdir); ERRNO NAME what it must meet ("OK -" for inputs that must work,
# NAME "-" where a system call carries no name); INPUT… a bash command
# whose standard output is the input's bytes.  MiB=1048576.
cases() {
    cat <<'TABLE'
ctl    EINVAL ParseError         printf 'CLAIM 0 FROM jobs;'
ctl    EINVAL ParseError         printf 'CLAIM -1 FROM jobs;'
ctl    OK     -                  printf 'CLAIM 1000 FROM empty;'
ctl    ERANGE ClaimAboveCeiling  printf 'CLAIM 1001 FROM jobs;'
ctl    ERANGE ClaimAboveCeiling  printf 'CLAIM 9223372036854775807 FROM jobs;'
ctl    EINVAL ParseError         printf 'CLAIM 9223372036854775808 FROM jobs;'
ctl    EINVAL ParseError         printf "CREATE notes:2 = {a: 'unterminated};"
ctl    EINVAL ParseError         printf 'CREATE notes:2 = {a: "unterminated};'
ctl    EINVAL ParseError         printf 'SELECT * FROM notes; /* unterminated comment'
ctl    EINVAL ParseError         printf 'CREATE notes:2 = {a: '; rep 100000 '['; rep 100000 ']'; printf '};'
ctl    EINVAL ParseError         printf 'SELECT * FROM notes WHERE '; rep 100000 '('; printf 1; rep 100000 ')'
ctl    EINVAL ParseError         printf 'SELECT * FROM notes WHERE '; rep 50000 'NOT '; printf 'true;'
ctl    EINVAL ParseError         printf 'SELECT * FROM notes WHERE '; rep 500000 '1+'; printf '1 = 2;'
sql    EINVAL ParseError         printf 'SELECT * FROM notes WHERE '; rep 300000 'a AND '; printf 'a;'
ctl    EINVAL ParseError         printf 'CREATE notes:2 = {a: 1}\0;'
ctl    EINVAL ParseError         printf 'SELECT * FROM notes;\0CREATE notes:2 = {};'
ctl    EINVAL ParseError         printf "CREATE notes:2 = {a: '\xff'};"
ctl    EINVAL ParseError         printf "CREATE notes:2 = {a: '\xc0\xaf'};"
ctl    EINVAL ParseError         printf "CREATE notes:2 = {a: '\xed\xa0\x80'};"
ctl    EINVAL ParseError         printf "CREATE notes:2 = {a: '\xf4\x90\x80\x80'};"
ctl    EINVAL ParseError         printf 'CREATE no\xc3tes:2 = {};'
ctl    EINVAL ParseError         printf "CREATE notes:2 = {a: 'x\x01y'};"
ctl    EINVAL ParseError         printf "CREATE notes:2 = {a: 'x\x1by'};"
ctl    EINVAL ParseError         printf "CREATE notes:2 = {a: '\\\\ud800'};"
ctl    EINVAL ParseError         printf "CREATE notes:2 = {'a\\\\u0000b': 1};"
ctl    EINVAL ParseError         printf "USE CONSUMER 'a\\\\u0000b'; CREATE notes:2 = {};"
ctl    EINVAL ParseError         printf 'DEFINE QUEUE q2 TIMEOUT 99999999999y;'
ctl    EINVAL ParseError         printf 'DEFINE QUEUE q2 TIMEOUT 106752d;'
ctl    EINVAL ParseError         printf 'DEFINE QUEUE q2 TIMEOUT 292y292y;'
ctl    EINVAL ParseError         printf 'CREATE notes:2 = {a: 99999999999999999999};'
ctl    EINVAL ParseError         printf "RELEASE jobs:7 NOT BEFORE d'2263-01-01T00:00:00Z';"
ctl    EINVAL ParseError         printf "CREATE notes:2 = {t: d'1600-01-01T00:00:00Z'};"
ctl    EINVAL ParseError         printf "CREATE notes:2 = {t: d'2026-13-01T00:00:00Z'};"
ctl    EINVAL ParseError         printf "CREATE notes:2 = {t: d'2026-02-30T00:00:00Z'};"
ctl    EINVAL ParseError         printf "CREATE notes:2 = {t: d'2026-12-01T25:00:00Z'};"
ctl    EINVAL TypeError          printf "RELEASE jobs:7 NOT BEFORE 'soon';"
ctl    EINVAL ParseError         printf 'CREATE notes:2 = {a: '"'"; bytes $((1000 * 1024)) x; printf "'"'} junk;'
ctl    EINVAL ParseError         printf "CREATE notes:'' = {};"
ctl    EFBIG  TooLarge           printf "CREATE notes:'%s' = {};" "$(rep 401 k)"
ctl    EFBIG  TooLarge           printf 'CREATE notes:%s = {};' "$(rep 100000 k)"
ctl    EINVAL ParseError         printf 'DEFINE COLLECTION `a/b`;'
ctl    EINVAL ParseError         printf 'DEFINE COLLECTION `..`;'
ctl    EINVAL ParseError         printf 'DEFINE COLLECTION ctl;'
ctl    EINVAL ParseError         printf 'DEFINE COLLECTION %s;' "$(rep 4096 t)"
ctl    EINVAL ParseError         printf 'DEFINE QUEUE q2;'
ctl    EEXIST TableExists        printf 'DEFINE QUEUE jobs TIMEOUT 1s;'
ctl    ENOENT NoSuchRecord       printf 'UPDATE notes:99 = {a: 1};'
ctl    EPERM  QueueFieldIsTheEngines printf "UPDATE jobs:7 = {url: 'a', attempts: 5};"
ctl    EPERM  QueueFieldIsTheEngines printf 'UPDATE jobs:7 MERGE {hold: 1};'
ctl    EINVAL WrongKind          printf 'CLAIM FROM notes;'
ctl    EINVAL ParseError         printf 'BEGIN; CREATE notes:2 = {a: 1}; CREATE notes:3 = {a: }; COMMIT;'
ctl    EEXIST RecordExists       printf 'BEGIN; CREATE notes:2 = {a: 1}; CREATE notes:1 = {}; COMMIT;'
ctl    EFBIG  TooLarge           printf "CREATE notes:2 = {a: '"; bytes $((17 * MiB)) x; printf "'};"
sql    EINVAL ParseError         printf 'CREATE notes:2 = {a: '; rep 100000 '{a:'; rep 100000 '}'; printf '};'
sql    ERANGE ClaimAboveCeiling  printf 'CLAIM 1001 FROM jobs;'
sql    EINVAL ParseError         printf 'DEFINE QUEUE metrics;'
sql    EINVAL ParseError         printf 'DEFINE COLLECTION `a/b`;'
sql    OK     -                  printf 'CLAIM 1000 FROM empty;'
sql    EINVAL ParseError         printf "CREATE notes:2 = {a: '\xfe\xff'};"
sql    EINVAL ParseError         printf 'CREATE notes:2 = {a: 1}\0;'
sql    EINVAL ParseError         printf "CREATE notes:2 = {a: 'x\ty\x7f'};\nCREATE notes:3 = {a: 'x\ny'};"
sql    EINVAL ParseError         printf 'CREATE notes:2 = {a: '"'"; bytes $((MiB - 40)) x; printf "'"'} junk;'
sql    EINVAL ParseError         printf 'DEFINE QUEUE q2 TIMEOUT 9223372036854775808ns;'
sql    EINVAL ParseError         printf "RELEASE jobs:7 NOT BEFORE d'10000-01-01T00:00:00Z';"
sql    EINVAL ParseError         printf 'BEGIN; CREATE notes:2 = {a: 1};'
sql    EFBIG  TooLarge           printf "CREATE notes:2 = {a: '"; bytes $((17 * MiB)) x; printf "'};"
record EINVAL -                  printf '{"a":'
record EINVAL -                  printf '{"a":"\xff"}'
record EINVAL -                  printf '{"a":1}\0'
record EINVAL -                  printf '{"a":"x\x02y"}'
record EINVAL -                  rep 100000 '['; rep 100000 ']'
record EINVAL -                  printf '{} {}'
record EINVAL -                  printf '{"a": 1 + 1}'
record EINVAL -                  printf '[1, 2]'
record EINVAL -                  printf '"just a string"'
record EINVAL -                  printf "{t: d'9999-12-31T00:00:00Z'}"
record EINVAL -                  printf '{d: 99999999999y}'
record EFBIG  -                  printf '{"a":"'; bytes $((100 * MiB)) x; printf '"}'
record EFBIG  -                  printf '{"a":"'; bytes $((17 * MiB)) x; printf '"}'
update EINVAL -                  printf '{"url":'
update EPERM  -                  printf '{"url":"b","attempts":9}'
update EPERM  -                  printf '{"url":"b","hold":9}'
update EFBIG  -                  printf '{"url":"'; bytes $((17 * MiB)) y; printf '"}'
new    EINVAL -                  rep 9999 '{"n":1}\n' | sed 's/\\n/\n/g'; printf '{"n":\n'
new    EINVAL -                  printf '{"n":\n'; rep 9999 '{"n":1}\n' | sed 's/\\n/\n/g'
new    EINVAL -                  printf '{"n":1}\n{"n":"\xff"}\n{"n":2}\n'
new    EINVAL -                  printf '{"n":1}\n{"n":2}\0\n'
new    EINVAL -                  printf '{"n":1}\n[1]\n'
new    EPERM  -                  printf '{"n":1}\n{"n":2,"attempts":3}\n'
new    EPERM  -                  printf '{"n":1}\n{"n":2,"hold":3}\n'
new    EFBIG  -                  printf '{"a":"'; bytes $((100 * MiB)) z; printf '"}\n'
rename EINVAL -                  printf '7@soon'
rename EINVAL -                  printf '7@'
rename EINVAL -                  printf '7@-5s'
rename EINVAL -                  printf '7@99999999999y'
rename EINVAL -                  printf '7@9999-01-01T00:00:00Z'
rename EINVAL -                  printf '7@2026-02-30T00:00:00Z'
rename EINVAL -                  printf '7@10m\x01'
rename EINVAL -                  printf '8'
rename EINVAL -                  printf '%%37'
rename ENAMETOOLONG -            printf '7@'; rep 4096 a
create ENAMETOOLONG -            rep 4096 n
create EFBIG  -                  rep 1000 n
create EFBIG  -                  rep 401 n
create EINVAL -                  printf '%%41'
create EINVAL -                  printf '007'
create EINVAL -                  printf 'a%%2fb'
create EINVAL -                  printf 'a%%'
create EINVAL -                  printf 'a\x01b'
create EINVAL -                  printf 'a\x7fb'
create EINVAL -                  printf '\xff'
create EINVAL -                  printf '%%FF'
create EINVAL -                  printf 'claim'
lookup ENOENT -                  printf '%%41'
lookup ENOENT -                  printf '007'
lookup ENOENT -                  printf 'bucket/key'
lookup ENOENT -                  printf '%%'
lookup ENAMETOOLONG -            rep 4096 l
mkdir  EINVAL -                  printf '\xff'
mkdir  EINVAL -                  printf 'no\xc3tes2'
mkdir  EINVAL -                  printf 'a\xc0\xafb'
mkdir  EINVAL -                  printf 'a\xed\xa0\x80b'
mkdir  EINVAL -                  printf 'a\xf4\x90\x80\x80b'
mkdir  EINVAL -                  printf 'a\x7fb'
mkdir  EINVAL -                  printf 'a\x01b'
mkdir  EINVAL -                  printf 'a\x1bb'
mkdir  EEXIST -                  printf 'ctl'
mkdir  EEXIST -                  printf 'jobs'
TABLE
}

MiB=1048576
export MiB

setup_file() {
    export -f rep bytes
}

# The fixture: two queues (one empty) and a collection, with records whose
# names need escaping.
fixture() {
    sql "DEFINE QUEUE jobs TIMEOUT 30s ATTEMPTS 5 NOT BEFORE due;
         DEFINE QUEUE empty TIMEOUT 1m;
         DEFINE COLLECTION notes;
         CREATE jobs:7 = { url: 'a' };
         CREATE jobs:8 = { url: 'b' };
         CREATE notes:1 = { text: 'one' };
         CREATE notes:'bucket/key' = { text: 'two' };" >/dev/null || fail "could not set up the fixture"
    mount_fs
    PID=$(daemon_pid "$M") || fail "no daemon for $M"
}

# run_cases HOW… — every case of the table delivered as HOW; fails with one
# line per case that met the wrong outcome, crashed the daemon or changed
# the store.  A crashed daemon is mounted again so the other cases still run.
run_cases() {
    local how want_errno want_name input got before after n=0 bad=()
    local in="$BATS_TEST_TMPDIR/input"
    fixture
    while read -r how want_errno want_name input; do
        [[ " $* " == *" $how "* ]] || continue
        n=$((n + 1))
        bash -c "$input" >"$in" || { bad+=("[$how] $input: the input could not be made"); continue; }
        before=$(snapshot)
        got=$(deliver "$how" "$in")
        local want="$want_errno $want_name"
        [ "$want_errno" = OK ] && want=OK
        [ "$how" = sql ] || [ "$how" = ctl ] || [ "$got" = OK ] || got="${got%% *} -"
        [ "$got" = "$want" ] || bad+=("[$how] $input: expected $want, got $got")
        if ! alive "$PID" || ! ls "$M" >/dev/null 2>&1; then
            bad+=("[$how] $input: queuefs died or stopped answering")
            fusermount3 -u -z "$M" 2>/dev/null
            mount_fs
            PID=$(daemon_pid "$M")
        fi
        after=$(snapshot)
        [ "$before" = "$after" ] || bad+=("[$how] $input: the store changed: $(diff <(echo "$before") <(echo "$after") | head -n 6 | tr '\n' ' ')")
    done < <(cases)
    echo "$n cases delivered as $*"
    [ "$n" -gt 0 ] || fail "no cases for $*"
    if [ "${#bad[@]}" -gt 0 ]; then
        printf '%s\n' "${bad[@]}" | cut -c 1-400
        fail "${#bad[@]} of $n cases failed"
    fi
}

@test "the table has at least 50 cases" {
    local n
    n=$(cases | grep -c .)
    echo "$n cases"
    [ "$n" -ge 50 ]
}

@test "hostile statements on the ctl file" {
    run_cases ctl
}

@test "hostile statements on queuefs-sql's standard input" {
    run_cases sql
}

@test "hostile record content written to a record file" {
    run_cases record update
}

@test "hostile lines written to new" {
    run_cases new
}

@test "hostile rename targets in released/" {
    run_cases rename
}

@test "hostile file names" {
    run_cases create lookup
}

@test "hostile table names for mkdir" {
    run_cases mkdir
}

@test "a record whose file name is longer than 255 bytes can be read, replaced and removed" {
    local key name
    key=$(rep 300 k)
    name=$(rep 130 %2F)
    sql "DEFINE COLLECTION notes; CREATE notes:$key = {n: 1}; CREATE notes:'$(rep 130 /)' = {n: 2}" >/dev/null
    mount_fs
    run ls "$M/notes"
    assert_success
    assert_line "$key"
    assert_line "$name"
    run cat "$M/notes/$key"
    assert_success
    assert_output "{\"id\":\"notes:$key\",\"n\":1}"
    run cat "$M/notes/$name"
    assert_success
    printf '%s\n' '{"n":3}' >"$M/notes/$key"
    assert_equal "$(sql "SELECT n FROM notes:$key")" '[{"n":3}]'
    rm "$M/notes/$name"
    assert_equal "$(count_records notes)" 1
}
