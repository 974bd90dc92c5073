/* literal.c — libFuzzer target: record content (JSON or a SurrealQL object
 * literal) over any bytes.
 *
 * When lang_literal_parse accepts the input, the value must survive the
 * store's binary form: lang_value_decode(lang_value_encode(v)) equals v, renders the
 * same JSON, and re-encodes to the same bytes.  The JSON rendering must be
 * valid UTF-8 and, parsed again as a literal, render the same JSON (JSON is
 * a subset of the literal syntax).  Any mismatch aborts.  Built by
 * scripts/fuzz. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lang/parse.h"

/* Aborts with "why" (and the JSON seen) when "ok" is false. */
static void
check(int ok, const char *why, const Buf *json)
{
    if (!ok) {
        fprintf(stderr, "literal: %s\n", why);
        if (json && json->data)
            fprintf(stderr, "json: %.*s\n", (int)(json->len > 4096 ? 4096 : json->len), json->data);
        abort();
    }
}

/* True when "a" and "b" hold the same bytes. */
static int
same(const Buf *a, const Buf *b)
{
    return a->len == b->len && (a->len == 0 || memcmp(a->data, b->data, a->len) == 0);
}

/* Parses "size" bytes of "data" as a literal and checks the round trips;
 * returns 0. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Value v;
    LangError err = {0};
    if (lang_literal_parse((const char *)data, size, &v, &err) != 0) {
        check(err.code == LANG_PARSE_ERROR, "a failed parse that is not a ParseError", NULL);
        check(err.message[0] != '\0', "a failed parse without a message", NULL);
        check(v.kind == VAL_NONE, "a failed parse left a value behind", NULL);
        return 0;
    }

    Buf json = {0}, enc = {0}, json2 = {0}, enc2 = {0};
    lang_value_to_json(&v, &json);
    check(json.data != NULL && json.len > 0, "an empty JSON rendering", &json);
    check(lang_utf8_valid(json.data, json.len), "JSON that is not valid UTF-8", &json);

    lang_value_encode(&v, &enc);
    Value d;
    check(lang_value_decode(enc.data, enc.len, &d) == 0,
          "lang_value_decode refused lang_value_encode's bytes", &json);
    check(lang_value_equal(&v, &d), "the decoded value differs from the parsed one", &json);
    lang_value_to_json(&d, &json2);
    check(same(&json, &json2), "the decoded value renders different JSON", &json);
    lang_value_encode(&d, &enc2);
    check(same(&enc, &enc2), "the decoded value encodes to different bytes", &json);

    /* A truncated encoding is refused, never misread. */
    if (enc.len > 0) {
        Value t;
        check(lang_value_decode(enc.data, enc.len - 1, &t) == -1 && t.kind == VAL_NONE,
              "lang_value_decode accepted a truncated encoding", &json);
    }

    /* The JSON reads back as a literal rendering the same JSON. */
    Value r;
    LangError err2 = {0};
    check(lang_literal_parse(json.data, json.len, &r, &err2) == 0,
          "the JSON rendering does not parse back", &json);
    Buf json3 = {0};
    lang_value_to_json(&r, &json3);
    check(same(&json, &json3), "the JSON rendering reads back as different JSON", &json);

    lang_buf_free(&json3);
    lang_value_free(&r);
    lang_value_free(&d);
    lang_value_free(&v);
    lang_buf_free(&json);
    lang_buf_free(&json2);
    lang_buf_free(&enc);
    lang_buf_free(&enc2);
    return 0;
}
