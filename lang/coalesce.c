/* coalesce.c — COALESCE (SPEC section 8): a CREATE of an identity a queue
 * holds as outstanding work is demand for it, not a second record. */
#include "exec.h"
#include "../store/queue.h"

/* The value at path "field" of "fields", or NULL (also for null). */
static const Value *
field_at(const Value *fields, const LangPath *field)
{
    const Value *v = lang_path_get(fields, field->parts, field->len);
    return v && v->kind != VAL_NONE && v->kind != VAL_NULL ? v : NULL;
}

/* Sets the field named "name" of "into" to the one of "from" when "take"
 * says the latter wins: take(mine, theirs) with either NULL when absent. */
static void
merge_field(Value *into, const Value *from, const char *name,
            bool (*take)(const Value *mine, const Value *theirs))
{
    if (!name)
        return;
    LangPath path;
    lang_path_split(name, &path);
    const Value *mine = field_at(into, &path), *theirs = field_at(from, &path);
    if (take(mine, theirs)) {
        if (theirs)
            lang_path_set(into, path.parts, path.len, lang_value_clone(theirs));
        else
            lang_path_remove(into, path.parts, path.len);
    }
    lang_path_free(&path);
}

/* PRIORITY BY: the greater value wins; an absent one never does. */
static bool
greater(const Value *mine, const Value *theirs)
{
    return theirs && (!mine || lang_value_compare(theirs, mine) > 0);
}

/* NOT BEFORE: the earlier instant wins; an absent one is now, the
 * earliest of all. */
static bool
earlier(const Value *mine, const Value *theirs)
{
    if (!mine)
        return false;
    return !theirs || lang_value_compare(theirs, mine) < 0;
}

LangErrorCode
lang_coalesce(Exec *x, const TableDef *def, Record *old, const Value *fields, Value *results)
{
    int64_t now = lang_exec_now(x);
    StoreQueue q;
    StoreRecord columns = {.attempts = old->attempts,
                           .claimed_until = old->claimed_until,
                           .not_before = old->not_before};
    switch (queue_place(lang_record_queue(def, &q), &columns, now).state) {
    case QUEUE_HELD: {
        Buf kb = {0};
        lang_record_key_encode(&old->key, &kb);
        int rc = store_record_rerun(x->txn, &q, (StoreBytes){kb.data, kb.len});
        lang_buf_free(&kb);
        if (rc)
            return lang_record_missing(rc, def, &old->key, "marking a record to run again", x->err);
        break;
    }
    case QUEUE_READY:
    case QUEUE_DELAYED:
        merge_field(&old->fields, fields, def->decl.priority_by, greater);
        merge_field(&old->fields, fields, def->decl.not_before, earlier);
        if (lang_record_store(x->txn, def, old, false, x->err))
            return x->err->code;
        break;
    default: /* dead: the thing to fix, not demand */
        return lang_record_taken(def, &old->key, x->err);
    }
    lang_value_array_push(results, lang_record_view(old, def, now));
    return LANG_OK;
}
