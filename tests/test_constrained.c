/* test_constrained.c — requests constrained by a grammar (ember_request_desc.grammar),
 * through the public API on the Vulkan device, with a made-up model whose random weights
 * know nothing of the grammars: every bit of structure in the outputs comes from the
 * masks. Checked: hundreds of outputs sampled at temperature 1 are sentences of their
 * grammar and end with EMBER_FINISH_GRAMMAR; requests without a grammar give the same
 * tokens beside constrained ones as alone; greedy constrained output is repeatable; a
 * logit bias, a penalty and a stop string compose with the grammar; a grammar with an
 * error is refused at submit with its line and column. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/grammar/grammar.h"
#include "engine/grammar/grammar_match.h"
#include "engine_fixture.h"
#include "testutil.h"

/* A game character's turn (strings and lists bounded, so that a random model ends it). */
static const char *CHARACTER =
    "root   ::= \"{\" ws \"\\\"say\\\":\" ws string \",\" ws \"\\\"action\\\":\" ws action \",\" ws \"\\\"items\\\":\" ws items ws \"}\"\n"
    "action ::= \"\\\"give\\\"\" | \"\\\"take\\\"\" | \"\\\"flee\\\"\" | \"\\\"wait\\\"\"\n"
    "items  ::= \"[\" ws ( item (\",\" ws item){0,2} )? ws \"]\"\n"
    "item   ::= \"{\" ws \"\\\"name\\\":\" ws string \",\" ws \"\\\"qty\\\":\" ws ([0-9] | [1-9] [0-9]) ws \"}\"\n"
    "string ::= \"\\\"\" ( [^\"\\\\\\x00-\\x1F] | \"\\\\\" [\"\\\\nt] ){0,12} \"\\\"\"\n"
    "ws     ::= [ \\n]{0,2}\n";

/* Arithmetic with nesting (recursion through a group). */
static const char *ARITH =
    "root ::= expr \"=\"\n"
    "expr ::= term ((\"+\" | \"-\") term){0,3}\n"
    "term ::= [0-9]{1,3} | \"(\" expr \")\"\n";

/* Whether text is a whole sentence of the grammar (the matcher, fed the text at once). */
static bool follows(const char *grammar, const char *text)
{
    ember_grammar *g = NULL;
    ember_gmatch *m = NULL;
    ember_err err = {{0}};
    bool ok = ember_grammar_parse(grammar, strlen(grammar), NULL, &g, &err) == EMBER_OK &&
              ember_gmatch_create(g, &m, &err) == EMBER_OK &&
              ember_gmatch_accept(m, (const uint8_t *)text, strlen(text)) && ember_gmatch_complete(m);
    ember_gmatch_free(m);
    ember_grammar_free(g);
    return ok;
}

static const uint32_t PROMPT[] = {1, 30, 31, 32, 33};

/* n requests of grammar at temperature 1 (seeds 1..n, every other one with penalties),
 * served together, speculating as spec says: each output follows the grammar and ended
 * with it. */
static void check_sampled(ember_engine *e, const char *grammar, int n, ember_speculation spec, const char *name)
{
    ef_result *r = calloc((size_t)n, sizeof *r);
    for (int i = 0; i < n; i++) {
        ember_request_desc d = ef_desc(PROMPT, 5, 400, &r[i]);
        d.grammar = grammar;
        d.sampling = (ember_sampling){.temperature = 1.0f, .seed = (uint64_t)i + 1};
        d.spec = spec;
        if (i % 2) d.sampling.presence_penalty = 0.5f, d.sampling.top_k = 40;
        CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
    }
    while (ember_engine_step(e) == EMBER_OK) {}
    int ended = 0, valid = 0;
    for (int i = 0; i < n; i++) {
        ended += r[i].done == 1 && r[i].why == EMBER_FINISH_GRAMMAR;
        valid += follows(grammar, r[i].text);
        if (!follows(grammar, r[i].text) || r[i].why != EMBER_FINISH_GRAMMAR)
            fprintf(stderr, "%s %d: finish %s, '%s' (%s)\n", name, i, ember_finish_name(r[i].why), r[i].text,
                    r[i].error);
    }
    printf("%s: %d outputs at temperature 1, %d follow the grammar, %d ended by it; e.g. %s\n", name, n, valid,
           ended, r[0].text);
    CHECK(valid == n && ended == n);
    if (spec.draft_k) {
        uint32_t drafted = 0, accepted = 0;
        for (int i = 0; i < n; i++) drafted += r[i].m.n_drafted, accepted += r[i].m.n_accepted;
        printf("%s: %u drafts, %u accepted\n", name, drafted, accepted);
        CHECK(drafted > 0 && accepted > 0); /* the drafts really were checked */
    }
    free(r);
}

/* Greedy constrained output is the same with speculation as without: drafts are cut
 * where the grammar refuses them and the verifier masks every row it reads. */
static void check_speculation_exact(ember_engine *e, const char *grammar, ember_speculation spec, const char *name)
{
    ef_result plain, fast;
    ember_request_desc d = ef_desc(PROMPT, 5, 300, &plain);
    d.grammar = grammar;
    CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
    while (ember_engine_step(e) == EMBER_OK) {}
    d = ef_desc(PROMPT, 5, 300, &fast);
    d.grammar = grammar;
    d.spec = spec;
    CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
    while (ember_engine_step(e) == EMBER_OK) {}
    CHECKF(strcmp(plain.text, fast.text) == 0 && plain.why == fast.why, "%s: '%s' vs '%s'", name, plain.text,
           fast.text);
    CHECK(fast.m.n_drafted > 0);
    printf("%s greedy: the same text with speculation (%u drafted, %u accepted)\n", name, fast.m.n_drafted,
           fast.m.n_accepted);
}

/* The distribution of "[a-d]{2}" at temperature 1 over n seeds, as counts of its 16
 * texts, speculating as spec says. */
static void sample_pairs(ember_engine *e, int n, ember_speculation spec, int *count)
{
    enum { BATCH = 64 };
    ef_result *r = calloc(BATCH, sizeof *r);
    memset(count, 0, 16 * sizeof *count);
    for (int base = 0; base < n; base += BATCH) {
        for (int i = 0; i < BATCH; i++) {
            ember_request_desc d = ef_desc(PROMPT, 5, 8, &r[i]);
            d.grammar = "root ::= [a-d]{2}";
            d.sampling = (ember_sampling){.temperature = 1.0f, .seed = 1000u + (uint64_t)(base + i)};
            d.spec = spec;
            CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
        }
        while (ember_engine_step(e) == EMBER_OK) {}
        for (int i = 0; i < BATCH; i++)
            if (strlen(r[i].text) == 2) count[(r[i].text[0] - 'a') * 4 + (r[i].text[1] - 'a')]++;
    }
    free(r);
}

/* Speculation keeps the target's distribution under a grammar: the drafts' q comes from
 * the masked draft rows, the target's p from the masked target rows. The two samples'
 * total variation distance stays at what 768 draws each give by chance (about 0.08);
 * a q taken from unmasked draft rows moves it to 0.32 (measured by breaking it). */
static void check_distribution(ember_engine *e, ember_speculation spec, const char *name)
{
    enum { N = 768 };
    int plain[16], fast[16], total = 0;
    sample_pairs(e, N, (ember_speculation){0}, plain);
    sample_pairs(e, N, spec, fast);
    double tv = 0;
    for (int i = 0; i < 16; i++) tv += fabs((double)(plain[i] - fast[i])) / (2.0 * N), total += fast[i];
    printf("%s: [a-d]{2} at temperature 1, %d draws each: total variation %.3f\n", name, N, tv);
    CHECK(total == N && tv < 0.15);
}

/* Requests without a grammar are untouched by constrained ones in their batch. */
static void check_neighbours(ember_engine *e)
{
    enum { N = 3 };
    ef_result alone[N], mixed[N], constrained[N];
    for (int i = 0; i < N; i++) {
        ember_request_desc d = ef_desc(PROMPT + i, 3, 24, &alone[i]);
        CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
    }
    while (ember_engine_step(e) == EMBER_OK) {}
    for (int i = 0; i < N; i++) {
        ember_request_desc d = ef_desc(PROMPT + i, 3, 24, &mixed[i]);
        CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
        d = ef_desc(PROMPT + i, 3, 200, &constrained[i]);
        d.grammar = ARITH;
        d.sampling = (ember_sampling){.temperature = 1.0f, .seed = 7};
        CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
    }
    while (ember_engine_step(e) == EMBER_OK) {}
    CHECK(ef_count_same(alone, mixed, N, 24) == N);
    for (int i = 0; i < N; i++) CHECKF(follows(ARITH, constrained[i].text), "'%s'", constrained[i].text);
}

/* Greedy constrained requests: the same output twice, following the grammar. */
static void check_greedy(ember_engine *e)
{
    ef_result a, b;
    ember_request_desc d = ef_desc(PROMPT, 5, 400, &a);
    d.grammar = CHARACTER;
    CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
    while (ember_engine_step(e) == EMBER_OK) {}
    d = ef_desc(PROMPT, 5, 400, &b);
    d.grammar = CHARACTER;
    CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
    while (ember_engine_step(e) == EMBER_OK) {}
    CHECK(a.why == EMBER_FINISH_GRAMMAR && follows(CHARACTER, a.text) && strcmp(a.text, b.text) == 0);
    printf("greedy: %s\n", a.text);
}

/* A bias of -inf on every token whose text holds an "a": the grammar's "a"s are gone,
 * its "b"s stay; a stop string inside the grammar ends the text before it. */
static void check_bias_and_stop(ember_engine *e, ember_model *m)
{
    ember_model_info info;
    ember_model_get_info(m, &info);
    ember_logit_bias *ban = calloc(info.n_vocab, sizeof *ban);
    uint32_t n_ban = 0;
    for (uint32_t t = 0; t < info.n_vocab && n_ban < EMBER_MAX_LOGIT_BIAS; t++) {
        char buf[64];
        size_t len = ember_token_to_text(m, t, buf, sizeof buf - 1);
        buf[len < sizeof buf ? len : sizeof buf - 1] = 0;
        if (strchr(buf, 'a')) ban[n_ban++] = (ember_logit_bias){t, -INFINITY};
    }
    ef_result r[4];
    for (int i = 0; i < 4; i++) {
        ember_request_desc d = ef_desc(PROMPT, 5, 64, &r[i]);
        d.grammar = "root ::= [ab]{10}";
        d.sampling = (ember_sampling){.temperature = 1.0f, .seed = (uint64_t)i, .logit_bias = ban, .n_logit_bias = n_ban};
        CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
    }
    ef_result stop;
    ember_request_desc d = ef_desc(PROMPT, 5, 64, &stop);
    d.grammar = "root ::= \"x\"{5} \"STOP\" [yz]{5}";
    d.stop[0] = "STOP";
    CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
    while (ember_engine_step(e) == EMBER_OK) {}
    for (int i = 0; i < 4; i++)
        CHECKF(strcmp(r[i].text, "bbbbbbbbbb") == 0 && r[i].why == EMBER_FINISH_GRAMMAR, "banned a: '%s' (%s)",
               r[i].text, ember_finish_name(r[i].why));
    CHECKF(strcmp(stop.text, "xxxxx") == 0 && stop.why == EMBER_FINISH_STOP, "stop: '%s' (%s)", stop.text,
           ember_finish_name(stop.why));
    printf("banned a: %s; stop string: %s (%u tokens banned)\n", r[0].text, stop.text, n_ban);
    free(ban);
}

/* A lazy grammar: free text until the trigger "e" appears, then "e" and three digits and
 * "!" (a tool call's shape: free words, then a call that must parse). Every output is
 * text without an "e", the trigger, the digits and "!"; with n-gram speculation too. The
 * text may hold NUL bytes (the model's byte tokens): it is read by its length. */
static void check_lazy(ember_engine *e)
{
    enum { N = 24 };
    ef_result *r = calloc(N, sizeof *r);
    int ended = 0, shaped = 0;
    for (int i = 0; i < N; i++) {
        ember_request_desc d = ef_desc(PROMPT, 5, 400, &r[i]);
        d.grammar = "root ::= \"e\" [0-9]{3} \"!\"";
        d.grammar_triggers[0] = "e";
        d.sampling = (ember_sampling){.temperature = 1.0f, .seed = 50u + (uint64_t)i};
        if (i % 2) d.spec = (ember_speculation){.draft_k = 3, .ngram = 1};
        CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
    }
    while (ember_engine_step(e) == EMBER_OK) {}
    for (int i = 0; i < N; i++) {
        const char *q = memchr(r[i].text, 'e', r[i].text_len);
        bool ok = q && r[i].text + r[i].text_len - q == 5 && q[1] >= '0' && q[1] <= '9' && q[2] >= '0' &&
                  q[2] <= '9' && q[3] >= '0' && q[3] <= '9' && q[4] == '!';
        ended += r[i].why == EMBER_FINISH_GRAMMAR;
        shaped += ok;
        if (!ok || r[i].why != EMBER_FINISH_GRAMMAR)
            fprintf(stderr, "lazy %d: %s: '%s' (%s)\n", i, ember_finish_name(r[i].why), r[i].text, r[i].error);
    }
    printf("lazy grammar: %d of %d outputs free text then the call, %d ended by it; e.g. %s\n", shaped, N, ended,
           r[0].text);
    CHECK(shaped == N && ended == N);
    free(r);
}

/* A grammar with an error never becomes a request; the message says where and why. */
static void check_refused(ember_engine *e)
{
    ef_result r;
    ember_request_desc d = ef_desc(PROMPT, 5, 8, &r);
    d.grammar = "root ::= \"a\" item\nitem ::= [b-";
    CHECK(ember_submit(e, &d, NULL) == EMBER_ERR_INVALID_ARG);
    CHECKF(strstr(ember_engine_error(e), "line 2, column 10") != NULL, "%s", ember_engine_error(e));
    d.grammar = "root ::= x\nx ::= x \"a\"";
    CHECK(ember_submit(e, &d, NULL) == EMBER_ERR_INVALID_ARG && strstr(ember_engine_error(e), "left-recursive"));
    CHECK(r.done == 0);
}

int main(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/constrained.gguf", tu_tmp_dir());
    tu_make_model(path, "--dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 128 --vocab 512 --ctx 1024 --seed 11");
    ember_model_opts mo = {.enable_validation = tu_validation(), .memory = tu_memory_mode()};
    ember_model *m = ef_load(path, &mo);
    if (!m) return tu_skip("no Vulkan device");
    ember_engine *e = ef_engine(m, (ember_engine_opts){.max_seqs = 16});
    ember_speculation none = {0}, ngram = {.draft_k = 4, .ngram = 2}, draft = {.draft_k = 3};
    if (e) {
        check_sampled(e, CHARACTER, 64, none, "character");
        check_sampled(e, ARITH, 64, none, "arithmetic");
        check_sampled(e, CHARACTER, 32, ngram, "character, n-gram speculation");
        check_speculation_exact(e, CHARACTER, ngram, "character, n-gram");
        check_neighbours(e);
        check_greedy(e);
        check_bias_and_stop(e, m);
        check_refused(e);
        check_lazy(e);
    }
    ember_engine_destroy(e);
    /* a draft model with the same vocabulary (another seed, one layer) */
    char draft_path[512];
    snprintf(draft_path, sizeof draft_path, "%s/constrained_draft.gguf", tu_tmp_dir());
    tu_make_model(draft_path, "--dim 32 --layers 1 --heads 2 --kv-heads 1 --ffn 64 --vocab 512 --ctx 1024 --seed 12");
    ember_model *dm = ef_load(draft_path, &mo);
    e = dm ? ef_engine(m, (ember_engine_opts){.max_seqs = 16, .draft = dm}) : NULL;
    if (e) {
        check_sampled(e, CHARACTER, 32, draft, "character, draft-model speculation");
        check_sampled(e, ARITH, 32, draft, "arithmetic, draft-model speculation");
        check_speculation_exact(e, ARITH, draft, "arithmetic, draft model");
        check_distribution(e, draft, "draft model");
    }
    ember_engine_destroy(e);
    ember_model_free(dm);
    ember_model_free(m);
    return tu_finish("test_constrained");
}
