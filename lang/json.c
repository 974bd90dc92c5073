/* json.c — the JSON text of values (the result lines and the file view),
 * record ids as text, and the UTF-8 check every text in passes (see
 * value.h). */
#include "value.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The one-letter escapes: the bytes, and at the same place the letter
 * each is written as after a backslash. */
static const char escaped_bytes[] = "\"\\\n\r\t\b\f";
static const char escape_letters[] = "\"\\nrtbf";

char
lang_escape_letter(unsigned char c)
{
    const char *at = c ? strchr(escaped_bytes, c) : NULL;
    return at ? escape_letters[at - escaped_bytes] : 0;
}

int
lang_escape_byte(unsigned char e)
{
    const char *at = e ? strchr(escape_letters, e) : NULL;
    return at ? (unsigned char)escaped_bytes[at - escape_letters] : -1;
}

/* Appends "s" as a quoted JSON string; UTF-8 passes through unchanged. */
static void
json_string(const char *s, size_t len, Buf *out)
{
    lang_buf_putc(out, '"');
    size_t run = 0; /* start of the pending run of plain bytes */
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[8] = {'\\', lang_escape_letter(c)};
        if (!esc[1] && (c < 0x20 || c == 0x7f))
            snprintf(esc, sizeof esc, "\\u%04x", c);
        else if (!esc[1])
            continue;
        lang_buf_append(out, s + run, i - run);
        lang_buf_puts(out, esc);
        run = i + 1;
    }
    lang_buf_append(out, s + run, len - run);
    lang_buf_putc(out, '"');
}

/* Appends a finite float in the shortest %g form that reads back exactly,
 * with ".0" added when it would otherwise look like an integer. */
static void
json_float(double f, Buf *out)
{
    if (!isfinite(f)) {
        lang_buf_puts(out, "null");
        return;
    }
    char text[40];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(text, sizeof text, "%.*g", prec, f);
        if (strtod(text, NULL) == f)
            break;
    }
    lang_buf_puts(out, text);
    if (!strpbrk(text, ".eE"))
        lang_buf_puts(out, ".0");
}

/* Renders a text form (datetime, duration, record id) as a JSON string. */
static void
json_quoted_buf(const Buf *text, Buf *out)
{
    json_string(text->data ? text->data : "", text->len, out);
}

void
lang_value_to_json(const Value *v, Buf *out)
{
    Buf tmp = {0};
    switch (v->kind) {
    case VAL_NONE:
    case VAL_NULL: lang_buf_puts(out, "null"); break;
    case VAL_BOOL: lang_buf_puts(out, v->u.b ? "true" : "false"); break;
    case VAL_INT: lang_buf_put_int(out, v->u.i); break;
    case VAL_FLOAT: json_float(v->u.f, out); break;
    case VAL_STRING: json_string(v->u.str.s, v->u.str.len, out); break;
    case VAL_DURATION:
        lang_duration_format(v->u.ns, &tmp);
        json_quoted_buf(&tmp, out);
        break;
    case VAL_DATETIME:
        lang_datetime_format(v->u.ns, &tmp);
        json_quoted_buf(&tmp, out);
        break;
    case VAL_RECORD:
        lang_record_id_format(&v->u.rec, &tmp);
        json_quoted_buf(&tmp, out);
        break;
    case VAL_ARRAY:
        lang_buf_putc(out, '[');
        for (size_t i = 0; i < v->u.arr.len; i++) {
            if (i)
                lang_buf_putc(out, ',');
            lang_value_to_json(&v->u.arr.items[i], out);
        }
        lang_buf_putc(out, ']');
        break;
    case VAL_OBJECT: {
        lang_buf_putc(out, '{');
        bool first = true;
        for (size_t i = 0; i < v->u.obj.len; i++) {
            if (v->u.obj.vals[i].kind == VAL_NONE)
                continue;
            if (!first)
                lang_buf_putc(out, ',');
            first = false;
            json_string(v->u.obj.keys[i], strlen(v->u.obj.keys[i]), out);
            lang_buf_putc(out, ':');
            lang_value_to_json(&v->u.obj.vals[i], out);
        }
        lang_buf_putc(out, '}');
        break;
    }
    }
    lang_buf_free(&tmp);
}

/* True when "s" is [A-Za-z_][A-Za-z0-9_]* (so never all digits). */
static bool
is_plain_ident(const char *s, size_t len)
{
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        bool alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
        bool digit = c >= '0' && c <= '9';
        if (!alpha && !(digit && i > 0))
            return false;
    }
    return true;
}

void
lang_record_id_format(const RecordId *id, Buf *out)
{
    lang_buf_puts(out, id->table);
    lang_buf_putc(out, ':');
    const Value *key = id->key;
    if (!key)
        return;
    if (key->kind == VAL_INT) {
        lang_buf_put_int(out, key->u.i);
    } else if (key->kind == VAL_STRING) {
        const char *s = key->u.str.s;
        size_t len = key->u.str.len;
        if (is_plain_ident(s, len)) {
            lang_buf_append(out, s, len);
            return;
        }
        lang_buf_putc(out, '\'');
        for (size_t i = 0; i < len; i++) {
            if (s[i] == '\'' || s[i] == '\\')
                lang_buf_putc(out, '\\');
            lang_buf_putc(out, s[i]);
        }
        lang_buf_putc(out, '\'');
    } else {
        lang_value_to_json(key, out);
    }
}

void
lang_utf8_cut(char *s, size_t max)
{
    size_t len = strlen(s);
    if (len <= max)
        return;
    while (max > 0 && ((unsigned char)s[max] & 0xc0) == 0x80)
        max--;
    s[max] = '\0';
}

bool
lang_utf8_valid(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        unsigned c = p[i];
        size_t n;
        unsigned lo = 0x80, hi = 0xbf; /* range of the second byte */
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xc2 && c <= 0xdf) {
            n = 2;
        } else if (c >= 0xe0 && c <= 0xef) {
            n = 3;
            if (c == 0xe0)
                lo = 0xa0; /* no overlongs */
            else if (c == 0xed)
                hi = 0x9f; /* no surrogates */
        } else if (c >= 0xf0 && c <= 0xf4) {
            n = 4;
            if (c == 0xf0)
                lo = 0x90; /* no overlongs */
            else if (c == 0xf4)
                hi = 0x8f; /* max U+10FFFF */
        } else {
            return false;
        }
        if (len - i < n || p[i + 1] < lo || p[i + 1] > hi)
            return false;
        for (size_t k = 2; k < n; k++)
            if (p[i + k] < 0x80 || p[i + k] > 0xbf)
                return false;
        i += n;
    }
    return true;
}
