#!/usr/bin/env bats
# readme.bats — the README's examples, run as the README shows them, so
# they cannot go stale: "A first example" (each command's output must be
# the README's, datetimes aside), "A worker" (the loop, with curl made to
# fail for one URL), "When something fails" and "A worker with
# queuefs-work".  The examples are
# read from README.md itself; ~/queues becomes the test's mount.
#
#   QUEUEFS_BUILD=/path/to/build bats mnt-tests/readme.bats

load mount_helpers

README="$BATS_TEST_DIRNAME/../README.md"

# example HEADING — the indented block that follows "## HEADING" in the
# README, unindented.
example() {
    awk -v h="## $1" '
        $0 == h { on = 1; next }
        on && /^## / { exit }
        on && /^    / { print substr($0, 5); started = 1; next }
        on && started && /^$/ { blank = 1; next }
        on && started { exit }' "$README"
}

# A fake curl on PATH: fails for URLs ending in /b, succeeds otherwise.
fake_curl() {
    mkdir -p "$BATS_TEST_TMPDIR/bin"
    cat >"$BATS_TEST_TMPDIR/bin/curl" <<'SH'
#!/bin/sh
for a; do url=$a; done
case $1 in -fsS) url=$2 ;; esac
case $url in */b) echo "curl: (22) The requested URL returned error: 503" >&2; exit 22 ;; esac
exit 0
SH
    chmod +x "$BATS_TEST_TMPDIR/bin/curl"
    PATH="$BATS_TEST_TMPDIR/bin:$PATH"
    export PATH
}

# run_until_finished SCRIPT N — runs SCRIPT (which starts queuefs-work)
# until its log, $BATS_TEST_TMPDIR/log, shows N records finished or 10 s
# have passed, stops it with SIGTERM, and asserts that N finished.
run_until_finished() {
    bash -c "$1" 2>"$BATS_TEST_TMPDIR/log" 3>&- &
    local pid=$! i
    for i in $(seq 200); do
        [ "$(grep -c outcome=finished "$BATS_TEST_TMPDIR/log")" -ge "$2" ] && break
        sleep 0.05
    done
    kill -TERM "$pid"
    wait "$pid" || true
    assert_equal "$(grep -c outcome=finished "$BATS_TEST_TMPDIR/log")" "$2"
}

# Datetimes and the instance's hex vary from run to run.
normalize() {
    sed -E 's/"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z"/"DATETIME"/g'
}

@test "readme: 'A first example' prints what the README shows" {
    mount_fs
    local block cmd want got
    block=$(example "A first example")
    [ -n "$block" ] || fail "no 'A first example' block in the README"
    # Each "$ command" with the lines after it as its output.
    local -a cmds=() outs=()
    while IFS= read -r line; do
        if [[ $line == '$ '* ]]; then
            cmds+=("${line#\$ }")
            outs+=("")
        else
            outs[${#outs[@]} - 1]+="$line"$'\n'
        fi
    done <<<"$block"
    [ "${#cmds[@]}" -ge 8 ] || fail "the example has only ${#cmds[@]} commands"
    local i
    for i in "${!cmds[@]}"; do
        cmd=${cmds[$i]}
        case $cmd in
        scripts/run* | "cd ~/queues") continue ;;   # the test's mount stands for them
        esac
        got=$(cd "$M" && bash -c "$cmd" 2>&1 | normalize)
        want=$(printf '%s' "${outs[$i]}" | normalize)
        want=${want%$'\n'}
        # ls prints in columns on a terminal: compare words.
        if [[ $cmd == ls* ]]; then
            # shellcheck disable=SC2086,SC2116 # unquoted on purpose: one space between words
            got=$(echo $got) want=$(echo $want)
        fi
        [ "$got" = "$want" ] || fail "README: \$ $cmd
  shows:  $want
  prints: $got"
    done
}

@test "readme: 'A worker' finishes what succeeds and retries what fails until ATTEMPTS" {
    fake_curl
    mount_fs
    echo 'DEFINE QUEUE jobs TIMEOUT 30s ATTEMPTS 5;' >"$M/ctl"
    printf '%s\n' '{"url":"https://example.test/a"}' '{"url":"https://example.test/b"}' >>"$M/jobs/new"
    local block
    block=$(example "A worker")
    [[ $block == *'cat wait'* ]] || fail "no worker loop in the README"
    block=${block//'~/queues'/$M}
    # The loop blocks in cat wait once nothing is left: stop it then.
    timeout 10 bash -c "$block" 3>&- &
    local pid=$! i
    for i in $(seq 200); do
        [ "$(jq .dead "$M/jobs/stats")" = 1 ] && [ ! -e "$M/jobs/1" ] && break
        sleep 0.05
    done
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
    [ ! -e "$M/jobs/1" ] || fail "jobs:1 (a success) was not finished: $(cat "$M/jobs/1")"
    run ls "$M/jobs/dead"
    assert_output 2
    assert_equal "$(jq .attempts "$M/jobs/2")" 5
    assert_equal "$(jq -c '[(.errors | length), .last_error]' "$M/jobs/2")" \
        '[5,"curl: (22) The requested URL returned error: 503"]'
}

@test "readme: 'When something fails' says what died and why, and brings it back" {
    mount_fs
    echo 'DEFINE QUEUE jobs TIMEOUT 30s ATTEMPTS 2;' >"$M/ctl"
    printf '%s\n' '{"url":"https://example.test/a"}' '{"url":"https://example.test/b"}' >>"$M/jobs/new"
    local i hold
    for i in 1 2; do
        hold=$(ctl 'CLAIM jobs:2' | jq '.[0].hold')
        printf 'HTTP %d\n' "$((500 + i))" >"$M/jobs/released/2~$hold"
    done
    [ -e "$M/jobs/dead/2" ] || fail "jobs:2 is not dead: $(cat "$M/jobs/2")"
    local block
    block=$(example "When something fails")
    [[ $block == *'dead/'* ]] || fail "no example in the README's 'When something fails'"
    block=${block//'~/queues'/$M}
    run bash -c "$block"
    assert_success
    assert_line --index 0 "jobs:2: HTTP 502"
    assert_equal "$(jq -c '[.attempt, .error]' <<<"${lines[1]}") $(jq -c '[.attempt, .error]' <<<"${lines[2]}")" \
        '[1,"HTTP 501"] [2,"HTTP 502"]'
    [ ! -e "$M/jobs/dead/2" ] || fail "jobs:2 is still dead"
    assert_equal "$(jq -c '[.attempts, .last_error]' "$M/jobs/2")" '[0,"HTTP 502"]'
}

@test "readme: 'A worker with queuefs-work' runs the command for every record" {
    fake_curl
    mount_fs
    echo 'DEFINE QUEUE jobs TIMEOUT 30s ATTEMPTS 5;' >"$M/ctl"
    printf '%s\n' '{"url":"https://example.test/a"}' '{"url":"https://example.test/c"}' >>"$M/jobs/new"
    local cmd
    cmd=$(example "A worker with queuefs-work")
    [[ $cmd == queuefs-work* ]] || fail "no queuefs-work line in the README: $cmd"
    cmd=${cmd//'~/queues'/$M}
    cmd=${cmd/queuefs-work/$QUEUEFS_BUILD/queuefs-work}
    run_until_finished "$cmd" 2
    run ls "$M/jobs"
    assert_output ""
}

@test "readme: 'A crawler: several limits at once' never fetches two of one account at once, and fetches all" {
    # A fake curl that logs when each URL's fetch starts and ends.
    mkdir -p "$BATS_TEST_TMPDIR/bin"
    cat >"$BATS_TEST_TMPDIR/bin/curl" <<SH
#!/bin/sh
for a; do case \$a in http*) url=\$a ;; esac; done
echo "start \$url \$(date +%s%N)" >>"$BATS_TEST_TMPDIR/fetches"
sleep 0.3
echo "end \$url \$(date +%s%N)" >>"$BATS_TEST_TMPDIR/fetches"
SH
    chmod +x "$BATS_TEST_TMPDIR/bin/curl"
    PATH="$BATS_TEST_TMPDIR/bin:$PATH"
    mount_fs
    local block
    block=$(example "A crawler: several limits at once")
    [[ $block == *'AT MOST 4 PER host'* ]] || fail "no example in the README's 'A crawler: several limits at once'"
    block=${block//'~/queues'/$M}
    block=${block//queuefs-ctl/$BATS_TEST_DIRNAME/../scripts/queuefs-ctl}
    block=${block/queuefs-work/$QUEUEFS_BUILD/queuefs-work}
    run_until_finished "$block" 3
    assert_equal "$(ls "$M/fetch")" ""
    # account a1's two fetches one after the other; a2's beside them
    run python3 -c '
import sys
t = {}
for line in open(sys.argv[1]):
    what, url, ns = line.split()
    t[(what, url.rsplit("/", 1)[1])] = int(ns)
one, two = sorted(("1", "2"), key=lambda u: t[("start", u)])
assert t[("start", two)] >= t[("end", one)], "a1 fetched twice at once: %s" % t
assert t[("start", "3")] < t[("end", one)] or t[("start", "3")] < t[("end", two)], "a2 waited: %s" % t
' "$BATS_TEST_TMPDIR/fetches"
    assert_success
}

@test "readme: 'What finished, and demand' keeps one build for two pushes and shows it done" {
    mount_fs
    local block
    block=$(example "What finished, and demand")
    [[ $block == *'COALESCE'* ]] || fail "no example in the README's 'What finished, and demand'"
    block=${block//'~/queues'/$M}
    block=${block//queuefs-ctl/$BATS_TEST_DIRNAME/../scripts/queuefs-ctl}
    # The example's worker: the build runs and finishes between its two halves.
    local head=${block%%ls *} tail="ls ${block#*ls }"
    run bash -c "$head"
    assert_success
    assert_equal "$(ls "$M/builds")" main
    assert_equal "$(jq -c .demand "$M/builds/main")" 3
    assert_equal "$(jq -r .id <"$M/builds/claim")" builds:main
    rm "$M/builds/main"
    run bash -c "$tail"
    assert_success
    assert_line --index 0 main
    assert_near "$(epoch_of "${lines[1]}")" "$(date +%s)" 5
}
