/* commands.h — the subcommands of the `ember` program. Each takes the arguments after
 * its name (argv[0] is the subcommand name) and returns the process exit code; each
 * prints its own usage on bad arguments and its errors on stderr. */
#ifndef EMBER_COMMANDS_H
#define EMBER_COMMANDS_H

int ember_cmd_info(int argc, char **argv);
int ember_cmd_info_model(int argc, char **argv); /* info -m FILE (cmd_info_model.c) */
int ember_cmd_info_usage(FILE *out, int code);
int ember_cmd_generate(int argc, char **argv);
int ember_cmd_chat(int argc, char **argv);
int ember_cmd_tokenize(int argc, char **argv);
int ember_cmd_embed(int argc, char **argv);
int ember_cmd_grammar(int argc, char **argv);
int ember_cmd_make_test_model(int argc, char **argv);
int ember_cmd_quantize(int argc, char **argv);
int ember_cmd_convert(int argc, char **argv);
int ember_cmd_perplexity(int argc, char **argv);
int ember_cmd_batch(int argc, char **argv);
int ember_cmd_bench(int argc, char **argv);
int ember_cmd_serve(int argc, char **argv); /* server/serve.c */

#endif
