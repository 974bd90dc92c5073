#!/usr/bin/env bats
# fuzz.bats — a bounded run of every libFuzzer target (scripts/fuzz): the
# statement parser, record content with its binary round trip, and identity
# file names.  Each runs for QUEUEFS_FUZZ_SECONDS (default 20) from the seed
# corpus; a crash, leak, undefined behaviour or hang fails the test and
# prints the input and the command that reproduces it.  Longer runs:
# `scripts/fuzz 3600`.
bats_require_minimum_version 1.5.0

load /usr/lib/bats/bats-support/load.bash
load /usr/lib/bats/bats-assert/load.bash

FUZZ="$BATS_TEST_DIRNAME/../scripts/fuzz"

setup_file() {
    export FUZZ_OUT="$BATS_FILE_TMPDIR/fuzz"
    "$FUZZ" -b -o "$FUZZ_OUT" >&2
}

# fuzz_target NAME — runs target NAME; prints what scripts/fuzz reports.
fuzz_target() {
    run "$FUZZ" -o "$FUZZ_OUT" "${QUEUEFS_FUZZ_SECONDS:-20}" "$1"
    echo "$output"
    echo "# $output" >&3    # the executions reached, in the TAP log
    [ "$status" -eq 0 ] || fail "fuzz target $1 failed (the input and a reproducer are above)"
    assert_output --regexp "^$1: [0-9]+ executions in [0-9]+ s, no crash, leak or hang\$"
}

@test "fuzz: the statement parser" {
    fuzz_target statement
}

@test "fuzz: record content and its binary round trip" {
    fuzz_target literal
}

@test "fuzz: identity file names, both ways" {
    fuzz_target names
}
