/* ember.c — the `ember` command-line program: dispatches to one subcommand. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "ember.h"
#include "platform/os_main.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help;
} command;

static const command commands[] = {
    {"info", ember_cmd_info, "Vulkan devices, features and limits; -m M: a model's device memory"},
    {"generate", ember_cmd_generate, "-m M -p TEXT -n N [-c CTX] [sampling] [--draft M2 --draft-k K | --ngram N] [--backend vulkan|cpu] [--json]"},
    {"chat", ember_cmd_chat, "-m M [--chat-template NAME] [--system TEXT] [-n N] [-c CTX] [sampling flags]"},
    {"tokenize", ember_cmd_tokenize, "-m M -p TEXT [--no-bos] [--json]"},
    {"embed", ember_cmd_embed, "-m M -p TEXT [-p TEXT ...] [--pooling mean|cls|last]: embeddings, one JSON array a line"},
    {"grammar", ember_cmd_grammar, "--json-schema S.json | (--grammar G.gbnf | --json-schema S.json) --check FILE..."},
    {"make-test-model", ember_cmd_make_test_model, "OUT.gguf [--dim --layers --heads --kv-heads --ffn --vocab --ctx --type TYPE|PRESET --seed --arch llama|qwen2 --rope-freqs --rope-scale F --tied --pooling N]"},
    {"quantize", ember_cmd_quantize, "[--pure] IN.gguf OUT.gguf NAME (llama-quantize's names)"},
    {"batch", ember_cmd_batch, "-m M -f PROMPTS -n N [sampling flags] [--json]"},
    {"bench", ember_cmd_bench, "-m M [workload flags] --json (see ember bench --help)"},
    {"serve", ember_cmd_serve, "-m M [--host ADDR --port N --api-key KEY ...]: an OpenAI-compatible HTTP server"},
    {"perplexity", ember_cmd_perplexity, "-m M -f TEXTFILE [-c N] [--method ember|llama] [--json]"},
    {"convert", ember_cmd_convert, "llama2c CKPT.bin TOKENIZER.bin OUT.gguf"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: ember COMMAND [options]   (ember %s; ember --version)\n\ncommands:\n", ember_version());
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-16s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "\nember COMMAND --help (or ember help COMMAND) gives a command's options. Exit status: 0 done,\n"
               "1 the work failed, 2 a wrong command line. EMBER_DEVICE=N picks a device as --device N does.\n");
}

static const command *find(const char *name)
{
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(name, commands[i].name) == 0) return &commands[i];
    return NULL;
}

int main(int argc, char **argv)
{
    if (!ember_main_begin(&argc, &argv)) {
        fprintf(stderr, "ember: out of memory reading the command line\n");
        return 1;
    }
    bool help = argc >= 2 && strcmp(argv[1], "help") == 0;
    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 || (help && argc == 2)) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (help) { /* ember help COMMAND: COMMAND --help */
        const command *c = find(argv[2]);
        char *args[] = {argv[2], "--help", NULL};
        if (c) return c->run(2, args);
        fprintf(stderr, "ember: unknown command '%s'\n", argv[2]);
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("ember %s\n", ember_version());
        return 0;
    }
    const command *c = find(argv[1]);
    if (c) return c->run(argc - 1, argv + 1);
    fprintf(stderr, "ember: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
