/* test_cli_serving.c — `ember batch` and `ember bench` end to end:
 *  - batch serves every line at once and returns results in input order, each equal to
 *    the same prompt generated alone (greedy), also with n-gram speculation;
 *  - bench completes its workload in every mode (continuous, static and static-ragged
 *    batching, paged/contiguous KV, speculation) and prints the fields docs/architecture.md names;
 *    padded prompts add padding rows; an unknown batching mode is refused. */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static const char *lines[] = {"the cat sat on the mat", "once upon a time there was a dog",
                              "hello world", "a b c d e f g h i j k l m n o p", "x"};
#define N_LINES 5

static char model[512];

static void test_batch(const char *extra)
{
    char path[512], cmd[2048];
    static char out[65536], one[8192];
    snprintf(path, sizeof path, "%s/cli_prompts.txt", tu_tmp_dir());
    FILE *f = fopen(path, "w");
    for (int i = 0; f && i < N_LINES; i++) fprintf(f, "%s\n", lines[i]);
    if (f) fclose(f);
    snprintf(cmd, sizeof cmd, "%s batch -m %s -f %s -n 12 --ignore-eos --json %s", tu_ember_bin(), model, path, extra);
    CHECK(tu_run(cmd, out, sizeof out) == 0);
    const char *p = out;
    int same = 0;
    for (int i = 0; i < N_LINES; i++) {
        snprintf(cmd, sizeof cmd, "%s generate -m %s -p '%s' -n 12 --ignore-eos --json", tu_ember_bin(), model,
                 lines[i]);
        CHECK(tu_run(cmd, one, sizeof one) == 0);
        uint32_t a[16], b[16];
        size_t na = tu_json_tokens(p, a, 16), nb = tu_json_tokens(one, b, 16);
        same += na == 12 && nb == 12 && memcmp(a, b, 12 * sizeof a[0]) == 0;
        const char *next = strstr(p, "\"tokens\": [");
        p = next ? next + 1 : p; /* on to the next result */
    }
    printf("batch %s: %d of %d results equal generating alone, in input order\n", extra, same, N_LINES);
    CHECK(same == N_LINES);
    CHECK(tu_json_num(out, "throughput_tok_s") > 0 && tu_json_num(out, "requests") == N_LINES);
    const char *total = strstr(out, "\"throughput_tok_s\""); /* the totals follow the results */
    if (strstr(extra, "ngram")) CHECK(total && tu_json_num(total, "drafted") > 0 && strstr(total, "acceptance_rate"));
}

typedef struct rows {
    double computed, padding;  /* tokens_computed, padding_tokens */
} rows;

/* Runs the bench workload with extra flags; returns the rows it computed. */
static rows test_bench(const char *extra)
{
    char cmd[2048];
    static char out[8192];
    snprintf(cmd, sizeof cmd,
             "%s bench -m %s --requests 8 --rate inf --prompt-len 8:40 --gen-len 4:12 --max-seqs 4 --seed 3 --json %s",
             tu_ember_bin(), model, extra);
    CHECK(tu_run(cmd, out, sizeof out) == 0);
    const char *keys[] = {"\"requests\": 8", "\"completed\": 8", "\"output_tokens\"", "\"duration_s\"",
                          "\"throughput_tok_s\"", "\"ttft_ms\": {\"p50\"", "\"tpot_ms\": {\"p50\"",
                          "\"itl_ms\": {\"p50\"", "\"goodput_req_s\"", "\"slo\": {\"ttft_ms\"", "\"kv\": {\"block_size\"",
                          "\"blocks_total\"", "\"peak_blocks_used\"", "\"waste_pct\"", "\"prefix_hit_tokens\"",
                          "\"preemptions\"", "\"steps\"", "\"tokens_computed\"", "\"padding_tokens\"",
                          "\"cow_copies\""};
    int found = 0;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) found += strstr(out, keys[i]) != NULL;
    printf("bench %s: %d of %zu fields, throughput %.1f tok/s, waste %.1f%%\n", extra, found,
           sizeof keys / sizeof keys[0], tu_json_num(out, "throughput_tok_s"), tu_json_num(out, "waste_pct"));
    CHECKF(found == (int)(sizeof keys / sizeof keys[0]), "%s", out);
    if (strstr(extra, "ngram")) CHECK(strstr(out, "\"speculation\": {\"drafted\"") != NULL);
    /* Only the fixed-shape static batch computes padding rows (outputs 4-12 tokens). */
    if (strstr(extra, "static")) CHECK(tu_json_num(out, "padding_tokens") > 0);
    else CHECK(tu_json_num(out, "padding_tokens") == 0);
    const char *mode = strstr(extra, "static-ragged") ? "static-ragged" : strstr(extra, "static") ? "static" : "continuous";
    char field[64];
    snprintf(field, sizeof field, "\"batching\": \"%s\"", mode);
    CHECKF(strstr(out, field) != NULL, "no %s in %s", field, out);
    return (rows){tu_json_num(out, "tokens_computed"), tu_json_num(out, "padding_tokens")};
}

int main(void)
{
    char cmd[1024];
    snprintf(model, sizeof model, "%s/cli_serving.gguf", tu_tmp_dir());
    tu_make_model(model, "--dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 128 --vocab 512 --ctx 256 --type q8_0 "
                         "--seed 8");
    test_batch("");
    test_batch("--ngram 2 --draft-k 3");
    rows cont = test_bench("");
    /* padded prompts (prompts of 8-40 tokens) add to the finished members' padding */
    rows padded = test_bench("--batching static"), ragged = test_bench("--batching static-ragged");
    printf("rows computed: continuous %.0f; static %.0f, %.0f padding; static-ragged %.0f, %.0f padding\n",
           cont.computed, padded.computed, padded.padding, ragged.computed, ragged.padding);
    CHECK(padded.padding > ragged.padding);
    /* Every mode computes the same real rows (prompts, then each output but the last fed
     * back; no preemption at this size): what static adds is its padding. */
    CHECK(cont.computed > 0);
    CHECK(padded.computed - padded.padding == cont.computed);
    CHECK(ragged.computed - ragged.padding == cont.computed);
    snprintf(cmd, sizeof cmd, "%s bench -m %s --batching fixed --json 2>/dev/null", tu_ember_bin(), model);
    CHECK(tu_run(cmd, NULL, 0) == 2); /* refused: usage */
    test_bench("--kv contiguous");
    test_bench("--kv-type q8_0 --shared-prefix 16");
    test_bench("--ngram 2");
    return tu_finish("test_cli_serving");
}
