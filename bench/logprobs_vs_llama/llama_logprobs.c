/* llama_logprobs.c — `llama_logprobs LIBDIR MODEL.gguf TOKENS OUT [THREADS] [ONE]`:
 * llama.cpp's per-token -log p of a token sequence, for bench/logprobs-vs-llama.sh to
 * compare with Ember's. Built there against a prebuilt libllama of npm node-llama-cpp
 * (the CPU build or the Vulkan one; LIBDIR, where its backends are loaded from) and its
 * own llama.h. TOKENS holds the ids (whitespace-separated, BOS first); OUT gets one line
 * per predicted token i = 1..n-1: -log softmax(logits of row i-1)[t[i]], in double from
 * llama_get_logits_ith's floats (as Ember's ember_score does), %.17g.
 *
 * Every layer on the GPU device when the build has one (n_gpu_layers -1); the KV cache
 * F32 (llama.cpp's default is F16; Ember's cache is F32) and no flash attention, so that
 * only the weights' types differ from an F32 model. The sequence goes in one batch (all
 * rows' logits) unless ONE is given ("one"): then one llama_decode per token, the
 * mat-vec kernels instead of the mat-mat ones. The Vulkan backend's own switches
 * (GGML_VK_DISABLE_INTEGER_DOT_PRODUCT, GGML_VK_DISABLE_F16, GGML_VK_VISIBLE_DEVICES)
 * come from the environment. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../llama_util.h"

static int quiet_level = GGML_LOG_LEVEL_WARN;

static void log_cb(enum ggml_log_level level, const char *text, void *user)
{
    (void)user;
    if ((level >= quiet_level && level != GGML_LOG_LEVEL_CONT) || strncmp(text, "load_backend:", 13) == 0)
        fputs(text, stderr); /* and which backends (which CPU variant) were loaded */
}

/* -log softmax(row)[target], stably in double (engine/score.c's nll_of). */
static double nll_of(const float *row, int n_vocab, int target)
{
    double max = row[0], sum = 0;
    for (int j = 1; j < n_vocab; j++)
        if (row[j] > max) max = row[j];
    for (int j = 0; j < n_vocab; j++) sum += exp((double)row[j] - max);
    return log(sum) - ((double)row[target] - max);
}

int main(int argc, char **argv)
{
    if (argc < 5 || argc > 7) {
        fprintf(stderr, "usage: llama_logprobs LIBDIR MODEL.gguf TOKENS OUT [THREADS] [one]\n");
        return 2;
    }
    int threads = argc > 5 ? atoi(argv[5]) : 1;
    int one = argc > 6 && strcmp(argv[6], "one") == 0;
    if (getenv("LLAMA_LOGPROBS_VERBOSE")) quiet_level = GGML_LOG_LEVEL_DEBUG;
    llama_token *t;
    int n = read_tokens(argv[3], 2, &t);
    if (n < 0) return 1;
    struct llama_model *model = load_model(argv[1], argv[2], log_cb);
    if (!model) return 1;
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    int n_vocab = llama_vocab_n_tokens(vocab);
    if (t[0] != llama_vocab_bos(vocab)) {
        fprintf(stderr, "%s: the first token is %d, BOS is %d\n", argv[3], t[0], llama_vocab_bos(vocab));
        return 1;
    }
    if (check_tokens(model, t, n) != 0) return 1;

    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)n;
    cp.n_batch = cp.n_ubatch = (uint32_t)n;
    cp.n_seq_max = 1;
    cp.n_threads = cp.n_threads_batch = threads;
    cp.type_k = cp.type_v = GGML_TYPE_F32;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.no_perf = true;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        fprintf(stderr, "llama_init_from_model failed\n");
        return 1;
    }
    FILE *out = fopen(argv[4], "w");
    if (!out) {
        perror(argv[4]);
        return 1;
    }
    int per = one ? 1 : n - 1; /* rows 0..n-2 predict tokens 1..n-1 */
    struct llama_batch b = llama_batch_init(per, 0, 1);
    for (int p = 0; p < n - 1; p += per) {
        b.n_tokens = 0;
        for (int i = p; i < p + per && i < n - 1; i++) {
            int k = b.n_tokens++;
            b.token[k] = t[i];
            b.pos[k] = i;
            b.n_seq_id[k] = 1;
            b.seq_id[k][0] = 0;
            b.logits[k] = 1;
        }
        if (llama_decode(ctx, b) != 0) {
            fprintf(stderr, "llama_decode failed at %d\n", p);
            return 1;
        }
        for (int k = 0; k < b.n_tokens; k++) {
            const float *row = llama_get_logits_ith(ctx, k);
            if (!row) {
                fprintf(stderr, "no logits for row %d\n", p + k);
                return 1;
            }
            fprintf(out, "%.17g\n", nll_of(row, n_vocab, t[p + k + 1]));
        }
    }
    fclose(out);
    char desc[256] = "";
    llama_model_desc(model, desc, sizeof desc);
    int gpus = 0;
    for (size_t i = 0; i < ggml_backend_dev_count(); i++) {
        ggml_backend_dev_t d = ggml_backend_dev_get(i);
        if (ggml_backend_dev_type(d) != GGML_BACKEND_DEVICE_TYPE_CPU) {
            fprintf(stderr, "device %s (%s)\n", ggml_backend_dev_name(d), ggml_backend_dev_description(d));
            gpus++;
        }
    }
    fprintf(stderr, "%s: %s, %d tokens, %s, %d GPU device(s)\n", argv[2], desc, n - 1, one ? "one at a time" : "one batch",
            gpus);
    return finish(b, ctx, model, t);
}
