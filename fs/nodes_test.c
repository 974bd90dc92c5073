/* nodes_test.c — the inode table a mount keeps for the kernel: what each
 * name is (kind, table, identity, fence), numbers that stay put while a
 * name does, change with its generation, name nothing once detached, carry
 * a renamed table's new name, and are freed when forgotten (but not while
 * a child needs them). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../lang/lang.h"
#include "../tests/unit_test.h"
#include "nodes.h"

static const char *const kind_names[] = {
    [KIND_ROOT] = "root",
    [KIND_CTL] = "ctl",
    [KIND_METRICS] = "metrics",
    [KIND_TABLE] = "table",
    [KIND_CLAIM] = "claim",
    [KIND_WAIT] = "wait",
    [KIND_NEW] = "new",
    [KIND_STATS] = "stats",
    [KIND_RELEASED] = "released",
    [KIND_HELD] = "held",
    [KIND_DEAD] = "dead",
    [KIND_DONE] = "done",
    [KIND_BLOCKED] = "blocked",
    [KIND_RELEASED_ENTRY] = "released-entry",
    [KIND_HELD_ENTRY] = "held-entry",
    [KIND_DEAD_ENTRY] = "dead-entry",
    [KIND_DONE_ENTRY] = "done-entry",
    [KIND_BLOCKED_ENTRY] = "blocked-entry",
    [KIND_RECORD] = "record",
    [KIND_NONE] = "none",
    [KIND_TOOLONG] = "toolong",
};

/* "kind table/name key fence" of what "in" says (cleared), or the errno
 * "rc" it failed with as "-N". */
static const char *
shown(int rc, Inode *in)
{
    static char out[1600];
    if (rc) {
        snprintf(out, sizeof out, "%d", rc);
        return out;
    }
    char key[64] = "-";
    if (in->key.kind == VAL_INT)
        snprintf(key, sizeof key, "%lld", (long long)in->key.u.i);
    else if (in->key.kind == VAL_STRING)
        snprintf(key, sizeof key, "'%s'", in->key.u.str.s);
    snprintf(out, sizeof out, "%s %s/%s %s %lld", kind_names[in->kind], in->table, in->name, key,
             (long long)in->fence);
    fs_inode_clear(in);
    return out;
}

/* What inode "ino" is (see shown). */
static const char *
what(Nodes *n, uint64_t ino)
{
    Inode in;
    return shown(fs_nodes_get(n, ino, &in), &in);
}

/* What "name" in "parent" would be (see shown). */
static const char *
child(Nodes *n, uint64_t parent, const char *name)
{
    Inode in;
    return shown(fs_nodes_child(n, parent, name, &in), &in);
}

/* Looks "name" up in "parent" as the mount does: what it is, then its
 * number. */
static uint64_t
look(Nodes *n, uint64_t parent, const char *name, uint32_t generation)
{
    Inode in = {KIND_NONE, "", "", {0}, 0};
    if (fs_nodes_child(n, parent, name, &in))
        snprintf(in.name, sizeof in.name, "%s", name); /* the lookup says no itself */
    uint64_t ino = fs_nodes_lookup(n, parent, &in, generation);
    fs_inode_clear(&in);
    return ino;
}

/* A queue "jobs" with its claim, held/ and held/ENTRY looked up. */
typedef struct Jobs {
    Nodes *n;
    uint64_t jobs, claim, held, entry;
} Jobs;

static Jobs
jobs_new(const char *entry)
{
    Jobs j = {fs_nodes_new(), 0, 0, 0, 0};
    j.jobs = look(j.n, FS_ROOT_INO, "jobs", 2);
    j.claim = look(j.n, j.jobs, "claim", 0);
    j.held = look(j.n, j.jobs, "held", 0);
    j.entry = look(j.n, j.held, entry, 0);
    return j;
}

static void
test_kinds(void)
{
    Nodes *n = fs_nodes_new();
    CHECK_STR(what(n, FS_ROOT_INO), "root / - 0");
    CHECK_STR(child(n, FS_ROOT_INO, "ctl"), "ctl ctl/ctl - 0");
    CHECK_STR(child(n, FS_ROOT_INO, "metrics"), "metrics metrics/metrics - 0");
    char lng[300];
    memset(lng, 'x', sizeof lng - 1);
    lng[sizeof lng - 1] = '\0';
    CHECK(strncmp(child(n, FS_ROOT_INO, lng), "toolong ", 8) == 0, "a 299-byte table name");
    uint64_t jobs = look(n, FS_ROOT_INO, "jobs", 2);
    CHECK_STR(what(n, jobs), "table jobs/jobs - 0");
    CHECK_STR(child(n, jobs, "claim"), "claim jobs/claim - 0");
    CHECK_STR(child(n, jobs, "stats"), "stats jobs/stats - 0");
    CHECK_STR(child(n, jobs, "7"), "record jobs/7 7 0");
    CHECK_STR(child(n, jobs, "%3007"), "record jobs/%3007 '007' 0");
    CHECK_STR(child(n, jobs, "007"), "record jobs/007 - 0"); /* no identity's name */
    uint64_t held = look(n, jobs, "held", 0);
    CHECK_STR(child(n, held, "7~3"), "held-entry jobs/7~3 7 3");
    CHECK_STR(child(n, held, "7~x"), "held-entry jobs/7~x - 0");
    CHECK_STR(child(n, held, "7"), "held-entry jobs/7 - 0");
    uint64_t dead = look(n, jobs, "dead", 0);
    CHECK_STR(child(n, dead, "8"), "dead-entry jobs/8 8 -1");
    uint64_t done = look(n, jobs, "done", 0);
    CHECK_STR(child(n, done, "9"), "done-entry jobs/9 9 -2");
    uint64_t released = look(n, jobs, "released", 0);
    CHECK_STR(child(n, released, "7@10s"), "released-entry jobs/7@10s - 0");
    uint64_t record = look(n, jobs, "7", 0);
    CHECK_STR(what(n, record), "record jobs/7 7 0");
    CHECK_STR(child(n, record, "x"), "none jobs/x - 0");
    CHECK_STR(child(n, 999, "x"), "-2"); /* a directory never given */
    fs_nodes_free(n);
}

static void
test_lookup(void)
{
    Jobs j = jobs_new("7~1");
    Nodes *n = j.n;
    uint64_t jobs = j.jobs, claim = j.claim, held = j.held, entry = j.entry;
    CHECK(jobs > FS_ROOT_INO && claim != jobs && held != claim && entry != held,
          "distinct numbers: %llu %llu %llu %llu", (unsigned long long)jobs,
          (unsigned long long)claim, (unsigned long long)held, (unsigned long long)entry);
    CHECK_STR(what(n, claim), "claim jobs/claim - 0");
    CHECK_STR(what(n, entry), "held-entry jobs/7~1 7 1");
    CHECK(look(n, FS_ROOT_INO, "jobs", 2) == jobs, "a name looked up again keeps its number");
    CHECK(look(n, FS_ROOT_INO, "other", 1) != jobs, "another name, another number");
    CHECK(fs_nodes_count(n) == 5, "5 nodes, got %zu", fs_nodes_count(n));
    CHECK_STR(what(n, 999), "-2"); /* never given */
    fs_nodes_free(n);
}

static void
test_generation_detach_and_forget(void)
{
    Nodes *n = fs_nodes_new();
    uint64_t jobs = look(n, FS_ROOT_INO, "jobs", 2);
    uint64_t claim = look(n, jobs, "claim", 0);
    uint64_t record = look(n, jobs, "7", 0);

    /* A record removed: its number names nothing; a new one gets a new number. */
    fs_nodes_detach(n, jobs, "7");
    CHECK_STR(what(n, record), "-2");
    uint64_t again = look(n, jobs, "7", 0);
    CHECK(again != record, "a name made anew gets a new number");
    CHECK_STR(what(n, again), "record jobs/7 7 0");
    fs_nodes_forget(n, record, 1); /* the kernel lets go of the removed one: freed */
    CHECK(fs_nodes_count(n) == 3, "3 nodes after forgetting the removed record, got %zu",
          fs_nodes_count(n));

    /* The table becomes another kind: new number, and what was kept under
     * the old one names nothing. */
    uint64_t collection = look(n, FS_ROOT_INO, "jobs", 1);
    CHECK(collection != jobs, "a new generation gets a new number");
    CHECK_STR(what(n, jobs), "-2");
    CHECK_STR(what(n, claim), "-2");
    CHECK(look(n, jobs, "claim", 0) == 0, "no lookups in a directory that is gone");
    CHECK_STR(child(n, jobs, "claim"), "-2");
    CHECK_STR(what(n, collection), "table jobs/jobs - 0");

    /* Forgetting: a directory stays while an attached child needs it. */
    uint64_t record2 = look(n, collection, "8", 0);
    fs_nodes_forget(n, collection, 1);
    CHECK_STR(what(n, record2), "record jobs/8 8 0");
    fs_nodes_forget(n, record2, 1); /* the last child goes: so does the directory */
    CHECK_STR(what(n, collection), "-2");
    /* Lookups counted twice need two forgets (or one of 2). */
    uint64_t twice = look(n, FS_ROOT_INO, "q", 1);
    CHECK(look(n, FS_ROOT_INO, "q", 1) == twice, "same number");
    fs_nodes_forget(n, twice, 1);
    CHECK_STR(what(n, twice), "table q/q - 0");
    fs_nodes_forget(n, twice, 1);
    CHECK_STR(what(n, twice), "-2");
    fs_nodes_forget(n, 12345, 3); /* a number never given: ignored */
    fs_nodes_free(n);
}

static void
test_growth(void)
{
    Nodes *n = fs_nodes_new();
    char name[40];
    uint64_t dir = look(n, FS_ROOT_INO, "big", 1);

    /* Thousands of names: every one keeps its own number and identity. */
    uint64_t first = 0, last = 0;
    for (int i = 0; i < 5000; i++) {
        snprintf(name, sizeof name, "%d", i);
        last = look(n, dir, name, 0);
        if (i == 0)
            first = last;
    }
    CHECK(look(n, dir, "0", 0) == first, "the first of 5000 keeps its number");
    CHECK_STR(what(n, last), "record big/4999 4999 0");
    CHECK(fs_nodes_count(n) == 5001, "got %zu", fs_nodes_count(n));
    CHECK(!fs_nodes_shrunk(n), "nothing forgotten yet");

    /* The kernel forgets them: past half of the peak it is time to give
     * memory back, and the tables shrink with the nodes. */
    for (int i = 0; i < 5000; i++) {
        snprintf(name, sizeof name, "%d", i);
        uint64_t ino = look(n, dir, name, 0);
        fs_nodes_forget(n, ino, 100);
    }
    CHECK(fs_nodes_count(n) == 1, "forgotten: got %zu", fs_nodes_count(n));
    CHECK(fs_nodes_shrunk(n), "shrunk after 5000 forgotten");
    CHECK(!fs_nodes_shrunk(n), "said once");
    uint64_t again = look(n, dir, "7", 0);
    CHECK(again > last, "a new number");
    CHECK_STR(what(n, again), "record big/7 7 0");
    CHECK(look(n, dir, "7", 0) == again, "and keeps it");
    fs_nodes_free(n);
}

/* A renamed table keeps its number under the new name, and what is in it
 * belongs to the new name; the old name is free for another number. */
static void
test_rename(void)
{
    Jobs j = jobs_new("7~2");
    Nodes *n = j.n;
    uint64_t work = look(n, FS_ROOT_INO, "work", 1);
    fs_nodes_rename(n, FS_ROOT_INO, "jobs", FS_ROOT_INO, "work");
    CHECK_STR(what(n, j.jobs), "table work/work - 0");
    CHECK_STR(what(n, j.claim), "claim work/claim - 0");
    CHECK_STR(what(n, j.entry), "held-entry work/7~2 7 2");
    CHECK_STR(child(n, j.held, "8~1"), "held-entry work/8~1 8 1");
    CHECK_STR(what(n, work), "-2"); /* the number the new name had */
    CHECK(look(n, FS_ROOT_INO, "work", 2) == j.jobs, "the new name finds the moved number");
    uint64_t again = look(n, FS_ROOT_INO, "jobs", 2);
    CHECK(again != j.jobs, "the old name gets a new number");
    fs_nodes_rename(n, FS_ROOT_INO, "absent", FS_ROOT_INO, "x"); /* no number: nothing */
    fs_nodes_rename(n, FS_ROOT_INO, "work", 12345, "x");         /* no such directory */
    CHECK_STR(what(n, j.jobs), "-2");
    CHECK_STR(what(n, j.claim), "-2");
    fs_nodes_free(n);
}

int
main(void)
{
    test_kinds();
    test_lookup();
    test_generation_detach_and_forget();
    test_growth();
    test_rename();
    return unit_test_summary();
}
