/* cmd_grammar.c — `ember grammar`: what a JSON Schema becomes as a grammar, and whether
 * texts follow a grammar (docs/grammar.md), without a model. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"

static int usage(FILE *out, int code)
{
    fprintf(out, "usage: ember grammar --json-schema FILE.json\n"
                 "         print the GBNF grammar the schema becomes (what --json-schema generates from)\n"
                 "       ember grammar (--grammar FILE.gbnf | --json-schema FILE.json) --check FILE...\n"
                 "         whether each file's text follows it: \"FILE: ok\", or where the grammar refuses it\n"
                 "         (exit status 1 when any is refused)\n");
    return code;
}

/* Checks each file against gbnf; the exit code. */
static int check(const char *gbnf, char **files, int n)
{
    int code = CLI_OK;
    for (int i = 0; i < n; i++) {
        cli_grammar text = {0};
        if (cli_grammar_flag("grammar", "--grammar", files[i], &text) < 0) return CLI_FAILED;
        size_t len = strlen(text.gbnf);
        ember_grammar_match m;
        char err[512];
        if (ember_grammar_check(gbnf, NULL, text.gbnf, len, &m, err, sizeof err) != EMBER_OK) {
            fprintf(stderr, "ember grammar: %s\n", err);
            cli_grammar_free(&text);
            return CLI_FAILED;
        }
        if (m.complete) printf("%s: ok\n", files[i]);
        else if (m.taken == len) printf("%s: refused: it ends before the grammar does\n", files[i]), code = CLI_FAILED;
        else printf("%s: refused at byte %zu\n", files[i], m.taken), code = CLI_FAILED;
        cli_grammar_free(&text);
    }
    return code;
}

int ember_cmd_grammar(int argc, char **argv)
{
    cli_grammar g = {0};
    int first_check = 0, code = CLI_USAGE;
    for (int i = 1; i < argc; i++) /* -h wherever it is, as every command takes it */
        if (cli_is_help(argv[i])) return usage(stdout, CLI_OK);
    for (int i = 1; i < argc && !first_check; i++) {
        const char *f = argv[i], *v;
        if (strcmp(f, "--check") == 0) first_check = i + 1;
        else if (!cli_flag_in(f, cli_grammar_flags)) {
            cli_unknown("grammar", f);
            return cli_grammar_free(&g), usage(stderr, CLI_USAGE);
        } else if (!(v = cli_value(argc, argv, &i)) || cli_grammar_flag("grammar", f, v, &g) < 0) {
            return cli_grammar_free(&g), v ? CLI_FAILED : usage(stderr, CLI_USAGE);
        }
    }
    if (!g.gbnf == !g.json_schema) {
        fprintf(stderr, "ember grammar: give one of --grammar and --json-schema\n");
        return cli_grammar_free(&g), usage(stderr, CLI_USAGE);
    }
    char *gbnf = g.gbnf, err[512];
    if (g.json_schema) { /* the schema's grammar */
        size_t len;
        if (ember_json_schema_to_grammar(g.json_schema, NULL, 0, &len, err, sizeof err) != EMBER_OK) {
            fprintf(stderr, "ember grammar: %s\n", err);
            return cli_grammar_free(&g), CLI_FAILED;
        }
        gbnf = malloc(len + 1);
        if (!gbnf || ember_json_schema_to_grammar(g.json_schema, gbnf, len + 1, &len, err, sizeof err) != EMBER_OK) {
            fprintf(stderr, "ember grammar: %s\n", gbnf ? err : "out of memory");
            free(gbnf);
            return cli_grammar_free(&g), CLI_FAILED;
        }
    }
    if (first_check) code = check(gbnf, argv + first_check, argc - first_check);
    else if (g.json_schema) fputs(gbnf, stdout), code = CLI_OK;
    else fprintf(stderr, "ember grammar: --grammar wants --check FILE...\n");
    if (gbnf != g.gbnf) free(gbnf);
    cli_grammar_free(&g);
    return code;
}
