/* work_claim.c — what queuefs-work reads of a claim: the records the
 * mount handed out (from `cat wait`, one JSON object, or a batch's CLAIM,
 * one JSON array), each with its file name, its fenced held/ name and its
 * fenced target for statements; and which of a batch's records its
 * command named on stdout.
 *
 * The file name of an identity is the mount's (fs/names.c); a record's
 * JSON is handed to the command as the mount wrote it. */
#include <stdlib.h>
#include <string.h>

#include "../lang/parse.h"
#include "../lang/value.h"
#include "names.h"
#include "work.h"

void
work_group_free(WorkGroup *g)
{
    for (size_t i = 0; i < g->n; i++) {
        free(g->recs[i].id);
        free(g->recs[i].name);
        free(g->recs[i].held);
        free(g->recs[i].target);
    }
    free(g->recs);
    free(g->reason);
    memset(g, 0, sizeof *g);
}

/* Fills "r" from the claimed record "v" (its JSON "json" of "len" bytes):
 * false when "v" has no string id, integer attempts and hold. */
static bool
record_from(const WorkConfig *cfg, const Value *v, const char *json, size_t len, WorkRecord *r)
{
    const Value *id = v->kind == VAL_OBJECT ? lang_value_object_get(v, "id") : NULL;
    const Value *attempts = v->kind == VAL_OBJECT ? lang_value_object_get(v, "attempts") : NULL;
    const Value *hold = v->kind == VAL_OBJECT ? lang_value_object_get(v, "hold") : NULL;
    const char *colon = id && id->kind == VAL_STRING ? strchr(id->u.str.s, ':') : NULL;
    if (!colon || !attempts || attempts->kind != VAL_INT || !hold || hold->kind != VAL_INT)
        return false;
    /* The key as the id writes it: an integer's digits, or a string,
     * single-quoted with \' and \\ unless a plain identifier. */
    const char *k = colon + 1;
    size_t digits = strspn(k + (*k == '-'), "0123456789");
    Buf name = {0}, target = {0};
    lang_buf_append(&target, id->u.str.s, (size_t)(colon - id->u.str.s) + 1);
    if (digits > 0 && !k[(*k == '-') + digits]) {
        lang_buf_puts(&name, k);
        lang_buf_puts(&target, k);
    } else {
        Buf s = {0};
        lang_buf_append(&s, "", 0);
        size_t klen = strlen(k);
        bool quoted = *k == '\'' && klen >= 2;
        for (size_t i = quoted; i < klen - quoted; i++) {
            if (quoted && k[i] == '\\' && i + 1 < klen - 1)
                i++;
            lang_buf_putc(&s, k[i]);
        }
        Value key = lang_value_string(s.data, s.len);
        fs_name_from_key(&key, &name);
        lang_value_to_json(&key, &target);
        lang_value_free(&key);
        lang_buf_free(&s);
    }
    lang_buf_printf(&target, "~%lld", (long long)hold->u.i);
    memset(r, 0, sizeof *r);
    r->id = lang_xstrdup(id->u.str.s);
    r->name = lang_buf_steal(&name);
    r->target = lang_buf_steal(&target);
    r->attempts = attempts->u.i;
    r->hold = hold->u.i;
    Buf held = {0};
    lang_buf_printf(&held, "%s/%s~%lld", cfg->held_dir, r->name, (long long)r->hold);
    r->held = lang_buf_steal(&held);
    r->json = json;
    r->json_len = len;
    r->watched = true;
    return true;
}

/* The span of the next element of a JSON array at "*pos" of "s" (past
 * its '[' or the element before): false at its end. */
static bool
next_element(const char *s, size_t len, size_t *pos, size_t *start, size_t *end)
{
    size_t i = *pos;
    while (i < len && s[i] && strchr(" \t\r\n,", s[i]))
        i++;
    if (i >= len || s[i] == ']')
        return false;
    *start = i;
    int depth = 0;
    for (; i < len; i++) {
        char c = s[i];
        if (c == '"') {
            for (i++; i < len && s[i] != '"'; i++)
                i += s[i] == '\\';
        } else if (c == '{' || c == '[') {
            depth++;
        } else if ((c == '}' || c == ']') && depth-- == 0) {
            break;
        } else if (c == ',' && depth == 0) {
            break;
        }
    }
    *end = i;
    while (*end > *start && strchr(" \t\r\n", s[*end - 1]))
        (*end)--;
    *pos = i;
    return true;
}

bool
work_claim_read(const WorkConfig *cfg, const Buf *claim, WorkGroup *g)
{
    Value v = {0};
    LangError err = {0};
    memset(g, 0, sizeof *g);
    g->status = -1;
    if (lang_literal_parse(claim->data, claim->len, &v, &err) != 0)
        return false;
    bool ok = true;
    if (cfg->batch == 0) {
        g->recs = lang_xcalloc(1, sizeof *g->recs);
        ok = record_from(cfg, &v, claim->data, claim->len, &g->recs[0]);
        g->n = ok;
    } else if (v.kind != VAL_ARRAY) {
        ok = false;
    } else {
        g->recs = lang_xcalloc(v.u.arr.len ? v.u.arr.len : 1, sizeof *g->recs);
        size_t pos = strcspn(claim->data, "[") + 1, start, end;
        for (size_t i = 0; i < v.u.arr.len; i++) {
            if (!next_element(claim->data, claim->len, &pos, &start, &end))
                break;
            g->n += record_from(cfg, &v.u.arr.items[i], claim->data + start, end - start,
                                &g->recs[g->n]);
        }
    }
    lang_value_free(&v);
    return ok;
}

void
work_named_on_stdout(int worker, const WorkGroup *g, const Buf *out, bool *named)
{
    const char *p = out->data ? out->data : "", *end = p + out->len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end, *s = p;
        p = nl ? nl + 1 : end;
        if (e > s && e[-1] == '\r')
            e--;
        while (s < e && strchr(" \t\n\v\f\r", *s) && *s)
            s++;
        while (e > s && strchr(" \t\n\v\f\r", e[-1]) && e[-1])
            e--;
        if (s == e)
            continue;
        char *line = lang_xstrndup(s, (size_t)(e - s));
        const char *id = line;
        Value v = {0};
        LangError err = {0};
        if (e - s >= 2 && *s == '"' && e[-1] == '"' &&
            lang_literal_parse(line, strlen(line), &v, &err) == 0 && v.kind == VAL_STRING)
            id = v.u.str.s;
        size_t i = 0;
        while (i < g->n && strcmp(g->recs[i].id, id) != 0)
            i++;
        if (i < g->n) {
            named[i] = true;
        } else {
            Buf shown = {0};
            work_log_id(line, &shown);
            work_note("worker=%d ignores %s on the command's stdout: no record of its batch",
                      worker, shown.data);
            lang_buf_free(&shown);
        }
        lang_value_free(&v);
        free(line);
    }
}
