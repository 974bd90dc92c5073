#!/usr/bin/env bats
# store.bats — what the store promises when the disk does not cooperate:
# on a full disk the write that does not fit is StoreFull (ENOSPC), nothing
# else is lost, reads and deletes keep working and the room they free takes
# writes again; a store started with a small map grows it by itself where
# the disk has room; a failed write or sync of the disk fails the operation
# with StoreError (EIO) — never only logged — through queuefs-sql, the ctl
# file and the file view alike.
#
#   QUEUEFS_BUILD=/path/to/build bats mnt-tests/store.bats
#
# Needs root: the full-disk tests mount a 4 MiB tmpfs (unmounted in
# teardown).  The disk failures come from store/failio.so, an LD_PRELOAD
# library built by `make check` (see store/failio.c).

# The scripts given to bash -c are single-quoted on purpose.  Each @test
# runs in a process of its own, so what a test sets (STORE, bats' $output)
# is its own on purpose; $stderr is set by bats' run --separate-stderr.
# shellcheck disable=SC2016,SC2030,SC2031,SC2154

load mount_helpers

FAILIO="$QUEUEFS_BUILD/store/failio.so"
export FAILIO

# mount_helpers' setup and teardown, kept under other names.
eval "$(declare -f setup | sed '1s/^setup/mount_setup/')"
eval "$(declare -f teardown | sed '1s/^teardown/mount_teardown/')"

DISK=""

setup() {
    # Every case here is about a store directory: its disk, its map, the
    # failing-disk library.  PostgreSQL's own faults: postgresql.bats.
    lmdb_only "the store directory's disk, map and I/O (PostgreSQL's faults: postgresql.bats)"
    mount_setup
    [ -f "$FAILIO" ] || fail "no $FAILIO (make check builds it)"
}

teardown() {
    local status=0
    mount_teardown || status=$?
    if [ -n "$DISK" ] && grep -qF " $DISK " /proc/mounts; then
        umount "$DISK" 2>/dev/null || umount -l "$DISK"
    fi
    if [ -n "${SHARED:-}" ]; then rm -rf "$SHARED"; fi
    return "$status"
}

# small_disk — a 4 MiB tmpfs at $BATS_TEST_TMPDIR/disk, holding $STORE.
small_disk() {
    DISK="$BATS_TEST_TMPDIR/disk"
    mkdir -p "$DISK"
    mount -t tmpfs -o size=4m tmpfs "$DISK" || fail "cannot mount a tmpfs at $DISK"
    STORE="$DISK/store"
    export STORE
}

# failio CMD… — runs CMD with store/failio.so preloaded (ASan, in a
# sanitizer build, is told it need not come first).
failio() {
    LD_PRELOAD="$FAILIO" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" "$@"
}

# A record of about 1 KiB as a JSON line.
PAD=$(printf '%01000d' 0)
LINE="{\"n\":0,\"pad\":\"$PAD\"}"

# fill_store — CREATE jobs:1, jobs:2 … of 1 KiB each, one statement each,
# until the store is full: asserts the failing statement is StoreFull and
# sets FILLED to how many were stored.
fill_store() {
    local i
    for i in $(seq 8000); do
        echo "CREATE jobs:$i = { n: $i, pad: '$PAD' };"
    done >"$BATS_TEST_TMPDIR/fill.sql"
    run --separate-stderr bash -c '"$QUEUEFS_SQL" "$STORE" <"$1"' _ "$BATS_TEST_TMPDIR/fill.sql"
    assert_error StoreFull
    FILLED=${#lines[@]}
    [ "$FILLED" -gt 100 ] || fail "only $FILLED records fitted on a 4 MiB disk"
    [ "$FILLED" -lt 8000 ] || fail "8000 records of 1 KiB fitted on a 4 MiB disk"
}

# assert_records_1_to N — jobs holds exactly jobs:1 … jobs:N, n = identity.
assert_records_1_to() {
    run sql "SELECT n FROM jobs"
    assert_success
    assert_equal "$(jqr 'length' "$output")" "$1"
    assert_equal "$(jq -c --argjson n "$1" '[.[].n] == [range(1; $n + 1)]' <<<"$output")" true
}

# ---------------------------------------------------------------------------
# A full disk
# ---------------------------------------------------------------------------

@test "full disk: the statement that does not fit is StoreFull and every earlier record stays" {
    small_disk
    sql "DEFINE QUEUE jobs TIMEOUT 5m" >/dev/null
    fill_store
    jqr '.message' "$stderr" | grep -q full || fail "the message says nothing of a full store: $stderr"
    assert_records_1_to "$FILLED"
    run sql "SELECT pad FROM jobs:1"
    assert_success
    assert_equal "$(jqr '.[0].pad | length' "$output")" 1000
}

@test "full disk: DELETE works, and the room it frees takes writes again" {
    small_disk
    sql "DEFINE QUEUE jobs TIMEOUT 5m" >/dev/null
    fill_store
    local i
    for i in $(seq 100); do echo "DELETE jobs:$i;"; done >"$BATS_TEST_TMPDIR/delete.sql"
    run --separate-stderr bash -c '"$QUEUEFS_SQL" "$STORE" <"$1"' _ "$BATS_TEST_TMPDIR/delete.sql"
    assert_success
    assert_equal "$(sort -u <<<"$output")" '[]'
    assert_equal "${#lines[@]}" 100
    for i in $(seq 50); do
        echo "CREATE jobs:$((100000 + i)) = { n: $((100000 + i)), pad: '$PAD' };"
    done >"$BATS_TEST_TMPDIR/refill.sql"
    run --separate-stderr bash -c '"$QUEUEFS_SQL" "$STORE" <"$1"' _ "$BATS_TEST_TMPDIR/refill.sql"
    assert_success
    assert_equal "${#lines[@]}" 50
    run sql "SELECT n FROM jobs"
    assert_equal "$(jqr 'length' "$output")" "$((FILLED - 100 + 50))"
    assert_equal "$(jqr '.[0].n' "$output")" 101
}

@test "full disk: through a mount, writing to new fails with ENOSPC; cat, ls and rm still work" {
    small_disk
    sql "DEFINE QUEUE jobs TIMEOUT 5m" >/dev/null
    fill_store
    mount_fs
    run errno_of 'fd = os.open(a[2], os.O_WRONLY | os.O_APPEND); os.write(fd, a[3].encode() + b"\n"); os.close(fd)' \
        "$M/jobs/new" "$LINE"
    assert_output ENOSPC
    run bash -c 'printf "%s\n" "$2" | cat >>"$1"' _ "$M/jobs/new" "$LINE"
    assert_failure
    assert_output --partial "No space left on device"
    run cat "$M/jobs/$FILLED"
    assert_success
    assert_equal "$(jqr '.n' "$output")" "$FILLED"
    run ls "$M/jobs"
    assert_success
    assert_line 1
    assert_line "$FILLED"
    local i
    for i in $(seq 100); do
        rm "$M/jobs/$i" || fail "rm $M/jobs/$i failed on a full disk"
    done
    run errno_of 'fd = os.open(a[2], os.O_WRONLY | os.O_APPEND); os.write(fd, a[3].encode() + b"\n"); os.close(fd)' \
        "$M/jobs/new" "$LINE"
    assert_output OK
    assert_equal "$(count_records jobs)" "$((FILLED - 100 + 1))"
}

# fill_new — appends 1 KiB records (n: 100000) to $M/jobs/new, one write()
# each, until one fails: prints how many fitted and the errno that stopped
# it.
fill_new() {
    python3 -c '
import errno, os, sys
n = 0
while n < 20000:
    fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, sys.argv[2].encode() + b"\n")
    except OSError as e:
        print(n, errno.errorcode.get(e.errno, e.errno))
        sys.exit(0)
    finally:
        os.close(fd)
    n += 1
print(n, "OK")
' "$M/jobs/new" "{\"n\":100000,\"pad\":\"$PAD\"}"
}

# assert_shrinking_writes_work — on a store where a create is StoreFull:
# cat claim claims jobs:1, mv releases it, touch extends a new hold, rm
# deletes jobs:2, DELETE … WHERE through ctl deletes jobs:1 and jobs:3 …
# jobs:100, and the counters say so;
# then a create through new fits again.  $1: the records jobs holds.
assert_shrinking_writes_work() {
    local records=$1
    run cat "$M/jobs/claim"
    assert_success
    assert_equal "$(jqr '.id' "$output")" jobs:1
    run mv "$M/jobs/1" "$M/jobs/released/"
    assert_success
    assert_equal "$(jqc '[has("claimed_until"), .attempts]' "$(cat "$M/jobs/1")")" '[false,1]'
    run cat "$M/jobs/claim"
    assert_success
    assert_equal "$(jqc '[.id, .attempts]' "$output")" '["jobs:1",2]'
    run touch "$M/jobs/1"
    assert_success
    assert_equal "$(jqr 'has("claimed_until")' "$(cat "$M/jobs/1")")" true
    run rm "$M/jobs/2"
    assert_success
    [ ! -e "$M/jobs/2" ] || fail "jobs/2 is still there"
    run ctl_errno "DELETE jobs WHERE n <= 100;"
    assert_output OK
    assert_equal "$(count_records jobs)" "$((records - 100))"
    run stats_of jobs
    assert_equal "$(jqc '[.claims, .releases, .deletes]' "$output")" '[2,1,100]'
    run errno_of 'fd = os.open(a[2], os.O_WRONLY | os.O_APPEND); os.write(fd, a[3].encode() + b"\n"); os.close(fd)' \
        "$M/jobs/new" "$LINE"
    assert_output OK
    assert_equal "$(count_records jobs)" "$((records - 99))"
}

stats_of() {
    cat "$M/$1/stats"
}

@test "full store: claims, releases, touches, rm, DELETE … WHERE and DROP QUEUE work; the room they free takes creates again" {
    small_disk
    sql "DEFINE QUEUE jobs TIMEOUT 5m" >/dev/null
    fill_store
    mount_fs
    run errno_of 'fd = os.open(a[2], os.O_WRONLY | os.O_APPEND); os.write(fd, a[3].encode() + b"\n"); os.close(fd)' \
        "$M/jobs/new" "$LINE"
    assert_output ENOSPC
    run ctl_errno "CREATE jobs:99999 = { n: 99999, pad: '$PAD' };"
    assert_output "ENOSPC StoreFull"
    # A record file's write() that completes the object gets ENOSPC, so the
    # shell reports it; nothing is stored.
    run bash -c 'printf "%s\n" "$1" > "$2"' _ "$LINE" "$M/jobs/99998"
    assert_failure
    assert_output --partial "write error: No space left on device"
    assert_equal "$(sql 'SELECT * FROM jobs:99998')" '[]'
    assert_shrinking_writes_work "$FILLED"
    run ctl_errno "DROP QUEUE jobs;"
    assert_output OK
    run sql "DEFINE QUEUE jobs TIMEOUT 5m; CREATE jobs:1 = { n: 1, pad: '$PAD' }"
    assert_success
}

@test "full store, sync=none: 2,000 claims and releases in a row all succeed (the pages freed since the last checkpoint are pinned)" {
    small_disk
    sql "DEFINE QUEUE jobs TIMEOUT 5m" >/dev/null
    fill_store
    mount_fs -o sync=none
    run python3 -c '
import errno, json, os, sys
m, fails = sys.argv[1], {}
for i in range(2000):
    try:
        fd = os.open(m + "/jobs/claim", os.O_RDONLY)
        rec = json.loads(os.read(fd, 1 << 20))
        os.close(fd)
        key = rec["id"].split(":")[1]
        os.rename(m + "/jobs/" + key, m + "/jobs/released/" + key)
    except OSError as e:
        name = errno.errorcode.get(e.errno, e.errno)
        fails[name] = fails.get(name, 0) + 1
print(json.dumps(fails, sort_keys=True))
' "$M"
    assert_success
    assert_output '{}'
    assert_equal "$(jqc '[.claims, .releases, .held]' "$(cat "$M/jobs/stats")")" '[2000,2000,0]'
}

@test "full disk: with the disk filled by another file, creates end in ENOSPC and claims, releases, touches, deletes and drops still work" {
    DISK="$BATS_TEST_TMPDIR/disk"
    mkdir -p "$DISK"
    mount -t tmpfs -o size=16m tmpfs "$DISK" || fail "cannot mount a tmpfs at $DISK"
    STORE="$DISK/store"
    local i
    {
        echo "DEFINE QUEUE jobs TIMEOUT 5m; BEGIN;"
        for i in $(seq 300); do echo "CREATE jobs:$i = { n: $i, pad: '$PAD' };"; done
        echo "COMMIT;"
    } >"$BATS_TEST_TMPDIR/setup.sql"
    sql <"$BATS_TEST_TMPDIR/setup.sql" >/dev/null
    mount_fs
    # Another file takes every block the disk has left.
    dd if=/dev/zero of="$DISK/filler" bs=64k 2>/dev/null && fail "dd filled a 16 MiB disk"
    [ "$(stat -f -c %a "$DISK")" -eq 0 ] || fail "the disk still has room"
    run fill_new
    assert_equal "${lines[0]#* }" ENOSPC
    local fitted=${lines[0]%% *}
    run ctl_errno "CREATE jobs:99999 = { n: 99999, pad: '$PAD' };"
    assert_output "ENOSPC StoreFull"
    assert_shrinking_writes_work "$((300 + fitted))"
    run ctl_errno "DROP QUEUE jobs;"
    assert_output OK
    rm "$DISK/filler"
    run sql "DEFINE QUEUE jobs TIMEOUT 5m; CREATE jobs:1 = { n: 1, pad: '$PAD' }"
    assert_success
}

# ---------------------------------------------------------------------------
# The map grows by itself
# ---------------------------------------------------------------------------

# The map size LMDB records for $STORE, in bytes.
map_size() {
    mdb_stat -e "$STORE" | awk '/Map size:/ { print $3 }'
}

@test "growth: a store started with a small map (QUEUEFS_MAP_SIZE=256K) grows past it by itself" {
    export QUEUEFS_MAP_SIZE=256K
    sql "DEFINE COLLECTION notes" >/dev/null
    assert_equal "$(map_size)" 262144
    local pad i
    pad=$(printf '%010000d' 0)
    for i in $(seq 300); do echo "CREATE notes:$i = { n: $i, pad: '$pad' };"; done \
        >"$BATS_TEST_TMPDIR/grow.sql"
    run --separate-stderr bash -c '"$QUEUEFS_SQL" "$STORE" <"$1"' _ "$BATS_TEST_TMPDIR/grow.sql"
    assert_success
    assert_equal "${#lines[@]}" 300
    local size
    size=$(map_size)
    [ "$size" -gt $((3 * 1024 * 1024)) ] || fail "the map is still $size bytes"
    [ "$(stat -c %s "$STORE/data.mdb")" -gt $((3 * 1024 * 1024)) ] || fail "the data file did not grow"
    run sql "SELECT n FROM notes"
    assert_equal "$(jqr '[.[].n] == [range(1; 301)]' "$output")" true
}

@test "growth: through a mount started with a small map, every write fits" {
    sql "DEFINE QUEUE jobs TIMEOUT 5m" >/dev/null
    QUEUEFS_MAP_SIZE=256K mount_fs
    local big
    big="{\"pad\":\"$(printf '%010000d' 0)\"}"
    run python3 -c '
import os, sys
for i in range(300):
    fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
    os.write(fd, sys.argv[2].encode() + b"\n")
    os.close(fd)
print("OK")
' "$M/jobs/new" "$big"
    assert_output OK
    assert_equal "$(count_records jobs)" 300
    [ "$(map_size)" -gt 262144 ] || fail "the map did not grow"
}

@test "growth: a malformed QUEUEFS_MAP_SIZE is refused, naming the variable" {
    QUEUEFS_MAP_SIZE=lots run --separate-stderr sql "DEFINE COLLECTION notes"
    assert_failure
    assert_output ''
    [[ "$stderr" == *QUEUEFS_MAP_SIZE* ]] || fail "stderr does not name QUEUEFS_MAP_SIZE: $stderr"
}

# ---------------------------------------------------------------------------
# Disk failures: StoreError (EIO), never only logged
# ---------------------------------------------------------------------------

@test "io: when the commit's sync fails, each writing statement is StoreError and keeps nothing" {
    sql "DEFINE QUEUE jobs TIMEOUT 5m; CREATE jobs:1 = { a: 1 }; CREATE jobs:2 = { a: 2 }" >/dev/null
    local stmt
    for stmt in "CREATE jobs:3 = { a: 3 }" "CLAIM FROM jobs" "DELETE jobs:1" \
        "UPDATE jobs:2 MERGE { a: 20 }" "DEFINE COLLECTION notes"; do
        QUEUEFS_FAIL=fsync run --separate-stderr failio "$QUEUEFS_SQL" "$STORE" "$stmt"
        assert_error StoreError
        assert_output ''
    done
    run sql "SELECT * FROM jobs"
    assert_output '[{"a":1,"id":"jobs:1"},{"a":2,"id":"jobs:2"}]'
    run --separate-stderr sql "INFO FOR TABLE notes"
    assert_error NoSuchTable
    # Reading syncs nothing: it works while the disk fails.
    QUEUEFS_FAIL=fsync run failio "$QUEUEFS_SQL" "$STORE" "SELECT a FROM jobs:2"
    assert_success
    assert_output '[{"a":2}]'
    run sql "CREATE jobs:3 = { a: 3 }"
    assert_success
}

@test "io: when the sync after the commit fails, the statement is StoreError; the store stays consistent" {
    sql "DEFINE QUEUE jobs TIMEOUT 5m; CREATE jobs:1 = { a: 1 }" >/dev/null
    QUEUEFS_FAIL=fsync QUEUEFS_FAIL_AFTER=1 run --separate-stderr failio "$QUEUEFS_SQL" "$STORE" \
        "CREATE jobs:2 = { a: 2 }"
    assert_error StoreError
    assert_output ''
    # The statement committed before the sync failed: its record may be
    # there (it reached the page cache) — what the caller knows is that it
    # may not be on disk.  Everything else is as it was, and writes go on.
    run sql "SELECT * FROM jobs"
    assert_success
    assert_equal "$(jqr '.[0]' "$output" | jq -c .)" '{"a":1,"id":"jobs:1"}'
    [ "$(jqr length "$output")" -le 2 ] || fail "more records than were written: $output"
    run sql "CREATE jobs = { a: 3 }" "SELECT * FROM jobs WHERE a = 3"
    assert_success
    assert_equal "$(jqr '.[0].a' "${lines[1]}")" 3
}

@test "io: a failed write of the data file is StoreError and keeps nothing" {
    sql "DEFINE QUEUE jobs TIMEOUT 5m; CREATE jobs:1 = { a: 1 }" >/dev/null
    QUEUEFS_FAIL='write' run --separate-stderr failio "$QUEUEFS_SQL" "$STORE" "CREATE jobs:2 = { a: 2 }"
    assert_error StoreError
    run sql "SELECT * FROM jobs"
    assert_output '[{"a":1,"id":"jobs:1"}]'
    run sql "CREATE jobs:2 = { a: 2 }"
    assert_success
}

@test "io: through a mount, with the disk failing, rm, writing to new and ctl fail with EIO; a claim needs no disk" {
    sql "DEFINE QUEUE jobs TIMEOUT 5m; CREATE jobs:7 = { url: 'a' }; CREATE jobs:8 = { url: 'b' }" >/dev/null
    local arm="$BATS_TEST_TMPDIR/arm"
    LD_PRELOAD="$FAILIO" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
        QUEUEFS_FAIL=fsync QUEUEFS_FAIL_WHEN="$arm" mount_fs
    run cat "$M/jobs/8"
    assert_success
    # A write while the disk works: the mount has taken its first checkpoint.
    run ctl_errno "UPDATE jobs:8 MERGE { seen: true };"
    assert_output OK
    touch "$arm"
    # A claim does not wait for the disk (a crash of this machine ends its
    # hold anyway): it is handed out.
    run cat "$M/jobs/claim"
    assert_success
    assert_equal "$(jqr '.id' "$output")" jobs:7
    run rm "$M/jobs/7"
    assert_failure
    assert_output --partial "Input/output error"
    run bash -c 'echo "{\"url\":\"c\"}" | cat >>"$1"' _ "$M/jobs/new"
    assert_failure
    assert_output --partial "Input/output error"
    run ctl_errno "CREATE jobs:19 = { url: 'd' };"
    assert_output "EIO StoreError"
    # Reading syncs nothing.
    run cat "$M/jobs/8"
    assert_success
    assert_equal "$(jqr '.url' "$output")" b
    rm "$arm"
    # Each failed write committed before its sync failed, as after any
    # failed fsync: it is in place, but was never known to be on disk.  The
    # rest of the store is as it was.
    run sql "SELECT id, url FROM jobs"
    assert_output '[{"id":"jobs:8","url":"b"},{"id":"jobs:9","url":"c"},{"id":"jobs:19","url":"d"}]'
    # With the disk back, the mount works again.
    run cat "$M/jobs/claim"
    assert_success
    assert_equal "$(jqr '.id' "$output")" jobs:8
    rm "$M/jobs/8"
    assert_equal "$(count_records jobs)" 2
}

@test "io: the daemon logs a file operation the disk failed with the time, the system call and its errno" {
    sql "DEFINE QUEUE jobs TIMEOUT 5m; CREATE jobs:7 = { url: 'a' }" >/dev/null
    local arm="$BATS_TEST_TMPDIR/arm" log="$BATS_TEST_TMPDIR/daemon.log"
    LD_PRELOAD="$FAILIO" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
        QUEUEFS_FAIL=fsync QUEUEFS_FAIL_WHEN="$arm" "$QUEUEFS" -f "$STORE" "$M" 2>"$log" 3>&- &
    wait_mounted "$M" || fail "not mounted; log: $(cat "$log")"
    track_mount "$M"
    ctl "UPDATE jobs:7 MERGE { seen: true };" >/dev/null
    touch "$arm"
    run rm "$M/jobs/7"
    assert_failure
    assert_output --partial "Input/output error"
    rm "$arm"
    local line
    line=$(grep "met StoreError" "$log") || fail "no log line for the failed rm: $(cat "$log")"
    [[ "$line" =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{3}[+-][0-9]{4}\ queuefs:\  ]] ||
        fail "the line has no time: $line"
    [[ "$line" =~ (fdatasync|sync_file_range)[^:]*:\ Input/output\ error\ \(errno\ 5\) ]] ||
        fail "the line does not name the system call and errno: $line"
}

# shared_store — STORE in a new directory everyone may traverse (SHARED,
# removed by teardown).
shared_store() {
    SHARED=$(mktemp -d /tmp/queuefs-ro.XXXXXX)
    chmod 0755 "$SHARED"
    STORE=$SHARED/store
}

# ro_view — DISK: STORE seen through a read-only bind mount (unmounted by
# teardown), where root cannot write either (EROFS).
ro_view() {
    DISK=$SHARED/ro
    mkdir "$DISK"
    if ! mount --bind "$STORE" "$DISK" || ! mount -o remount,ro,bind "$DISK"; then
        fail "cannot bind-mount $STORE read-only"
    fi
}

@test "read-only: a store that stopped uncleanly is not read before a process that may write it recovers it" {
    shared_store
    sql "DEFINE QUEUE jobs TIMEOUT 30s;" >/dev/null
    mount_fs
    printf '{"n":1}\n{"n":2}\n' >>"$M/jobs/new"
    local pid
    pid=$(daemon_pid "$M")
    kill -9 "$pid"
    wait_gone "$pid" || fail "the daemon outlived SIGKILL"
    fusermount3 -u -z "$M"
    ro_view
    run --separate-stderr "$QUEUEFS_SQL" "$DISK" "SELECT n FROM jobs;"
    assert_failure
    [[ $stderr == *"stopped uncleanly and is not recovered yet"* ]] || fail "stderr: $stderr"
    # The owner's next open recovers it (saying on stderr what it replayed,
    # when the daemon died before its checkpoint); then it reads, both
    # records there.
    run --separate-stderr sql "SELECT n FROM jobs ORDER BY n;"
    assert_success
    assert_output '[{"n":1},{"n":2}]'
    run --separate-stderr "$QUEUEFS_SQL" "$DISK" "SELECT n FROM jobs ORDER BY n;"
    assert_success
    assert_output '[{"n":1},{"n":2}]'
}

@test "read-only: queuefs-sql reads a store it cannot write, and refuses writes with StoreError" {
    # The store, where everyone may read it, seen through a read-only bind
    # mount: root cannot write there (EROFS), nor can uid 65534.
    shared_store
    sql "DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:1 = {n: 1}; CREATE jobs:2 = {n: 2};" >/dev/null
    chmod -R a+rX "$STORE"
    ro_view
    local before
    before=$(cd "$STORE" && md5sum data.mdb)
    run --separate-stderr "$QUEUEFS_SQL" "$DISK" "SELECT * FROM jobs;" "INFO FOR TABLE jobs;"
    assert_success
    assert_line -n 0 '[{"id":"jobs:1","n":1},{"id":"jobs:2","n":2}]'
    run --separate-stderr "$QUEUEFS_SQL" "$DISK" "CLAIM FROM jobs;"
    assert_error StoreError
    [[ $stderr == *"open for reading only"* ]] || fail "stderr: $stderr"
    run --separate-stderr setpriv --reuid=65534 --regid=65534 --clear-groups \
        "$QUEUEFS_SQL" "$DISK" "SELECT id FROM jobs:2;"
    assert_success
    assert_output '[{"id":"jobs:2"}]'
    run --separate-stderr setpriv --reuid=65534 --regid=65534 --clear-groups \
        "$QUEUEFS_SQL" "$DISK" "DELETE jobs:2;"
    assert_error StoreError
    # Nothing changed, and the store still works for its owner.
    assert_equal "$(cd "$STORE" && md5sum data.mdb)" "$before"
    run sql "SELECT id FROM jobs"
    assert_output '[{"id":"jobs:1"},{"id":"jobs:2"}]'
    # Where the filesystem may be written, a user without write access
    # is told what LMDB needs.
    run --separate-stderr setpriv --reuid=65534 --regid=65534 --clear-groups \
        "$QUEUEFS_SQL" "$STORE" "SELECT * FROM jobs;"
    assert_failure
    [[ $stderr == *"lock.mdb, which LMDB writes even to read"* ]] || fail "stderr: $stderr"
}
