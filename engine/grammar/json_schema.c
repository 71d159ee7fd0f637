/* json_schema.c — a schema is read as a "view": the list of schema objects that apply
 * together (allOf's members and the schema holding them). Each view becomes one GBNF
 * rule; rules with the same body are written once, and $ref targets get their rule
 * before their body is made, so recursive schemas work. */
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "json_schema.h"
#include "json_schema_scalar.h"
#include "json_text.h"
#include "engine/tokenizer/utf8.h"

static const char *schema_rule(conv *c, const view *v, const char *hint);

/* A subschema at key, and at index i of the array there unless i < 0. */
static const char *sub_rule(conv *c, const ember_json *s, const char *key, int i, const char *hint)
{
    size_t mark = ember_schema_push(c, key);
    char index[16];
    snprintf(index, sizeof index, "%d", i);
    if (i >= 0) ember_schema_push(c, index);
    view v = {.n = 0};
    const char *name = ember_schema_view_add(c, &v, s, 0) ? schema_rule(c, &v, hint) : NULL;
    if (name) ember_schema_pop(c, mark);
    return name;
}

static char *hint2(const char *a, const char *b)
{
    char *h = ember_malloc(strlen(a) + strlen(b) + 2);
    if (h) sprintf(h, "%s-%s", a, b);
    return h;
}

/* ---- arrays ----------------------------------------------------------------------- */

/* Items i.. of an array with prefix items pre[0..k) then rest (NULL: none), between min
 * and max items in all (max < 0: no limit). */
static void items_from(ember_sbuf *b, const char **pre, uint32_t k, const char *rest, long i, long min, long max)
{
    const char *sep = i ? "\",\" ws " : "";
    if (i < (long)k) {
        bool optional = i >= min; /* the array may end before item i */
        if (max >= 0 && i >= max) return;
        ember_sbuf_printf(b, "%s%s%s ws ", optional ? "( " : "", sep, pre[i]);
        items_from(b, pre, k, rest, i + 1, min, max);
        if (optional) ember_sbuf_puts(b, ")? ");
        return;
    }
    if (!rest) return;
    long lo = min > i ? min - i : 0, hi = max >= 0 ? max - i : -1;
    if (hi == 0) return;
    if (i == 0) { /* the first item has no comma before it */
        ember_sbuf_printf(b, "%s%s ws (\",\" ws %s ws)", lo ? "" : "( ", rest, rest);
        if (hi < 0) ember_sbuf_printf(b, "{%ld,}", lo ? lo - 1 : 0);
        else ember_sbuf_printf(b, "{%ld,%ld}", lo ? lo - 1 : 0, hi - 1);
        ember_sbuf_puts(b, lo ? " " : " )? ");
        return;
    }
    ember_sbuf_printf(b, "(\",\" ws %s ws)", rest);
    if (hi < 0) ember_sbuf_printf(b, "{%ld,} ", lo);
    else ember_sbuf_printf(b, "{%ld,%ld} ", lo, hi);
}

static bool array_body(conv *c, const view *v, const char *hint, ember_sbuf *b)
{
    const ember_json *items = ember_schema_kw(c, v, "items"), *prefix = ember_schema_kw(c, v, "prefixItems"), *extra = ember_schema_kw(c, v, "additionalItems");
    long min = 0, max = -1;
    if (!ember_schema_count_kw(c, v, "minItems", &min) || !ember_schema_count_kw(c, v, "maxItems", &max)) return false;
    if (max >= 0 && max < min) return ember_schema_fail(c, "%s", "maxItems is below minItems");
    if (min > MAX_CHARS || max > MAX_CHARS) return ember_schema_fail(c, "%s", "minItems or maxItems above 1000 is not supported");
    if (prefix && items && items->kind == EJ_ARRAY) return ember_schema_fail(c, "%s", "prefixItems beside an array of items");
    const ember_json *tuple = prefix ? prefix : items && items->kind == EJ_ARRAY ? items : NULL;
    const ember_json *rest = tuple ? (prefix ? items : extra) : items; /* NULL: any value */
    if (tuple && tuple->n > 64) return ember_schema_fail(c, "%s", "more than 64 prefix items");
    const char *pre[64], *rest_rule = NULL;
    char *h = hint2(hint, "item");
    for (uint32_t i = 0; tuple && h && i < tuple->n; i++) {
        if (!(pre[i] = sub_rule(c, &tuple->items[i], prefix ? "prefixItems" : "items", (int)i, h)))
            return ember_free(h), false;
    }
    if (!rest) rest_rule = ember_schema_prim(c, "value");
    else if (rest->kind != EJ_FALSE)
        rest_rule = sub_rule(c, rest, tuple ? (prefix ? "items" : "additionalItems") : "items", -1, h);
    ember_free(h);
    if (c->failed) return false;
    ember_sbuf_puts(b, "\"[\" ws ");
    items_from(b, pre, tuple ? tuple->n : 0, rest_rule, 0, min, max);
    ember_sbuf_puts(b, "\"]\"");
    if (tuple && !rest_rule && (long)tuple->n < min) return ember_schema_fail(c, "%s", "minItems exceeds the items allowed");
    return true;
}

/* ---- objects ---------------------------------------------------------------------- */

typedef struct prop {
    const char *name;
    const char *rule;    /* its value's rule */
    bool required;
} prop;

/* The rule for the members from i on; first: no member written yet (no comma before the
 * next). An optional member is written or left out, so the rules are per (i, first):
 * 2 n rules, not 2^n alternatives. "" when nothing can follow. */
static const char *members(conv *c, const prop *p, uint32_t n, uint32_t i, bool first, const char *extra,
                           const char *hint)
{
    ember_sbuf b = {0};
    if (i == n && !extra) return "";
    if (i == n && first) ember_sbuf_printf(&b, "( %s ws (\",\" ws %s ws)* )?", extra, extra);
    else if (i == n) ember_sbuf_printf(&b, "(\",\" ws %s ws)*", extra);
    else {
        const char *present = members(c, p, n, i + 1, false, extra, hint);
        const char *absent = p[i].required ? NULL : members(c, p, n, i + 1, first, extra, hint);
        if (!present || (!p[i].required && !absent)) return ember_free(b.s), NULL;
        ember_sbuf_printf(&b, "%s\"\\\"", first ? "" : "\",\" ws ");
        ember_jtext_string_content(&b, p[i].name, strlen(p[i].name));
        ember_sbuf_printf(&b, "\\\"\" ws \":\" ws %s ws %s", p[i].rule, present);
        if (absent) ember_sbuf_printf(&b, " | %s", absent[0] ? absent : "\"\"");
    }
    char *body = ember_sbuf_take(&b), *h = hint2(hint, first ? "members" : "more");
    const char *name = body && h ? ember_schema_add_rule(c, h, body) : (ember_free(body), NULL);
    ember_free(h);
    if (!name) ember_schema_fail(c, "%s", "out of memory");
    return name;
}

/* Keys that are none of the names key[0..n) (code points, len each), from depth on
 * among those sharing the first depth characters: the key may end here (unless a name
 * does), go on with a character no name goes on with (then anything, up to MAX_KEY
 * characters in all), or follow a name's next character. */
static void other_from(ember_sbuf *b, uint32_t **key, const uint32_t *len, uint32_t n, uint32_t depth)
{
    static const uint32_t ANY_BUT[] = {0, 0xD7FF, 0xE000, 0x10FFFF};
    bool ends = false;
    uint32_t next[256], k = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (len[i] == depth) {
            ends = true;
            continue;
        }
        uint32_t j = 0;
        while (j < k && next[j] != key[i][depth]) j++;
        if (j == k && k < 256) next[k++] = key[i][depth];
    }
    ember_sbuf_puts(b, "(");
    const char *sep = "";
    if (!ends) ember_sbuf_puts(b, "\"\""), sep = " | ";
    uint32_t r[2 * 260], nr = 0, at = 0; /* every character but next[] */
    for (uint32_t lo = 0; lo < k; lo++)
        for (uint32_t q = lo + 1; q < k; q++)
            if (next[q] < next[lo]) { uint32_t t = next[q]; next[q] = next[lo]; next[lo] = t; }
    for (uint32_t q = 0; q < k; q++) {
        if (next[q] > at) r[2 * nr] = at, r[2 * nr + 1] = next[q] - 1, nr++;
        at = next[q] + 1;
    }
    if (at <= 0x10FFFF) r[2 * nr] = at, r[2 * nr + 1] = 0x10FFFF, nr++;
    uint32_t cut[2 * 262], nc = 0; /* without the surrogates */
    for (uint32_t q = 0; q < nr; q++)
        for (int part = 0; part < 2; part++) {
            uint32_t lo = r[2 * q] > ANY_BUT[2 * part] ? r[2 * q] : ANY_BUT[2 * part];
            uint32_t hi = r[2 * q + 1] < ANY_BUT[2 * part + 1] ? r[2 * q + 1] : ANY_BUT[2 * part + 1];
            if (lo <= hi) cut[2 * nc] = lo, cut[2 * nc + 1] = hi, nc++;
        }
    if (nc && depth < MAX_KEY) {
        ember_sbuf_puts(b, sep), ember_jtext_chars(b, cut, nc);
        ember_sbuf_printf(b, " char{0,%u}", MAX_KEY - depth - 1);
        sep = " | ";
    }
    for (uint32_t q = 0; q < k; q++) {
        uint32_t *sub[256], sub_len[256], m = 0, one[2] = {next[q], next[q]};
        for (uint32_t i = 0; i < n; i++)
            if (len[i] > depth && key[i][depth] == next[q] && m < 256) sub[m] = key[i], sub_len[m++] = len[i];
        ember_sbuf_puts(b, sep), ember_jtext_chars(b, one, 1), ember_sbuf_puts(b, " ");
        other_from(b, sub, sub_len, m, depth + 1);
        sep = " | ";
    }
    ember_sbuf_puts(b, ")");
}

/* The rule for keys that are none of the declared property names. */
static const char *other_key(conv *c, const prop *p, uint32_t n, const char *hint)
{
    ember_schema_prim_char(c);
    uint32_t *key[256], len[256];
    bool ok = true;
    for (uint32_t i = 0; i < n; i++) { /* the names as code points */
        size_t bytes = strlen(p[i].name), l;
        key[i] = ember_malloc(sizeof **key * (bytes + 1));
        len[i] = 0;
        ok &= key[i] != NULL && bytes <= 256;
        for (size_t at = 0; ok && at < bytes; at += l) {
            uint32_t cp;
            ok = ember_utf8_decode((const unsigned char *)p[i].name + at, bytes - at, &l, &cp) == EMBER_UTF8_OK;
            if (ok) key[i][len[i]++] = cp;
        }
    }
    ember_sbuf b = {0};
    if (ok) {
        ember_sbuf_puts(&b, "\"\\\"\" ");
        other_from(&b, key, len, n, 0);
        ember_sbuf_puts(&b, " \"\\\"\"");
    }
    for (uint32_t i = 0; i < n; i++) ember_free(key[i]);
    if (!ok) return ember_free(b.s), ember_schema_fail(c, "%s", "additionalProperties beside a property name longer than 256 "
                                                   "bytes is not supported"), NULL;
    char *body = ember_sbuf_take(&b), *h = hint2(hint, "other-key");
    const char *name = body && h ? ember_schema_add_rule(c, h, body) : (ember_free(body), NULL);
    ember_free(h);
    if (!name) ember_schema_fail(c, "%s", "out of memory");
    return name;
}

/* Property name's schema in view v: each layer's properties[name], or where a layer does
 * not declare it, that layer's additionalProperties (a schema applies; false forbids the
 * property: false returned; true or none: nothing), as JSON Schema reads allOf. */
static bool property_view(conv *c, const view *v, const char *name, view *pv)
{
    *pv = (view){.n = 0};
    for (uint32_t l = 0; l < v->n; l++) {
        const ember_json *s = ember_json_get(ember_json_get(v->layer[l], "properties"), name);
        const ember_json *ap = ember_json_get(v->layer[l], "additionalProperties");
        if (!s && ap && ap->kind == EJ_FALSE) return false;
        if ((s || ap) && !ember_schema_view_add(c, pv, s ? s : ap, 0)) return false;
    }
    return true;
}

/* The declared properties of v (each layer's, in order; required ones too), with their
 * value rules; false on a failure. */
static bool properties(conv *c, const view *v, const char *hint, prop *p, uint32_t *n)
{
    *n = 0;
    for (uint32_t l = 0; l < v->n; l++) {
        const ember_json *props = ember_json_get(v->layer[l], "properties"), *req = ember_json_get(v->layer[l], "required");
        if ((props && props->kind != EJ_OBJECT) || (req && req->kind != EJ_ARRAY))
            return ember_schema_fail(c, "%s", "properties must be an object, required an array of names");
        for (uint32_t i = 0; i < (props ? props->n : 0) + (req ? req->n : 0); i++) {
            const ember_json *r = props && i < props->n ? NULL : &req->items[i - (props ? props->n : 0)];
            if (r && r->kind != EJ_STRING) return ember_schema_fail(c, "%s", "required must be an array of names");
            const char *name = r ? r->str : props->keys[i];
            uint32_t k = 0;
            while (k < *n && strcmp(p[k].name, name)) k++;
            if (k == *n) {
                if (k == 256) return ember_schema_fail(c, "%s", "more than 256 properties");
                p[(*n)++] = (prop){name, NULL, false};
            }
            p[k].required |= r != NULL;
        }
    }
    uint32_t kept = 0;
    for (uint32_t k = 0; k < *n; k++) {
        view pv;
        size_t mark = ember_schema_push(c, "properties");
        ember_schema_push(c, p[k].name);
        if (!property_view(c, v, p[k].name, &pv)) {
            if (c->failed) return false;
            if (p[k].required) return ember_schema_fail(c, "%s", "a required property that additionalProperties false forbids");
            ember_schema_pop(c, mark);
            continue; /* forbidden where it is optional: never written */
        }
        char *h = hint2(hint, p[k].name);
        p[k].rule = h ? schema_rule(c, &pv, h) : NULL;
        ember_free(h);
        if (!p[k].rule) return ember_schema_fail(c, "%s", "out of memory");
        ember_schema_pop(c, mark);
        p[kept++] = p[k];
    }
    *n = kept;
    return true;
}

/* Members with keys none of the declared ones: written only where additionalProperties
 * allows them explicitly (true or a schema, in every layer that has it, false in none);
 * their values follow every such schema. NULL: none (or a failure). */
static const char *other_members(conv *c, const view *v, const prop *p, uint32_t n, const char *hint)
{
    view ev = {.n = 0};
    bool any = false;
    for (uint32_t l = 0; l < v->n; l++) {
        const ember_json *ap = ember_json_get(v->layer[l], "additionalProperties");
        if (ap && ap->kind == EJ_FALSE) return NULL;
        any |= ap != NULL;
        if (ap) {
            size_t mark = ember_schema_push(c, "additionalProperties");
            bool ok = ember_schema_view_add(c, &ev, ap, 0);
            ember_schema_pop(c, mark);
            if (!ok) return NULL;
        }
    }
    if (!any) return NULL;
    const char *key = other_key(c, p, n, hint);
    char *h = hint2(hint, "other");
    size_t mark = ember_schema_push(c, "additionalProperties");
    const char *value = h && key ? schema_rule(c, &ev, h) : NULL;
    ember_free(h);
    if (!value) return NULL;
    ember_schema_pop(c, mark);
    char *kv = ember_malloc(strlen(key) + strlen(value) + 32), *h2 = hint2(hint, "other-member");
    if (kv) sprintf(kv, "%s ws \":\" ws %s", key, value);
    const char *extra = kv && h2 ? ember_schema_add_rule(c, h2, kv) : (ember_free(kv), NULL);
    ember_free(h2);
    if (!extra) ember_schema_fail(c, "%s", "out of memory");
    return extra;
}

static bool object_body(conv *c, const view *v, const char *hint, ember_sbuf *b)
{
    prop p[256];
    uint32_t n;
    if (!properties(c, v, hint, p, &n)) return false;
    const char *extra = other_members(c, v, p, n, hint);
    if (c->failed) return false;
    const char *m = members(c, p, n, 0, true, extra, hint);
    if (m) ember_sbuf_printf(b, "\"{\" ws %s \"}\"", m);
    return m && !c->failed;
}

/* ---- a view as a rule ------------------------------------------------------------- */

static const char *const STRING_KW[] = {"minLength", "maxLength", "pattern", "format", NULL};
static const char *const NUMBER_KW[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", NULL};
static const char *const OBJECT_KW[] = {"properties", "required", "additionalProperties", NULL};
static const char *const ARRAY_KW[] = {"items", "prefixItems", "additionalItems", "minItems", "maxItems", NULL};

/* const or enum: the listed values of the allowed types, nothing else beside them. */
static bool values_body(conv *c, const view *v, unsigned types, ember_sbuf *b)
{
    const ember_json *k = ember_schema_kw(c, v, "const"), *e = ember_schema_kw(c, v, "enum");
    if (ember_schema_has_any(v, STRING_KW) || ember_schema_has_any(v, NUMBER_KW) || ember_schema_has_any(v, OBJECT_KW) || ember_schema_has_any(v, ARRAY_KW))
        return ember_schema_fail(c, "%s", "enum or const beside other constraints (only type) is not supported");
    if (e && e->kind != EJ_ARRAY) return ember_schema_fail(c, "%s", "enum must be an array");
    const char *sep = "";
    uint32_t n = 0;
    for (uint32_t i = 0; i < (k ? 1 : e->n); i++) {
        const ember_json *x = k ? k : &e->items[i];
        if (k && e) { /* both: the const, if the enum holds it */
            uint32_t j = 0;
            while (j < e->n && !ember_schema_deep_equal(&e->items[j], k)) j++;
            if (j == e->n) break;
        }
        if (!(ember_schema_type_of_value(x) & types)) continue;
        ember_sbuf_puts(b, sep);
        ember_jtext_value(b, x);
        sep = " | ", n++;
    }
    if (!n) return ember_schema_fail(c, "%s", "enum or const leaves no value of the allowed types");
    return true;
}

/* anyOf / oneOf: each branch with the rest of the view applied to it. */
static bool alternatives_body(conv *c, const view *v, const ember_json *alts, bool one, const char *hint,
                              ember_sbuf *b)
{
    const char *key = one ? "oneOf" : "anyOf";
    if (alts->kind != EJ_ARRAY || !alts->n) return ember_schema_fail(c, "%s must be a non-empty array", key);
    unsigned seen = 0;
    for (uint32_t i = 0; i < alts->n; i++) {
        char index[16];
        snprintf(index, sizeof index, "%u", i);
        size_t mark = ember_schema_push(c, key);
        ember_schema_push(c, index);
        view bv = *v;
        bv.alts_from = v->n; /* the branch's own anyOf/oneOf still count */
        if (!ember_schema_view_add(c, &bv, &alts->items[i], 0)) return false;
        unsigned t;
        if (!ember_schema_types_of(c, &bv, &t)) return false;
        const ember_json *x = ember_schema_kw(c, &bv, "const");
        if (x) t &= ember_schema_type_of_value(x);
        t |= t & T_NUMBER ? T_INTEGER : 0; /* a number branch takes the integers too */
        if (one && (t & seen))
            return ember_schema_fail(c, "%s", "oneOf: Ember can only enforce oneOf whose branches have different types "
                                 "(these may match the same value; use anyOf)");
        seen |= t;
        char *h = hint2(hint, one ? "one" : "any");
        const char *r = h ? schema_rule(c, &bv, h) : NULL;
        ember_free(h);
        if (!r) return false;
        ember_sbuf_printf(b, "%s%s", i ? " | " : "", r);
        ember_schema_pop(c, mark);
    }
    return true;
}

static bool view_body(conv *c, const view *v, const char *hint, ember_sbuf *b)
{
    const ember_json *any = ember_schema_kw(c, v, "anyOf"), *one = ember_schema_kw(c, v, "oneOf");
    if (any && one) return ember_schema_fail(c, "%s", "anyOf beside oneOf is not supported");
    if (any || one) return alternatives_body(c, v, any ? any : one, one != NULL, hint, b);
    unsigned types;
    if (!ember_schema_types_of(c, v, &types)) return false;
    if (ember_schema_kw(c, v, "const") || ember_schema_kw(c, v, "enum")) return values_body(c, v, types, b);
    if (types == T_ALL && !ember_schema_has_any(v, STRING_KW) && !ember_schema_has_any(v, NUMBER_KW) && !ember_schema_has_any(v, OBJECT_KW) &&
        !ember_schema_has_any(v, ARRAY_KW))
        return ember_sbuf_puts(b, ember_schema_prim(c, "value")), !c->failed;
    const char *sep = "";
    for (unsigned t = 1; t <= T_INTEGER; t <<= 1) {
        if (!(types & t)) continue;
        ember_sbuf_puts(b, sep);
        sep = " | ";
        bool ok = true;
        if (t == T_NULL) ember_sbuf_puts(b, ember_schema_prim(c, "null"));
        else if (t == T_BOOLEAN) ember_sbuf_puts(b, ember_schema_prim(c, "boolean"));
        else if (t == T_STRING) ok = ember_schema_has_any(v, STRING_KW) ? ember_schema_string_body(c, v, b) : (ember_sbuf_puts(b, ember_schema_prim(c, "string")), true);
        else if (t == T_NUMBER || t == T_INTEGER) ok = ember_schema_number_body(c, v, t == T_INTEGER, b);
        else if (t == T_OBJECT) ok = ember_schema_has_any(v, OBJECT_KW) ? object_body(c, v, hint, b) : (ember_sbuf_puts(b, ember_schema_prim(c, "object")), true);
        else if (t == T_ARRAY) ok = ember_schema_has_any(v, ARRAY_KW) ? array_body(c, v, hint, b) : (ember_sbuf_puts(b, ember_schema_prim(c, "array")), true);
        if (!ok) return false;
    }
    return !c->failed;
}

/* A view that is only a $ref (with annotations) names its target's rule, made once, so
 * that a schema may refer to itself. */
static const ember_json *plain_ref(const view *v)
{
    if (v->n < 2) return NULL;
    const ember_json *s = v->layer[0], *r = ember_json_get(s, "$ref");
    for (uint32_t i = 0; r && i < s->n; i++)
        if (strcmp(s->keys[i], "$ref") && !ember_schema_annotation(s->keys[i])) return NULL;
    return r ? v->layer[1] : NULL;
}

static const char *schema_rule(conv *c, const view *v, const char *hint)
{
    if (++c->depth > MAX_DEPTH) return ember_schema_fail(c, "%s", "schemas nested more than 64 deep"), NULL;
    const ember_json *target = plain_ref(v);
    const char *name = NULL;
    for (uint32_t i = 0; target && i < c->n_refs; i++)
        if (c->refs[i].target == target) name = c->refs[i].name;
    if (!name && target) { /* reserve its name, then make its body: references inside find it */
        const ember_json *r = ember_json_get(v->layer[0], "$ref");
        const char *slash = strrchr(r->str, '/');
        char *h = hint2(c->top, slash ? slash + 1 : "ref");
        char *n = h ? (char *)ember_schema_add_rule(c, h, NULL) : NULL;
        ember_free(h);
        if (!n || !ember_schema_grow(c, (void **)&c->refs, &c->cap_refs, c->n_refs + 1, sizeof *c->refs)) return NULL;
        c->refs[c->n_refs++] = (ref){target, n};
        view tv = {.layer = {target}, .n = 1};
        for (uint32_t i = 2; i < v->n; i++) tv.layer[tv.n++] = v->layer[i]; /* what the target's allOf added */
        ember_sbuf b = {0};
        bool ok = view_body(c, &tv, n, &b);
        char *body = ember_sbuf_take(&b);
        if (!ok || !body) return ember_free(body), (void)ember_schema_fail(c, "%s", "out of memory"), NULL;
        for (uint32_t i = 0; i < c->n_rules; i++)
            if (c->rules[i].name == n) c->rules[i].body = body;
        name = n;
    }
    if (!name) {
        ember_sbuf b = {0};
        bool ok = view_body(c, v, hint, &b);
        char *body = ember_sbuf_take(&b);
        if (!ok || !body) return ember_free(body), (void)ember_schema_fail(c, "%s", "out of memory"), NULL;
        name = ember_schema_add_rule(c, hint, body);
        if (!name) ember_schema_fail(c, "%s", "out of memory");
    }
    c->depth--;
    return name;
}

static void free_conv(conv *c)
{
    for (uint32_t i = 0; i < c->n_rules; i++) ember_free(c->rules[i].name), ember_free(c->rules[i].body);
    ember_free(c->rules);
    ember_free(c->refs);
}

/* The rules of schema text, the top one named top (made unique when the schema's own
 * rules take that name), as GBNF lines into *gbnf; with the alias "root ::= TOP" first
 * when alias and TOP is not "root". */
static ember_status convert(const char *text, size_t len, const char *top_name, bool alias, char **gbnf,
                            ember_err *err)
{
    *gbnf = NULL;
    ember_json_doc *doc = NULL;
    const ember_json *root;
    ember_err jerr = {{0}};
    if (ember_json_parse(text, len, &doc, &root, &jerr) != EMBER_OK) {
        ember_json_free(doc);
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "json schema: not JSON: %s", jerr.msg);
    }
    conv c = {.root = root, .top = top_name, .err = err};
    view v = {.n = 0};
    ember_schema_prim(&c, "ws"); /* between the tokens of objects and arrays */
    const char *top = ember_schema_view_add(&c, &v, root, 0) ? schema_rule(&c, &v, top_name) : NULL;
    ember_sbuf out = {0};
    if (top && strcmp(top, top_name) && !alias) { /* the schema's top rule was shared: name it */
        char *line = ember_malloc(strlen(top_name) + strlen(top) + 8);
        if (line) sprintf(line, "%s ::= %s", top_name, top), ember_sbuf_printf(&out, "%s\n", line);
        ember_free(line);
    }
    if (top && alias && strcmp(top, "root")) ember_sbuf_printf(&out, "root ::= %s\n", top);
    for (uint32_t i = 0; top && i < c.n_rules; i++)
        ember_sbuf_printf(&out, "%s ::= %s\n", c.rules[i].name, c.rules[i].body ? c.rules[i].body : "\"\"");
    free_conv(&c);
    ember_json_free(doc);
    char *s = ember_sbuf_take(&out);
    if (!top) return ember_free(s), EMBER_ERR_INVALID_ARG;
    if (!s) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "json schema: out of memory");
    *gbnf = s;
    return EMBER_OK;
}

ember_status ember_json_schema_to_gbnf(const char *text, size_t len, char **gbnf, ember_err *err)
{
    return convert(text, len, "root", true, gbnf, err);
}

ember_status ember_json_schema_rules(const char *text, size_t len, const char *top, char **gbnf, ember_err *err)
{
    return convert(text, len, top, false, gbnf, err);
}
