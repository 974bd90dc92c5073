/* eval_test.c — the statement engine on a real store: each case is a
 * script, the lines it must answer, and the error it must end with. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../store/bigendian.h"
#include "engine.h"
#include "lang.h"
#include "parse.h"
#include "../tests/unit_test.h"

static void
collect(void *ctx, const char *line, size_t len)
{
    Buf *b = ctx;
    lang_buf_append(b, line, len);
    lang_buf_putc(b, '\n');
}

/* Replaces every RFC 3339 datetime string and 32-hex instance with a
 * placeholder, so answers that carry the clock compare stably. */
static void
mask(char *s)
{
    for (char *p = s; *p; p++) {
        if (p[0] == '"' && strlen(p) > 21 && p[5] == '-' && p[8] == '-' && p[11] == 'T') {
            char *end = strchr(p + 1, '"');
            if (end) {
                memmove(p + 2, end, strlen(end) + 1);
                memcpy(p, "\"T", 2);
                p += 2;
            }
        } else if (strncmp(p, "\"instance\":\"", 12) == 0 && strlen(p) >= 12 + 33) {
            memmove(p + 13, p + 12 + 32, strlen(p + 12 + 32) + 1);
            p[12] = 'I';
        }
    }
}

typedef struct Case {
    const char *script;
    const char *want;    /* the answered lines, masked */
    LangErrorCode error; /* the error it ends with, or LANG_OK */
} Case;

static const Case cases[] = {
    /* the seed's queue, claims in identity order, passing over holds */
    {"DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:1 = { url: 'a' }; CREATE jobs:2 = { url: 'b' };"
     "CLAIM FROM jobs; CLAIM FROM jobs; CLAIM FROM jobs;",
     "null\n[{\"id\":\"jobs:1\",\"url\":\"a\"}]\n[{\"id\":\"jobs:2\",\"url\":\"b\"}]\n"
     "[{\"attempts\":1,\"claimed_until\":\"T\",\"hold\":1,\"id\":\"jobs:1\",\"url\":\"a\"}]\n"
     "[{\"attempts\":1,\"claimed_until\":\"T\",\"hold\":2,\"id\":\"jobs:2\",\"url\":\"b\"}]\n[]\n",
     LANG_OK},
    /* engine fields: refused on a queue, ordinary on a collection */
    {"DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:9 = { url: 'd', claimed_until: 1 };", "null\n",
     LANG_ENGINE_FIELD},
    {"DEFINE COLLECTION notes; CREATE notes:2 = { attempts: 3, claimed_until: 'whenever' };",
     "null\n[{\"attempts\":3,\"claimed_until\":\"whenever\",\"id\":\"notes:2\"}]\n", LANG_OK},
    {"DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:9 = { hold: 1 };", "null\n", LANG_ENGINE_FIELD},
    /* hold numbers are the store's: a dropped and re-defined queue goes on
     * from the last, and a release takes the number away */
    {"DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:1 = {}; CLAIM FROM jobs; DROP QUEUE jobs;"
     "DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:1 = {}; CLAIM FROM jobs; RELEASE jobs:1;",
     "null\n[{\"id\":\"jobs:1\"}]\n[{\"attempts\":1,\"claimed_until\":\"T\",\"hold\":1,\"id\":\"jobs:1\"}]\n"
     "null\nnull\n[{\"id\":\"jobs:1\"}]\n"
     "[{\"attempts\":1,\"claimed_until\":\"T\",\"hold\":2,\"id\":\"jobs:1\"}]\n"
     "[{\"attempts\":1,\"id\":\"jobs:1\"}]\n",
     LANG_OK},
    /* a whole-record write carries the engine's fields forward */
    {"DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:7 = {url:'a'}; CLAIM FROM jobs;"
     "UPDATE jobs:7 = {url:'b'}; CLAIM FROM jobs;",
     "null\n[{\"id\":\"jobs:7\",\"url\":\"a\"}]\n"
     "[{\"attempts\":1,\"claimed_until\":\"T\",\"hold\":1,\"id\":\"jobs:7\",\"url\":\"a\"}]\n"
     "[{\"attempts\":1,\"claimed_until\":\"T\",\"hold\":1,\"id\":\"jobs:7\",\"url\":\"b\"}]\n[]\n",
     LANG_OK},
    {"DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:7 = {url:'a'}; UPDATE jobs:7 MERGE {attempts: 9};",
     "null\n[{\"id\":\"jobs:7\",\"url\":\"a\"}]\n", LANG_ENGINE_FIELD},
    /* the lapse, watched directly, and the ceiling */
    {"DEFINE QUEUE fast TIMEOUT 1ns ATTEMPTS 2; CREATE fast:1 = {url:'a'}; CREATE fast:2 = {url:'b'};"
     "CLAIM FROM fast; CLAIM FROM fast; CLAIM FROM fast; SELECT url FROM fast WHERE attempts >= 2;",
     "null\n[{\"id\":\"fast:1\",\"url\":\"a\"}]\n[{\"id\":\"fast:2\",\"url\":\"b\"}]\n"
     "[{\"attempts\":1,\"claimed_until\":\"T\",\"hold\":1,\"id\":\"fast:1\",\"url\":\"a\"}]\n"
     "[{\"attempts\":2,\"claimed_until\":\"T\",\"errors\":[{\"at\":\"T\",\"attempt\":1,"
     "\"error\":\"lapsed\"}],\"hold\":2,\"id\":\"fast:1\",\"last_error\":\"lapsed\",\"url\":\"a\"}]\n"
     "[{\"attempts\":1,\"claimed_until\":\"T\",\"hold\":3,\"id\":\"fast:2\",\"url\":\"b\"}]\n"
     "[{\"url\":\"a\"}]\n",
     LANG_OK},
    /* a release's reason, kept by a release without one and by RETRY */
    {"DEFINE QUEUE jobs TIMEOUT 30s ATTEMPTS 3; CREATE jobs:1 = {}; CLAIM FROM jobs;"
     "RELEASE jobs:1 BECAUSE 'HTTP 503'; CLAIM FROM jobs; RELEASE jobs:1; RETRY jobs:1;"
     "SELECT errors, last_error FROM jobs;",
     "null\n[{\"id\":\"jobs:1\"}]\n[{\"attempts\":1,\"claimed_until\":\"T\",\"hold\":1,\"id\":\"jobs:1\"}]\n"
     "[{\"attempts\":1,\"errors\":[{\"at\":\"T\",\"attempt\":1,\"error\":\"HTTP 503\"}],\"id\":\"jobs:1\",\"last_error\":\"HTTP 503\"}]\n"
     "[{\"attempts\":2,\"claimed_until\":\"T\",\"errors\":[{\"at\":\"T\",\"attempt\":1,\"error\":\"HTTP 503\"}],\"hold\":2,\"id\":\"jobs:1\","
     "\"last_error\":\"HTTP 503\"}]\n"
     "[{\"attempts\":2,\"errors\":[{\"at\":\"T\",\"attempt\":1,\"error\":\"HTTP 503\"}],\"id\":\"jobs:1\",\"last_error\":\"HTTP 503\"}]\n"
     "[{\"attempts\":0,\"errors\":[{\"at\":\"T\",\"attempt\":1,\"error\":\"HTTP 503\"}],\"id\":\"jobs:1\",\"last_error\":\"HTTP 503\"}]\n"
     "[{\"errors\":[{\"at\":\"T\",\"attempt\":1,\"error\":\"HTTP 503\"}],\"last_error\":\"HTTP 503\"}]\n",
     LANG_OK},
    {"DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:1 = {last_error: 'x'};", "null\n",
     LANG_ENGINE_FIELD},
    {"DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:1 = {}; UPDATE jobs:1 MERGE {errors: []};",
     "null\n[{\"id\":\"jobs:1\"}]\n", LANG_ENGINE_FIELD},
    /* priority: greatest first; the claim plan names the index */
    {"DEFINE QUEUE alerts TIMEOUT 1m PRIORITY BY severity; CLAIM FROM alerts EXPLAIN;"
     "DEFINE INDEX by_severity ON alerts FIELDS severity; CLAIM FROM alerts EXPLAIN;"
     "CREATE alerts = { severity: 2, text: 'disk at 80%' };"
     "CREATE alerts = { severity: 9, text: 'disk full' }; CLAIM FROM alerts;",
     "null\n[{\"plan\":\"scan\"}]\nnull\n[{\"index\":\"by_severity\",\"plan\":\"ordered\"}]\n"
     "[{\"id\":\"alerts:1\",\"severity\":2,\"text\":\"disk at 80%\"}]\n"
     "[{\"id\":\"alerts:2\",\"severity\":9,\"text\":\"disk full\"}]\n"
     "[{\"attempts\":1,\"claimed_until\":\"T\",\"hold\":1,\"id\":\"alerts:2\",\"severity\":9,\"text\":\"disk full\"}]\n",
     LANG_OK},
    /* NOT BEFORE: a delayed record is not handed out; RELEASE … NOT BEFORE */
    {"DEFINE QUEUE later TIMEOUT 30s NOT BEFORE due; CREATE later:1 = { job: 'resize' };"
     "CLAIM FROM later; RELEASE later:1 NOT BEFORE 10m; CLAIM FROM later;",
     "null\n[{\"id\":\"later:1\",\"job\":\"resize\"}]\n"
     "[{\"attempts\":1,\"claimed_until\":\"T\",\"hold\":1,\"id\":\"later:1\",\"job\":\"resize\"}]\n"
     "[{\"attempts\":1,\"due\":\"T\",\"id\":\"later:1\",\"job\":\"resize\"}]\n[]\n",
     LANG_OK},
    {"DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:1 = {}; CLAIM FROM jobs; RELEASE jobs:1 NOT BEFORE 1m;",
     "null\n[{\"id\":\"jobs:1\"}]\n[{\"attempts\":1,\"claimed_until\":\"T\",\"hold\":1,\"id\":\"jobs:1\"}]\n",
     LANG_NO_DELAY_FIELD},
    /* … NOT BEFORE CRON: the next instant the expression names, after now */
    {"DEFINE QUEUE ticks TIMEOUT 30s NOT BEFORE next; CREATE ticks:1 = {}; CREATE ticks:2 = {};"
     "CLAIM 2 FROM ticks; RELEASE ticks:1, ticks:2 NOT BEFORE CRON '0 3 * * *' IN 'Europe/Berlin';"
     "CLAIM FROM ticks; SELECT id FROM ticks WHERE next > time::now() AND next <= time::now() + 1d"
     " AND next = time::cron('0 3 * * *', 'Europe/Berlin');",
     "null\n[{\"id\":\"ticks:1\"}]\n[{\"id\":\"ticks:2\"}]\n"
     "[{\"attempts\":1,\"claimed_until\":\"T\",\"hold\":1,\"id\":\"ticks:1\"},"
     "{\"attempts\":1,\"claimed_until\":\"T\",\"hold\":2,\"id\":\"ticks:2\"}]\n"
     "[{\"attempts\":1,\"id\":\"ticks:1\",\"next\":\"T\"},{\"attempts\":1,\"id\":\"ticks:2\",\"next\":\"T\"}]\n"
     "[]\n[{\"id\":\"ticks:1\"},{\"id\":\"ticks:2\"}]\n",
     LANG_OK},
    {"DEFINE QUEUE ticks TIMEOUT 30s NOT BEFORE next; CREATE ticks:1 = {}; CLAIM FROM ticks;"
     "RELEASE ALL FROM ticks NOT BEFORE CRON '* * * * *'; CLAIM FROM ticks;"
     "SELECT id FROM ticks WHERE next > time::now() AND next <= time::now() + 1m;",
     "null\n[{\"id\":\"ticks:1\"}]\n"
     "[{\"attempts\":1,\"claimed_until\":\"T\",\"hold\":1,\"id\":\"ticks:1\"}]\n"
     "[{\"attempts\":1,\"id\":\"ticks:1\",\"next\":\"T\"}]\n[]\n[{\"id\":\"ticks:1\"}]\n",
     LANG_OK},
    /* … time::cron as a value: zones shift the same instant */
    {"DEFINE COLLECTION t; CREATE t:1 = { a: time::cron('0 9 * * *', 'Asia/Tokyo') = time::cron('0 0 * * *'),"
     " b: time::cron('30 9 * * *', 'Asia/Kolkata') = time::cron('0 4 * * *'),"
     " c: time::cron('0 3 * * *', 'UTC') = time::cron('0 3 * * *'),"
     " d: time::cron('*/15 * * * *') - time::now() <= 15m, e: time::cron('* * * * *') > time::now() };",
     "null\n[{\"a\":true,\"b\":true,\"c\":true,\"d\":true,\"e\":true,\"id\":\"t:1\"}]\n", LANG_OK},
    {"DEFINE COLLECTION t; CREATE t:1 = { a: time::cron('0 0 31 2 *') };", "null\n",
     LANG_PARSE_ERROR},
    {"DEFINE COLLECTION t; CREATE t:1 = { a: time::cron('0 3 * * *', 'Nowhere/Town') };", "null\n",
     LANG_PARSE_ERROR},
    {"DEFINE COLLECTION t; CREATE t:1 = { a: time::cron(3) };", "null\n", LANG_TYPE_ERROR},
    /* a NOT BEFORE value that is not a datetime is no delay */
    {"DEFINE QUEUE later TIMEOUT 30s NOT BEFORE due; CREATE later:1 = { due: 'soon' }; CLAIM FROM later;",
     "null\n[{\"due\":\"soon\",\"id\":\"later:1\"}]\n"
     "[{\"attempts\":1,\"claimed_until\":\"T\",\"due\":\"soon\",\"hold\":1,\"id\":\"later:1\"}]\n",
     LANG_OK},
    /* deduplicate */
    {"DEFINE QUEUE reclaim TIMEOUT 1m DEDUPLICATE 10m;"
     "CREATE reclaim:'bucket/key' = { reason: 'overwritten' };"
     "CREATE reclaim:'bucket/key' = { reason: 'overwritten' }; DELETE reclaim:'bucket/key';"
     "CREATE reclaim:'bucket/key' = { reason: 'again' }; SELECT * FROM reclaim;",
     "null\n[{\"id\":\"reclaim:'bucket/key'\",\"reason\":\"overwritten\"}]\n[]\n[]\n[]\n[]\n",
     LANG_OK},
    {"DEFINE QUEUE jobs TIMEOUT 1m; CREATE jobs:1 = {}; CREATE jobs:1 = {};",
     "null\n[{\"id\":\"jobs:1\"}]\n", LANG_RECORD_EXISTS},
    /* consumers */
    {"DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:7 = {}; USE CONSUMER 'billing'; CLAIM FROM jobs;"
     "USE CONSUMER 'other'; RELEASE jobs:7;",
     "null\n[{\"id\":\"jobs:7\"}]\nnull\n[{\"attempts\":1,\"claimed_by\":{\"consumer\":\"billing\","
     "\"instance\":\"I\"},\"claimed_until\":\"T\",\"hold\":1,\"id\":\"jobs:7\"}]\nnull\n",
     LANG_HELD_BY_OTHER},
    {"DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:7 = {}; USE CONSUMER 'billing'; CLAIM FROM jobs;"
     "USE CONSUMER 'billing'; RELEASE ALL FROM jobs; RELEASE ALL FROM jobs FOR CONSUMER 'billing';",
     "null\n[{\"id\":\"jobs:7\"}]\nnull\n[{\"attempts\":1,\"claimed_by\":{\"consumer\":\"billing\","
     "\"instance\":\"I\"},\"claimed_until\":\"T\",\"hold\":1,\"id\":\"jobs:7\"}]\nnull\n[]\n"
     "[{\"attempts\":1,\"id\":\"jobs:7\"}]\n",
     LANG_OK},
    /* transactions: the second claim sees the first hold */
    {"DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:1 = {}; CREATE jobs:2 = {};"
     "BEGIN; CLAIM FROM jobs; CLAIM FROM jobs; COMMIT;",
     "null\n[{\"id\":\"jobs:1\"}]\n[{\"id\":\"jobs:2\"}]\nnull\n"
     "[{\"attempts\":1,\"claimed_until\":\"T\",\"hold\":1,\"id\":\"jobs:1\"}]\n"
     "[{\"attempts\":1,\"claimed_until\":\"T\",\"hold\":2,\"id\":\"jobs:2\"}]\nnull\n",
     LANG_OK},
    {"DEFINE QUEUE jobs TIMEOUT 30s; BEGIN; CREATE jobs:1 = {}; CREATE jobs:1 = {}; COMMIT;",
     "null\nnull\n", LANG_RECORD_EXISTS},
    /* a run of CREATEs that name no record goes to the store together:
     * each answers as alone, identities in order, after a named one's */
    {"DEFINE QUEUE jobs TIMEOUT 30s; BEGIN; CREATE jobs = {n: 1}; CREATE jobs = {n: 2};"
     "CREATE jobs:7 = {n: 3}; CREATE jobs = {n: 4}; CREATE jobs; COMMIT; SELECT n FROM jobs;",
     "null\nnull\n[{\"id\":\"jobs:1\",\"n\":1}]\n[{\"id\":\"jobs:2\",\"n\":2}]\n"
     "[{\"id\":\"jobs:7\",\"n\":3}]\n[{\"id\":\"jobs:8\",\"n\":4}]\n[{\"id\":\"jobs:9\"}]\n"
     "null\n[{\"n\":1},{\"n\":2},{\"n\":3},{\"n\":4},{}]\n",
     LANG_OK},
    /* ... and one that fails fails them all, with its own error */
    {"DEFINE QUEUE jobs TIMEOUT 30s; BEGIN; CREATE jobs = {n: 1}; CREATE jobs = {hold: 2};"
     "CREATE jobs = {n: 3}; COMMIT;",
     "null\nnull\n", LANG_ENGINE_FIELD},
    /* ceilings and kinds */
    {"DEFINE QUEUE jobs TIMEOUT 30s; CLAIM 1000 FROM jobs; CLAIM 1001 FROM jobs;", "null\n[]\n",
     LANG_CLAIM_CEILING},
    {"CLAIM 0 FROM jobs;", "", LANG_PARSE_ERROR},
    {"DEFINE QUEUE jobs;", "", LANG_PARSE_ERROR},
    {"DEFINE COLLECTION notes; DROP QUEUE notes;", "null\n", LANG_WRONG_KIND},
    {"CLAIM FROM nothing;", "", LANG_NO_SUCH_TABLE},
    {"DEFINE QUEUE jobs TIMEOUT 1s; CLAIM jobs:4;", "null\n", LANG_NO_SUCH_RECORD},
    {"DEFINE QUEUE jobs TIMEOUT 1s; DEFINE COLLECTION jobs;", "null\n", LANG_TABLE_EXISTS},
    /* schema */
    {"DEFINE QUEUE jobs TIMEOUT 30s SCHEMAFULL; DEFINE FIELD url ON jobs TYPE string REQUIRED;"
     "CREATE jobs = { url: 'a' }; CLAIM FROM jobs; CREATE jobs = { url: 'b', x: 1 };",
     "null\nnull\n[{\"id\":\"jobs:1\",\"url\":\"a\"}]\n"
     "[{\"attempts\":1,\"claimed_until\":\"T\",\"hold\":1,\"id\":\"jobs:1\",\"url\":\"a\"}]\n",
     LANG_SCHEMA_VIOLATION},
    {"DEFINE QUEUE q TIMEOUT 5m ATTEMPTS 3 IN work SCHEMAFULL DEDUPLICATE 1m NOT BEFORE at;"
     "INFO FOR TABLE q;",
     "null\n{\"attempts\":3,\"deduplicate\":\"1m\",\"definition\":\"DEFINE QUEUE q TIMEOUT 5m "
     "ATTEMPTS 3 NOT BEFORE at DEDUPLICATE 1m SCHEMAFULL IN work\",\"fields\":{},\"graph\":\"work\","
     "\"indexes\":{},\"kind\":\"queue\",\"name\":\"q\",\"not_before\":\"at\",\"paused\":false,\"priority_by\":null,"
     "\"schemafull\":true,\"timeout\":\"5m\"}\n",
     LANG_OK},
    /* AT MOST: INFO writes both back, in the canonical order */
    {"DEFINE QUEUE crawl TIMEOUT 1m AT MOST 10 EVERY 1s SCHEMALESS AT MOST 2 PER host.name;"
     "INFO FOR TABLE crawl;",
     "null\n{\"at_most_every\":{\"limit\":10,\"window\":\"1s\"},\"at_most_per\":{\"field\":"
     "\"host.name\",\"limit\":2},\"at_most_per_keys\":[{\"field\":\"host.name\",\"limit\":2}],"
     "\"attempts\":null,\"deduplicate\":null,\"definition\":"
     "\"DEFINE QUEUE crawl TIMEOUT 1m AT MOST 2 PER host.name AT MOST 10 EVERY 1s SCHEMALESS\","
     "\"fields\":{},\"graph\":null,\"indexes\":{},\"kind\":\"queue\",\"name\":\"crawl\","
     "\"not_before\":null,\"paused\":false,\"priority_by\":null,\"schemafull\":false,"
     "\"timeout\":\"1m\"}\n",
     LANG_OK},
    /* KEEP and COALESCE: INFO writes them back; they refuse DEDUPLICATE */
    {"DEFINE QUEUE k TIMEOUT 1m COALESCE SCHEMALESS KEEP 1d; INFO FOR TABLE k;"
     "ALTER QUEUE k DEDUPLICATE 1h;",
     "null\n{\"attempts\":null,\"coalesce\":true,\"deduplicate\":null,\"definition\":"
     "\"DEFINE QUEUE k TIMEOUT 1m KEEP 1d COALESCE SCHEMALESS\",\"fields\":{},\"graph\":null,"
     "\"indexes\":{},\"keep\":\"1d\",\"kind\":\"queue\",\"name\":\"k\",\"not_before\":null,"
     "\"paused\":false,\"priority_by\":null,\"schemafull\":false,\"timeout\":\"1m\"}\n",
     LANG_PARSE_ERROR},
    {"DEFINE QUEUE k TIMEOUT 1m DEDUPLICATE 1h; ALTER QUEUE k DROP DEDUPLICATE COALESCE KEEP 2h;"
     "ALTER QUEUE k DROP KEEP DROP COALESCE DEDUPLICATE 1m; INFO FOR TABLE k;",
     "null\nnull\nnull\n{\"attempts\":null,\"deduplicate\":\"1m\",\"definition\":"
     "\"DEFINE QUEUE k TIMEOUT 1m DEDUPLICATE 1m\",\"fields\":{},\"graph\":null,"
     "\"indexes\":{},\"kind\":\"queue\",\"name\":\"k\",\"not_before\":null,"
     "\"paused\":false,\"priority_by\":null,\"schemafull\":false,\"timeout\":\"1m\"}\n",
     LANG_OK},
    /* AT MOST 1 PER a: a claim passes over a full group; null is no group */
    {"DEFINE QUEUE q TIMEOUT 1m AT MOST 1 PER a; CREATE q:1 = {a: 'x'}; CREATE q:2 = {a: 'x'};"
     "CREATE q:3 = {a: 'y'}; CREATE q:4 = {a: null}; CREATE q:5 = {a: null};"
     "SELECT id FROM q WHERE a = 'none'; CLAIM 5 FROM q; CLAIM q:2;",
     "null\n[{\"a\":\"x\",\"id\":\"q:1\"}]\n[{\"a\":\"x\",\"id\":\"q:2\"}]\n"
     "[{\"a\":\"y\",\"id\":\"q:3\"}]\n[{\"a\":null,\"id\":\"q:4\"}]\n[{\"a\":null,\"id\":\"q:5\"}]\n[]\n"
     "[{\"a\":\"x\",\"attempts\":1,\"claimed_until\":\"T\",\"hold\":1,\"id\":\"q:1\"},"
     "{\"a\":\"y\",\"attempts\":1,\"claimed_until\":\"T\",\"hold\":2,\"id\":\"q:3\"},"
     "{\"a\":null,\"attempts\":1,\"claimed_until\":\"T\",\"hold\":3,\"id\":\"q:4\"},"
     "{\"a\":null,\"attempts\":1,\"claimed_until\":\"T\",\"hold\":4,\"id\":\"q:5\"}]\n[]\n",
     LANG_OK},
    /* AT MOST 2 EVERY 1h: a claim beyond the rate takes fewer, then none */
    {"DEFINE QUEUE r TIMEOUT 1m AT MOST 2 EVERY 1h; CREATE r:1 = {}; CREATE r:2 = {}; CREATE r:3 = {};"
     "CLAIM 3 FROM r; CLAIM FROM r; CLAIM FROM r WAIT 20ms;",
     "null\n[{\"id\":\"r:1\"}]\n[{\"id\":\"r:2\"}]\n[{\"id\":\"r:3\"}]\n"
     "[{\"attempts\":1,\"claimed_until\":\"T\",\"hold\":1,\"id\":\"r:1\"},"
     "{\"attempts\":1,\"claimed_until\":\"T\",\"hold\":2,\"id\":\"r:2\"}]\n[]\n[]\n",
     LANG_OK},
    /* ALTER QUEUE: every clause, written back; dropping the optional ones */
    {"DEFINE QUEUE q TIMEOUT 1m; ALTER QUEUE q TIMEOUT 2m ATTEMPTS 3 PRIORITY BY p NOT BEFORE due "
     "DEDUPLICATE 1h AT MOST 1 PER account AT MOST 5 EVERY 1s SCHEMAFULL IN work;"
     "ALTER QUEUE q DROP ATTEMPTS DROP PRIORITY BY DROP NOT BEFORE DROP DEDUPLICATE "
     "DROP AT MOST PER DROP AT MOST EVERY DROP IN SCHEMALESS;"
     "ALTER QUEUE q AT MOST 2 PER a.b;",
     "null\nnull\nnull\nnull\n", LANG_OK},
    /* ALTER QUEUE … PRIORITY BY files the records anew: the next claims follow it */
    {"DEFINE QUEUE q TIMEOUT 1m; CREATE q:1 = {p: 1}; CREATE q:2 = {p: 5}; CREATE q:3 = {p: 3};"
     "ALTER QUEUE q PRIORITY BY p; CLAIM FROM q; ALTER QUEUE q DROP PRIORITY BY; CLAIM FROM q;",
     "null\n[{\"id\":\"q:1\",\"p\":1}]\n[{\"id\":\"q:2\",\"p\":5}]\n[{\"id\":\"q:3\",\"p\":3}]\n"
     "null\n[{\"attempts\":1,\"claimed_until\":\"T\",\"hold\":1,\"id\":\"q:2\",\"p\":5}]\n"
     "null\n[{\"attempts\":1,\"claimed_until\":\"T\",\"hold\":2,\"id\":\"q:1\",\"p\":1}]\n",
     LANG_OK},
    /* … a record blocked by AFTER stays blocked through a refile, whatever its order */
    {"DEFINE QUEUE q TIMEOUT 1m; CREATE q:1 = {}; CREATE q:2 = {p: 9} AFTER q:1;"
     "ALTER QUEUE q PRIORITY BY p; CLAIM FROM q; CLAIM FROM q; DELETE q:1; CLAIM FROM q;",
     "null\n[{\"id\":\"q:1\"}]\n[{\"after\":[\"q:1\"],\"id\":\"q:2\",\"p\":9}]\nnull\n"
     "[{\"attempts\":1,\"claimed_until\":\"T\",\"hold\":1,\"id\":\"q:1\"}]\n[]\n[]\n"
     "[{\"attempts\":1,\"claimed_until\":\"T\",\"hold\":2,\"id\":\"q:2\",\"p\":9}]\n",
     LANG_OK},
    /* … NOT BEFORE: a record's field delays it from then on; dropped, it is ready */
    {"DEFINE QUEUE q TIMEOUT 1m; CREATE q:1 = {at: time::from_unix(time::unix(time::now()) + 3600)};"
     "ALTER QUEUE q NOT BEFORE at; CLAIM FROM q; ALTER QUEUE q DROP NOT BEFORE; SELECT id FROM q;"
     "CLAIM FROM q;",
     "null\n[{\"at\":\"T\",\"id\":\"q:1\"}]\nnull\n[]\nnull\n[{\"id\":\"q:1\"}]\n"
     "[{\"at\":\"T\",\"attempts\":1,\"claimed_until\":\"T\",\"hold\":1,\"id\":\"q:1\"}]\n",
     LANG_OK},
    /* … a RELEASE … NOT BEFORE instant stays when only the order changes */
    {"DEFINE QUEUE q TIMEOUT 1m NOT BEFORE due; CREATE q:1 = {}; CLAIM q:1;"
     "RELEASE q:1 NOT BEFORE 1h; ALTER QUEUE q PRIORITY BY p; CLAIM FROM q;",
     "null\n[{\"id\":\"q:1\"}]\n[{\"attempts\":1,\"claimed_until\":\"T\",\"hold\":1,\"id\":\"q:1\"}]\n"
     "[{\"attempts\":1,\"due\":\"T\",\"id\":\"q:1\"}]\nnull\n[]\n",
     LANG_OK},
    {"DEFINE COLLECTION c; ALTER QUEUE c TIMEOUT 1m;", "null\n", LANG_WRONG_KIND},
    {"ALTER QUEUE nowhere TIMEOUT 1m;", "", LANG_NO_SUCH_TABLE},
    /* store-assigned identities follow the greatest integer ever held */
    {"DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:10 = {}; DELETE jobs:10; CREATE jobs;",
     "null\n[{\"id\":\"jobs:10\"}]\n[]\n[{\"id\":\"jobs:11\"}]\n", LANG_OK},
    /* TOUCH extends a live hold; refused when nobody holds the record, or
     * for another consumer's hold */
    {"DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:1 = {}; TOUCH jobs:1;",
     "null\n[{\"id\":\"jobs:1\"}]\n", LANG_NOT_HELD},
    {"DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:1 = {}; CLAIM FROM jobs; TOUCH jobs:1;",
     "null\n[{\"id\":\"jobs:1\"}]\n[{\"attempts\":1,\"claimed_until\":\"T\",\"hold\":1,\"id\":\"jobs:1\"}]\n"
     "[{\"attempts\":1,\"claimed_until\":\"T\",\"hold\":1,\"id\":\"jobs:1\"}]\n",
     LANG_OK},
    {"DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:1 = {}; USE CONSUMER 'a'; CLAIM FROM jobs;"
     "USE CONSUMER 'b'; TOUCH jobs:1;",
     "null\n[{\"id\":\"jobs:1\"}]\nnull\n[{\"attempts\":1,\"claimed_by\":{\"consumer\":\"a\","
     "\"instance\":\"I\"},\"claimed_until\":\"T\",\"hold\":1,\"id\":\"jobs:1\"}]\nnull\n",
     LANG_HELD_BY_OTHER},
    /* CLAIM … WAIT answers [] when nothing comes, and cannot wait inside BEGIN */
    {"DEFINE QUEUE jobs TIMEOUT 30s; CLAIM FROM jobs WAIT 20ms;", "null\n[]\n", LANG_OK},
    {"DEFINE QUEUE jobs TIMEOUT 1ns; CREATE jobs:1 = {}; CLAIM FROM jobs; CLAIM FROM jobs WAIT 1s;",
     "null\n[{\"id\":\"jobs:1\"}]\n[{\"attempts\":1,\"claimed_until\":\"T\",\"hold\":1,\"id\":\"jobs:1\"}]\n"
     "[{\"attempts\":2,\"claimed_until\":\"T\",\"errors\":[{\"at\":\"T\",\"attempt\":1,"
     "\"error\":\"lapsed\"}],\"hold\":2,\"id\":\"jobs:1\",\"last_error\":\"lapsed\"}]\n",
     LANG_OK},
    {"DEFINE QUEUE jobs TIMEOUT 30s; BEGIN; CLAIM FROM jobs WAIT 1s;", "null\nnull\n",
     LANG_PARSE_ERROR},
    /* DELETE and RELEASE of several records, fenced by their holds */
    {"DEFINE QUEUE q TIMEOUT 30s; CREATE q:1 = {}; CREATE q:2 = {}; CREATE q:3 = {};"
     "CLAIM 2 FROM q; DELETE q:1~1, q:2~2, q:3; SELECT id FROM q;",
     "null\n[{\"id\":\"q:1\"}]\n[{\"id\":\"q:2\"}]\n[{\"id\":\"q:3\"}]\n"
     "[{\"attempts\":1,\"claimed_until\":\"T\",\"hold\":1,\"id\":\"q:1\"},"
     "{\"attempts\":1,\"claimed_until\":\"T\",\"hold\":2,\"id\":\"q:2\"}]\n[]\n[]\n",
     LANG_OK},
    {"DEFINE QUEUE q TIMEOUT 30s NOT BEFORE due; CREATE q:1 = {}; CREATE q:2 = {};"
     "CREATE q:3 = {}; CLAIM 2 FROM q; RELEASE q:2~2, q:1, q:3 NOT BEFORE 10m BECAUSE 'HTTP 503';"
     "CLAIM 3 FROM q;",
     "null\n[{\"id\":\"q:1\"}]\n[{\"id\":\"q:2\"}]\n[{\"id\":\"q:3\"}]\n"
     "[{\"attempts\":1,\"claimed_until\":\"T\",\"hold\":1,\"id\":\"q:1\"},"
     "{\"attempts\":1,\"claimed_until\":\"T\",\"hold\":2,\"id\":\"q:2\"}]\n"
     "[{\"attempts\":1,\"due\":\"T\",\"errors\":[{\"at\":\"T\",\"attempt\":1,\"error\":"
     "\"HTTP 503\"}],\"id\":\"q:2\",\"last_error\":\"HTTP 503\"},"
     "{\"attempts\":1,\"due\":\"T\",\"errors\":[{\"at\":\"T\",\"attempt\":1,\"error\":"
     "\"HTTP 503\"}],\"id\":\"q:1\",\"last_error\":\"HTTP 503\"}]\n"
     "[{\"attempts\":1,\"claimed_until\":\"T\",\"hold\":3,\"id\":\"q:3\"}]\n",
     LANG_OK},
    /* expressions */
    {"DEFINE COLLECTION t; CREATE t:1 = { a: time::from_unix(0) + 1h30m, b: 7 / 2, c: 1 + 2 * 3 };",
     "null\n[{\"a\":\"T\",\"b\":3.5,\"c\":7,\"id\":\"t:1\"}]\n", LANG_OK},
};

/* A store of its own in a fresh temporary directory, and a session on it. */
typedef struct Fixture {
    char dir[32];
    Store *store;
    LangSession *s;
} Fixture;

/* Opens "f": its directory, a store there and a session on the store.
 * False, after a failed CHECK, when the store does not open. */
static bool
fixture_open(Fixture *f)
{
    StoreOptions opts = {.sync = false};
    char msg[256];
    *f = (Fixture){.dir = "/tmp/queuefs-eval-XXXXXX"};
    CHECK(mkdtemp(f->dir) != NULL, "mkdtemp");
    if (store_open(f->dir, &opts, &f->store, msg, sizeof msg)) {
        CHECK(0, "store_open: %s", msg);
        return false;
    }
    f->s = lang_session_new(f->store, NULL, NULL);
    return true;
}

/* Frees the session and the store of "f" and removes its directory. */
static void
fixture_close(Fixture *f)
{
    char cmd[64];
    lang_session_free(f->s);
    store_close(f->store);
    snprintf(cmd, sizeof cmd, "rm -rf %s", f->dir);
    CHECK(system(cmd) == 0, "rm");
}

/* Runs "script" as "s"; the code of the error it ends with. */
static LangErrorCode
run_as(LangSession *s, const char *script)
{
    LangError err = {0};
    return lang_session_exec(s, script, strlen(script), NULL, NULL, &err);
}

/* A table with no recorded owner, as a session that never says who is
 * asking defines (and as older stores hold), belongs to the store's
 * owner: its directory shows that owner and its mode is enforced. */
static void
test_unowned_table(void)
{
    Fixture f;
    struct stat sb;
    if (!fixture_open(&f))
        return;
    if (stat(f.dir, &sb)) {
        CHECK(0, "stat %s", f.dir);
        fixture_close(&f);
        return;
    }
    LangSession *anon = f.s;
    LangError err = {0};
    CHECK(run_as(anon, "DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:1 = {};") == LANG_OK, "define");
    CHECK(lang_view_chattr(anon, "jobs", 0700, -1, -1, &err) == LANG_OK, "chmod: %s", err.message);
    LangTableInfo info = {0};
    CHECK(lang_view_table(anon, "jobs", &info, &err) == LANG_OK && info.has_owner &&
              info.uid == sb.st_uid && info.gid == sb.st_gid && info.mode == 0700,
          "the directory shows the store's owner: %d %u:%u %o", info.has_owner, info.uid, info.gid,
          info.mode);

    LangSession *other = lang_session_new(f.store, NULL, NULL);
    uint32_t stranger = sb.st_uid == 65534 ? 65533 : 65534;
    lang_session_set_caller(other, stranger, stranger, NULL, 0, true);
    static const char *const refused[] = {
        "SELECT * FROM jobs;",
        "INFO FOR TABLE jobs;",
        "CLAIM FROM jobs;",
        "DELETE jobs:1;",
        "DEFINE FIELD n ON jobs TYPE int;",
        "DROP QUEUE jobs;",
        "ALTER QUEUE jobs TIMEOUT 1h;",
        "ALTER QUEUE jobs AT MOST 1 PER a;",
        "PAUSE QUEUE jobs;",
        "RESUME QUEUE jobs;",
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        CHECK(run_as(other, refused[i]) == LANG_PERMISSION, "refused to a stranger: %s",
              refused[i]);
    Buf b = {0};
    Value key = lang_value_int(1);
    err = (LangError){0};
    CHECK(lang_view_read(other, "jobs", &key, 0, &b, NULL, NULL, &err) == LANG_PERMISSION && !b.len,
          "a stranger cannot read the record's file");
    lang_buf_free(&b);

    LangSession *owner = lang_session_new(f.store, NULL, NULL);
    lang_session_set_caller(owner, sb.st_uid, sb.st_gid, NULL, 0, true);
    CHECK(run_as(owner, "CLAIM FROM jobs; DEFINE FIELD n ON jobs TYPE int;") == LANG_OK,
          "the store's owner may");
    /* Writable by all, the queue is still its owner's to ALTER, PAUSE and RESUME. */
    err = (LangError){0};
    CHECK(lang_view_chattr(owner, "jobs", 0777, -1, -1, &err) == LANG_OK, "chmod 0777: %s",
          err.message);
    CHECK(run_as(other, "CREATE jobs:2 = {}; CLAIM jobs:2;") == LANG_OK, "a writer may claim");
    static const char *const owners[] = {"ALTER QUEUE jobs TIMEOUT 1h;", "PAUSE QUEUE jobs;",
                                         "RESUME QUEUE jobs;", "ALTER QUEUE jobs DROP ATTEMPTS;"};
    for (size_t i = 0; i < sizeof owners / sizeof owners[0]; i++)
        CHECK(run_as(other, owners[i]) == LANG_PERMISSION, "the owner's only: %s", owners[i]);
    CHECK(run_as(owner, "ALTER QUEUE jobs TIMEOUT 1h; PAUSE QUEUE jobs;") == LANG_OK,
          "the owner may ALTER and PAUSE");
    lang_session_free(owner);
    lang_session_free(other);
    fixture_close(&f);
}

/* A record as lang stored it in a store of format 2: the engine's fields
 * among the fields, the holder and times before the identity. */
static void
old_value(Buf *out, const char *holder, const Value *key, const Value *fields)
{
    unsigned char be[8];
    lang_buf_putc(out, 2);
    lang_buf_putc(out, (char)strlen(holder));
    lang_buf_puts(out, holder);
    for (int i = 0; i < 4; i++) {
        be_put64(be, (uint64_t)(1000 + i)); /* since, written, changed, claimed */
        lang_buf_append(out, be, 8);
    }
    Buf k = {0};
    lang_value_encode(key, &k);
    be_put64(be, k.len);
    lang_buf_append(out, be, 8);
    lang_buf_append(out, k.data, k.len);
    lang_buf_free(&k);
    lang_value_encode(fields, out);
}

/* lang_record_upgrade turns a format-2 record into the store's columns and
 * a value of its own fields. */
static void
test_record_upgrade(void)
{
    TableDef def = {.is_queue = true,
                    .decl = {.name = "jobs", .timeout_ns = 1, .not_before = "run_at"}};
    Buf d = {0}, v = {0};
    lang_table_def_encode(&def, &d);
    Value key = lang_value_int(7), fields = lang_value_object(), by = lang_value_object();
    lang_value_object_set(&fields, "url", lang_value_cstring("a"));
    lang_value_object_set(&fields, "run_at", lang_value_datetime(5000));
    lang_value_object_set(&fields, "attempts", lang_value_int(2));
    lang_value_object_set(&fields, "hold", lang_value_int(9));
    lang_value_object_set(&fields, "claimed_until", lang_value_datetime(4000));
    lang_value_object_set(&by, "consumer", lang_value_cstring("crawler"));
    lang_value_object_set(&by, "instance", lang_value_cstring("i1"));
    lang_value_object_set(&fields, "claimed_by", by);
    old_value(&v, "i1", &key, &fields);
    StoreRecord r;
    int rc =
        lang_record_upgrade(NULL, (StoreBytes){d.data, d.len}, (StoreBytes){v.data, v.len}, &r);
    CHECK(rc == 0, "upgrade");
    CHECK(r.attempts == 2 && r.hold == 9 && r.claimed_until == 4000 && r.not_before == 5000,
          "columns: %lld %lld %lld %lld", (long long)r.attempts, (long long)r.hold,
          (long long)r.claimed_until, (long long)r.not_before);
    CHECK(r.since == 1000 && r.written == 1001 && r.changed == 1002 && r.claimed == 1003, "times");
    CHECK(r.consumer.len == 7 && memcmp(r.consumer.data, "crawler", 7) == 0 &&
              r.instance.len == 2 && memcmp(r.instance.data, "i1", 2) == 0,
          "who holds it");
    Record got = {0};
    LangError err = {0};
    StoreRecord with = r;
    CHECK(lang_record_from_store(&with, &def, &got, &err) == LANG_OK, "the new value reads");
    Buf json = {0};
    lang_value_to_json(&got.fields, &json);
    CHECK_STR(json.data, "{\"run_at\":\"1970-01-01T00:00:00.000005Z\",\"url\":\"a\"}");
    CHECK(got.key.kind == VAL_INT && got.key.u.i == 7, "identity");
    CHECK(lang_record_upgrade(NULL, (StoreBytes){d.data, d.len}, (StoreBytes){"\x09xx", 3}, &r) !=
              0,
          "an unknown value is refused");
    lang_buf_free(&json);
    lang_record_free(&got);
    lang_value_free(&key);
    lang_value_free(&fields);
    lang_buf_free(&d);
    lang_buf_free(&v);
}

/* Runs "script" as "s" into "out" (reset first), masked; the error it
 * ends with into "err". */
static LangErrorCode
run_script(LangSession *s, const char *script, Buf *out, LangError *err)
{
    *err = (LangError){0};
    lang_buf_reset(out);
    lang_session_exec(s, script, strlen(script), collect, out, err);
    if (out->data)
        mask(out->data);
    return err->code;
}

/* run_script, for a caller that needs only the error's code. */
static LangErrorCode
run_into(LangSession *s, const char *script, Buf *out)
{
    LangError err;
    return run_script(s, script, out, &err);
}

/* DELETE and RELEASE of several records are one commit: a target that
 * fails fails the statement with its error, which names it, and leaves
 * every record as it was. */
static void
test_several_targets(void)
{
    static const struct {
        const char *stmt;
        LangErrorCode error;
        const char *message; /* a fragment of it */
    } refused[] = {
        {"DELETE q:1, q:9, q:3;", LANG_NO_SUCH_RECORD, "no record q:9"},
        {"DELETE q:1~1, q:2~7;", LANG_NO_SUCH_RECORD, "q:2 is no longer held by hold 7"},
        {"DELETE q:3, q:1~2;", LANG_NO_SUCH_RECORD, "q:1 is no longer held by hold 2"},
        {"DELETE q:1, q:2, r:9;", LANG_NO_SUCH_RECORD, "no record r:9"},
        {"DELETE q:1, nowhere:1;", LANG_NO_SUCH_TABLE, "nowhere"},
        {"RELEASE q:1~1, q:2~5 NOT BEFORE 1h BECAUSE 'x';", LANG_NO_SUCH_RECORD,
         "q:2 is no longer held by hold 5"},
        {"RELEASE q:1, q:2, q:9 BECAUSE 'x';", LANG_NO_SUCH_RECORD, "no record q:9"},
        {"RELEASE q:1, q:2~2, q:3~3;", LANG_NO_SUCH_RECORD, "q:3 is no longer held by hold 3"},
        {"RELEASE q:1, q:2, q:4 BECAUSE 'x';", LANG_HELD_BY_OTHER,
         "q:4 is held by consumer 'other'"},
        {"RELEASE q:1, r:1 NOT BEFORE 1h;", LANG_NO_DELAY_FIELD, "'r' declares no NOT BEFORE"},
        {"RELEASE q:1, c:1;", LANG_WRONG_KIND, "'c' is a collection"},
        {"RELEASE q:1, q:2 NOT BEFORE CRON '0 3 * * *' IN 'Nowhere/Town';", LANG_PARSE_ERROR,
         "unknown time zone 'Nowhere/Town'"},
        {"RELEASE q:1 NOT BEFORE CRON '0 3 * * *' IN '../../etc/passwd';", LANG_PARSE_ERROR,
         "is not a time zone name"},
        {"RELEASE q:1, q:2 NOT BEFORE CRON '0 3 30 2 *';", LANG_PARSE_ERROR, "never matches"},
        {"RELEASE q:1 NOT BEFORE time::cron('0 3 * * * *');", LANG_PARSE_ERROR, "five fields"},
        {"RELEASE ALL FROM q NOT BEFORE CRON '0 3 * * *' IN 'Mars/Base';", LANG_PARSE_ERROR,
         "unknown time zone"},
        {"RELEASE q:1 NOT BEFORE time::cron('0 3 * * *', 1);", LANG_TYPE_ERROR, "time::cron takes"},
    };
    Fixture f;
    if (!fixture_open(&f))
        return;
    Buf before = {0}, after = {0}, out = {0};
    LangSession *other = lang_session_new(f.store, "other", NULL);
    /* q:1 and q:2 held by the session (holds 1 and 2), q:3 by nobody, q:4 by
     * consumer 'other' (hold 3); r:1 held */
    CHECK(run_into(f.s,
                   "DEFINE QUEUE q TIMEOUT 1h NOT BEFORE due; DEFINE QUEUE r TIMEOUT 1h;"
                   "DEFINE COLLECTION c; CREATE c:1 = {};"
                   "CREATE q:1 = {}; CREATE q:2 = {}; CREATE q:3 = {}; CREATE q:4 = {};"
                   "CREATE r:1 = {}; CLAIM 2 FROM q; CLAIM FROM r;",
                   &out) == LANG_OK,
          "setup: %s", out.data);
    CHECK(run_into(other, "CLAIM q:4;", &out) == LANG_OK, "claim of q:4: %s", out.data);
    const char *look = "SELECT * FROM q; SELECT * FROM r; SELECT * FROM c;";
    CHECK(run_into(f.s, look, &before) == LANG_OK, "select: %s", before.data);
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        LangError err;
        run_script(f.s, refused[i].stmt, &out, &err);
        CHECK(err.code == refused[i].error && strstr(err.message, refused[i].message),
              "%s: %s (%s), want %s (%s)", refused[i].stmt, lang_error_name(err.code), err.message,
              lang_error_name(refused[i].error), refused[i].message);
        CHECK(run_into(f.s, look, &after) == LANG_OK, "select: %s", after.data);
        CHECK(strcmp(before.data, after.data) == 0, "%s changed the records:\n%s\nnot\n%s",
              refused[i].stmt, after.data, before.data);
    }
    lang_session_free(other);
    lang_buf_free(&before);
    lang_buf_free(&after);
    lang_buf_free(&out);
    fixture_close(&f);
}

/* A PER value whose encoding is longer than STORE_MAX_KEY: a CREATE of it
 * is TooLarge, and so is an ALTER QUEUE that would group it — which then
 * leaves the queue as it was. */
static void
test_group_too_long(void)
{
    Fixture f;
    if (!fixture_open(&f))
        return;
    Buf b = {0}, out = {0};
    char big[501];
    memset(big, 'x', 500);
    big[500] = '\0';
    lang_buf_printf(&b, "DEFINE QUEUE g TIMEOUT 1m AT MOST 1 PER k; CREATE g:1 = {k: '%s'};", big);
    CHECK(run_into(f.s, b.data, &out) == LANG_TOO_LARGE, "CREATE of a long group: %s", out.data);
    CHECK_STR(out.data, "null\n");
    lang_buf_reset(&b);
    lang_buf_printf(&b,
                    "DEFINE QUEUE q TIMEOUT 1m PRIORITY BY p; CREATE q:1 = {k: 'a', p: 1};"
                    "CREATE q:2 = {k: '%s', p: 2};",
                    big);
    CHECK(run_into(f.s, b.data, &out) == LANG_OK, "a long value without PER");
    CHECK(run_into(f.s, "ALTER QUEUE q DROP PRIORITY BY AT MOST 1 PER k;", &out) == LANG_TOO_LARGE,
          "ALTER grouping a long value: %s", out.data);
    CHECK(run_into(f.s, "INFO FOR TABLE q;", &out) == LANG_OK, "INFO");
    CHECK(strstr(out.data, "\"definition\":\"DEFINE QUEUE q TIMEOUT 1m PRIORITY BY p\"") != NULL,
          "the definition is as it was: %s", out.data);
    CHECK(run_into(f.s, "CLAIM FROM q;", &out) == LANG_OK && strstr(out.data, "\"id\":\"q:2\""),
          "the records are filed as they were: %s", out.data);
    lang_buf_free(&b);
    lang_buf_free(&out);
    fixture_close(&f);
}

/* A definition stored before AT MOST existed loads with neither limit;
 * one with both encodes and decodes to the same. */
static void
test_def_compat(void)
{
    TableDef old = {.is_queue = true, .decl = {.name = "jobs", .timeout_ns = 30000000000}};
    Buf b = {0};
    lang_table_def_encode(&old, &b);
    TableDef got;
    CHECK(lang_table_def_decode((StoreBytes){b.data, b.len}, &got) == 0, "decode an old one");
    CHECK(got.decl.nper == 0 && got.decl.rate == 0 && got.decl.rate_window_ns == 0, "no limits");
    StoreQueue q;
    got.id = 3;
    const StoreQueue *sq = lang_record_queue(&got, &q);
    CHECK(sq && sq->per_group == 0 && sq->rate == 0 && sq->rate_window_ns == 0,
          "none for the store");
    lang_table_def_free(&got);
    TableDef both = {.is_queue = true,
                     .decl = {.name = "crawl",
                              .timeout_ns = 60000000000,
                              .per = {{2, "host"}, {1, "account"}, {5, "a.b"}},
                              .nper = 3,
                              .rate = 10,
                              .rate_window_ns = 1000000000}};
    lang_buf_reset(&b);
    lang_table_def_encode(&both, &b);
    CHECK(lang_table_def_decode((StoreBytes){b.data, b.len}, &got) == 0, "decode");
    got.id = 4;
    sq = lang_record_queue(&got, &q);
    CHECK(got.decl.nper == 3 && got.decl.per[0].limit == 2 &&
              strcmp(got.decl.per[0].field, "host") == 0 && got.decl.per[1].limit == 1 &&
              strcmp(got.decl.per[1].field, "account") == 0 && got.decl.per[2].limit == 5 &&
              strcmp(got.decl.per[2].field, "a.b") == 0 && got.decl.rate == 10 &&
              got.decl.rate_window_ns == 1000000000,
          "both limits, the keys in declared order");
    CHECK(sq && sq->table == 4 && sq->per_group == 2 && sq->rate == 10 &&
              sq->rate_window_ns == 1000000000,
          "what the store is told");
    lang_table_def_free(&got);
    lang_buf_free(&b);
}

/* Equal values make one group, whatever their spelling (1 and 1.0); an
 * absent or null field makes none. */
static void
test_group_bytes(void)
{
    TableDef def = {.is_queue = true,
                    .decl = {.name = "q", .timeout_ns = 1, .per = {{1, "a.b"}}, .nper = 1}};
    Value key = lang_value_int(1);
    static const char *const same[][2] = {
        {"{a: {b: 1}}", "{a: {b: 1.0}}"},
        {"{a: {b: 'x'}, c: 1}", "{a: {b: 'x'}}"},
        {"{a: {b: {y: 1, z: 2}}}", "{a: {b: {z: 2, y: 1}}}"},
    };
    static const char *const none[] = {"{}", "{a: {b: null}}", "{a: 1}", "{b: 1}"};
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        Buf g[2] = {{0}, {0}}, order = {0};
        for (int j = 0; j < 2; j++) {
            Value v;
            LangError err = {0};
            int64_t nb;
            CHECK(lang_literal_parse(same[i][j], strlen(same[i][j]), &v, &err) == 0, "parse");
            CHECK(lang_record_filing(&def, &key, &v, &order, &nb, &g[j], &err) == LANG_OK,
                  "filing");
            lang_value_free(&v);
        }
        CHECK(g[0].len > 0 && g[0].len == g[1].len && memcmp(g[0].data, g[1].data, g[0].len) == 0,
              "one group: %s and %s", same[i][0], same[i][1]);
        lang_buf_free(&g[0]);
        lang_buf_free(&g[1]);
        lang_buf_free(&order);
    }
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
        Buf g = {0}, order = {0};
        Value v;
        LangError err = {0};
        int64_t nb;
        CHECK(lang_literal_parse(none[i], strlen(none[i]), &v, &err) == 0, "parse");
        CHECK(lang_record_filing(&def, &key, &v, &order, &nb, &g, &err) == LANG_OK && g.len == 0,
              "no group: %s", none[i]);
        lang_value_free(&v);
        lang_buf_free(&g);
        lang_buf_free(&order);
    }
}

/* jobs/stats names every figure, the AT MOST … PER ones too. */
static void
test_stats_keys(void)
{
    Fixture f;
    if (!fixture_open(&f))
        return;
    Buf out = {0};
    LangError err = {0};
    CHECK(run_into(f.s, "DEFINE QUEUE q TIMEOUT 1m; CREATE q:1 = {};", &out) == LANG_OK, "define");
    lang_buf_reset(&out);
    CHECK(lang_view_stats(f.s, "q", &out, &err) == LANG_OK, "stats: %s", err.message);
    CHECK(strncmp(out.data,
                  "{\"blocked\":0,\"claims\":0,\"dead\":0,\"delayed\":0,\"deletes\":0,"
                  "\"done\":0,\"grouped\":0,\"groups_at_limit\":0,\"held\":0,\"lapses\":0,"
                  "\"oldest_ready_age_seconds\":",
                  145) == 0 &&
              strstr(out.data, ",\"paused\":false,\"queue\":\"q\",\"ready\":1,\"records\":1,"
                               "\"releases\":0}\n"),
          "the keys of stats: %s", out.data);
    lang_buf_reset(&out);
    CHECK(lang_view_metrics(f.s, &out, &err) == LANG_OK, "metrics: %s", err.message);
    CHECK(
        strstr(out.data,
               "# TYPE queuefs_grouped_records gauge\nqueuefs_grouped_records{queue=\"q\"} 0\n") &&
            strstr(
                out.data,
                "# TYPE queuefs_groups_at_limit gauge\nqueuefs_groups_at_limit{queue=\"q\"} 0\n") &&
            strstr(out.data, "queuefs_paused{queue=\"q\"} 0\n"),
        "metrics: %s", out.data);
    lang_buf_free(&out);
    fixture_close(&f);
}

int
main(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        Fixture f;
        if (!fixture_open(&f))
            continue;
        Buf out = {0};
        LangError err;
        run_script(f.s, cases[i].script, &out, &err);
        CHECK_STR(out.data ? out.data : "", cases[i].want);
        CHECK(err.code == cases[i].error, "case %zu: error %s (%s), want %s", i,
              lang_error_name(err.code), err.message, lang_error_name(cases[i].error));
        lang_buf_free(&out);
        fixture_close(&f);
    }
    test_unowned_table();
    test_several_targets();
    test_record_upgrade();
    test_group_too_long();
    test_def_compat();
    test_group_bytes();
    test_stats_keys();
    return unit_test_summary();
}
