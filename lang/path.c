/* path.c — field paths "a.b.c": splitting one into its parts, and the
 * value at a path inside an object, read or written. */
#include <stdlib.h>
#include <string.h>

#include "engine.h"

void
lang_path_split(const char *path, LangPath *out)
{
    size_t cap = 1;
    for (const char *p = path; *p; p++)
        cap += *p == '.';
    out->copy = lang_xstrdup(path);
    out->parts = lang_xcalloc(cap, sizeof *out->parts);
    out->len = 0;
    for (char *save = NULL, *tok = strtok_r(out->copy, ".", &save); tok;
         tok = strtok_r(NULL, ".", &save))
        out->parts[out->len++] = tok;
}

void
lang_path_free(LangPath *path)
{
    free(path->copy);
    free(path->parts);
    *path = (LangPath){0};
}

const Value *
lang_path_get(const Value *v, char *const *parts, size_t len)
{
    for (size_t i = 0; i < len && v; i++)
        v = v->kind == VAL_OBJECT ? lang_value_object_get(v, parts[i]) : NULL;
    return v;
}

void
lang_path_set(Value *o, char *const *parts, size_t len, Value v)
{
    if (!len) {
        lang_value_free(&v); /* no field to set */
        return;
    }
    for (size_t i = 0; i + 1 < len; i++) {
        Value *next = (Value *)lang_value_object_get(o, parts[i]);
        if (!next || next->kind != VAL_OBJECT) {
            lang_value_object_set(o, parts[i], lang_value_object());
            next = (Value *)lang_value_object_get(o, parts[i]);
        }
        o = next;
    }
    lang_value_object_set(o, parts[len - 1], v);
}

bool
lang_path_remove(Value *o, char *const *parts, size_t len)
{
    if (!len)
        return false;
    Value *parent = (Value *)lang_path_get(o, parts, len - 1);
    return parent && parent->kind == VAL_OBJECT && lang_value_object_remove(parent, parts[len - 1]);
}
