/* llama_speed.c — `llama_speed LIBDIR MODEL.gguf TOKENS N_GEN THREADS [cold]`: llama.cpp's
 * prefill and decode speed on one prompt, for bench/speed-vs-llama.sh to put beside
 * Ember's (`ember generate --json`). Built there against a prebuilt libllama of npm
 * node-llama-cpp (the CPU build or the Vulkan one; LIBDIR, where its backends are loaded
 * from) and its own llama.h.
 *
 * TOKENS holds the prompt's ids (whitespace-separated, BOS first: what `ember tokenize`
 * gives for the text Ember is run on). The prompt goes in one llama_decode (n_batch and
 * n_ubatch >= its length); then N_GEN tokens are taken one at a time, greedy (argmax of
 * the last row's logits, on the host), end of generation ignored: the first from the
 * prompt's logits, each next one after one llama_decode of the one before. Timed with
 * CLOCK_MONOTONIC, as Ember counts:
 *   prefill_tok_s = prompt tokens / (the prompt's llama_decode + its argmax)
 *   decode_tok_s  = (N_GEN - 1) / (the N_GEN - 1 one-token llama_decodes + their argmaxes)
 * Model loading and context creation are not timed. Unless "cold" is given, one untimed
 * warm-up first (the prompt, then one token; the cache cleared after), as llama-bench
 * does, so that the timed runs do not pay for first-use costs (buffers, the Vulkan
 * backend's pipelines).
 *
 * Every layer on the GPU device when the build has one (n_gpu_layers -1). Otherwise
 * llama.cpp's defaults: flash attention "auto" (resolved by llama.cpp per device: the
 * line it logs is passed on), KV cache F16, weights memory-mapped, CPU weight repacking.
 * THREADS is n_threads and n_threads_batch. Prints one JSON object on stdout; the device
 * llama.cpp ran on and the flash-attention decision go to stderr. The Vulkan backend's own
 * switches (GGML_VK_VISIBLE_DEVICES, ...) come from the environment. */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../llama_util.h"

static void log_cb(enum ggml_log_level level, const char *text, void *user)
{
    (void)user;
    if ((level >= GGML_LOG_LEVEL_WARN && level != GGML_LOG_LEVEL_CONT) || strstr(text, "Flash Attention") ||
        strncmp(text, "load_backend:", 13) == 0)
        fputs(text, stderr);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int argmax_last(struct llama_context *ctx, int n_vocab)
{
    const float *row = llama_get_logits_ith(ctx, -1);
    if (!row) return -1;
    int best = 0;
    for (int j = 1; j < n_vocab; j++)
        if (row[j] > row[best]) best = j;
    return best;
}

/* The prompt t[0..n) at positions 0.., logits of the last row only. */
static int decode_prompt(struct llama_context *ctx, struct llama_batch *b, const llama_token *t, int n)
{
    b->n_tokens = n;
    for (int i = 0; i < n; i++) {
        b->token[i] = t[i];
        b->pos[i] = i;
        b->n_seq_id[i] = 1;
        b->seq_id[i][0] = 0;
        b->logits[i] = i == n - 1;
    }
    return llama_decode(ctx, *b);
}

static int decode_one(struct llama_context *ctx, struct llama_batch *b, llama_token tok, int pos)
{
    b->n_tokens = 1;
    b->token[0] = tok;
    b->pos[0] = pos;
    b->n_seq_id[0] = 1;
    b->seq_id[0][0] = 0;
    b->logits[0] = 1;
    return llama_decode(ctx, *b);
}

int main(int argc, char **argv)
{
    if (argc < 6 || argc > 7 || (argc == 7 && strcmp(argv[6], "cold") != 0)) {
        fprintf(stderr, "usage: llama_speed LIBDIR MODEL.gguf TOKENS N_GEN THREADS [cold]\n");
        return 2;
    }
    int n_gen = atoi(argv[4]), threads = atoi(argv[5]), warm = argc < 7;
    if (n_gen < 2 || threads < 1) {
        fprintf(stderr, "llama_speed: N_GEN >= 2 and THREADS >= 1\n");
        return 2;
    }
    llama_token *t;
    int n = read_tokens(argv[3], 1, &t);
    if (n < 0) return 1;
    struct llama_model *model = load_model(argv[1], argv[2], log_cb);
    if (!model || check_tokens(model, t, n) != 0) return 1;
    int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));

    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)(n + n_gen + 256) / 256 * 256;
    cp.n_batch = cp.n_ubatch = (uint32_t)(n > 512 ? n : 512);
    cp.n_seq_max = 1;
    cp.n_threads = cp.n_threads_batch = threads;
    cp.no_perf = true;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        fprintf(stderr, "llama_init_from_model failed\n");
        return 1;
    }
    struct llama_batch b = llama_batch_init(n, 0, 1);

    if (warm) {
        int tok;
        if (decode_prompt(ctx, &b, t, n) != 0 || (tok = argmax_last(ctx, n_vocab)) < 0 ||
            decode_one(ctx, &b, tok, n) != 0 || argmax_last(ctx, n_vocab) < 0) {
            fprintf(stderr, "llama_decode failed (warm-up)\n");
            return 1;
        }
        llama_memory_clear(llama_get_memory(ctx), true);
    }

    double t0 = now_ms();
    int tok = -1;
    if (decode_prompt(ctx, &b, t, n) != 0 || (tok = argmax_last(ctx, n_vocab)) < 0) {
        fprintf(stderr, "llama_decode failed (prompt)\n");
        return 1;
    }
    double t1 = now_ms();
    int first = tok, last = tok;
    for (int i = 1; i < n_gen; i++) {
        if (decode_one(ctx, &b, tok, n + i - 1) != 0 || (tok = argmax_last(ctx, n_vocab)) < 0) {
            fprintf(stderr, "llama_decode failed (token %d)\n", i);
            return 1;
        }
        last = tok;
    }
    double t2 = now_ms();

    for (size_t i = 0; i < ggml_backend_dev_count(); i++) {
        ggml_backend_dev_t d = ggml_backend_dev_get(i);
        if (ggml_backend_dev_type(d) != GGML_BACKEND_DEVICE_TYPE_CPU)
            fprintf(stderr, "device %s (%s)\n", ggml_backend_dev_name(d), ggml_backend_dev_description(d));
    }
    printf("{\"n_prompt\": %d, \"n_gen\": %d, \"threads\": %d, \"warm_up\": %s, \"prefill_ms\": %.3f, "
           "\"decode_ms\": %.3f, \"prefill_tok_s\": %.3f, \"decode_tok_s\": %.3f, \"first_token\": %d, "
           "\"last_token\": %d}\n",
           n, n_gen, threads, warm ? "true" : "false", t1 - t0, t2 - t1, n * 1e3 / (t1 - t0),
           (n_gen - 1) * 1e3 / (t2 - t1), first, last);
    return finish(b, ctx, model, t);
}
