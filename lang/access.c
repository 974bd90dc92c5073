/* access.c — who may do what: a table's owner and mode bits held against
 * the session's caller, and loading the table (or queue) a statement names
 * for the access it needs. */
#include <string.h>

#include "exec.h"

LangErrorCode
lang_access_check(const LangSession *s, const TableDef *def, int want, LangError *err)
{
    if (!s->caller.enforce || s->caller.uid == 0)
        return LANG_OK;
    if (def->uid < 0)
        return LANG_OK; /* no owner known, not even the store's: as open as the mount */
    bool owner = (int64_t)s->caller.uid == def->uid;
    if (want == ACCESS_OWNER) {
        if (owner)
            return LANG_OK;
        return lang_error_set(err, LANG_PERMISSION, "only the owner of '%s' may do that",
                              def->decl.name);
    }
    bool group = (int64_t)s->caller.gid == def->gid;
    for (int i = 0; i < s->caller.ngroups && !group; i++)
        group = (int64_t)s->caller.groups[i] == def->gid;
    int64_t mode = def->mode >= 0 ? def->mode : 0755;
    int bits = (int)(owner ? mode >> 6 : group ? mode >> 3 : mode) & 7;
    if ((bits & want) == want)
        return LANG_OK;
    return lang_error_set(err, LANG_PERMISSION, "permission denied: %s of '%s' (mode %04llo)",
                          want == ACCESS_READ ? "reading" : "changing", def->decl.name,
                          (long long)mode);
}

LangErrorCode
lang_queue_check(const TableDef *def, const char *table, LangError *err)
{
    if (def->is_queue)
        return LANG_OK;
    return lang_error_set(err, LANG_WRONG_KIND, "'%s' is a collection, not a queue", table);
}

LangErrorCode
lang_table_load(Exec *x, const char *name, int want, TableDef *def)
{
    if (lang_table_def_load(x->txn, name, def, x->err))
        return x->err->code;
    if (lang_access_check(x->s, def, want, x->err)) {
        lang_table_def_free(def);
        return x->err->code;
    }
    return LANG_OK;
}

LangErrorCode
lang_queue_load(Exec *x, const char *table, int want, TableDef *def)
{
    if (lang_table_load(x, table, want, def))
        return x->err->code;
    if (lang_queue_check(def, table, x->err)) {
        lang_table_def_free(def);
        return x->err->code;
    }
    return LANG_OK;
}

bool
lang_target_next(Exec *x, TargetWalk *w, const Target **t, int64_t *fence, bool *fresh)
{
    if (x->err->code || w->next > w->nmore)
        return false;
    const MoreTarget *m = w->next ? &w->more[w->next - 1] : NULL;
    w->next++;
    *t = m ? &m->target : w->first;
    *fence = m ? m->fence : w->fence;
    *fresh = !w->loaded || strcmp(w->loaded, (*t)->table) != 0;
    if (*fresh) {
        lang_target_walk_end(w);
        if (w->queues ? lang_queue_load(x, (*t)->table, ACCESS_WRITE, &w->def)
                      : lang_table_load(x, (*t)->table, ACCESS_WRITE, &w->def))
            return false;
        w->loaded = (*t)->table;
    }
    return true;
}

void
lang_target_walk_end(TargetWalk *w)
{
    if (w->loaded)
        lang_table_def_free(&w->def);
    w->loaded = NULL;
}
