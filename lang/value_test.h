/* value_test.h — the helpers the value unit tests share: building arrays,
 * objects and record ids in one expression, and checking JSON text. */
#ifndef QUEUEFS_VALUE_TEST_H
#define QUEUEFS_VALUE_TEST_H

#include <stdarg.h>
#include <stdlib.h>

#include "../tests/unit_test.h"
#include "value.h"

#define SEC INT64_C(1000000000)

/* The JSON of "v" (then frees "v"), as a heap string. */
static inline char *
json_take(Value v)
{
    Buf b = {0};
    lang_value_to_json(&v, &b);
    lang_value_free(&v);
    return lang_buf_steal(&b);
}

/* Checks that "v" (freed) renders as "want"; "line" names the case. */
static inline void
check_json(Value v, const char *want, int line)
{
    char *got = json_take(v);
    CHECK(strcmp(got, want) == 0, "line %d: got %s, want %s", line, got, want);
    free(got);
}
#define CHECK_JSON(v, want) check_json((v), (want), __LINE__)

/* An array of "n" values (taking ownership). */
static inline Value
arr(int n, ...)
{
    Value a = lang_value_array();
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        lang_value_array_push(&a, va_arg(ap, Value));
    va_end(ap);
    return a;
}

/* An object of "n" key/value pairs (taking ownership of the values). */
static inline Value
obj(int n, ...)
{
    Value o = lang_value_object();
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) {
        const char *key = va_arg(ap, const char *);
        lang_value_object_set(&o, key, va_arg(ap, Value));
    }
    va_end(ap);
    return o;
}

/* Record id "table:key" with an integer key. */
static inline Value
rec_int(const char *table, int64_t key)
{
    return lang_value_record(table, lang_value_int(key));
}

/* Record id "table:key" with a string key. */
static inline Value
rec_str(const char *table, const char *key)
{
    return lang_value_record(table, lang_value_cstring(key));
}

#endif
