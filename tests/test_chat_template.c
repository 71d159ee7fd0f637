/* test_chat_template.c — chat template detection and rendering (engine/chat/chat_template.c),
 * no model needed:
 *  - a real chat_template of each family (Qwen2.5, SmolLM2, Llama 2, Llama 3, Llama 3.1,
 *    Mistral v0.2, TinyLlama, Gemma, Phi-3; shortened where they have tool-calling
 *    branches) is detected as its family and renders system + user + assistant + user
 *    with the generation prompt to the exact text its Jinja gives (leading BOS left out);
 *  - rendering from a message on gives exactly the rest of the full rendering, which is
 *    what keeps a conversation's tokens a prefix of the next turn's;
 *  - unknown templates and names are refused with the template named in the message;
 *    a name overrides the template; no template means ChatML. */
#include <stdlib.h>
#include <string.h>

#include "engine/chat/chat_template.h"
#include "testutil.h"

/* ---- templates, as stored in GGUF files (Jinja source; "\\n" is Jinja's escape) ---- */

static const char QWEN25[] =
    "{%- if tools %}\n"
    "    {{- '<|im_start|>system\\n' }}\n"
    "    {%- if messages[0]['role'] == 'system' %}\n"
    "        {{- messages[0]['content'] }}\n"
    "    {%- else %}\n"
    "        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}\n"
    "    {%- endif %}\n"
    "{%- else %}\n"
    "    {%- if messages[0]['role'] == 'system' %}\n"
    "        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}\n"
    "    {%- else %}\n"
    "        {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}\n"
    "    {%- endif %}\n"
    "{%- endif %}\n"
    "{%- for message in messages %}\n"
    "    {%- if (message.role == \"user\") or (message.role == \"system\" and not loop.first) or "
    "(message.role == \"assistant\" and not message.tool_calls) %}\n"
    "        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}\n"
    "    {%- endif %}\n"
    "{%- endfor %}\n"
    "{%- if add_generation_prompt %}\n"
    "    {{- '<|im_start|>assistant\\n' }}\n"
    "{%- endif %}\n";

/* SmolLM2's, with real newlines inside its string literals. */
static const char SMOLLM2[] =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\n"
    "You are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
    "' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n"
    "' + message['content'] + '<|im_end|>' + '\n"
    "'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n"
    "' }}{% endif %}";

static const char LLAMA2[] =
    "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = "
    "messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}"
    "{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message + "
    "'\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}"
    "{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"
    "{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}"
    "{% endfor %}";

static const char LLAMA3[] =
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
    "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + "
    "'<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}"
    "{% endif %}";

static const char LLAMA31[] =
    "{{- bos_token }}\n"
    "{%- if not date_string is defined %}\n    {%- set date_string = \"26 Jul 2024\" %}\n{%- endif %}\n"
    "{%- if messages[0]['role'] == 'system' %}\n"
    "    {%- set system_message = messages[0]['content']|trim %}\n"
    "    {%- set messages = messages[1:] %}\n"
    "{%- else %}\n    {%- set system_message = \"\" %}\n{%- endif %}\n"
    "{{- \"<|start_header_id|>system<|end_header_id|>\\n\\n\" }}\n"
    "{{- \"Cutting Knowledge Date: December 2023\\n\" }}\n"
    "{{- \"Today Date: \" + date_string + \"\\n\\n\" }}\n"
    "{{- system_message }}\n{{- \"<|eot_id|>\" }}\n"
    "{%- for message in messages %}\n"
    "    {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + "
    "'<|eot_id|>' }}\n"
    "{%- endfor %}\n"
    "{%- if add_generation_prompt %}\n    {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}\n"
    "{%- endif %}\n";

static const char MISTRAL[] =
    "{%- if messages[0]['role'] == 'system' %}\n    {%- set system_message = messages[0]['content'] %}\n"
    "    {%- set loop_messages = messages[1:] %}\n{%- else %}\n    {%- set loop_messages = messages %}\n"
    "{%- endif %}\n\n{{- bos_token }}\n{%- for message in loop_messages %}\n"
    "    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}\n"
    "        {{- raise_exception('After the optional system message, conversation roles must alternate "
    "user/assistant/user/assistant/...') }}\n    {%- endif %}\n"
    "    {%- if message['role'] == 'user' %}\n"
    "        {%- if loop.first and system_message is defined %}\n"
    "            {{- ' [INST] ' + system_message + '\\n\\n' + message['content'] + ' [/INST]' }}\n"
    "        {%- else %}\n            {{- ' [INST] ' + message['content'] + ' [/INST]' }}\n"
    "        {%- endif %}\n"
    "    {%- elif message['role'] == 'assistant' %}\n        {{- ' ' + message['content'] + eos_token}}\n"
    "    {%- else %}\n        {{- raise_exception('Only user and assistant roles are supported, with the "
    "exception of an initial optional system message!') }}\n    {%- endif %}\n{%- endfor %}\n";

static const char TINYLLAMA[] =
    "{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\n' + message['content'] + "
    "eos_token }}\n{% elif message['role'] == 'system' %}\n{{ '<|system|>\n' + message['content'] + eos_token }}\n"
    "{% elif message['role'] == 'assistant' %}\n{{ '<|assistant|>\n'  + message['content'] + eos_token }}\n"
    "{% endif %}\n{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% endfor %}";

/* Gemma 3's system handling (Gemma 2's template refuses a system message). */
static const char GEMMA[] =
    "{{ bos_token }}\n{%- if messages[0]['role'] == 'system' -%}\n"
    "    {%- set first_user_prefix = messages[0]['content'] + '\\n\\n' -%}\n"
    "    {%- set loop_messages = messages[1:] -%}\n{%- else -%}\n    {%- set first_user_prefix = \"\" -%}\n"
    "    {%- set loop_messages = messages -%}\n{%- endif -%}\n{%- for message in loop_messages -%}\n"
    "    {%- if (message['role'] == 'assistant') -%}\n        {%- set role = \"model\" -%}\n    {%- else -%}\n"
    "        {%- set role = message['role'] -%}\n    {%- endif -%}\n"
    "    {{ '<start_of_turn>' + role + '\\n' + (first_user_prefix if loop.first else \"\") }}\n"
    "    {{ message['content'] | trim }}\n    {{ '<end_of_turn>\\n' }}\n{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}\n    {{'<start_of_turn>model\\n'}}\n{%- endif -%}\n";

static const char PHI3[] =
    "{% for message in messages %}{% if message['role'] == 'system' %}{{'<|system|>\\n' + message['content'] + "
    "'<|end|>\\n'}}{% elif message['role'] == 'user' %}{{'<|user|>\\n' + message['content'] + '<|end|>\\n'}}"
    "{% elif message['role'] == 'assistant' %}{{'<|assistant|>\\n' + message['content'] + '<|end|>\\n'}}"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% else %}{{ eos_token }}"
    "{% endif %}";

/* A template of no family we know (Alpaca-style). */
static const char ALPACA[] =
    "{% for message in messages %}{% if message['role'] == 'user' %}{{ '### Instruction:\\n' + "
    "message['content'] + '\\n\\n' }}{% else %}{{ '### Response:\\n' + message['content'] + eos_token }}"
    "{% endif %}{% endfor %}";

/* ---- the conversation and what each family makes of it ------------------------------ */

static const ember_chat_message CONV[] = {
    {"system", "You are a helpful assistant."},
    {"user", "Hello!"},
    {"assistant", "Hi there! How can I help?"},
    {"user", "Tell me a joke."},
};

typedef struct family_case {
    const char *what, *jinja, *family, *bos, *eos;
    const char *expected;       /* CONV with the generation prompt */
    const char *assistant_pre;  /* text between the generation prompt and the reply */
    const char *end;            /* what closes an assistant turn */
    bool bos_in_text;           /* the vocabulary adds no BOS (SmolLM2's is <|im_start|>) */
} family_case;

static const family_case CASES[] = {
    {"Qwen2.5", QWEN25, "chatml", "<|endoftext|>", "<|im_end|>",
     "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n"
     "<|im_start|>assistant\nHi there! How can I help?<|im_end|>\n<|im_start|>user\nTell me a joke.<|im_end|>\n"
     "<|im_start|>assistant\n",
     "", "<|im_end|>\n"},
    {"SmolLM2", SMOLLM2, "chatml", "<|im_start|>", "<|im_end|>",
     "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n"
     "<|im_start|>assistant\nHi there! How can I help?<|im_end|>\n<|im_start|>user\nTell me a joke.<|im_end|>\n"
     "<|im_start|>assistant\n",
     "", "<|im_end|>\n", true},
    {"Llama 2", LLAMA2, "llama2", "<s>", "</s>",
     "[INST] <<SYS>>\nYou are a helpful assistant.\n<</SYS>>\n\nHello! [/INST] Hi there! How can I help? </s>"
     "<s>[INST] Tell me a joke. [/INST]",
     " ", " </s>"},
    {"Llama 3", LLAMA3, "llama3", "<|begin_of_text|>", "<|eot_id|>",
     "<|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant.<|eot_id|>"
     "<|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|>"
     "<|start_header_id|>assistant<|end_header_id|>\n\nHi there! How can I help?<|eot_id|>"
     "<|start_header_id|>user<|end_header_id|>\n\nTell me a joke.<|eot_id|>"
     "<|start_header_id|>assistant<|end_header_id|>\n\n",
     "", "<|eot_id|>"},
    {"Llama 3.1", LLAMA31, "llama3.1", "<|begin_of_text|>", "<|eot_id|>",
     "<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n"
     "Today Date: 26 Jul 2024\n\nYou are a helpful assistant.<|eot_id|>"
     "<|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|>"
     "<|start_header_id|>assistant<|end_header_id|>\n\nHi there! How can I help?<|eot_id|>"
     "<|start_header_id|>user<|end_header_id|>\n\nTell me a joke.<|eot_id|>"
     "<|start_header_id|>assistant<|end_header_id|>\n\n",
     "", "<|eot_id|>"},
    {"Mistral v0.2", MISTRAL, "mistral", "<s>", "</s>",
     " [INST] You are a helpful assistant.\n\nHello! [/INST] Hi there! How can I help?</s> [INST] Tell me a joke. "
     "[/INST]",
     " ", "</s>"},
    {"TinyLlama", TINYLLAMA, "zephyr", "<s>", "</s>",
     "<|system|>\nYou are a helpful assistant.</s>\n<|user|>\nHello!</s>\n<|assistant|>\nHi there! How can I "
     "help?</s>\n<|user|>\nTell me a joke.</s>\n<|assistant|>\n",
     "", "</s>\n"},
    {"Gemma", GEMMA, "gemma", "<bos>", "<eos>",
     "<start_of_turn>user\nYou are a helpful assistant.\n\nHello!<end_of_turn>\n<start_of_turn>model\nHi there! "
     "How can I help?<end_of_turn>\n<start_of_turn>user\nTell me a joke.<end_of_turn>\n<start_of_turn>model\n",
     "", "<end_of_turn>\n"},
    {"Phi-3", PHI3, "phi3", "<s>", "<|endoftext|>",
     "<|system|>\nYou are a helpful assistant.<|end|>\n<|user|>\nHello!<|end|>\n<|assistant|>\nHi there! How can "
     "I help?<|end|>\n<|user|>\nTell me a joke.<|end|>\n<|assistant|>\n",
     "", "<|end|>\n"},
};
#define N_CASES (sizeof CASES / sizeof CASES[0])

static char *render(const ember_chat_template *t, const ember_chat_message *m, size_t n, size_t from, bool gen)
{
    char *out = NULL;
    size_t len = 0;
    ember_err err = {{0}};
    ember_status s = ember_chat_render(t, m, n, from, gen, &out, &len, &err);
    CHECKF(s == EMBER_OK, "render: %s", err.msg);
    CHECK(s != EMBER_OK || strlen(out) == len);
    return out;
}

/* Rendering the first turn, then the reply as generated, then the rest from the reply's
 * end on, gives the full text: the property a kept conversation relies on. */
static void check_continuation(const family_case *c, const ember_chat_template *t, const char *full)
{
    char *first = render(t, CONV, 2, 0, true);
    char *rest = render(t, CONV, 4, 3, true);
    char *end = ember_chat_render_end(t);
    size_t need = strlen(first) + strlen(c->assistant_pre) + strlen(CONV[2].content) + strlen(rest) + 1;
    char *joined = malloc(need);
    if (first && rest && end && joined) {
        snprintf(joined, need, "%s%s%s%s", first, c->assistant_pre, CONV[2].content, rest);
        CHECKF(strcmp(joined, full) == 0, "%s: continuation\n got: %s\nwant: %s", c->what, joined, full);
        CHECKF(strcmp(end, c->end) == 0, "%s: end of turn '%s'", c->what, end);
        CHECKF(strncmp(rest, end, strlen(end)) == 0, "%s: the rest starts with '%s'", c->what, rest);
    }
    free(first);
    free(rest);
    free(end);
    free(joined);
}

static void check_family(const family_case *c)
{
    ember_chat_template t;
    ember_err err = {{0}};
    ember_status s = ember_chat_template_init(&t, NULL, c->jinja, strlen(c->jinja), c->bos, c->eos, &err);
    CHECKF(s == EMBER_OK, "%s: %s", c->what, err.msg);
    if (s != EMBER_OK) return;
    t.bos_in_text = c->bos_in_text;
    CHECKF(strcmp(ember_chat_template_family(&t), c->family) == 0, "%s detected as %s", c->what,
           ember_chat_template_family(&t));
    char *full = render(&t, CONV, 4, 0, true);
    if (full) {
        CHECKF(strcmp(full, c->expected) == 0, "%s:\n got: %s\nwant: %s", c->what, full, c->expected);
        /* A leading BOS is left to a tokenizer that adds one, kept where it adds none. */
        CHECKF((strncmp(full, c->bos, strlen(c->bos)) == 0) == c->bos_in_text, "%s: rendered text %s with BOS",
               c->what, c->bos_in_text ? "does not start" : "starts");
        check_continuation(c, &t, full);
    }
    free(full);
    ember_chat_template_free(&t);
}

/* ---- details of single families ------------------------------------------------------ */

static char *render_with(const char *jinja, const char *name, const ember_chat_message *m, size_t n, bool gen)
{
    ember_chat_template t;
    ember_err err = {{0}};
    if (ember_chat_template_init(&t, name, jinja, jinja ? strlen(jinja) : 0, "<s>", "</s>", &err) != EMBER_OK) {
        CHECKF(0, "init: %s", err.msg);
        return NULL;
    }
    char *out = render(&t, m, n, 0, gen);
    ember_chat_template_free(&t);
    return out;
}

static void expect(const char *what, char *got, const char *want)
{
    CHECKF(got && strcmp(got, want) == 0, "%s:\n got: %s\nwant: %s", what, got ? got : "(null)", want);
    free(got);
}

static void details(void)
{
    const ember_chat_message user[] = {{"user", "  Hi  "}};
    /* Qwen2.5 and SmolLM2 add their default system message when there is none. */
    expect("Qwen2.5 default system", render_with(QWEN25, NULL, user, 1, true),
           "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
           "<|im_start|>user\n  Hi  <|im_end|>\n<|im_start|>assistant\n");
    expect("SmolLM2 default system", render_with(SMOLLM2, NULL, user, 1, true),
           "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
           "<|im_start|>user\n  Hi  <|im_end|>\n<|im_start|>assistant\n");
    /* Plain ChatML (by name) has none; no generation prompt without add_generation_prompt. */
    expect("chatml by name", render_with(NULL, "chatml", user, 1, false), "<|im_start|>user\n  Hi  <|im_end|>\n");
    /* Trimming where the Jinja trims. */
    expect("Llama 3 trims", render_with(LLAMA3, NULL, user, 1, true),
           "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
    expect("Llama 2 strips, no system", render_with(LLAMA2, NULL, user, 1, true), "[INST] Hi [/INST]");
    expect("Gemma trims", render_with(GEMMA, NULL, user, 1, true),
           "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n");
    expect("Llama 3.1 without a system message", render_with(LLAMA31, NULL, user, 1, true),
           "<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul "
           "2024\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
           "<|start_header_id|>assistant<|end_header_id|>\n\n");
    expect("Phi-3 without generation prompt ends with eos", render_with(PHI3, NULL, user, 1, false),
           "<|user|>\n  Hi  <|end|>\n</s>");
    expect("Mistral without system", render_with(MISTRAL, NULL, user, 1, true), " [INST]   Hi   [/INST]");

    /* Families that fold the system message into the first turn refuse a later one. */
    const ember_chat_message late[] = {{"user", "a"}, {"system", "b"}};
    ember_chat_template t;
    ember_err err = {{0}};
    CHECK(ember_chat_template_init(&t, "gemma", NULL, 0, NULL, NULL, &err) == EMBER_OK);
    char *out = NULL;
    size_t len;
    CHECK(ember_chat_render(&t, late, 2, 0, true, &out, &len, &err) == EMBER_ERR_INVALID_ARG && !out);
    const ember_chat_message bad[] = {{"tool", "x"}};
    CHECK(ember_chat_render(&t, bad, 1, 0, true, &out, &len, &err) == EMBER_ERR_INVALID_ARG);
    CHECKF(strstr(err.msg, "tool") != NULL, "%s", err.msg);
    ember_chat_template_free(&t);
}

/* ---- unknown templates, names, defaults ---------------------------------------------- */

static void names(void)
{
    ember_chat_template t;
    ember_err err = {{0}};
    /* Unknown Jinja: refused, naming its start and the known names. */
    ember_status s = ember_chat_template_init(&t, NULL, ALPACA, strlen(ALPACA), NULL, NULL, &err);
    CHECK(s == EMBER_ERR_UNSUPPORTED);
    CHECKF(strstr(err.msg, "{% for message in messages %}{% if message['role']") && strstr(err.msg, "chatml") &&
               strstr(err.msg, "llama3"),
           "message: %s", err.msg);
    /* Unknown name. */
    s = ember_chat_template_init(&t, "vicuna", NULL, 0, NULL, NULL, &err);
    CHECK(s == EMBER_ERR_UNSUPPORTED);
    CHECKF(strstr(err.msg, "'vicuna'") && strstr(err.msg, "zephyr"), "message: %s", err.msg);
    /* A name overrides the model's template; Jinja given as the name is detected. */
    static const char *const all[] = {"chatml", "llama2", "llama3", "llama3.1", "mistral", "zephyr", "gemma", "phi3"};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        s = ember_chat_template_init(&t, all[i], LLAMA3, strlen(LLAMA3), NULL, NULL, &err);
        CHECKF(s == EMBER_OK && strcmp(ember_chat_template_family(&t), all[i]) == 0, "name %s", all[i]);
        if (s == EMBER_OK) ember_chat_template_free(&t);
    }
    s = ember_chat_template_init(&t, PHI3, LLAMA3, strlen(LLAMA3), NULL, NULL, &err);
    CHECK(s == EMBER_OK && strcmp(ember_chat_template_family(&t), "phi3") == 0);
    if (s == EMBER_OK) ember_chat_template_free(&t);
    /* No template at all: ChatML. */
    s = ember_chat_template_init(&t, NULL, NULL, 0, NULL, NULL, &err);
    CHECK(s == EMBER_OK && strcmp(ember_chat_template_family(&t), "chatml") == 0 && !t.default_system);
    if (s == EMBER_OK) ember_chat_template_free(&t);
    /* Phi-4 uses <|im_start|> with <|im_sep|>: not ChatML, refused. */
    const char phi4[] = "{{'<|im_start|>' + message['role'] + '<|im_sep|>' + message['content'] + '<|im_end|>'}}";
    CHECK(ember_chat_template_init(&t, NULL, phi4, strlen(phi4), NULL, NULL, &err) == EMBER_ERR_UNSUPPORTED);
}

int main(void)
{
    for (size_t i = 0; i < N_CASES; i++) check_family(&CASES[i]);
    details();
    names();
    return tu_finish("test_chat_template");
}
