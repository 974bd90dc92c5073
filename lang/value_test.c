/* value_test.c — unit tests for value.c: objects, copies, truthiness
 * and kind names. */

#include "value_test.h"

/* ---- objects ---- */

static void
test_objects(void)
{
    static const char *keys[] = {"m", "b", "z", "a", "mm", "", "B", "y", "c"};
    static const char *sorted[] = {"", "B", "a", "b", "c", "m", "mm", "y", "z"};
    size_t n = sizeof keys / sizeof keys[0];
    Value o = lang_value_object();
    for (size_t i = 0; i < n; i++)
        lang_value_object_set(&o, keys[i], lang_value_int((int64_t)i));
    CHECK(o.u.obj.len == n, "len %zu", o.u.obj.len);
    for (size_t i = 0; i < n; i++)
        CHECK_STR(o.u.obj.keys[i], sorted[i]);
    for (size_t i = 0; i < n; i++) {
        const Value *v = lang_value_object_get(&o, keys[i]);
        CHECK(v && v->kind == VAL_INT && v->u.i == (int64_t)i, "get %s", keys[i]);
    }
    CHECK(lang_value_object_get(&o, "nope") == NULL, "absent key");

    /* replacing keeps one entry */
    lang_value_object_set(&o, "m", lang_value_cstring("new"));
    CHECK(o.u.obj.len == n, "replace keeps len");
    const Value *m = lang_value_object_get(&o, "m");
    CHECK(m && m->kind == VAL_STRING && strcmp(m->u.str.s, "new") == 0, "replaced");

    /* NONE removes */
    lang_value_object_set(&o, "m", lang_value_none());
    CHECK(lang_value_object_get(&o, "m") == NULL, "NONE removes");
    CHECK(o.u.obj.len == n - 1, "len after NONE");
    lang_value_object_set(&o, "never", lang_value_none());
    CHECK(o.u.obj.len == n - 1, "NONE on absent key adds nothing");

    CHECK(lang_value_object_remove(&o, "a"), "remove present");
    CHECK(!lang_value_object_remove(&o, "a"), "remove absent");
    CHECK(!lang_value_object_remove(&o, "zz"), "remove never-present");
    CHECK(lang_value_object_get(&o, "a") == NULL, "removed");
    char *j = json_take(o);
    CHECK_STR(j, "{\"\":5,\"B\":6,\"b\":1,\"c\":8,\"mm\":4,\"y\":7,\"z\":2}");
    free(j);

    /* remove everything, in an awkward order */
    o = obj(3, "a", lang_value_int(1), "b", lang_value_int(2), "c", lang_value_int(3));
    CHECK(lang_value_object_remove(&o, "b") && lang_value_object_remove(&o, "c") &&
              lang_value_object_remove(&o, "a"),
          "remove all");
    CHECK(o.u.obj.len == 0, "empty");
    lang_value_object_set(&o, "again", lang_value_null());
    CHECK(o.u.obj.len == 1, "reuse after emptying");
    lang_value_free(&o);
    CHECK(o.kind == VAL_NONE, "free leaves NONE");
    lang_value_free(&o); /* safe on NONE */
    CHECK(o.kind == VAL_NONE, "free twice");
}

static void
test_clone(void)
{
    Value v = obj(3, "list", arr(2, lang_value_int(1), lang_value_cstring("two")), "rec",
                  rec_str("t", "k/1"), "s", lang_value_string("a\0b", 3));
    Value c = lang_value_clone(&v);
    CHECK(lang_value_equal(&v, &c), "clone equal");
    lang_value_object_set(&c, "s", lang_value_cstring("changed"));
    lang_value_array_push((Value *)lang_value_object_get(&c, "list"), lang_value_null());
    CHECK(!lang_value_equal(&v, &c), "clone independent");
    const Value *s = lang_value_object_get(&v, "s");
    CHECK(s && s->u.str.len == 3 && memcmp(s->u.str.s, "a\0b", 3) == 0, "original intact");
    lang_value_free(&c);
    lang_value_free(&v);
}

static void
test_truthy(void)
{
    struct {
        Value v;
        bool want;
    } cases[] = {
        {lang_value_none(), false},
        {lang_value_null(), false},
        {lang_value_bool(false), false},
        {lang_value_bool(true), true},
        {lang_value_int(0), false},
        {lang_value_int(-1), true},
        {lang_value_float(0.0), false},
        {lang_value_float(-0.0), false},
        {lang_value_float(0.5), true},
        {lang_value_string("", 0), false},
        {lang_value_cstring("0"), true},
        {lang_value_array(), false},
        {arr(1, lang_value_null()), true},
        {lang_value_object(), false},
        {obj(1, "a", lang_value_bool(false)), true},
        {lang_value_duration(1), true},
        {rec_int("t", 0), true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECK(lang_value_truthy(&cases[i].v) == cases[i].want, "truthy case %zu (%s)", i,
              lang_value_kind_name(cases[i].v.kind));
        lang_value_free(&cases[i].v);
    }
}

static void
test_kind_names(void)
{
    CHECK_STR(lang_value_kind_name(VAL_NONE), "none");
    CHECK_STR(lang_value_kind_name(VAL_STRING), "string");
    CHECK_STR(lang_value_kind_name(VAL_DATETIME), "datetime");
    CHECK_STR(lang_value_kind_name(VAL_OBJECT), "object");
}

int
main(void)
{
    test_objects();
    test_clone();
    test_truthy();
    test_kind_names();
    return unit_test_summary();
}
