/* identity.c — the identities of a table's records as the store keeps
 * them: the one it assigns when a CREATE names no record (1 + the greatest
 * integer ever held), and the DEDUPLICATE window of each of a queue's
 * named records. */
#include <stdlib.h>
#include <string.h>

#include "exec.h"

/* IdentitiesExhausted for table "def". */
static LangErrorCode
exhausted(Exec *x, const TableDef *def)
{
    return lang_error_set(x->err, LANG_IDS_EXHAUSTED,
                          "table '%s' has held identity %lld, the largest integer: the "
                          "store has no identity left to assign (name the record)",
                          def->decl.name, (long long)INT64_MAX);
}

/* The "n" identities the store assigns, in ascending order: each 1 + the
 * greatest integer ever held.  IdentitiesExhausted when that would pass
 * the largest integer (or when the last is taken, as a store from before
 * the exhausted mark may have it): a store-assigned CREATE never replaces
 * a record. */
LangErrorCode
lang_identity_next(Exec *x, const TableDef *def, size_t n, Value *keys)
{
    int64_t *next = lang_xcalloc(n ? n : 1, sizeof *next);
    int rc = store_identity_next(x->txn, def->id, n, next);
    LangErrorCode code = rc == STORE_EXHAUSTED ? exhausted(x, def)
                         : rc ? lang_store_error(rc, "assigning an identity", x->err)
                              : LANG_OK;
    for (size_t i = 0; i < n && !code; i++)
        keys[i] = lang_value_int(next[i]);
    if (!code && n && next[n - 1] == INT64_MAX && lang_record_exists(x->txn, def, &keys[n - 1]))
        code = exhausted(x, def);
    free(next);
    return code;
}

/* Remembers that integer identity "key" has been held. */
LangErrorCode
lang_identity_note(Exec *x, const TableDef *def, const Value *key)
{
    if (key->kind != VAL_INT)
        return LANG_OK;
    int rc = store_identity_note(x->txn, def->id, key->u.i);
    return rc ? lang_store_error(rc, "noting an identity", x->err) : LANG_OK;
}

/* DEDUPLICATE: true in "*repeat" when "key" was first written less than
 * the window ago; otherwise starts a new window at now. */
LangErrorCode
lang_dedup_check(Exec *x, const TableDef *def, const Value *key, bool *repeat)
{
    Buf kb = {0};
    lang_record_key_encode(key, &kb);
    int rc = store_dedup_check(x->txn, def->id, (StoreBytes){kb.data, kb.len},
                               def->decl.deduplicate_ns, repeat);
    lang_buf_free(&kb);
    return rc ? lang_store_error(rc, "deduplicating", x->err) : LANG_OK;
}
