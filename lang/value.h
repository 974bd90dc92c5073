/* value.h — the data model of queuefs records and expressions.
 *
 * A Value is a small tagged union owned by whoever holds it: values are
 * passed and stored by struct, and lang_value_free() releases what a value owns
 * (strings, arrays, objects, record keys).  lang_value_clone() makes a deep copy.
 *
 * Kinds, in the total order lang_value_compare() uses (the order ORDER BY and
 * PRIORITY BY use):
 *
 *     none < null < bool < number (int and float, compared numerically)
 *          < string < duration < datetime < record id < array < object
 *
 * NONE is "absent": an object field set to NONE is not stored and a field
 * path that leads nowhere evaluates to NONE.  NULL is the JSON null.
 *
 * Datetimes are nanoseconds since the Unix epoch (UTC) in an int64, which
 * covers 1677-09-21 to 2262-04-11; durations are non-negative nanoseconds.
 *
 * Objects keep their keys sorted bytewise and unique, so rendering is
 * deterministic (`{"attempts":1,"id":"jobs:1","url":"a"}`).
 *
 * One file a concept: value.c (kinds, objects, arrays, comparison, freeing
 * and copying), json.c (JSON text, record ids as text, UTF-8), time.c
 * (durations and datetimes as text), codec.c (the stored form), order.c
 * (order keys).
 */
#ifndef QUEUEFS_VALUE_H
#define QUEUEFS_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

typedef enum ValueKind {
    VAL_NONE = 0,
    VAL_NULL,
    VAL_BOOL,
    VAL_INT,
    VAL_FLOAT,
    VAL_STRING,
    VAL_DURATION,
    VAL_DATETIME,
    VAL_RECORD,
    VAL_ARRAY,
    VAL_OBJECT,
} ValueKind;

typedef struct Value Value;

/* A record identity: "table:key" where key is a VAL_INT or VAL_STRING. */
typedef struct RecordId {
    char *table; /* NUL-terminated table name */
    Value *key;  /* heap-allocated; kind VAL_INT or VAL_STRING */
} RecordId;

struct Value {
    ValueKind kind;
    union {
        bool b;     /* VAL_BOOL */
        int64_t i;  /* VAL_INT */
        double f;   /* VAL_FLOAT */
        int64_t ns; /* VAL_DURATION, VAL_DATETIME */
        struct {    /* VAL_STRING: may hold NUL bytes; always NUL-terminated */
            char *s;
            size_t len;
        } str;
        RecordId rec; /* VAL_RECORD */
        struct {      /* VAL_ARRAY */
            Value *items;
            size_t len, cap;
        } arr;
        struct { /* VAL_OBJECT: keys sorted (bytewise strcmp), unique */
            char **keys;
            Value *vals;
            size_t len, cap;
        } obj;
    } u;
};

/* ---- construction (each returns a value the caller owns) ---- */
Value lang_value_none(void);
Value lang_value_null(void);
Value lang_value_bool(bool b);
Value lang_value_int(int64_t i);
Value lang_value_float(double f);
Value lang_value_string(const char *s, size_t len); /* copies */
Value lang_value_cstring(const char *s);            /* copies */
Value lang_value_duration(int64_t ns);
Value lang_value_datetime(int64_t ns);
Value lang_value_record(const char *table, Value key); /* takes ownership of "key" */
Value lang_value_array(void);
Value lang_value_object(void);

/* Releases everything "v" owns and leaves it VAL_NONE. */
void lang_value_free(Value *v);
/* A deep copy of "v". */
Value lang_value_clone(const Value *v);

/* ---- arrays and objects ---- */
/* Appends "item" to array "a", taking ownership of it. */
void lang_value_array_push(Value *a, Value item);
/* The value of "key" in object "o", or NULL when absent.  Valid until "o"
 * is next changed. */
const Value *lang_value_object_get(const Value *o, const char *key);
/* Sets "key" in object "o" to "val", taking ownership of "val" and replacing
 * (freeing) any previous value.  Setting VAL_NONE removes the key. */
void lang_value_object_set(Value *o, const char *key, Value val);
/* Appends "key" (taking ownership of the heap string) and "val" (VAL_NONE
 * not allowed) to object "o": for decoders of input already in key order,
 * so "key" must sort after every key "o" holds. */
void lang_value_object_append(Value *o, char *key, Value val);
/* Removes "key" from object "o" if present; true when it was present. */
bool lang_value_object_remove(Value *o, const char *key);

/* ---- comparison ---- */
/* <0, 0, >0 in the total order above.  Numbers compare numerically across
 * int and float; strings bytewise; arrays and objects element by element. */
int lang_value_compare(const Value *a, const Value *b);
/* lang_value_compare(a, b) == 0. */
bool lang_value_equal(const Value *a, const Value *b);
/* true for everything but NONE, NULL, false, 0, 0.0, "" and empty
 * arrays/objects. */
bool lang_value_truthy(const Value *v);
/* A lower-case name of the kind ("string", "datetime", …) for messages. */
const char *lang_value_kind_name(ValueKind k);

/* ---- text (json.c) ----
 * JSON: NONE renders as null at top level and is omitted inside objects;
 * datetimes as RFC 3339 UTC strings ("2026-12-01T08:00:00Z", fraction only
 * when non-zero, trailing zeros trimmed); durations as strings such as
 * "1h30m"; record ids as "table:key" where a string key that is not a plain
 * identifier is single-quoted ("reclaim:'bucket/key'"); floats in the
 * shortest form that reads back exactly, NaN and infinities as null.
 * Output is compact (no spaces) and valid UTF-8 when the strings are. */
void lang_value_to_json(const Value *v, Buf *out);
/* The record identity as text: "jobs:1", "jobs:abc", "reclaim:'bucket/key'". */
void lang_record_id_format(const RecordId *id, Buf *out);
/* The one-letter escapes JSON writes and the statement language reads
 * back: the letter that follows a backslash for byte "c" ('n' for a
 * newline, '"' for a quote), or 0 when "c" has none. */
char lang_escape_letter(unsigned char c);
/* The byte the letter "e" stands for after a backslash, the reverse of
 * lang_escape_letter; -1 when "e" is none of its letters. */
int lang_escape_byte(unsigned char e);

/* ---- time (time.c) ---- */
/* Durations: "1h30m", "500ms", "0ns".  Units y(365d) w d h m s ms us ns. */
void lang_duration_format(int64_t ns, Buf *out);
/* Parses a whole duration such as "1h30m" or "500ms" (units y w d h m s ms
 * us µs ns, each part a decimal integer).  0 on success, -1 on bad syntax or
 * overflow of int64 nanoseconds. */
int lang_duration_parse(const char *s, size_t len, int64_t *ns_out);
/* RFC 3339 / ISO 8601 date-time: "2026-12-01T08:00:00Z",
 * "2026-12-01T08:00:00.5+02:00", "2026-12-01" (midnight UTC).  0 on success,
 * -1 on bad syntax or a time outside the int64-nanosecond range. */
int lang_datetime_parse(const char *s, size_t len, int64_t *ns_out);
/* Appends "ns" as an RFC 3339 UTC date-time, "2026-12-01T08:00:00Z", with a
 * fraction only when non-zero and its trailing zeros trimmed. */
void lang_datetime_format(int64_t ns, Buf *out);

/* ---- the stored form (codec.c) ----
 * lang_value_encode appends a compact self-describing encoding of "v";
 * lang_value_decode reads one back, consuming exactly "len" bytes; -1 when the
 * bytes are not a complete encoding (the output is then VAL_NONE). */
void lang_value_encode(const Value *v, Buf *out);
int lang_value_decode(const void *data, size_t len, Value *out);

/* ---- order keys (order.c) ----
 * lang_value_key_encode appends a memcmp-ordered encoding of "v": for any a, b,
 * memcmp order of their encodings equals lang_value_compare order (ints and
 * floats share one numeric order).  With "descending" every byte is
 * inverted, which reverses the order.  The encoding is prefix-free, so
 * encodings can be concatenated into composite keys. */
void lang_value_key_encode(const Value *v, bool descending, Buf *out);

/* Validates UTF-8 (json.c): true when "s" of "len" bytes is well-formed. */
bool lang_utf8_valid(const char *s, size_t len);
/* Cuts the NUL-terminated UTF-8 text "s" to at most "max" bytes, where a
 * character begins (json.c). */
void lang_utf8_cut(char *s, size_t max);

#endif
