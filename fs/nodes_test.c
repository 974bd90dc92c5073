/* nodes_test.c — the inode table a mount keeps for the kernel: numbers
 * stay put while a name does, change with its generation, name nothing
 * once detached, and are freed when forgotten (but not while a child
 * needs them for its path). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../tests/unit_test.h"
#include "nodes.h"

/* The path of "ino", or the errno it fails with as "-N". */
static const char *
path_of(Nodes *n, uint64_t ino)
{
    static char out[64];
    int rc = nodes_path(n, ino, out, sizeof out);
    if (rc)
        snprintf(out, sizeof out, "%d", rc);
    return out;
}

static void
test_lookup_and_paths(void)
{
    Nodes *n = nodes_new();
    CHECK_STR(path_of(n, NODES_ROOT), "/");
    uint64_t jobs = nodes_lookup(n, NODES_ROOT, "jobs", 2);
    uint64_t claim = nodes_lookup(n, jobs, "claim", 0);
    uint64_t held = nodes_lookup(n, jobs, "held", 0);
    uint64_t entry = nodes_lookup(n, held, "7~1", 0);
    CHECK(jobs > NODES_ROOT && claim != jobs && held != claim && entry != held,
          "distinct numbers: %llu %llu %llu %llu", (unsigned long long)jobs,
          (unsigned long long)claim, (unsigned long long)held, (unsigned long long)entry);
    CHECK_STR(path_of(n, jobs), "/jobs");
    CHECK_STR(path_of(n, claim), "/jobs/claim");
    CHECK_STR(path_of(n, entry), "/jobs/held/7~1");
    CHECK(nodes_lookup(n, NODES_ROOT, "jobs", 2) == jobs, "a name looked up again keeps its number");
    CHECK(nodes_lookup(n, NODES_ROOT, "other", 1) != jobs, "another name, another number");
    CHECK(nodes_count(n) == 5, "5 nodes, got %zu", nodes_count(n));
    CHECK_STR(path_of(n, 999), "-2");   /* never given */
    nodes_free(n);
}

static void
test_generation_detach_and_forget(void)
{
    Nodes *n = nodes_new();
    uint64_t jobs = nodes_lookup(n, NODES_ROOT, "jobs", 2);
    uint64_t claim = nodes_lookup(n, jobs, "claim", 0);
    uint64_t record = nodes_lookup(n, jobs, "7", 0);

    /* A record removed: its number names nothing; a new one gets a new number. */
    nodes_detach(n, jobs, "7");
    CHECK_STR(path_of(n, record), "-2");
    uint64_t again = nodes_lookup(n, jobs, "7", 0);
    CHECK(again != record, "a name made anew gets a new number");
    CHECK_STR(path_of(n, again), "/jobs/7");
    nodes_forget(n, record, 1);   /* the kernel lets go of the removed one: freed */
    CHECK(nodes_count(n) == 3, "3 nodes after forgetting the removed record, got %zu", nodes_count(n));

    /* The table becomes another kind: new number, and what was kept under
     * the old one names nothing. */
    uint64_t collection = nodes_lookup(n, NODES_ROOT, "jobs", 1);
    CHECK(collection != jobs, "a new generation gets a new number");
    CHECK_STR(path_of(n, jobs), "-2");
    CHECK_STR(path_of(n, claim), "-2");
    CHECK(nodes_lookup(n, jobs, "claim", 0) == 0, "no lookups in a directory that is gone");
    CHECK_STR(path_of(n, collection), "/jobs");

    /* Forgetting: a directory stays while an attached child needs its path. */
    uint64_t record2 = nodes_lookup(n, collection, "8", 0);
    nodes_forget(n, collection, 1);
    CHECK_STR(path_of(n, record2), "/jobs/8");
    nodes_forget(n, record2, 1);   /* the last child goes: so does the directory */
    CHECK_STR(path_of(n, collection), "-2");
    /* Lookups counted twice need two forgets (or one of 2). */
    uint64_t twice = nodes_lookup(n, NODES_ROOT, "q", 1);
    CHECK(nodes_lookup(n, NODES_ROOT, "q", 1) == twice, "same number");
    nodes_forget(n, twice, 1);
    CHECK_STR(path_of(n, twice), "/q");
    nodes_forget(n, twice, 1);
    CHECK_STR(path_of(n, twice), "-2");
    nodes_forget(n, 12345, 3);   /* a number never given: ignored */
    nodes_free(n);
}

static void
test_long_paths_and_growth(void)
{
    Nodes *n = nodes_new();
    char name[40];
    memset(name, 'x', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    uint64_t dir = nodes_lookup(n, NODES_ROOT, name, 1);
    uint64_t file = nodes_lookup(n, dir, name, 0);
    char small[64];
    CHECK(nodes_path(n, file, small, sizeof small) == -ENAMETOOLONG, "80 bytes do not fit in 64");
    CHECK(nodes_path(n, dir, small, sizeof small) == 0 && strlen(small) == 40, "40 do");

    /* Thousands of names: every one keeps its own number and path. */
    uint64_t first = 0, last = 0;
    for (int i = 0; i < 5000; i++) {
        snprintf(name, sizeof name, "%d", i);
        last = nodes_lookup(n, dir, name, 0);
        if (i == 0)
            first = last;
    }
    CHECK(nodes_lookup(n, dir, "0", 0) == first, "the first of 5000 keeps its number");
    char want[64];
    snprintf(want, sizeof want, "%s/4999", path_of(n, dir));
    CHECK_STR(path_of(n, last), want);
    CHECK(nodes_count(n) == 5002, "got %zu", nodes_count(n));
    CHECK(!nodes_shrunk(n), "nothing forgotten yet");

    /* The kernel forgets them: past half of the peak it is time to give
     * memory back, and the tables shrink with the nodes. */
    for (int i = 0; i < 5000; i++) {
        snprintf(name, sizeof name, "%d", i);
        uint64_t ino = nodes_lookup(n, dir, name, 0);
        nodes_forget(n, ino, 100);
    }
    CHECK(nodes_count(n) == 2, "forgotten: got %zu", nodes_count(n));
    CHECK(nodes_shrunk(n), "shrunk after 5000 forgotten");
    CHECK(!nodes_shrunk(n), "said once");
    uint64_t again = nodes_lookup(n, dir, "7", 0);
    snprintf(want, sizeof want, "%s/7", path_of(n, dir));
    CHECK(again > last && strcmp(path_of(n, again), want) == 0, "names still resolve");
    CHECK(nodes_lookup(n, dir, "7", 0) == again, "and keep their number");
    nodes_free(n);
}

/* A renamed directory keeps its number under the new name, and so do the
 * names inside it; the old name is free for another number. */
static void
test_rename(void)
{
    Nodes *n = nodes_new();
    uint64_t jobs = nodes_lookup(n, NODES_ROOT, "jobs", 2);
    uint64_t claim = nodes_lookup(n, jobs, "claim", 0);
    uint64_t work = nodes_lookup(n, NODES_ROOT, "work", 1);
    nodes_rename(n, NODES_ROOT, "jobs", NODES_ROOT, "work");
    CHECK_STR(path_of(n, jobs), "/work");
    CHECK_STR(path_of(n, claim), "/work/claim");
    CHECK_STR(path_of(n, work), "-2");   /* the number the new name had */
    CHECK(nodes_lookup(n, NODES_ROOT, "work", 2) == jobs, "the new name finds the moved number");
    uint64_t again = nodes_lookup(n, NODES_ROOT, "jobs", 2);
    CHECK(again != jobs, "the old name gets a new number");
    nodes_rename(n, NODES_ROOT, "absent", NODES_ROOT, "x");   /* no number: nothing */
    nodes_rename(n, NODES_ROOT, "work", 12345, "x");           /* no such directory */
    CHECK_STR(path_of(n, jobs), "-2");
    CHECK_STR(path_of(n, claim), "-2");
    nodes_free(n);
}

int
main(void)
{
    test_lookup_and_paths();
    test_generation_detach_and_forget();
    test_long_paths_and_growth();
    test_rename();
    return unit_test_summary();
}
