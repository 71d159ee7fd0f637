/* fuzz_gguf.c — the GGUF reader on arbitrary bytes (ember_gguf_open_memory), then what a
 * model load reads from a file before any device is involved: the typed getters, the
 * llama description (ember_llama_load), the tokenizer (ember_tokenizer_load, then a
 * short text both ways) and the chat template (tokenizer.chat_template).
 *
 * Refusals are expected and fine; what must hold is docs/gguf.md's contract: no crash,
 * no read outside the input, a message naming the file, and for an accepted file every
 * string and tensor inside the input, each tensor aligned to its element. */
#include <string.h>

#include "engine/chat/chat_template.h"
#include "engine/model/model.h"
#include "util.h"

#define NAME "fuzz.gguf"

static bool inside(const ember_gguf *g, const void *p, uint64_t n)
{
    const uint8_t *b = g->map, *q = p;
    return q >= b && (uint64_t)(q - b) <= g->size && n <= g->size - (uint64_t)(q - b);
}

static void check_kvs(const ember_gguf *g)
{
    ember_err err = {{0}};
    for (uint64_t i = 0; i < g->n_kv; i++) {
        const ember_gguf_kv *kv = &g->kv[i];
        FUZZ_CHECK(kv->key[0] && ember_gguf_find(g, kv->key) == kv, "key %llu", (unsigned long long)i);
        uint32_t u;
        float f;
        bool b;
        ember_gguf_str s;
        const ember_gguf_kv *arr;
        /* Each getter either accepts or refuses with a message; none may misread. */
        if (ember_gguf_get_u32(g, kv->key, &u, &err)) FUZZ_CHECK(err.msg[0], "get_u32 without a message");
        if (ember_gguf_get_f32(g, kv->key, &f, &err)) FUZZ_CHECK(err.msg[0], "get_f32 without a message");
        if (ember_gguf_opt_bool(g, kv->key, &b, &err)) FUZZ_CHECK(err.msg[0], "opt_bool without a message");
        if (ember_gguf_get_str(g, kv->key, &s, &err) == EMBER_OK)
            FUZZ_CHECK(inside(g, s.ptr, s.len), "string of key %s outside the file", kv->key);
        if (kv->type == EMBER_GGUF_ARRAY) {
            FUZZ_CHECK(ember_gguf_get_arr(g, kv->key, kv->arr_type, &arr, &err) == EMBER_OK && arr == kv, "%s", err.msg);
            if (kv->arr_type == EMBER_GGUF_STRING)
                for (uint64_t k = 0; k < kv->arr_n; k++)
                    FUZZ_CHECK(inside(g, kv->arr_str[k].ptr, kv->arr_str[k].len), "%s[%llu] outside the file", kv->key,
                               (unsigned long long)k);
        }
    }
}

static void check_tensors(const ember_gguf *g)
{
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const ember_gguf_tensor *t = &g->tensors[i];
        FUZZ_CHECK(ember_gguf_find_tensor(g, t->name) == t, "tensor %llu", (unsigned long long)i);
        FUZZ_CHECK(t->n_dims >= 1 && t->n_dims <= 4, "n_dims %u", t->n_dims);
        uint64_t n = 1;
        for (int d = 0; d < 4; d++) n *= t->ne[d];
        FUZZ_CHECK(t->nbytes == ember_dtype_size(t->type, n), "tensor %s: %llu bytes", t->name,
                   (unsigned long long)t->nbytes);
        FUZZ_CHECK(inside(g, t->data, t->nbytes), "tensor %s outside the file", t->name);
        /* Read as float / uint16 arrays: an accepted file keeps them aligned (a finding,
         * fuzz/regressions/gguf/misaligned-rope-freqs; checked here so that the replay
         * without UBSan notices too). */
        FUZZ_CHECK((uintptr_t)t->data % (t->type == EMBER_DTYPE_F32 ? 4 : 2) == 0, "tensor %s misaligned", t->name);
    }
}

static void check_tokenizer(const ember_gguf *g)
{
    ember_err err = {{0}};
    ember_tokenizer *t = NULL;
    if (ember_tokenizer_load(g, &t, &err) != EMBER_OK) {
        FUZZ_CHECK(!t && err.msg[0], "a refused tokenizer without a message");
        return;
    }
    static const char text[] = "Hello world, <s>ab c\xc3\xa9 \xe4\xb8\x96 <|im_end|>12345\n\xff";
    size_t n = 0, len = 0;
    for (unsigned flags = 0; flags < 4; flags++) {
        uint32_t *ids = fuzz_encode(t, (const uint8_t *)text, sizeof text - 1, flags, &n);
        free(fuzz_decode(t, ids, n, &len));
        free(ids);
    }
    /* Every id of a small vocabulary (the first 2048 of a large one), and a few past it,
     * through the decoder and the streaming detokenizer. */
    uint32_t nv = ember_tokenizer_n_vocab(t), span = (nv < 2048 ? nv : 2048) + 4;
    uint8_t *le = malloc(2 * (size_t)span);
    FUZZ_CHECK(le != NULL, "out of memory");
    for (uint32_t i = 0; i < span; i++) {
        uint32_t id = i < span - 4 ? i : nv + (i - (span - 4));
        le[2 * i] = (uint8_t)id, le[2 * i + 1] = (uint8_t)(id >> 8);
    }
    if (nv + 4 <= 65536) fuzz_check_ids_to_text(t, le, 2 * (size_t)span);
    free(le);
    ember_tokenizer_free(t);
}

static void check_chat_template(const ember_gguf *g)
{
    const ember_gguf_kv *kv = ember_gguf_find(g, "tokenizer.chat_template");
    if (!kv || kv->type != EMBER_GGUF_STRING) return;
    ember_chat_template ct;
    ember_err err = {{0}};
    if (ember_chat_template_init(&ct, NULL, kv->v.str.ptr, kv->v.str.len, NULL, NULL, &err) != EMBER_OK) {
        FUZZ_CHECK(err.msg[0], "a refused template without a message");
        return;
    }
    ember_chat_message m[2] = {{"user", "hi"}, {"assistant", "hello"}};
    char *out = NULL;
    size_t len = 0;
    FUZZ_CHECK(ember_chat_render(&ct, m, 2, 0, true, &out, &len, &err) == EMBER_OK, "%s", err.msg);
    FUZZ_CHECK(strlen(out) == len, "rendered length");
    free(out);
    ember_chat_template_free(&ct);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ember_gguf *g = NULL;
    ember_err err = {{0}};
    ember_status st = ember_gguf_open_memory(data, size, NAME, &g, &err);
    if (st != EMBER_OK) {
        FUZZ_CHECK(g == NULL && strncmp(err.msg, NAME ": ", sizeof NAME + 1) == 0, "message '%s'", err.msg);
        return 0;
    }
    check_kvs(g);
    check_tensors(g);
    ember_llama m;
    if (ember_llama_load(g, &m, &err) == EMBER_OK) {
        char buf[128];
        ember_llama_features_str(ember_llama_features(&m), buf, sizeof buf);
        ember_llama_free(&m);
    } else {
        FUZZ_CHECK(err.msg[0], "a refused model without a message");
    }
    check_tokenizer(g);
    check_chat_template(g);
    ember_gguf_close(g);
    return 0;
}
