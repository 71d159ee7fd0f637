/* test_tokenizer.c — the SentencePiece-style tokenizer: merge rules on a hand-made
 * vocabulary, round trips on a make-test-model vocabulary, llama.cpp's 47 reference
 * vectors on the Llama 2 vocabulary and the stories260K vocabulary (../shared); the
 * public API on a vocabulary-only GGUF (ember_model_opts.vocab_only). */
#include "vocab_fixture.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define SP "\xe2\x96\x81" /* U+2581 */
#define BYTE(b) (3u + (b)) /* byte tokens sit at 3..258 in every vocabulary used here */

/* ---- helpers --------------------------------------------------------------------- */

/* Writes a vocabulary-only GGUF: <unk> <s> </s>, optionally the 256 byte tokens, then
 * the given pieces and scores (type normal). */
static void write_vocab(const char *path, bool bytes, const char *const *pieces,
                        const float *scores, int n)
{
    vf_vocab v = {0};
    vf_add(&v, "<unk>", 2), vf_add(&v, "<s>", 3), vf_add(&v, "</s>", 3);
    for (int b = 0; bytes && b < 256; b++) {
        char hex[8];
        snprintf(hex, sizeof hex, "<0x%02X>", b);
        vf_add(&v, hex, 6);
    }
    for (int i = 0; i < n; i++)
        vf_add_scored(&v, pieces[i], 1, scores[i]);

    ember_gguf_writer *w = vf_writer(&v, "llama");
    ember_gguf_add_arr_f32(w, "tokenizer.ggml.scores", v.score, v.n);
    ember_gguf_add_u32(w, "tokenizer.ggml.bos_token_id", 1);
    ember_gguf_add_u32(w, "tokenizer.ggml.eos_token_id", 2);
    ember_gguf_add_u32(w, "tokenizer.ggml.unknown_token_id", 0);
    ember_gguf_add_bool(w, "tokenizer.ggml.add_bos_token", true);
    vf_write(w, path);
    vf_vocab_free(&v);
}

/* Random byte strings (invalid UTF-8 included) never fail and always come back: every
 * byte has a piece or a byte token, and decoding undoes the space marks (so a literal
 * U+2581 in the text comes back as a space, as in SentencePiece). */
static void check_random_round_trips(const ember_tokenizer *t, uint64_t seed)
{
    tu_rng rng = { seed };
    static const char alphabet[] = "ab cxs<>\xe2\x96\x81\xc3\xa9\xff\x80\n";
    char text[80], want[96];
    uint32_t ids[256];
    int bad = 0;
    for (int iter = 0; iter < 3000; iter++) {
        size_t len = tu_next(&rng) % 64;
        for (size_t i = 0; i < len; i++) {
            uint64_t r = tu_next(&rng);
            text[i] = (r & 1) ? (char)(r >> 8) : alphabet[(r >> 8) % (sizeof alphabet - 1)];
        }
        size_t n = 0;
        ember_err err = {{0}};
        if (ember_tokenizer_encode(t, text, len, false, ids, 256, &n, &err) != EMBER_OK || n > 256) {
            bad++;
            continue;
        }
        size_t bl = 0, wl = 0;
        char *back = vf_decode(t, ids, n, &bl);
        if (len)
            want[wl++] = ' ';
        for (size_t i = 0; i < len; i++) { /* a literal U+2581 comes back as a space */
            bool mark = i + 3 <= len && memcmp(text + i, SP, 3) == 0;
            want[wl++] = mark ? ' ' : text[i];
            i += mark ? 2 : 0;
        }
        if (bl != wl || memcmp(back, want, wl) != 0)
            bad++;
        free(back);
    }
    CHECKF(bad == 0, "%d random strings did not round-trip", bad);
}

/* ---- merge rules on a hand-made vocabulary ------------------------------------- */

static void test_rules(void)
{
    static const char *const pieces[] = {
        SP, "a", "b", "c", "x", "<", "s", ">", "ab", "bc", "abc", "xx", "<s", SP "ab",
    };
    static const float scores[] = {
        -9, -9, -9, -9, -9, -9, -9, -9, -2, -1, -3, -1, -1, -5,
    };
    enum { P = 259, SPC = P, A, B, C, X, LT, S, GT, AB, BC, ABC, XX, LTS, SPAB };
    char path[512];
    snprintf(path, sizeof path, "%s/tok_rules.gguf", tu_tmp_dir());
    write_vocab(path, true, pieces, scores, (int)(sizeof pieces / sizeof *pieces));
    ember_gguf *g = NULL;
    ember_tokenizer *t = vf_open(path, &g);
    CHECK(t != NULL);
    if (!t)
        return;
    CHECK(ember_tokenizer_n_vocab(t) == P + 14);
    CHECK(ember_tokenizer_bos(t) == 1 && ember_tokenizer_eos(t) == 2 && ember_tokenizer_unk(t) == 0);
    CHECK(ember_tokenizer_add_bos(t));
    CHECK(ember_tokenizer_is_control(t, 1) && !ember_tokenizer_is_control(t, AB));

    /* "bc" (-1) beats "ab" (-2); then "abc" forms; "▁abc" is not a piece */
    vf_check_ids(t, "abc", (uint32_t[]){ SPC, ABC }, 2);
    /* "▁ab" forms from "▁" + "ab" once "ab" is the best pair left */
    vf_check_ids(t, "ab", (uint32_t[]){ SPAB }, 1);
    /* ties go to the leftmost pair */
    vf_check_ids(t, "xxx", (uint32_t[]){ SPC, XX, X }, 3);
    vf_check_ids(t, "xxxx", (uint32_t[]){ SPC, XX, XX }, 3);
    /* spaces become U+2581 and each one is its own symbol */
    vf_check_ids(t, "a  c", (uint32_t[]){ SPC, A, SPC, SPC, C }, 5);
    /* characters without a piece fall back to bytes, UTF-8 sequences byte by byte */
    vf_check_ids(t, "\xc3\xa9", (uint32_t[]){ SPC, BYTE(0xc3), BYTE(0xa9) }, 3);
    vf_check_ids(t, "a\n", (uint32_t[]){ SPC, A, BYTE('\n') }, 3);
    /* invalid UTF-8: every bad byte is a symbol of its own, the rest still merges */
    vf_check_ids(t, "\xff", (uint32_t[]){ SPC, BYTE(0xff) }, 2);
    vf_check_ids(t, "\xc3" "ab", (uint32_t[]){ SPC, BYTE(0xc3), AB }, 3);
    vf_check_ids(t, "ab\xe2\x96", (uint32_t[]){ SPAB, BYTE(0xe2), BYTE(0x96) }, 3);
    vf_check_ids(t, "\x80" "c", (uint32_t[]){ SPC, BYTE(0x80), C }, 3);
    /* control tokens never come out of plain text */
    vf_check_ids(t, "<s>", (uint32_t[]){ SPC, LTS, GT }, 3);

    /* BOS, empty text, and a buffer too small */
    uint32_t ids[8];
    size_t n = 99;
    ember_err err = {{0}};
    CHECK(ember_tokenizer_encode(t, "", 0, false, ids, 8, &n, &err) == EMBER_OK && n == 0);
    CHECK(ember_tokenizer_encode(t, "", 0, true, ids, 8, &n, &err) == EMBER_OK && n == 1 && ids[0] == 1);
    CHECK(ember_tokenizer_encode(t, "ab c", 4, true, ids, 8, &n, &err) == EMBER_OK);
    CHECK(vf_ids_equal(ids, n, (uint32_t[]){ 1, SPAB, SPC, C }, 4));
    ids[1] = 12345;
    CHECK(ember_tokenizer_encode(t, "ab c", 4, true, ids, 1, &n, &err) == EMBER_OK && n == 4);
    CHECK(ids[0] == 1 && ids[1] == 12345);
    CHECK(ember_tokenizer_encode(t, "ab c", 4, false, NULL, 0, &n, &err) == EMBER_OK && n == 3);

    /* decoding */
    char buf[16];
    CHECK(ember_tokenizer_decode(t, SPAB, buf, sizeof buf) == 3 && memcmp(buf, " ab", 3) == 0);
    CHECK(ember_tokenizer_decode(t, BYTE(0x41), buf, sizeof buf) == 1 && buf[0] == 'A');
    CHECK(ember_tokenizer_decode(t, BYTE(0x00), buf, sizeof buf) == 1 && buf[0] == 0);
    CHECK(ember_tokenizer_decode(t, 1, buf, sizeof buf) == 0);
    CHECK(ember_tokenizer_decode(t, 2, buf, sizeof buf) == 0);
    CHECK(ember_tokenizer_decode(t, 0, buf, sizeof buf) == 3); /* <unk> shows as U+2585 */
    CHECK(ember_tokenizer_decode(t, 99999, buf, sizeof buf) == 0);
    buf[0] = 'z';
    CHECK(ember_tokenizer_decode(t, SPAB, buf, 0) == 3 && buf[0] == 'z');
    CHECK(ember_tokenizer_decode(t, SPAB, buf, 2) == 3 && buf[0] == ' ' && buf[1] == 'a');
    check_random_round_trips(t, 1);
    vf_close(t, g);

    /* a vocabulary without byte tokens falls back to <unk> */
    static const char *const small[] = { SP, "a" };
    static const float small_sc[] = { -1, -1 };
    write_vocab(path, false, small, small_sc, 2);
    t = vf_open(path, &g);
    CHECK(t != NULL);
    if (t) {
        vf_check_ids(t, "ab", (uint32_t[]){ 3, 4, 0 }, 3);
        vf_check_ids(t, "a\xc3\xa9", (uint32_t[]){ 3, 4, 0, 0 }, 4);
        vf_close(t, g);
    }
    remove(path);
}

/* ---- a make-test-model vocabulary ------------------------------------------------ */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static bool in_set(char **sorted, size_t n, const char *s)
{
    return bsearch(&s, sorted, n, sizeof *sorted, cmp_str) != NULL;
}

/* Every merged piece (type normal, more than one character) splits into two pieces of
 * the vocabulary, so that the SPM merges can reach it. */
static void check_reachable(const ember_gguf *g)
{
    const ember_gguf_kv *tok = ember_gguf_find(g, "tokenizer.ggml.tokens");
    const ember_gguf_kv *ty = ember_gguf_find(g, "tokenizer.ggml.token_type");
    CHECK(tok && ty && ty->arr_type == EMBER_GGUF_INT32 && ty->arr_n == tok->arr_n);
    if (!tok || !ty)
        return;
    size_t n = tok->arr_n, unreachable = 0, merged = 0;
    char **all = malloc(n * sizeof *all);
    for (size_t i = 0; i < n; i++) {
        all[i] = malloc(tok->arr_str[i].len + 1);
        memcpy(all[i], tok->arr_str[i].ptr, tok->arr_str[i].len);
        all[i][tok->arr_str[i].len] = 0;
    }
    char **sorted = malloc(n * sizeof *sorted);
    memcpy(sorted, all, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_str);
    for (size_t i = 1; i < n; i++)
        CHECKF(strcmp(sorted[i - 1], sorted[i]) != 0, "duplicate piece '%s'", sorted[i]);
    for (size_t i = 0; i < n; i++) {
        int32_t type;
        memcpy(&type, ty->arr_data + 4 * i, 4);
        size_t len = strlen(all[i]);
        size_t first = (all[i][0] & 0x80) ? 3 : 1; /* U+2581 is the only non-ASCII char */
        if (type != 1 || len <= first)
            continue;
        merged++;
        bool ok = false;
        for (size_t cut = 1; cut < len && !ok; cut++) {
            if ((all[i][cut] & 0xc0) == 0x80)
                continue;
            char left[256];
            if (cut >= sizeof left)
                break;
            memcpy(left, all[i], cut);
            left[cut] = 0;
            ok = in_set(sorted, n, left) && in_set(sorted, n, all[i] + cut);
        }
        if (!ok && unreachable++ < 5)
            fprintf(stderr, "unreachable piece '%s'\n", all[i]);
    }
    CHECK(unreachable == 0);
    CHECK(merged > 100);
    for (size_t i = 0; i < n; i++)
        free(all[i]);
    free(all), free(sorted);
}

/* The text calls of ember.h on the generated model (vocab_only): tokenize's flags,
 * pieces with and without control text, and ember_detokenize. */
static void check_public_text_api(const char *path)
{
    ember_model *m = NULL;
    ember_model_opts o = {.backend = EMBER_BACKEND_CPU, .vocab_only = 1};
    CHECK(ember_model_load(path, &o, &m) == EMBER_OK);
    if (!m) return;
    const char *text = "hi</s>there";
    uint32_t plain[64], special[64], bos[64];
    size_t n_plain = 0, n_special = 0, n_bos = 0;
    CHECK(ember_tokenize(m, text, strlen(text), 0, plain, 64, &n_plain) == EMBER_OK);
    CHECK(ember_tokenize(m, text, strlen(text), EMBER_TOKENIZE_PARSE_SPECIAL, special, 64, &n_special) == EMBER_OK);
    CHECK(ember_tokenize(m, text, strlen(text), EMBER_TOKENIZE_ADD_BOS | EMBER_TOKENIZE_PARSE_SPECIAL, bos, 64,
                         &n_bos) == EMBER_OK);
    size_t eos_at = n_special;
    for (size_t i = 0; i < n_plain; i++) CHECKF(plain[i] != 2, "plain text made </s> at %zu", i);
    for (size_t i = 0; i < n_special; i++) if (special[i] == 2) eos_at = i;
    CHECK(eos_at < n_special);
    CHECK(n_bos == n_special + 1 && bos[0] == 1 && memcmp(bos + 1, special, n_special * sizeof *special) == 0);
    char a[64], b[64];
    CHECK(ember_token_to_text(m, 2, a, sizeof a) == 0);
    CHECK(ember_token_to_piece(m, 2, b, sizeof b) == 4 && memcmp(b, "</s>", 4) == 0);
    /* the whole list: pieces joined, control text only when asked */
    char want[2][256], got[256];
    size_t w[2] = {0, 0};
    for (size_t i = 0; i < n_bos; i++) {
        w[0] += ember_token_to_text(m, bos[i], want[0] + w[0], sizeof want[0] - w[0]);
        w[1] += ember_token_to_piece(m, bos[i], want[1] + w[1], sizeof want[1] - w[1]);
    }
    for (int sp = 0; sp < 2; sp++) {
        size_t k = ember_detokenize(m, bos, n_bos, sp, got, sizeof got);
        CHECKF(k == w[sp] && memcmp(got, want[sp], k) == 0, "detokenize (special %d): '%.*s'", sp, (int)k, got);
    }
    CHECK(w[1] == w[0] + 3 + 4 && strstr(want[0], "hi") && strstr(want[0], "there")); /* "<s>", "</s>" */
    /* a character cut short ends in U+FFFD; a small buffer gets the start, the length is whole */
    const char *llama = "\xf0\x9f\xa6\x99";
    uint32_t ids[16];
    size_t n = 0, full;
    CHECK(ember_tokenize(m, llama, 4, 0, ids, 16, &n) == EMBER_OK && n >= 2);
    full = ember_detokenize(m, ids, n - 1, 0, got, sizeof got);
    CHECKF(full >= 3 && memcmp(got + full - 3, "\xef\xbf\xbd", 3) == 0, "cut character: '%.*s'", (int)full, got);
    CHECK(ember_detokenize(m, ids, n, 0, got, sizeof got) == 5 && memcmp(got, " \xf0\x9f\xa6\x99", 5) == 0);
    memset(got, 'x', sizeof got);
    CHECK(ember_detokenize(m, ids, n, 0, got, 2) == 5 && got[2] == 'x');
    ember_model_free(m);
}

static void test_generated_vocab(void)
{
    char path[512], cmd[1400];
    snprintf(path, sizeof path, "%s/tok_gen.gguf", tu_tmp_dir());
    snprintf(cmd, sizeof cmd, "'%s' make-test-model '%s' --vocab 3000 --layers 1 2>&1",
             tu_ember_bin(), path);
    char out[2048];
    int rc = tu_run(cmd, out, sizeof out);
    if (rc != 0) {
        printf("note: make-test-model unavailable (exit %d: %.200s); generated-vocab part skipped\n",
               rc, out);
        return;
    }
    ember_gguf *g = NULL;
    ember_tokenizer *t = vf_open(path, &g);
    CHECK(t != NULL);
    if (!t)
        return;
    CHECK(ember_tokenizer_n_vocab(t) == 3000);
    check_reachable(g);

    static const char *const texts[] = {
        "Once upon a time, there was a little girl named Lily.",
        "She said, \"I want to play with your ball!\"",
        "The quick brown fox jumps over the lazy dog 0123456789 times.",
        "  leading spaces,\ttabs\nand newlines\n\nkeep   their shape ~!@#$%^&*()_+{}|:<>?",
        "caf\xc3\xa9 na\xc3\xafve \xe2\x9c\x85 \xf0\x9f\xa6\x99 and bad bytes \xff\xfe\xc3",
        "<s> is not a control token in text </s>",
        "",
    };
    uint32_t ids[512];
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        size_t n = vf_encode(t, texts[i], ids, 512);
        for (size_t k = 0; k < n; k++)
            CHECKF(!ember_tokenizer_is_control(t, ids[k]) && ids[k] != 0, "text %zu token %zu", i, k);
        char *back = vf_decode(t, ids, n, NULL);
        char want[600];
        snprintf(want, sizeof want, "%s%s", texts[i][0] ? " " : "", texts[i]);
        CHECKF(strcmp(back, want) == 0, "round trip of text %zu: got '%s'", i, back);
        free(back);
    }
    /* printable ASCII never needs byte tokens, and common words are single pieces */
    size_t n = vf_encode(t, "the cat", ids, 512);
    for (size_t k = 0; k < n; k++)
        CHECK(ids[k] >= 259);
    CHECK(vf_encode(t, "the", ids, 512) == 1);
    CHECK(vf_encode(t, "Once upon a time", ids, 512) <= 6);
    vf_close(t, g);
    check_public_text_api(path);
    remove(path);
}

/* ---- llama.cpp's reference vectors on the Llama 2 vocabulary ---------------------- */

static void test_llama_spm(const char *shared)
{
    ember_gguf *g = NULL;
    ember_tokenizer *t = vf_open_shared(shared, VF_LLAMA_SPM_VOCAB, &g);
    CHECK(t != NULL);
    if (!t)
        return;
    CHECK(ember_tokenizer_n_vocab(t) == 32000);

    uint32_t ids[64];
    size_t n = 0;
    ember_err err = {{0}};
    const char *s = "I believe the meaning of life is";
    CHECK(ember_tokenizer_encode(t, s, strlen(s), true, ids, 64, &n, &err) == EMBER_OK);
    CHECK(vf_ids_equal(ids, n, (uint32_t[]){ 1, 306, 4658, 278, 6593, 310, 2834, 338 }, 8));

    /* The shipped files hold 46 cases (46 separators, 46 expected lines), the empty
     * string included. */
    if (vf_check_vectors(t, shared, "llama-spm", 46))
        check_random_round_trips(t, 2);
    vf_close(t, g);
}

/* ---- a vocabulary-only file through the public API -------------------------------- */

/* llama.cpp's vocab files (tokenizer keys, general.architecture, no tensors) load with
 * vocab_only and tokenize; without it, and for engines and scoring, they are refused with
 * a message that says why. No device is touched either way. */
static void test_vocab_only_model(const char *shared)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/" VF_LLAMA_SPM_VOCAB, shared);
    ember_model *m = NULL;
    ember_model_opts o = {.backend = EMBER_BACKEND_CPU};
    CHECK(ember_model_load(path, &o, &m) == EMBER_ERR_FORMAT && m);
    CHECKF(m && strstr(ember_model_error(m), "vocabulary-only file (no weights)"), "%s", m ? ember_model_error(m) : "");
    ember_model_free(m);

    o.vocab_only = 1;
    o.backend = EMBER_BACKEND_VULKAN; /* ignored: no device for a vocabulary */
    m = NULL;
    CHECKF(ember_model_load(path, &o, &m) == EMBER_OK, "%s", m ? ember_model_error(m) : "out of memory");
    if (!m) return;
    ember_model_info info;
    ember_model_get_info(m, &info);
    CHECK(info.n_vocab == 32000 && strcmp(info.arch, "") == 0 && info.dim == 0 && strcmp(info.device_name, "cpu") == 0);
    uint32_t ids[16];
    size_t n = 0;
    const char *s = "I believe the meaning of life is";
    CHECK(ember_tokenize(m, s, strlen(s), 1, ids, 16, &n) == EMBER_OK);
    CHECK(vf_ids_equal(ids, n, (uint32_t[]){ 1, 306, 4658, 278, 6593, 310, 2834, 338 }, 8));
    ember_engine *e = NULL;
    CHECK(ember_engine_create(m, NULL, &e) == EMBER_ERR_INVALID_ARG);
    CHECKF(e && strstr(ember_engine_error(e), "vocab_only"), "%s", e ? ember_engine_error(e) : "");
    ember_engine_destroy(e);
    double nll;
    size_t scored;
    CHECK(ember_score(m, ids, n, 0, &nll, &scored) == EMBER_ERR_INVALID_ARG && scored == 0);
    CHECKF(strstr(ember_model_error(m), "vocab_only"), "%s", ember_model_error(m));
    ember_model_free(m);
}

/* ---- the stories260K vocabulary (512 pieces) -------------------------------------- */

static void test_stories(const char *shared)
{
    ember_gguf *g = NULL;
    ember_tokenizer *t =
        vf_open_shared(shared, "models/stories260K/tinyllamas-stories-260k-f32.gguf", &g);
    CHECK(t != NULL);
    if (!t)
        return;
    CHECK(ember_tokenizer_n_vocab(t) == 512 && ember_tokenizer_bos(t) == 1 && ember_tokenizer_eos(t) == 2);

    char path[1024];
    snprintf(path, sizeof path, "%s/models/stories260K/expected/greedy200_f32_ids.txt", shared);
    char *ids_txt = vf_read_file(path);
    snprintf(path, sizeof path, "%s/models/stories260K/expected/greedy200_f32.txt", shared);
    char *text = vf_read_file(path);
    CHECK(ids_txt && text);
    if (ids_txt && text) {
        uint32_t ids[256];
        size_t n = vf_parse_ids(ids_txt, ids, 256);
        CHECK(n == 200);
        /* llama2.c drops the space that starts the first piece after BOS */
        char *dec = vf_decode(t, ids, n, NULL);
        CHECKF(strcmp(dec + (dec[0] == ' '), text) == 0, "decoded greedy ids differ:\n%s", dec);
        free(dec);

        uint32_t *enc = malloc(4096 * sizeof *enc);
        size_t m = vf_encode(t, text, enc, 4096);
        CHECK(m > 50 && m < 400);
        char *back = vf_decode(t, enc, m, NULL);
        CHECK(back[0] == ' ' && strcmp(back + 1, text) == 0);
        free(back), free(enc);
    }
    free(ids_txt), free(text);
    vf_close(t, g);
}

int main(void)
{
    test_rules();
    test_generated_vocab();
    const char *shared = tu_shared_dir();
    if (!shared) return tu_finish_without_shared("test_tokenizer", "llama-spm vectors and stories260K not checked");
    test_llama_spm(shared);
    test_vocab_only_model(shared);
    test_stories(shared);
    return tu_finish("test_tokenizer");
}
