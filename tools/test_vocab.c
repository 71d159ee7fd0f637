/* test_vocab.c — the vocabulary of `ember make-test-model` (test_vocab.h): pieces
 * scored by rank, so that shorter pieces merge first as in a trained BPE, and every
 * merged piece reachable by one SentencePiece merge of two shorter ones. */
#include "test_vocab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPACE_MARK "\xe2\x96\x81" /* U+2581 */

enum { TYPE_NORMAL = 1, TYPE_UNKNOWN = 2, TYPE_CONTROL = 3, TYPE_BYTE = 6 };

/* Common words of simple English stories; each gets "▁word" and the "▁" prefixes that
 * lead to it, so that real text tokenizes into word-sized pieces. */
static const char *const words[] = {
    "the", "and", "a", "to", "was", "he", "she", "it", "they", "of", "in", "said", "his",
    "her", "with", "you", "that", "on", "for", "is", "I", "The", "She", "He", "They", "It",
    "Once", "One", "upon", "time", "there", "little", "girl", "boy", "named", "Lily", "Tom",
    "Ben", "mom", "dad", "friend", "friends", "happy", "sad", "saw", "went", "had", "not",
    "but", "so", "very", "wanted", "want", "go", "play", "played", "park", "ball", "tree",
    "dog", "cat", "bird", "fun", "together", "help", "helped", "looked", "found", "made",
    "make", "were", "their", "then", "when", "what", "would", "could", "can", "all", "at",
    "be", "have", "do", "did", "know", "like", "liked", "loved", "love", "home", "house",
    "big", "red", "blue", "green", "sun", "sky", "water", "food", "toy", "toys", "good",
    "new", "every", "day", "how", "too", "out", "up", "down", "from", "this", "are", "we",
    "me", "my", "your", "our", "one", "two", "three", "run", "ran", "jump", "smiled",
    "laughed", "thank", "share", "sorry", "about", "after", "again", "because", "come",
    "came", "get", "got", "just", "look", "many", "more", "now", "only", "other", "over",
    "some", "than", "them", "think", "through", "under", "way", "where", "who", "will",
    "man", "world", "hello", "quick", "brown", "fox", "jumps", "lazy", "times", "an", "as",
    "if", "or", "by", "no", "yes", "night", "story",
};

uint64_t test_hash_str(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    while (*s)
        h = (h ^ (uint8_t)*s++) * 0x100000001b3ull;
    return h;
}

static uint32_t *set_slot(test_vocab *v, const char *s)
{
    for (uint64_t i = test_hash_str(s) & v->mask;; i = (i + 1) & v->mask) {
        uint32_t e = v->set[i];
        if (e == 0 || strcmp(v->piece[e - 1], s) == 0)
            return &v->set[i];
    }
}

static bool vocab_has(test_vocab *v, const char *s) { return *set_slot(v, s) != 0; }
static bool vocab_full(const test_vocab *v) { return v->n == v->cap; }

/* Appends s unless present or the vocabulary is full. Normal pieces are scored by
 * rank (earlier = higher), so shorter pieces merge first, as in a trained BPE. */
static void vocab_add(test_vocab *v, const char *s, int32_t type)
{
    if (vocab_full(v) || strlen(s) >= TEST_VOCAB_PIECE_MAX)
        return;
    uint32_t *slot = set_slot(v, s);
    if (*slot)
        return;
    strcpy(v->piece[v->n], s);
    v->type[v->n] = type;
    v->score[v->n] = type == TYPE_NORMAL ? -(float)v->n : 0.0f;
    *slot = ++v->n;
}

/* Adds left+right only when both halves are pieces: every merged piece stays reachable
 * by one SentencePiece merge of two shorter pieces. */
static void add_merged(test_vocab *v, const char *left, const char *right)
{
    char s[2 * TEST_VOCAB_PIECE_MAX];
    if (!vocab_has(v, left) || !vocab_has(v, right))
        return;
    snprintf(s, sizeof s, "%s%s", left, right);
    vocab_add(v, s, TYPE_NORMAL);
}

static void add_specials_and_bytes(test_vocab *v)
{
    vocab_add(v, "<unk>", TYPE_UNKNOWN);
    vocab_add(v, "<s>", TYPE_CONTROL);
    vocab_add(v, "</s>", TYPE_CONTROL);
    for (int b = 0; b < 256; b++) {
        char s[8];
        snprintf(s, sizeof s, "<0x%02X>", b);
        vocab_add(v, s, TYPE_BYTE);
    }
}

/* The space mark, then printable ASCII in rough English frequency order. */
static void add_chars(test_vocab *v)
{
    static const char order[] = "etaoinshrdlcumwfgypbvkjxqzETAOINSHRDLCUMWFGYPBVKJXQZ.,'\"!?-";
    vocab_add(v, SPACE_MARK, TYPE_NORMAL);
    char s[2] = {0, 0};
    for (const char *c = order; *c; c++)
        s[0] = *c, vocab_add(v, s, TYPE_NORMAL);
    for (int c = 0x21; c < 0x7f; c++)
        s[0] = (char)c, vocab_add(v, s, TYPE_NORMAL);
}

/* "▁" + the first k characters of each word, shortest pieces first. */
static void add_words(test_vocab *v)
{
    size_t n_words = sizeof words / sizeof *words;
    for (size_t k = 1; k < TEST_VOCAB_PIECE_MAX - 4; k++) {
        for (size_t i = 0; i < n_words; i++) {
            size_t len = strlen(words[i]);
            if (len < k)
                continue;
            char left[TEST_VOCAB_PIECE_MAX], right[2] = { words[i][k - 1], 0 };
            snprintf(left, sizeof left, SPACE_MARK "%.*s", (int)(k - 1), words[i]);
            add_merged(v, left, right);
        }
    }
}

/* Fills the rest with every lowercase string of length 1, 2, 3, ... as "▁s" and (from
 * length 2) "s", each the merge of its prefix and its last letter. */
static void add_letter_strings(test_vocab *v)
{
    for (int len = 1; len <= 8 && !vocab_full(v); len++) {
        char s[16] = {0};
        memset(s, 'a', (size_t)len);
        for (;;) {
            char prefix[TEST_VOCAB_PIECE_MAX], last[2] = { s[len - 1], 0 };
            snprintf(prefix, sizeof prefix, SPACE_MARK "%.*s", len - 1, s);
            add_merged(v, prefix, last);
            if (len >= 2) {
                snprintf(prefix, sizeof prefix, "%.*s", len - 1, s);
                add_merged(v, prefix, last);
            }
            if (vocab_full(v))
                return;
            int i = len - 1; /* next string, like an odometer */
            while (i >= 0 && s[i] == 'z')
                s[i--] = 'a';
            if (i < 0)
                break;
            s[i]++;
        }
    }
}

void test_vocab_free(test_vocab *v)
{
    free(v->piece), free(v->score), free(v->type), free(v->set);
}

bool test_vocab_build(test_vocab *v, uint32_t size)
{
    memset(v, 0, sizeof *v);
    uint64_t slots = 16;
    while (slots < 2ull * size)
        slots *= 2;
    v->cap = size;
    v->mask = slots - 1;
    v->piece = calloc(size, sizeof *v->piece);
    v->score = calloc(size, sizeof *v->score);
    v->type = calloc(size, sizeof *v->type);
    v->set = calloc(slots, sizeof *v->set);
    if (!v->piece || !v->score || !v->type || !v->set) {
        test_vocab_free(v);
        return false;
    }
    add_specials_and_bytes(v);
    add_chars(v);
    add_words(v);
    add_letter_strings(v);
    return vocab_full(v);
}

ember_status test_vocab_write(ember_gguf_writer *w, const test_vocab *v)
{
    const char **ptrs = malloc(v->n * sizeof *ptrs);
    if (!ptrs)
        return EMBER_ERR_OUT_OF_MEMORY;
    for (uint32_t i = 0; i < v->n; i++)
        ptrs[i] = v->piece[i];
    ember_status st;
    (void)((st = ember_gguf_add_str(w, "tokenizer.ggml.model", "llama")) ||
           (st = ember_gguf_add_arr_str(w, "tokenizer.ggml.tokens", ptrs, v->n)) ||
           (st = ember_gguf_add_arr_f32(w, "tokenizer.ggml.scores", v->score, v->n)) ||
           (st = ember_gguf_add_arr_i32(w, "tokenizer.ggml.token_type", v->type, v->n)) ||
           (st = ember_gguf_add_u32(w, "tokenizer.ggml.bos_token_id", 1)) ||
           (st = ember_gguf_add_u32(w, "tokenizer.ggml.eos_token_id", 2)) ||
           (st = ember_gguf_add_u32(w, "tokenizer.ggml.unknown_token_id", 0)) ||
           (st = ember_gguf_add_bool(w, "tokenizer.ggml.add_bos_token", true)) ||
           (st = ember_gguf_add_bool(w, "tokenizer.ggml.add_eos_token", false)));
    free(ptrs);
    return st;
}

