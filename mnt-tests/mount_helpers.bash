# mount_helpers.bash — set-up for the bats suites that run against a real
# queuefs mount (mount.bats).
#
#   QUEUEFS_BUILD   the build directory holding queuefs, queuefs-sql and
#                   mnt-tests/renameat2 (set by `make check`; defaults to the
#                   repository root)
#   STORE           a fresh store for each test (see helpers.bash: a
#                   directory, or a PostgreSQL database)
#   M               the test's first mount point (empty, not yet mounted)
#
#   mount_fs [-o OPTS …] [MNT]  mounts $STORE on MNT (default $M) with the
#                               daemon; fails the test when queuefs fails; the
#                               mount is unmounted by teardown whatever happens
#   unmount_fs MNT              fusermount3 -u, then waits for the daemon to exit
#                               (a daemon that stays is a failure)
#   daemon_pid MNT              the pid of the queuefs serving MNT
#   wait_gone PID               polls until PID has exited (false after 10 s)
#   sql STATEMENT…              queuefs-sql "$STORE" STATEMENT…
#   ctl STATEMENT…              queuefs-ctl "$M" STATEMENT…
#   errno_of PYCODE ARG…        runs a python3 statement (arguments in a[2:]):
#                               prints OK or the errno name (EXDEV, …)
#   renameat2 [-n] FROM TO      the C helper: prints nothing or the errno name
#   count_records TABLE         SELECT count through queuefs-sql
#   jqr FILTER JSON             jq -r FILTER on JSON
#   next_at ZONE HH:MM [WDAY]   the next HH:MM of ZONE's local time, by GNU date
#
# Daemons are started with 3>&- so bats does not wait on them.
# sql, jqr, epoch_of and assert_near come from helpers.bash; setup and
# teardown here replace its own.
load helpers
# shellcheck source-path=SCRIPTDIR source=../scripts/queuefs.bash
. "$BATS_TEST_DIRNAME/../scripts/queuefs.bash"

QUEUEFS="$QUEUEFS_BUILD/queuefs"
QUEUEFS_CTL="$BATS_TEST_DIRNAME/../scripts/queuefs-ctl"
RENAMEAT2="$QUEUEFS_BUILD/mnt-tests/renameat2"
export QUEUEFS QUEUEFS_CTL RENAMEAT2

# Mount points this test mounted (absolute), and their daemons.
MOUNTS=()
DAEMONS=()

setup() {
    [ -x "$QUEUEFS" ] || fail "no queuefs at $QUEUEFS (build it, or set QUEUEFS_BUILD)"
    # shellcheck disable=SC2153 # set by helpers.bash, which shellcheck does not follow through load
    [ -x "$QUEUEFS_SQL" ] || fail "no queuefs-sql at $QUEUEFS_SQL"
    [ -x "$RENAMEAT2" ] || fail "no $RENAMEAT2 (gcc -o $RENAMEAT2 mnt-tests/renameat2.c)"
    store_fresh
    M="$BATS_TEST_TMPDIR/m"
    mkdir -p "$M"
    export M
}

teardown() {
    local i pid mnt stuck=()
    for i in "${!MOUNTS[@]}"; do
        mnt=${MOUNTS[$i]}
        pid=${DAEMONS[$i]:-}
        if grep -qF " $mnt " /proc/mounts; then
            fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -u -z "$mnt" 2>/dev/null
        fi
        if [ -n "$pid" ] && ! wait_gone "$pid"; then
            stuck+=("$pid ($mnt)")
            kill -9 "$pid" 2>/dev/null
            wait_gone "$pid" || true
        fi
    done
    MOUNTS=()
    DAEMONS=()
    store_remove
    [ "${#stuck[@]}" -eq 0 ] || fail "queuefs did not exit after its mount was unmounted: ${stuck[*]}"
}

# The waits and the daemon's pid are those of the bats helper queuefs
# installs (scripts/queuefs.bash), so the suites test it too.
alive() { queuefs_alive "$@"; }
wait_gone() { queuefs_wait_gone "$@"; }
wait_mounted() { queuefs_wait_mounted "$@"; }
wait_unmounted() { queuefs_wait_unmounted "$@"; }
daemon_pid() { queuefs_daemon_pid "$@"; }

# Remembers MNT (and its daemon) for teardown.
track_mount() {
    MOUNTS+=("$1")
    DAEMONS+=("$(daemon_pid "$1" || true)")
}

mount_fs() {
    local -a opts=()
    while [ "$#" -gt 0 ] && [ "$1" = -o ]; do
        opts+=(-o "$2")
        shift 2
    done
    local mnt=${1:-$M}
    mkdir -p "$mnt"
    local out rc=0
    out=$("$QUEUEFS" "${opts[@]}" "$STORE" "$mnt" 2>&1 3>&-) || rc=$?
    if [ "$rc" -ne 0 ]; then
        wait_mounted "$mnt" && track_mount "$mnt"
        fail "queuefs ${opts[*]} $STORE $mnt exited $rc: $out"
    fi
    wait_mounted "$mnt" || fail "queuefs returned but $mnt is not mounted"
    track_mount "$mnt"
}

unmount_fs() {
    local mnt=$1 i
    local pid
    pid=$(daemon_pid "$mnt") || fail "no queuefs daemon serves $mnt"
    fusermount3 -u "$mnt" || fail "fusermount3 -u $mnt failed"
    wait_gone "$pid" || fail "queuefs (pid $pid) did not exit after fusermount3 -u $mnt"
    wait_unmounted "$mnt" || fail "$mnt is still in /proc/mounts"
}


ctl() {
    "$QUEUEFS_CTL" "$M" "$@"
}


count_records() {
    sql "SELECT * FROM $1" | jq length
}

errno_of() {
    python3 -c '
import errno, os, sys
a = sys.argv
try:
    exec(a[1])
    print("OK")
except OSError as e:
    # Linux spells 95 both ENOTSUP and EOPNOTSUPP; SPEC says EOPNOTSUPP.
    print("EOPNOTSUPP" if e.errno == errno.EOPNOTSUPP else errno.errorcode.get(e.errno, e.errno))
' "$@"
}

renameat2() {
    "$RENAMEAT2" "$@"
}



# A mounted store with the queue jobs (TIMEOUT 30s, NOT BEFORE due) holding
# jobs:7 {url:'a'} and jobs:8 {url:'b'}.
mount_jobs() {
    sql "DEFINE QUEUE jobs TIMEOUT 30s NOT BEFORE due;
         CREATE jobs:7 = { url: 'a' };
         CREATE jobs:8 = { url: 'b' };" >/dev/null || fail "could not set up the jobs queue"
    mount_fs "$@"
}

# ctl_errno STATEMENTS [MNT] — writes STATEMENTS to MNT/ctl (default $M) in
# one write() on a fresh session, then reads the result lines back.  Prints
# "OK" when the write succeeded, else "ERRNO NAME": the write's errno and
# the "error" of the last line read (e.g. "EINVAL ParseError").
ctl_errno() {
    python3 -c '
import errno, json, os, sys
fd = os.open(sys.argv[2] + "/ctl", os.O_RDWR)
try:
    os.write(fd, sys.argv[1].encode())
    print("OK")
except OSError as e:
    out = b""
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        out += chunk
    lines = out.decode().splitlines()
    name = json.loads(lines[-1]).get("error") if lines else None
    code = "EOPNOTSUPP" if e.errno == errno.EOPNOTSUPP else errno.errorcode.get(e.errno, e.errno)
    print(code, name)
os.close(fd)
' "$1" "${2:-$M}"
}

# next_at ZONE HH:MM [WEEKDAY] — the epoch of the first HH:MM of ZONE's
# local time (on ISO weekday WEEKDAY, 1 = Monday, when given) strictly
# after now: the days from today on, each asked of GNU date.
next_at() {
    local zone=$1 hm=$2 wd=${3:-} now i day t
    now=$(date +%s)
    for i in $(seq 0 8); do
        day=$(TZ=$zone date -d "@$((now + i * 86400))" +%F)
        t=$(TZ=$zone date -d "$day $hm" +%s)
        [ "$t" -gt "$now" ] || continue
        [ -z "$wd" ] || [ "$(TZ=$zone date -d "@$t" +%u)" = "$wd" ] || continue
        echo "$t"
        return 0
    done
    return 1
}
