/* lang.h — the queuefs statement engine: sessions that run statements
 * against a store.
 *
 * A LangSession is what one ctl file description or one queuefs-sql run
 * is: a consumer identity (USE CONSUMER), an instance minted for it, and a
 * pending transaction (BEGIN … COMMIT).  Statements run one at a time, each
 * in its own store transaction, except those between BEGIN and COMMIT, which
 * are parsed when written and run together, as one transaction, at COMMIT.
 *
 *     LangSession *s = lang_session_new(store, NULL);
 *     LangError err = {0};
 *     if (lang_session_exec(s, "CLAIM FROM jobs;", 16, print_line, NULL, &err))
 *         fprintf(stderr, "%s: %s\n", lang_error_name(err.code), err.message);
 *     lang_session_free(s);
 *
 * A session is used by one thread at a time.  Many sessions may share a
 * Store, in one process or several.
 */
#ifndef QUEUEFS_LANG_H
#define QUEUEFS_LANG_H

#include <stdbool.h>
#include <stddef.h>

#include "../store/store.h"
#include "buf.h"
#include "error.h"
#include "value.h"

typedef struct LangSession LangSession;

/* Receives one result line: compact JSON, no newline, "len" bytes. */
typedef void (*LangEmit)(void *ctx, const char *line, size_t len);

/* A new session on "store".  "consumer" (may be NULL) starts the session
 * as if it had run USE CONSUMER with that name: its holds are signed with
 * the name and an instance minted now.  The store must outlive the session. */
LangSession *lang_session_new(Store *store, const char *consumer);
/* Ends the session; a transaction still pending is cancelled. */
void lang_session_free(LangSession *s);
/* True while the session is between BEGIN and COMMIT/CANCEL. */
bool lang_session_in_transaction(const LangSession *s);

/* Runs every statement in "text" (see parse.h for the syntax) in order,
 * calling "emit" once for each statement that ran with its result line.
 * Stops at the first error: returns its code with "err" filled, and the
 * statements before it keep their effects (a failed statement itself
 * changes nothing).  Returns LANG_OK when all ran. */
LangErrorCode lang_session_exec(LangSession *s, const char *text, size_t len,
                                LangEmit emit, void *ctx, LangError *err);

#endif
