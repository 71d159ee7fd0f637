/* chat_template.h — chat templates without a Jinja engine.
 *
 * A GGUF file carries its chat template as Jinja source (tokenizer.chat_template).
 * Like llama.cpp's llm_chat_detect_template, we do not run the Jinja: we recognise the
 * template's family by distinctive substrings and render messages with a hand-written
 * C function that produces the text that family's Jinja produces. See docs/chat.md.
 *
 * BOS: a template whose Jinja starts with bos_token is rendered WITHOUT that leading
 * BOS text when the vocabulary adds its BOS token itself (add_bos, the usual case), so BOS
 * is never doubled; a vocabulary that adds none (SmolLM2: add_bos false, BOS
 * <|im_start|>) keeps it in the text (bos_in_text). A BOS or EOS inside the conversation (Llama 2's "</s><s>"
 * between turns) is rendered as text and becomes the token under special-token parsing.
 *
 * This module is pure text: it knows nothing of models or tokenizers. The model-facing
 * calls (ember_chat_apply, the ember_chat conversation) are in chat.c. */
#ifndef EMBER_CHAT_TEMPLATE_H
#define EMBER_CHAT_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* ---- public API, to move into include/ember.h (then delete from here) ------------- */


/* ---- library-internal -------------------------------------------------------------- */

typedef enum ember_chat_family {
    EMBER_CHAT_CHATML,   /* <|im_start|>role\n...<|im_end|>\n — Qwen, SmolLM, many fine-tunes */
    EMBER_CHAT_LLAMA2,   /* [INST] <<SYS>>\n...\n<</SYS>>\n\n... [/INST] ... </s><s> */
    EMBER_CHAT_LLAMA3,   /* <|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|> */
    EMBER_CHAT_MISTRAL,  /* Mistral "v1": " [INST] ... [/INST] ...</s>" */
    EMBER_CHAT_ZEPHYR,   /* <|role|>\n...</s>\n — Zephyr, TinyLlama-Chat */
    EMBER_CHAT_GEMMA,    /* <start_of_turn>user\n...<end_of_turn>\n, role "model" */
    EMBER_CHAT_PHI3,     /* <|role|>\n...<|end|>\n */
} ember_chat_family;

typedef struct ember_chat_template {
    ember_chat_family family;
    bool dated;            /* Llama 3.1+: a system turn with "Cutting Knowledge Date" always */
    char *bos, *eos;       /* the template's bos_token / eos_token text (owned) */
    char *default_system;  /* ChatML: system message used when none is given (owned; may be NULL) */
    struct ember_jinja *jinja; /* the model's own template, parsed (owned; NULL: the family renders) */
    bool family_ok;        /* a built-in family was recognised: the fallback when the template fails */
    bool bos_in_text;      /* the vocabulary adds no BOS token: a leading BOS stays in the text */
} ember_chat_template;

/* Sets up t (zeroed first). name, when not NULL, wins: a known name, or Jinja source
 * (anything containing "{{" or "{%") to detect. Otherwise jinja[0..jinja_len) is
 * detected; jinja NULL means "no template": ChatML. bos/eos: the vocabulary's BOS and
 * EOS piece text (NULL = "<s>" / "</s>"). Unknown names and templates are
 * EMBER_ERR_UNSUPPORTED with a message naming them and listing the known names. */
ember_status ember_chat_template_init(ember_chat_template *t, const char *name, const char *jinja,
                                      size_t jinja_len, const char *bos, const char *eos,
                                      ember_err *err);
/* As ember_chat_template_init, for a model's template (chat.c): when name is NULL and the
 * Jinja source parses, the interpreter (jinja.h) renders it, and the family detected
 * from it (if any) renders when the template fails; a template of no known family is
 * then accepted too (its family's name is "jinja"). A name still picks a built-in
 * family. */
ember_status ember_chat_template_init_model(ember_chat_template *t, const char *name, const char *jinja,
                                            size_t jinja_len, const char *bos, const char *eos, ember_err *err);
void ember_chat_template_free(ember_chat_template *t);
/* "chatml", "llama2", "llama3", "llama3.1", "mistral", "zephyr", "gemma" or "phi3"
 * ("jinja" for a model's template of none of them). */
const char *ember_chat_template_family(const ember_chat_template *t);
/* The known names, comma-separated (for messages and usage text). */
const char *ember_chat_template_names(void);

/* Renders msgs[0..n) into *out (malloc'd, NUL-terminated; *out_len its length). from = 0
 * renders everything; from > 0 renders only what follows the content of msgs[from-1]
 * (its end-of-turn text and the later messages): the text that continues a
 * conversation already tokenized up to the end of that message's content.
 * Roles other than system/user/assistant, and a system message where the family has no
 * place for one (after the first message in Llama 2, Mistral, Gemma), are
 * EMBER_ERR_INVALID_ARG. */
ember_status ember_chat_render(const ember_chat_template *t, const ember_chat_message *msgs, size_t n,
                               size_t from, bool add_generation_prompt, char **out, size_t *out_len,
                               ember_err *err);
/* The text that closes an assistant message (e.g. "<|im_end|>\n", " </s>", "<|eot_id|>"),
 * malloc'd; NULL when memory runs out. */
char *ember_chat_render_end(const ember_chat_template *t);

/* Renders a conversation given as JSON (for the server, with tools): messages_json an
 * array of OpenAI chat messages, every member handed to the template as it is
 * (tool_calls, tool_call_id, name, ...), tools_json an array of OpenAI tool
 * definitions (NULL: none). Through the model's template when it has one (chat_jinja.h);
 * otherwise, or when it fails, the family renders the messages' roles and contents
 * (content null is ""), refusing what it cannot (tool roles). *out: ember_free. */
ember_status ember_chat_render_json(const ember_chat_template *t, const char *messages_json, size_t messages_len,
                                    const char *tools_json, size_t tools_len, bool add_generation_prompt, char **out,
                                    size_t *out_len, ember_err *err);

#endif
