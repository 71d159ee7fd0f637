/* test_tokenizer_bpe.c — GPT-2 byte-level BPE, pre-tokenizers, special tokens and
 * streaming detokenization.
 *
 * Without ../shared: merge rules, pre-tokenizer splits and streaming on a tiny
 * hand-made byte-level vocabulary. With it: llama.cpp's reference vectors on the GPT-2
 * vocabulary (a vocab-only GGUF built here from encoder.json + vocab.bpe), round trips,
 * streaming on GPT-2 and Llama 2 (SentencePiece) vocabularies. */
#include "vocab_fixture.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "engine/tokenizer/pretokenize.h" /* the pre-tokenizer, checked on its own */

#define FFFD "\xef\xbf\xbd"

/* ---- helpers --------------------------------------------------------------------- */

/* Strict UTF-8 check, written independently of engine/utf8.c. */
static bool valid_utf8(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        unsigned c = p[i];
        size_t len = c < 0x80 ? 1 : c >= 0xc2 && c < 0xe0 ? 2 : c >= 0xe0 && c < 0xf0 ? 3
                   : c >= 0xf0 && c < 0xf5 ? 4 : 0;
        if (len == 0 || i + len > n)
            return false;
        uint32_t cp = len == 1 ? c : c & (0x7f >> len);
        for (size_t k = 1; k < len; k++) {
            if ((p[i + k] & 0xc0) != 0x80)
                return false;
            cp = (cp << 6) | (p[i + k] & 0x3f);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += len;
    }
    return true;
}

static size_t put_utf8(char *o, uint32_t cp)
{
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xc0 | cp >> 6); o[1] = (char)(0x80 | (cp & 63)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | cp >> 12); o[1] = (char)(0x80 | ((cp >> 6) & 63));
        o[2] = (char)(0x80 | (cp & 63));
        return 3;
    }
    o[0] = (char)(0xf0 | cp >> 18); o[1] = (char)(0x80 | ((cp >> 12) & 63));
    o[2] = (char)(0x80 | ((cp >> 6) & 63)); o[3] = (char)(0x80 | (cp & 63));
    return 4;
}

/* GPT-2's bytes_to_unicode(), again written independently. */
static uint32_t gpt2_cp(int byte)
{
    int extra = 0;
    for (int b = 0; b < 256; b++) {
        bool printable = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae);
        if (b == byte)
            return printable ? (uint32_t)b : 256u + (uint32_t)extra;
        extra += !printable;
    }
    return 0;
}

/* Streams ids through ember_detok; every chunk must be valid UTF-8. Returns the joined
 * text (malloc'd, *len bytes). */
static char *stream_ids(const ember_tokenizer *t, const uint32_t *ids, size_t n, size_t *len,
                        int *bad_chunks)
{
    size_t cap = ember_detok_max(t), total = 0;
    char *chunk = malloc(cap), *all = malloc(n * cap + cap + 1);
    ember_detok d;
    ember_detok_init(&d);
    for (size_t i = 0; i <= n; i++) {
        size_t k = i < n ? ember_detok_push(&d, t, ids[i], chunk, cap)
                         : ember_detok_flush(&d, chunk, cap);
        CHECK(k <= cap);
        if (!valid_utf8(chunk, k))
            (*bad_chunks)++;
        memcpy(all + total, chunk, k);
        total += k;
    }
    CHECK(d.n_pending == 0);
    all[total] = 0;
    *len = total;
    free(chunk);
    return all;
}

/* ---- building byte-level vocabularies --------------------------------------------- */

typedef struct write_opts {
    const char *model;   /* default "gpt2" */
    const char *pre;     /* NULL: no tokenizer.ggml.pre */
    int add_bos;         /* -1: no key */
    bool no_merges;
    uint32_t eos;        /* 0: no bos/eos keys */
} write_opts;

static void write_vocab(const char *path, const vf_vocab *v, const write_opts *o)
{
    ember_gguf_writer *w = vf_writer(v, o->model ? o->model : "gpt2");
    if (o->pre)
        ember_gguf_add_str(w, "tokenizer.ggml.pre", o->pre);
    if (!o->no_merges)
        ember_gguf_add_arr_str(w, "tokenizer.ggml.merges", (const char *const *)v->merges,
                               v->n_merges);
    if (o->eos) {
        ember_gguf_add_u32(w, "tokenizer.ggml.bos_token_id", o->eos);
        ember_gguf_add_u32(w, "tokenizer.ggml.eos_token_id", o->eos);
    }
    if (o->add_bos >= 0)
        ember_gguf_add_bool(w, "tokenizer.ggml.add_bos_token", o->add_bos != 0);
    vf_write(w, path);
}

/* Loads v through a GGUF file named name in the test directory; the file is removed at
 * once, the tokenizer keeps what it needs. */
static ember_tokenizer *load_vocab(const vf_vocab *v, const char *name, const write_opts *o,
                                   ember_gguf **g)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.gguf", tu_tmp_dir(), name);
    write_vocab(path, v, o);
    ember_tokenizer *t = vf_open(path, g);
    remove(path);
    return t;
}

/* The 256 byte characters (id = byte), a few merges, specials:
 *   256 "Ġt"  257 "he"  258 "Ġthe"  259 "ll"  260 "xyz" (no merge reaches it)
 *   261 <|endoftext|> (control)  262 <|im_start|> (control)  263 <|im_end|> (control)
 *   264 <tool> (user-defined) */
enum { T_GT = 256, T_HE, T_GTHE, T_LL, T_XYZ, T_EOT, T_IM_START, T_IM_END, T_TOOL };

static void tiny_vocab(vf_vocab *v)
{
    memset(v, 0, sizeof *v);
    for (int b = 0; b < 256; b++) {
        char s[4] = {0};
        put_utf8(s, gpt2_cp(b));
        vf_add(v, s, 1);
    }
    vf_add(v, "\xc4\xa0t", 1), vf_add(v, "he", 1), vf_add(v, "\xc4\xa0the", 1);
    vf_add(v, "ll", 1), vf_add(v, "xyz", 1);
    vf_add(v, "<|endoftext|>", 3), vf_add(v, "<|im_start|>", 3);
    vf_add(v, "<|im_end|>", 3), vf_add(v, "<tool>", 4);
    vf_merge(v, "\xc4\xa0 t"), vf_merge(v, "h e"), vf_merge(v, "\xc4\xa0t he");
    vf_merge(v, "l l");
    vf_merge(v, "nospace"); /* a malformed line is ignored */
}

/* The tiny vocabulary as a tokenizer; it is cheap enough to build afresh for each. */
static ember_tokenizer *tiny_tokenizer(const char *pre, int add_bos, ember_gguf **g)
{
    vf_vocab v;
    tiny_vocab(&v);
    write_opts o = { NULL, pre, add_bos, false, 0 };
    ember_tokenizer *t = load_vocab(&v, "tok_tiny_bpe", &o, g);
    vf_vocab_free(&v);
    return t;
}

/* ---- merge rules on the tiny vocabulary ----------------------------------------- */

static void test_tiny_rules(void)
{
    ember_gguf *g = NULL;
    ember_tokenizer *t = tiny_tokenizer("gpt-2", -1, &g);
    CHECK(t != NULL);
    if (!t)
        return;
    CHECK(strcmp(ember_tokenizer_model(t), "gpt2") == 0 && strcmp(ember_tokenizer_pre(t), "gpt-2") == 0);
    /* no bos/eos keys: both default to <|endoftext|>; no unk; gpt-2 adds no BOS */
    CHECK(ember_tokenizer_bos(t) == T_EOT && ember_tokenizer_eos(t) == T_EOT);
    CHECK(ember_tokenizer_unk(t) == EMBER_TOKEN_NONE);
    CHECK(!ember_tokenizer_add_bos(t));

    vf_check_ids(t, "the", (uint32_t[]){ 't', T_HE }, 2);             /* "Ġt he" needs the space */
    vf_check_ids(t, " the", (uint32_t[]){ T_GTHE }, 1);               /* Ġ t -> Ġt; h e -> he; Ġt he */
    vf_check_ids(t, "lll", (uint32_t[]){ T_LL, 'l' }, 2);             /* ties: leftmost first */
    vf_check_ids(t, "llll", (uint32_t[]){ T_LL, T_LL }, 2);
    vf_check_ids(t, "xyz", (uint32_t[]){ 'x', 'y', 'z' }, 3);          /* no merge reaches "xyz" */
    vf_check_ids(t, "a\nb", (uint32_t[]){ 'a', '\n', 'b' }, 3);
    vf_check_ids(t, "\xff", (uint32_t[]){ 255 }, 1);                   /* bytes are tokens */
    vf_check_ids(t, "\xe4\xb8\x96", (uint32_t[]){ 0xe4, 0xb8, 0x96 }, 3);
    vf_check_ids(t, "", NULL, 0);

    /* special tokens: control only with parse_special; user-defined always */
    vf_check_ids(t, "<|im_start|>", (uint32_t[]){ '<', '|', 'i', 'm', '_', 's', 't', 'a', 'r', 't', '|', '>' }, 12);
    vf_check_ids(t, "a<tool>b", (uint32_t[]){ 'a', T_TOOL, 'b' }, 3);
    uint32_t ids[64];
    const char *chat = "<|im_start|>the<|im_end|><tool><|endoftext|>";
    size_t n = vf_encode_flags(t, chat, strlen(chat), EMBER_TOKENIZE_PARSE_SPECIAL, ids, 64);
    CHECK(vf_ids_equal(ids, n, (uint32_t[]){ T_IM_START, 't', T_HE, T_IM_END, T_TOOL, T_EOT }, 6));
    n = vf_encode_flags(t, "the", 3, EMBER_TOKENIZE_ADD_BOS | EMBER_TOKENIZE_PARSE_SPECIAL, ids, 64);
    CHECK(vf_ids_equal(ids, n, (uint32_t[]){ T_EOT, 't', T_HE }, 3));
    n = vf_encode_flags(t, chat, strlen(chat), 0, ids, 64);
    for (size_t i = 0; i < n; i++)
        CHECKF(!ember_tokenizer_is_control(t, ids[i]), "plain text produced control id %u", ids[i]);

    /* decoding: bytes back, control tokens empty, user-defined text as is */
    char buf[32];
    CHECK(ember_tokenizer_decode(t, T_GTHE, buf, sizeof buf) == 4 && memcmp(buf, " the", 4) == 0);
    CHECK(ember_tokenizer_decode(t, 0xe4, buf, sizeof buf) == 1 && (uint8_t)buf[0] == 0xe4);
    CHECK(ember_tokenizer_decode(t, T_IM_START, buf, sizeof buf) == 0);
    CHECK(ember_tokenizer_decode(t, T_TOOL, buf, sizeof buf) == 6 && memcmp(buf, "<tool>", 6) == 0);

    /* end of generation: EOS and control tokens named like EOT; not <|im_start|> */
    CHECK(ember_tokenizer_is_eog(t, T_EOT) && ember_tokenizer_is_eog(t, T_IM_END));
    CHECK(!ember_tokenizer_is_eog(t, T_IM_START) && !ember_tokenizer_is_eog(t, T_TOOL));
    CHECK(!ember_tokenizer_is_eog(t, 'a') && !ember_tokenizer_is_eog(t, EMBER_TOKEN_NONE));
    CHECK(ember_tokenizer_find_piece(t, "<|im_end|>", 10) == T_IM_END);
    CHECK(ember_tokenizer_find_piece(t, "nope", 4) == EMBER_TOKEN_NONE);
    vf_close(t, g);

    /* Llama 3: a word that is a token is not merged, and BOS is added by default */
    t = tiny_tokenizer("llama-bpe", -1, &g);
    CHECK(t != NULL);
    if (t) {
        vf_check_ids(t, "xyz", (uint32_t[]){ T_XYZ }, 1);
        CHECK(ember_tokenizer_add_bos(t));
        vf_close(t, g);
    }
    t = tiny_tokenizer("llama-bpe", 0, &g); /* the key wins over the default */
    CHECK(t != NULL);
    if (t) {
        CHECK(!ember_tokenizer_add_bos(t));
        vf_close(t, g);
    }
    /* no tokenizer.ggml.pre: GPT-2's */
    t = tiny_tokenizer(NULL, -1, &g);
    CHECK(t != NULL);
    if (t) {
        CHECK(strcmp(ember_tokenizer_pre(t), "gpt-2") == 0);
        vf_check_ids(t, " the", (uint32_t[]){ T_GTHE }, 1);
        vf_close(t, g);
    }
}

/* ---- harmony (gpt-oss) ------------------------------------------------------------ */

/* The byte characters and harmony's control tokens: <|start|> <|channel|> <|message|>
 * <|constrain|> are made user-defined (shown in output, cut out of any text); with both
 * <|return|> and <|call|> ending generation, <|end|> does not, and is user-defined too. */
enum { H_START = 256, H_CHANNEL, H_MESSAGE, H_CONSTRAIN, H_END, H_RETURN, H_CALL, H_EOT };

static ember_tokenizer *harmony_tokenizer(bool with_call, ember_gguf **g)
{
    vf_vocab v;
    memset(&v, 0, sizeof v);
    for (int b = 0; b < 256; b++) {
        char c[4] = {0};
        put_utf8(c, gpt2_cp(b));
        vf_add(&v, c, 1);
    }
    static const char *const specials[] = { "<|start|>", "<|channel|>", "<|message|>",
                                            "<|constrain|>", "<|end|>", "<|return|>" };
    for (size_t i = 0; i < sizeof specials / sizeof *specials; i++)
        vf_add(&v, specials[i], 3);
    vf_add(&v, with_call ? "<|call|>" : "<|other|>", 3);
    vf_add(&v, "<|endoftext|>", 3);
    write_opts o = { NULL, "gpt-4o", -1, false, H_RETURN };
    ember_tokenizer *t = load_vocab(&v, "tok_harmony", &o, g);
    vf_vocab_free(&v);
    return t;
}

static void test_harmony(void)
{
    ember_gguf *g = NULL;
    ember_tokenizer *t = harmony_tokenizer(true, &g);
    CHECK(t != NULL);
    if (!t)
        return;
    CHECK(ember_tokenizer_is_eog(t, H_RETURN) && ember_tokenizer_is_eog(t, H_CALL));
    CHECK(ember_tokenizer_is_eog(t, H_EOT) && !ember_tokenizer_is_eog(t, H_END));
    for (uint32_t id = H_START; id <= H_END; id++)
        CHECKF(!ember_tokenizer_is_control(t, id) && !ember_tokenizer_is_eog(t, id), "token %u", id);
    CHECK(ember_tokenizer_is_control(t, H_RETURN) && ember_tokenizer_is_control(t, H_CALL));
    /* the markers are cut out of plain text too, as llama.cpp does with user-defined ones */
    const char *reply = "<|channel|>a<|message|>b<|end|><|start|>c<|return|>";
    uint32_t ids[64];
    size_t n = vf_encode_flags(t, reply, strlen(reply), 0, ids, 64);
    CHECK(vf_ids_equal(ids, n, (uint32_t[]){ H_CHANNEL, 'a', H_MESSAGE, 'b', H_END, H_START, 'c',
                                             '<', '|', 'r', 'e', 't', 'u', 'r', 'n', '|', '>' }, 17));
    /* and output shows them: the reply reads as the model wrote it, but for <|return|> */
    n = vf_encode_flags(t, reply, strlen(reply), EMBER_TOKENIZE_PARSE_SPECIAL, ids, 64);
    CHECK(n == 8 && ids[7] == H_RETURN);
    size_t len = 0;
    int bad = 0;
    char *text = stream_ids(t, ids, n, &len, &bad);
    CHECKF(bad == 0 && strcmp(text, "<|channel|>a<|message|>b<|end|><|start|>c") == 0, "%s", text);
    free(text);
    vf_close(t, g);
    /* without <|call|> (Phi-3's <|end|>), <|end|> stays a control token that ends the turn */
    t = harmony_tokenizer(false, &g);
    CHECK(t != NULL);
    if (!t)
        return;
    CHECK(ember_tokenizer_is_eog(t, H_END) && ember_tokenizer_is_control(t, H_END));
    CHECK(!ember_tokenizer_is_control(t, H_CHANNEL));
    vf_close(t, g);
}

/* ---- refusals -------------------------------------------------------------------- */

static void expect_refusal(const vf_vocab *v, const write_opts *o, ember_status want, const char *in_msg)
{
    char path[512];
    snprintf(path, sizeof path, "%s/tok_refused.gguf", tu_tmp_dir());
    write_vocab(path, v, o);
    ember_gguf *g = NULL;
    ember_err err = {{0}};
    CHECK(ember_gguf_open(path, &g, &err) == EMBER_OK);
    ember_tokenizer *t = (ember_tokenizer *)1;
    ember_status st = g ? ember_tokenizer_load(g, &t, &err) : EMBER_ERR_IO;
    CHECKF(st == want && t == NULL, "got %s", ember_status_name(st));
    CHECKF(strstr(err.msg, in_msg) != NULL, "message '%s' does not name '%s'", err.msg, in_msg);
    ember_gguf_close(g);
    remove(path);
}

static void test_refusals(void)
{
    vf_vocab v;
    tiny_vocab(&v);
    write_opts o = { NULL, "no-such-pre", -1, false, 0 };
    expect_refusal(&v, &o, EMBER_ERR_UNSUPPORTED, "no-such-pre");
    o = (write_opts){ "bert", "gpt-2", -1, false, 0 };
    expect_refusal(&v, &o, EMBER_ERR_UNSUPPORTED, "bert");
    o = (write_opts){ NULL, "gpt-2", -1, true, 0 };
    expect_refusal(&v, &o, EMBER_ERR_FORMAT, "tokenizer.ggml.merges");
    o = (write_opts){ NULL, "gpt-2", -1, false, 99999 };
    expect_refusal(&v, &o, EMBER_ERR_FORMAT, "out of range");
    vf_vocab_free(&v);
}

/* ---- pre-tokenizer splits ---------------------------------------------------------- */

typedef struct words {
    char w[64][64];
    size_t n;
} words;

static ember_status collect(void *ctx, const char *word, size_t len)
{
    words *ws = ctx;
    if (ws->n < 64 && len < 64) {
        memcpy(ws->w[ws->n], word, len);
        ws->w[ws->n][len] = 0;
    }
    ws->n++;
    return EMBER_OK;
}

/* want: the words, NULL-terminated. */
static void check_split(const char *pre, const char *text, const char *const *want)
{
    ember_pretok *p = NULL;
    ember_err err = {{0}};
    CHECKF(ember_pretok_create(pre, strlen(pre), &p, &err) == EMBER_OK, "%s: %s", pre, err.msg);
    if (!p)
        return;
    words ws = { .n = 0 };
    CHECK(ember_pretok_split(p, text, strlen(text), collect, &ws, &err) == EMBER_OK);
    size_t n_want = 0;
    while (want[n_want])
        n_want++;
    bool same = ws.n == n_want;
    for (size_t i = 0; same && i < n_want; i++)
        same = strcmp(ws.w[i], want[i]) == 0;
    if (!same) {
        fprintf(stderr, "%s split of \"%s\": got", pre, text);
        for (size_t i = 0; i < ws.n && i < 64; i++)
            fprintf(stderr, " [%s]", ws.w[i]);
        fputc('\n', stderr);
    }
    CHECKF(same, "%s: \"%s\"", pre, text);
    ember_pretok_free(p);
}

#define W(...) ((const char *const[]){ __VA_ARGS__, NULL })

static void test_pretokenizers(void)
{
    /* every name in the table compiles */
    static const char *const names[] = {
        "gpt-2", "phi-2", "mpt", "olmo", "jais", "llama-bpe", "llama3", "llama-v3", "dbrx",
        "smaug-bpe", "qwen2", "deepseek-r1-qwen", "stablelm2", "megrez", "smollm", "starcoder",
        "refact", "command-r", "codeshell", "exaone", "minerva-7b", "default", "gpt-4o",
        "llama4", "kanana2", "talkie", "minimax-m2",
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        ember_pretok *p = NULL;
        ember_err err = {{0}};
        CHECKF(ember_pretok_create(names[i], strlen(names[i]), &p, &err) == EMBER_OK, "%s: %s",
               names[i], err.msg);
        ember_pretok_free(p);
    }
    ember_pretok *p = (ember_pretok *)1;
    ember_err err = {{0}};
    CHECK(ember_pretok_create("gpt-3", 5, &p, &err) == EMBER_ERR_UNSUPPORTED && p == NULL);
    CHECK(strstr(err.msg, "gpt-3") != NULL);

    /* GPT-2: lower-case contractions, a space joins the next word, digits run on */
    check_split("gpt-2", "Hello world", W("Hello", " world"));
    check_split("gpt-2", "I'm 12345 ok", W("I", "'m", " 12345", " ok"));
    check_split("gpt-2", "I'M here", W("I", "'", "M", " here"));
    check_split("gpt-2", "a  b", W("a", " ", " b"));
    check_split("gpt-2", "x\n\ny", W("x", "\n", "\n", "y"));
    check_split("gpt-2", "end  ", W("end", "  "));
    check_split("gpt-2", "abc,def", W("abc", ",", "def"));
    check_split("gpt-2", "caf\xc3\xa9 \xe4\xb8\x96\xe7\x95\x8c!", W("caf\xc3\xa9", " \xe4\xb8\x96\xe7\x95\x8c", "!"));
    /* U+0085 (NEL) is white space, as in llama.cpp and Hugging Face */
    check_split("gpt-2", "x\xc2\x85!", W("x", "\xc2\x85", "!"));
    check_split("llama-bpe", "x\xc2\x85!", W("x", "\xc2\x85", "!"));
    /* ill-formed bytes are words of their own, and nothing is lost */
    check_split("gpt-2", "a\xff\xfe" "b", W("a", "\xff\xfe", "b"));
    check_split("gpt-2", "ab\xe4\xb8", W("ab", "\xe4\xb8"));

    /* Llama 3: digits in threes, any-case contractions, punctuation leads a word,
     * newlines group */
    check_split("llama-bpe", "12345", W("123", "45"));
    check_split("llama-bpe", "I'M here", W("I", "'M", " here"));
    check_split("llama-bpe", "we'Re", W("we", "'Re"));
    check_split("llama-bpe", "abc,def", W("abc", ",def"));
    check_split("llama-bpe", "  foo", W(" ", " foo"));
    check_split("llama-bpe", "$100", W("$", "100"));
    check_split("llama-bpe", "hello\n\nworld", W("hello", "\n\n", "world"));
    check_split("llama-bpe", "ok.\n\n", W("ok", ".\n\n"));

    /* Qwen2: as Llama 3 but every digit alone */
    check_split("qwen2", "12345", W("1", "2", "3", "4", "5"));
    check_split("qwen2", "x 42", W("x", " ", "4", "2"));
    check_split("qwen2", "abc,def", W("abc", ",def"));
    check_split("qwen2", "don'T", W("don", "'T"));

    /* SmolLM: digits alone (never with a space), then GPT-2's pattern */
    check_split("smollm", "x 12", W("x", " ", "1", "2"));
    check_split("smollm", "I'm 7up", W("I", "'m", " ", "7", "up"));
    check_split("smollm", "abc,def", W("abc", ",", "def"));
}

/* ---- streaming on the tiny vocabulary (every byte its own token) ------------------- */

static void check_stream_text(const ember_tokenizer *t, const char *text, size_t len,
                              const char *want, size_t want_len)
{
    size_t cap = 4 * len + 8, n;
    uint32_t *ids = malloc(cap * sizeof *ids);
    n = vf_encode_flags(t, text, len, 0, ids, cap);
    int bad = 0;
    size_t got_len = 0;
    char *got = stream_ids(t, ids, n, &got_len, &bad);
    CHECKF(bad == 0, "%d chunks were not valid UTF-8", bad);
    CHECKF(got_len == want_len && memcmp(got, want, want_len) == 0,
           "streamed text differs (%zu bytes, want %zu)", got_len, want_len);
    free(got), free(ids);
}

static void test_tiny_streaming(void)
{
    ember_gguf *g = NULL;
    ember_tokenizer *t = tiny_tokenizer("gpt-2", -1, &g);
    CHECK(t != NULL);
    if (!t)
        return;
    static const char *const texts[] = {
        "the cat", "\xe4\xb8\x96\xe7\x95\x8c", "caf\xc3\xa9 \xf0\x9f\xa6\x99\xf0\x9f\x8e\x89",
        "\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa7 \xf0\x9f\x87\xab\xf0\x9f\x87\xb7",
    };
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++)
        check_stream_text(t, texts[i], strlen(texts[i]), texts[i], strlen(texts[i]));
    /* ill-formed input: one U+FFFD per maximal ill-formed subpart */
    check_stream_text(t, "a\xff" "b", 3, "a" FFFD "b", 5);
    check_stream_text(t, "\xe4\xb8" "a", 3, FFFD "a", 4);
    check_stream_text(t, "\xed\xa0\x80", 3, FFFD FFFD FFFD, 9);   /* a surrogate */
    check_stream_text(t, "\xc0\xaf", 2, FFFD FFFD, 6);            /* overlong '/' */
    check_stream_text(t, "\xf0\x9f\xa6", 3, FFFD, 3);             /* cut short: on flush */
    check_stream_text(t, "\x80\x80x", 3, FFFD FFFD "x", 7);

    /* a character completes only when its last byte arrives */
    ember_detok d = {0};
    char buf[64];
    CHECK(ember_detok_push(&d, t, 0xe4, buf, sizeof buf) == 0 && d.n_pending == 1);
    CHECK(ember_detok_push(&d, t, 0xb8, buf, sizeof buf) == 0 && d.n_pending == 2);
    CHECK(ember_detok_push(&d, t, T_IM_END, buf, sizeof buf) == 0 && d.n_pending == 2); /* control: "" */
    CHECK(ember_detok_push(&d, t, 0x96, buf, sizeof buf) == 3 && memcmp(buf, "\xe4\xb8\x96", 3) == 0);
    CHECK(d.n_pending == 0);
    /* a buffer too small: the length is returned and the state kept */
    CHECK(ember_detok_push(&d, t, 0xe4, buf, sizeof buf) == 0);
    CHECK(ember_detok_push(&d, t, 'x', buf, 2) == 4 && d.n_pending == 1);
    CHECK(ember_detok_push(&d, t, 'x', buf, 4) == 4 && memcmp(buf, FFFD "x", 4) == 0);
    CHECK(ember_detok_flush(&d, buf, sizeof buf) == 0);
    CHECK(ember_detok_push(&d, t, T_TOOL, buf, sizeof buf) == 6);
    CHECK(ember_detok_max(t) >= 3 * (13 + 3)); /* <|endoftext|> is the longest piece */
    vf_close(t, g);
}

/* ---- the GPT-2 vocabulary from encoder.json + vocab.bpe ---------------------------- */

/* Parses a JSON string at *p (after the opening quote) into out; returns its length,
 * or -1. Handles the escapes encoder.json uses, \uXXXX with surrogate pairs included. */
static long json_string(const char **p, char *out, size_t cap)
{
    const char *s = *p;
    size_t o = 0;
    while (*s && *s != '"' && o + 4 < cap) {
        if (*s != '\\') {
            out[o++] = *s++;
            continue;
        }
        s++;
        char c = *s++;
        if (c == 'u') {
            uint32_t cp = (uint32_t)strtoul((char[]){ s[0], s[1], s[2], s[3], 0 }, NULL, 16);
            s += 4;
            if (cp >= 0xd800 && cp < 0xdc00 && s[0] == '\\' && s[1] == 'u') {
                uint32_t lo = (uint32_t)strtoul((char[]){ s[2], s[3], s[4], s[5], 0 }, NULL, 16);
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                s += 6;
            }
            o += put_utf8(out + o, cp);
        } else {
            out[o++] = c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c == 'b' ? '\b'
                     : c == 'f' ? '\f' : c; /* \" \\ \/ */
        }
    }
    if (*s != '"')
        return -1;
    *p = s + 1;
    return (long)o;
}

/* encoder.json: {"piece": id, ...} -> v->tok[id]. */
static bool parse_encoder(const char *json, vf_vocab *v)
{
    enum { MAX_ID = 1 << 17 };
    v->tok = calloc(MAX_ID, sizeof *v->tok);
    const char *p = strchr(json, '{');
    char piece[1024];
    while (p && (p = strchr(p, '"')) != NULL) {
        p++;
        long len = json_string(&p, piece, sizeof piece);
        if (len < 0)
            return false;
        p = strchr(p, ':');
        if (!p)
            return false;
        unsigned long id = strtoul(p + 1, (char **)&p, 10);
        if (id >= MAX_ID || v->tok[id])
            return false;
        v->tok[id] = malloc((size_t)len + 1);
        memcpy(v->tok[id], piece, (size_t)len);
        v->tok[id][len] = 0;
        if (id + 1 > v->n)
            v->n = (uint32_t)id + 1;
    }
    v->type = malloc(v->n * sizeof *v->type);
    v->score = calloc(v->n, sizeof *v->score); /* unused by BPE, but vf_add extends it */
    for (uint32_t i = 0; i < v->n; i++) {
        if (!v->tok[i])
            return false;
        v->type[i] = strcmp(v->tok[i], "<|endoftext|>") == 0 ? 3 : 1;
    }
    return true;
}

/* vocab.bpe: a "#version" line, then one merge per line. */
static void parse_merges(char *text, vf_vocab *v)
{
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        size_t n = strlen(line);
        if (n && line[n - 1] == '\r')
            line[--n] = 0;
        if (n == 0 || strncmp(line, "#version", 8) == 0)
            continue;
        vf_merge(v, line);
    }
}

static bool load_gpt2(const char *shared, vf_vocab *v)
{
    memset(v, 0, sizeof *v);
    char path[1024];
    snprintf(path, sizeof path, "%s/testdata/tokenizer/gpt-2/encoder.json", shared);
    char *json = vf_read_file(path);
    snprintf(path, sizeof path, "%s/testdata/tokenizer/gpt-2/vocab.bpe", shared);
    char *bpe = vf_read_file(path);
    bool ok = json && bpe && parse_encoder(json, v);
    if (ok)
        parse_merges(bpe, v);
    free(json), free(bpe);
    CHECKF(ok && v->n == 50257 && v->n_merges == 50000, "GPT-2 vocabulary: %u tokens, %u merges",
           v->n, v->n_merges);
    return ok && v->n == 50257;
}

static ember_tokenizer *gpt2_tokenizer(const vf_vocab *v, const char *pre, ember_gguf **g)
{
    char name[64];
    snprintf(name, sizeof name, "tok_gpt2_%s", pre ? pre : "none");
    write_opts o = { NULL, pre, 0, false, 50256 };
    return load_vocab(v, name, &o, g);
}

/* Random text: code points from many scripts, emoji, digits, spaces and newlines. */
static size_t random_text(tu_rng *r, char *out, size_t max_chars)
{
    static const uint32_t ranges[][2] = {
        { 0x20, 0x7e }, { 0x20, 0x7e }, { 0x20, 0x20 }, { 0x0a, 0x0a }, { 0x30, 0x39 },
        { 0xa0, 0xff }, { 0x391, 0x3c9 }, { 0x410, 0x44f }, { 0x5d0, 0x5ea }, { 0x627, 0x64a },
        { 0x905, 0x939 }, { 0x3041, 0x3096 }, { 0x4e00, 0x9fff }, { 0xac00, 0xd7a3 },
        { 0x1f300, 0x1f64f }, { 0x1f900, 0x1f9ff }, { 0x200d, 0x200d }, { 0xfe0f, 0xfe0f },
    };
    size_t n_chars = tu_next(r) % max_chars, o = 0;
    for (size_t i = 0; i < n_chars; i++) {
        const uint32_t *rg = ranges[tu_next(r) % (sizeof ranges / sizeof *ranges)];
        o += put_utf8(out + o, rg[0] + (uint32_t)(tu_next(r) % (rg[1] - rg[0] + 1)));
    }
    return o;
}

/* Byte-level BPE loses nothing: any bytes come back exactly (decoding id by id), and
 * valid text also streams back exactly with every chunk valid UTF-8. */
static void check_round_trips(const ember_tokenizer *t, uint64_t seed, bool space_prefix)
{
    tu_rng rng = { seed };
    char text[512], want[520];
    uint32_t ids[1024];
    int bad_bytes = 0, bad_stream = 0, bad_chunks = 0;
    for (int iter = 0; iter < 400; iter++) {
        size_t len;
        if (iter % 4 == 3) { /* arbitrary bytes, ill-formed UTF-8 included */
            len = tu_next(&rng) % 64;
            for (size_t i = 0; i < len; i++)
                text[i] = (char)tu_next(&rng);
        } else {
            len = random_text(&rng, text, 100);
        }
        size_t n = vf_encode_flags(t, text, len, 0, ids, 1024), wl = 0;
        if (space_prefix && len)
            want[wl++] = ' ';
        memcpy(want + wl, text, len);
        wl += len;
        size_t back_len;
        char *back = vf_decode(t, ids, n, &back_len);
        bad_bytes += back_len != wl || memcmp(back, want, wl) != 0;
        free(back);
        if (iter % 4 == 3)
            continue;
        char *streamed = stream_ids(t, ids, n, &back_len, &bad_chunks);
        bad_stream += back_len != wl || memcmp(streamed, want, wl) != 0;
        free(streamed);
    }
    CHECKF(bad_bytes == 0, "%d texts did not decode to their bytes", bad_bytes);
    CHECKF(bad_stream == 0, "%d texts did not stream back exactly", bad_stream);
    CHECKF(bad_chunks == 0, "%d streamed chunks were not valid UTF-8", bad_chunks);
}

static const char MULTILINGUAL[] =
    "Hello, \xe4\xb8\x96\xe7\x95\x8c! \xe3\x81\x93\xe3\x82\x93\xe3\x81\xab\xe3\x81\xa1\xe3\x81\xaf "
    "\xf0\x9f\xa6\x99\xf0\x9f\x8e\x89 caf\xc3\xa9 na\xc3\xafve r\xc3\xa9sum\xc3\xa9 "
    "\xce\x95\xce\xbb\xce\xbb\xce\xb7\xce\xbd\xce\xb9\xce\xba\xce\xac "
    "\xd1\x80\xd1\x83\xd1\x81\xd1\x81\xd0\xba\xd0\xb8\xd0\xb9 "
    "\xed\x95\x9c\xea\xb5\xad\xec\x96\xb4 \xe0\xa4\xb9\xe0\xa4\xbf\xe0\xa4\xa8\xe0\xa5\x8d\xe0\xa4\xa6\xe0\xa5\x80 "
    "\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa7 \xf0\x9f\x87\xab\xf0\x9f\x87\xb7 "
    "\xe2\x9c\x85 \xc2\xbd 3.14159\n\tEnd.";

static void check_multilingual(const ember_tokenizer *t, bool space_prefix)
{
    uint32_t ids[1024];
    size_t n = vf_encode(t, MULTILINGUAL, ids, 1024);
    int bad = 0;
    size_t len;
    char *s = stream_ids(t, ids, n, &len, &bad);
    size_t off = space_prefix ? 1 : 0;
    CHECK(bad == 0);
    CHECKF(len == strlen(MULTILINGUAL) + off && memcmp(s + off, MULTILINGUAL, len - off) == 0,
           "multilingual text streamed back as '%s'", s);
    /* some tokens must end mid-character, or the test proves nothing */
    size_t partial = 0;
    for (size_t i = 0; i < n; i++) {
        char piece[256];
        size_t k = ember_tokenizer_decode(t, ids[i], piece, sizeof piece);
        partial += !valid_utf8(piece, k < sizeof piece ? k : sizeof piece);
    }
    CHECKF(partial > 0, "no token split a character");
    free(s);
}

/* Special tokens in the full GPT-2 vocabulary plus chat tokens appended to it. */
static void test_gpt2_special(vf_vocab *v)
{
    uint32_t base = v->n;
    vf_add(v, "<|im_start|>", 3), vf_add(v, "<|im_end|>", 3), vf_add(v, "<tool_call>", 4);
    ember_gguf *g = NULL;
    ember_tokenizer *t = gpt2_tokenizer(v, "gpt-2", &g);
    CHECK(t != NULL);
    if (t) {
        const char *chat = "<|im_start|>user\nHi there<|im_end|>\n<|endoftext|>";
        uint32_t ids[128], body[64];
        size_t n = vf_encode_flags(t, chat, strlen(chat), EMBER_TOKENIZE_PARSE_SPECIAL, ids, 128);
        size_t nb = vf_encode(t, "user\nHi there", body, 64);
        CHECK(n == nb + 4 && ids[0] == base && ids[nb + 1] == base + 1 && ids[nb + 2] == 198 &&
              ids[nb + 3] == 50256 && vf_ids_equal(ids + 1, nb, body, nb));
        n = vf_encode(t, chat, ids, 128); /* plain: all text, round trip */
        for (size_t i = 0; i < n; i++)
            CHECK(ids[i] < 50256);
        size_t len;
        char *back = vf_decode(t, ids, n, &len);
        CHECK(len == strlen(chat) && memcmp(back, chat, len) == 0);
        free(back);
        n = vf_encode(t, "a<tool_call>b", ids, 128); /* user-defined: always whole */
        CHECK(vf_ids_equal(ids, n, (uint32_t[]){ 64, base + 2, 65 }, 3));
        CHECK(ember_tokenizer_is_eog(t, 50256) && ember_tokenizer_is_eog(t, base + 1));
        CHECK(!ember_tokenizer_is_eog(t, base) && !ember_tokenizer_is_eog(t, 198));
        vf_close(t, g);
    }
    for (int i = 0; i < 3; i++)
        free(v->tok[--v->n]);
}

/* Long runs stay linear (no backtracking blows up on them). */
static void test_long_inputs(const ember_tokenizer *t)
{
    size_t len = 200000;
    char *s = malloc(len);
    uint32_t *ids = malloc(len * sizeof *ids);
    static const char fill[] = { ' ', 'a', '\n', '7' };
    for (int k = 0; k < 4; k++) {
        memset(s, fill[k], len);
        size_t n = vf_encode_flags(t, s, len, 0, ids, len), back_len;
        char *back = vf_decode(t, ids, n, &back_len);
        CHECKF(n > 0 && back_len == len && memcmp(back, s, len) == 0, "a run of %zu '%c'", len, fill[k]);
        free(back);
    }
    free(s), free(ids);
}

/* The same vocabulary under the other pre-tokenizers: splits reach the encoder. */
static void test_gpt2_pres(const vf_vocab *v)
{
    ember_gguf *g0 = NULL, *g = NULL;
    ember_tokenizer *gpt2 = gpt2_tokenizer(v, "gpt-2", &g0);
    uint32_t a[64], b[64], c[64];
    static const char *const pres[] = { "llama-bpe", "qwen2", "smollm", NULL };
    for (int k = 0; gpt2 && pres[k]; k++) {
        ember_tokenizer *t = gpt2_tokenizer(v, pres[k], &g);
        CHECK(t != NULL);
        if (!t)
            continue;
        size_t n = vf_encode(t, "12345", a, 64), m = 0;
        if (k == 0) { /* 123 | 45 */
            m = vf_encode(gpt2, "123", b, 64);
            m += vf_encode(gpt2, "45", b + m, 64 - m);
        } else {      /* 1 | 2 | 3 | 4 | 5 */
            for (const char *d = "12345"; *d; d++)
                m += vf_encode(gpt2, (char[]){ *d, 0 }, b + m, 64 - m);
        }
        CHECKF(vf_ids_equal(a, n, b, m), "%s: 12345", pres[k]);
        n = vf_encode(t, "Hello world", a, 64);
        m = vf_encode(gpt2, "Hello world", c, 64);
        CHECKF(vf_ids_equal(a, n, c, m), "%s: Hello world", pres[k]);
        check_round_trips(t, 10 + (uint64_t)k, false);
        test_long_inputs(t);
        vf_close(t, g);
    }
    if (gpt2)
        vf_close(gpt2, g0);
}

static void test_gpt2(const char *shared)
{
    vf_vocab v;
    if (!load_gpt2(shared, &v)) {
        vf_vocab_free(&v);
        return;
    }
    ember_gguf *g = NULL;
    ember_tokenizer *t = gpt2_tokenizer(&v, "gpt-2", &g);
    CHECK(t != NULL);
    if (t) {
        CHECK(ember_tokenizer_n_vocab(t) == 50257 && ember_tokenizer_eos(t) == 50256);
        CHECK(!ember_tokenizer_add_bos(t) && ember_tokenizer_is_control(t, 50256));
        vf_check_vectors(t, shared, "gpt-2", 40);
        check_round_trips(t, 1, false);
        check_multilingual(t, false);
        test_long_inputs(t);
        vf_close(t, g);
    }
    t = gpt2_tokenizer(&v, NULL, &g); /* no tokenizer.ggml.pre: the same as gpt-2 */
    CHECK(t != NULL);
    if (t) {
        vf_check_vectors(t, shared, "gpt-2", 40);
        vf_close(t, g);
    }
    test_gpt2_special(&v);
    test_gpt2_pres(&v);
    vf_vocab_free(&v);
}

/* ---- SentencePiece (Llama 2): streaming and special tokens ------------------------- */

static void test_spm(const char *shared)
{
    ember_gguf *g = NULL;
    ember_tokenizer *t = vf_open_shared(shared, VF_LLAMA_SPM_VOCAB, &g);
    CHECK(t != NULL);
    if (!t)
        return;
    CHECK(strcmp(ember_tokenizer_model(t), "llama") == 0 && ember_tokenizer_pre(t)[0] == 0);
    check_multilingual(t, true);
    check_round_trips(t, 3, true);

    /* <s> is text unless parse_special; after a special token the dummy space returns */
    uint32_t ids[64], plain[64];
    size_t n = vf_encode_flags(t, "<s>Hello", 8, EMBER_TOKENIZE_PARSE_SPECIAL, ids, 64);
    size_t m = vf_encode(t, "Hello", plain, 64);
    CHECK(n == m + 1 && ids[0] == 1 && vf_ids_equal(ids + 1, n - 1, plain, m));
    n = vf_encode(t, "<s>Hello", ids, 64);
    for (size_t i = 0; i < n; i++)
        CHECK(ids[i] != 1);
    CHECK(ember_tokenizer_is_eog(t, 2) && !ember_tokenizer_is_eog(t, 1));
    vf_close(t, g);
}

int main(void)
{
    test_tiny_rules();
    test_harmony();
    test_refusals();
    test_pretokenizers();
    test_tiny_streaming();
    const char *shared = tu_shared_dir();
    if (!shared) return tu_finish_without_shared("test_tokenizer_bpe", "GPT-2 vectors and Llama 2 streaming not checked");
    test_gpt2(shared);
    test_spm(shared);
    return tu_finish("test_tokenizer_bpe");
}
