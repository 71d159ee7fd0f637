/* make_test_model_args.c — `ember make-test-model`'s options (make_test_model_args.h). */
#include "make_test_model_args.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define VOCAB_MIN TEST_VOCAB_MIN
#define VOCAB_MAX TEST_VOCAB_MAX

/* An expert's FFN width: --expert-ffn, else --ffn (llama's Mixtral), else --ffn / k
 * (qwen3moe's default when the file has no expert_feed_forward_length). */
long tm_expert_ffn(const tm_args *a)
{
    if (a->expert_ffn) return a->expert_ffn;
    return a->arch->flags & EMBER_ARCH_MOE ? a->ffn / a->experts_used : a->ffn;
}

/* The head size the file declares or implies. */
long tm_head_dim(const tm_args *a) { return a->head_dim ? a->head_dim : a->dim / a->heads; }
long tm_rope_dim(const tm_args *a) { return a->rope_dim ? a->rope_dim : tm_head_dim(a); }

/* The family's key of this suffix (arch.c), or NULL. */
const ember_arch_key *tm_family_key(const ember_arch *arch, const char *suffix, size_t n)
{
    for (const ember_arch_key *k = arch->keys; k->suffix; k++)
        if (strlen(k->suffix) == n && strncmp(k->suffix, suffix, n) == 0) return k;
    return NULL;
}

static int usage(FILE *out, int code)
{
    fprintf(out,
        "usage: ember make-test-model OUT.gguf [options]\n"
        "  --dim N        embedding length (64)\n"
        "  --layers N     transformer blocks (2)\n"
        "  --heads N      attention heads; must divide --dim unless --head-dim (4)\n"
        "  --kv-heads N   key/value heads; must divide --heads (2)\n"
        "  --ffn N        feed-forward length (128)\n"
        "  --vocab N      vocabulary size, %d..%d (512)\n"
        "  --ctx N        context length (256)\n"
        "  --type T       the matrices' type, any that ember quantize writes (f32); norms stay\n"
        "                 f32; rows that are not whole blocks get llama.cpp's fallback; a\n"
        "                 preset (q4_k_m, ...) gives llama-quantize's per-tensor mix\n"
        "  --seed N       random seed (1)\n"
        "  --rope-base F  RoPE frequency base (10000)\n"
        "  --tied         no output.weight: the LM head reuses token_embd\n"
        "  --arch A       the family: %s (llama), or mixtral\n"
        "                 (llama with 8 experts); its tensors and recipe as docs/models.md\n"
        "                 lists them\n"
        "  --head-dim N   attention.key_length and value_length: the head size, when it is\n"
        "                 not --dim/--heads (Mistral-Nemo, Qwen3, Gemma); even\n"
        "  --rope-dim N   rope.dimension_count: partial rotary below the head size (all)\n"
        "  --rope-freqs   write rope_freqs.weight (Llama 3.1-style factors 1..8)\n"
        "  --rope-scale F RoPE scaling factor, linear unless --yarn (none)\n"
        "  --yarn         the scaling is YaRN (rope.scaling.type yarn); needs --rope-scale\n"
        "  --orig-ctx N   rope.scaling.original_context_length (none)\n"
        "  --longrope     LongRoPE factor tensors and attn_factor (phi3); the long factors\n"
        "                 apply when --ctx exceeds --orig-ctx\n"
        "  --key K=V      the family's own key <arch>.K (arch.c: sliding windows, soft-caps,\n"
        "                 scales, ...), in the type llama.cpp reads; repeatable\n"
        "  --chat-template FILE  its tokenizer.chat_template (Jinja), for chat tests (none)\n"
        "  --pooling N    <arch>.pooling_type for embeddings: 0 none, 1 mean, 2 cls, 3 last,\n"
        "                 4 rank (none written)\n"
        "  --experts N    a mixture of N experts in every FFN (mixtral, qwen3moe: 8)\n"
        "  --experts-used K  experts a token runs (2)\n"
        "  --expert-ffn N an expert's FFN width (llama: --ffn; qwen3moe: --ffn / K, or N\n"
        "                 written as expert_feed_forward_length)\n"
        "Tensors are made one at a time as the file is written, so a model larger than\n"
        "memory can be made (an 8B shape: --dim 4096 --layers 32 --heads 32 --kv-heads 8\n"
        "--ffn 14336 --vocab 128256 --type q4_k_m).\n",
        VOCAB_MIN, VOCAB_MAX, ember_arch_names());
    return code;
}

/* A single type (every matrix in it, as --pure) or a preset's mix (q4_k_m, ...). */
static bool parse_type(const char *s, tm_args *a)
{
    const ember_dtype_info *t = ember_dtype_writable(s);
    const quant_preset *p = t ? NULL : quant_preset_find(s);
    char names[512];
    if (t) a->type = t->type, a->preset = NULL;
    else if (p) a->type = p->type, a->preset = p;
    else fprintf(stderr, "ember: --type is one of %s, got '%s'\n", quant_preset_names(names, sizeof names), s);
    return t || p;
}

/* A family of arch.c, or mixtral: a file of llama's architecture with experts, as
 * llama.cpp's converter writes Mixtral. */
static bool parse_arch(const char *s, tm_args *t)
{
    t->mixtral = strcmp(s, "mixtral") == 0;
    const ember_arch *a = t->mixtral ? ember_arch_get(EMBER_ARCH_LLAMA) : ember_arch_find(s, strlen(s));
    if (!a) {
        fprintf(stderr, "ember: --arch is one of %s, mixtral, got '%s'\n", ember_arch_names(), s);
        return false;
    }
    t->arch = a;
    return true;
}

/* --key K=V: K one of the family's keys (checked once the family is known), V a number. */
static bool parse_key(const char *s, tm_args *a)
{
    const char *eq = strchr(s, '=');
    char *end = NULL;
    if (!eq || eq == s || (strtod(eq + 1, &end), end == eq + 1 || *end)) {
        fprintf(stderr, "ember: --key wants SUFFIX=NUMBER (e.g. attention.sliding_window=8), got '%s'\n", s);
        return false;
    }
    if (a->n_keys == (int)(sizeof a->keys / sizeof *a->keys)) {
        fprintf(stderr, "ember: at most %d --key options\n", a->n_keys);
        return false;
    }
    a->keys[a->n_keys++] = s;
    return true;
}

/* A flag of no value: 1 when argv[*i] is one, 0 when not. */
static int parse_switch(const char *f, tm_args *a)
{
    static const struct { const char *flag; size_t off; } sw[] = {
        { "--tied", offsetof(tm_args, tied) }, { "--rope-freqs", offsetof(tm_args, rope_freqs) },
        { "--yarn", offsetof(tm_args, yarn) }, { "--longrope", offsetof(tm_args, longrope) },
    };
    for (size_t k = 0; k < sizeof sw / sizeof *sw; k++)
        if (strcmp(f, sw[k].flag) == 0) return *(bool *)((char *)a + sw[k].off) = true, 1;
    return 0;
}

/* A finite number above lo into *out: 1, or -1 after saying why (v NULL: no value given). */
static int parse_above(const char *f, const char *v, float lo, float *out)
{
    if (!v || !cli_float(f, v, out)) return -1;
    if (*out > lo && isfinite(*out)) return 1;
    fprintf(stderr, "ember: %s must be a finite number above %g\n", f, lo);
    return -1;
}

/* Returns 1 when argv[*i] was a known flag and parsed, 0 when unknown, -1 on error. */
static int parse_flag(int argc, char **argv, int *i, tm_args *a)
{
    static const struct { const char *flag; size_t off; long lo, hi; } ints[] = {
        { "--dim", offsetof(tm_args, dim), 2, 1 << 20 },
        { "--layers", offsetof(tm_args, layers), 1, 4096 },
        { "--heads", offsetof(tm_args, heads), 1, 1 << 16 },
        { "--kv-heads", offsetof(tm_args, kv_heads), 1, 1 << 16 },
        { "--ffn", offsetof(tm_args, ffn), 1, 1 << 22 },
        { "--vocab", offsetof(tm_args, vocab), VOCAB_MIN, VOCAB_MAX },
        { "--ctx", offsetof(tm_args, ctx), 1, 1 << 24 },
        { "--seed", offsetof(tm_args, seed), 0, 0x7fffffffL },
        { "--pooling", offsetof(tm_args, pooling), 0, 4 },
        { "--head-dim", offsetof(tm_args, head_dim), 2, 1 << 16 },
        { "--rope-dim", offsetof(tm_args, rope_dim), 2, 1 << 16 },
        { "--orig-ctx", offsetof(tm_args, orig_ctx), 1, 1 << 24 },
        { "--experts", offsetof(tm_args, experts), 1, EMBER_MAX_EXPERTS },
        { "--experts-used", offsetof(tm_args, experts_used), 1, EMBER_MAX_EXPERTS_USED },
        { "--expert-ffn", offsetof(tm_args, expert_ffn), 1, 1 << 22 },
    };
    const char *f = argv[*i], *v;
    if (parse_switch(f, a)) return 1;
    for (size_t k = 0; k < sizeof ints / sizeof *ints; k++) {
        if (strcmp(f, ints[k].flag) != 0)
            continue;
        if (!(v = cli_value(argc, argv, i)))
            return -1;
        return cli_int(f, v, ints[k].lo, ints[k].hi, (long *)((char *)a + ints[k].off)) ? 1 : -1;
    }
    if (strcmp(f, "--type") == 0)
        return (v = cli_value(argc, argv, i)) && parse_type(v, a) ? 1 : -1;
    if (strcmp(f, "--key") == 0)
        return (v = cli_value(argc, argv, i)) && parse_key(v, a) ? 1 : -1;
    if (strcmp(f, "--arch") == 0)
        return (v = cli_value(argc, argv, i)) && parse_arch(v, a) ? 1 : -1;
    if (strcmp(f, "--chat-template") == 0) {
        free(a->chat_template);
        return (v = cli_value(argc, argv, i)) && (a->chat_template = cli_read_file("make-test-model", v)) ? 1 : -1;
    }
    if (strcmp(f, "--rope-scale") == 0) return parse_above(f, cli_value(argc, argv, i), 0.0f, &a->rope_scale);
    if (strcmp(f, "--rope-base") == 0) return parse_above(f, cli_value(argc, argv, i), 1.0f, &a->rope_base);
    return 0;
}

static bool check_shape(const tm_args *a)
{
    if (!a->head_dim && a->dim % a->heads) {
        fprintf(stderr, "ember: --heads %ld does not divide --dim %ld\n", a->heads, a->dim);
        return false;
    }
    if (a->heads % a->kv_heads) {
        fprintf(stderr, "ember: --kv-heads %ld does not divide --heads %ld\n", a->kv_heads, a->heads);
        return false;
    }
    if (tm_head_dim(a) % 2 || tm_rope_dim(a) % 2 || tm_rope_dim(a) > tm_head_dim(a)) {
        fprintf(stderr, "ember: head size %ld and rotary size %ld must be even, the rotary one at most the head "
                        "size (RoPE rotates pairs)\n", tm_head_dim(a), tm_rope_dim(a));
        return false;
    }
    return true;
}

/* What the family has and the options ask for agree (what llama.cpp would refuse). */
static bool check_family(const tm_args *a)
{
    const ember_arch *f = a->arch;
    const char *bad = a->rope_freqs && !(f->flags & EMBER_ARCH_ROPE_FREQS) ? "--rope-freqs"
                      : a->longrope && !(f->flags & EMBER_ARCH_LONGROPE)    ? "--longrope"
                      : a->tied && (f->flags & EMBER_ARCH_OUTPUT)           ? "--tied"
                      : a->yarn && !(a->rope_scale > 0)                     ? "--yarn without --rope-scale"
                      : a->experts && !(f->flags & (EMBER_ARCH_EXPERTS | EMBER_ARCH_MOE)) ? "--experts"
                      : a->experts_used > a->experts                        ? "--experts-used above --experts"
                                                                            : NULL;
    if (bad) {
        fprintf(stderr, "ember make-test-model: %s does not fit a %s model (%s)\n", bad, f->name, f->models);
        return false;
    }
    for (int i = 0; i < a->n_keys; i++)
        if (!tm_family_key(f, a->keys[i], (size_t)(strchr(a->keys[i], '=') - a->keys[i]))) {
            fprintf(stderr, "ember make-test-model: --key %s: %s models read no such key (docs/models.md)\n",
                    a->keys[i], f->name);
            return false;
        }
    return true;
}

bool tm_parse(int argc, char **argv, tm_args *a, int *code)
{
    *a = (tm_args){.dim = 64, .layers = 2, .heads = 4, .kv_heads = 2, .ffn = 128, .vocab = 512, .ctx = 256,
                   .seed = 1, .rope_base = 10000.0f, .type = EMBER_DTYPE_F32,
                   .arch = ember_arch_get(EMBER_ARCH_LLAMA), .pooling = -1};
    *code = CLI_USAGE;
    for (int i = 1; i < argc; i++)
        if (cli_is_help(argv[i])) return *code = usage(stdout, CLI_OK), false;
    for (int i = 1; i < argc; i++) {
        int r = argv[i][0] == '-' ? parse_flag(argc, argv, &i, a) : 0;
        if (r < 0) return usage(stderr, CLI_USAGE), false;
        if (r == 0 && (argv[i][0] == '-' || a->out)) {
            cli_unknown("make-test-model", argv[i]);
            return usage(stderr, CLI_USAGE), false;
        }
        if (r == 0) a->out = argv[i];
    }
    if (!a->out) {
        fprintf(stderr, "ember make-test-model: no output file given\n");
        return usage(stderr, CLI_USAGE), false;
    }
    if ((a->mixtral || (a->arch->flags & EMBER_ARCH_MOE)) && !a->experts) a->experts = 8;
    if (a->experts && !a->experts_used) a->experts_used = a->experts < 2 ? a->experts : 2;
    return check_shape(a) && check_family(a);
}
