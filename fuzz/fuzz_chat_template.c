/* fuzz_chat_template.c — chat template detection (the Jinja source, or a name) and the
 * renderer, on arbitrary templates, BOS/EOS texts and conversations.
 *
 * Input: byte 0: bit 0 add_generation_prompt, bit 1 the first field is a name (a C
 * string: a known name, or Jinja when it holds "{{" or "{%") rather than Jinja source
 * given with its length; byte 1 picks `from`. Then fields separated by NUL bytes: the
 * template, bos, eos, then messages, each a role byte (0 system, 1 user, 2 assistant,
 * 3 developer, else missing) and its content.
 *
 * Checks: a refusal has a message; a rendering is a C string of the length returned;
 * rendering from message k gives the tail of the whole rendering (chat.c's prompts
 * extend one another only then); ember_chat_render_end gives a string. */
#include <string.h>

#include "engine/chat/chat_template.h"
#include "util.h"

#define MAX_FIELDS 40

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    uint8_t flags = data[0], from_byte = data[1];
    /* A NUL-terminated copy, cut into fields at its NUL bytes. */
    char *buf = malloc(size - 2 + 1);
    FUZZ_CHECK(buf != NULL, "out of memory");
    memcpy(buf, data + 2, size - 2);
    buf[size - 2] = 0;
    const char *field[MAX_FIELDS];
    size_t flen[MAX_FIELDS], nf = 0;
    for (size_t i = 0, start = 0; i <= size - 2 && nf < MAX_FIELDS; i++) {
        if (i == size - 2 || buf[i] == 0) {
            field[nf] = buf + start, flen[nf++] = i - start;
            start = i + 1;
        }
    }
    static const char *const ROLES[] = {"system", "user", "assistant", "developer"};
    ember_chat_message msgs[MAX_FIELDS];
    size_t n = 0;
    for (size_t i = 3; i < nf; i++) {
        uint8_t r = flen[i] ? (uint8_t)field[i][0] : 0xff;
        msgs[n].role = r < 4 ? ROLES[r] : NULL;
        msgs[n++].content = flen[i] ? field[i] + 1 : "";
    }
    const char *bos = nf > 1 ? field[1] : NULL, *eos = nf > 2 ? field[2] : NULL;

    ember_chat_template t;
    ember_err err = {{0}};
    ember_status st = flags & 2 ? ember_chat_template_init(&t, field[0], NULL, 0, bos, eos, &err)
                                : ember_chat_template_init(&t, NULL, field[0], flen[0], bos, eos, &err);
    if (st != EMBER_OK) {
        FUZZ_CHECK(err.msg[0], "refused without a message");
        free(buf);
        return 0;
    }
    FUZZ_CHECK(strcmp(ember_chat_template_family(&t), "?") != 0, "no family");
    char *end = ember_chat_render_end(&t);
    FUZZ_CHECK(end != NULL, "no end-of-turn text"); /* "" when eos is "" (Mistral's end is eos alone) */
    free(end);

    bool gen = flags & 1;
    size_t from = from_byte % (n + 1), all_len = 0, tail_len = 0;
    char *all = NULL, *tail = NULL;
    ember_status s_all = ember_chat_render(&t, msgs, n, 0, gen, &all, &all_len, &err);
    if (s_all == EMBER_OK) FUZZ_CHECK(strlen(all) == all_len, "length %zu, string %zu", all_len, strlen(all));
    else FUZZ_CHECK(!all && err.msg[0], "refused without a message");
    ember_status s_tail = ember_chat_render(&t, msgs, n, from, gen, &tail, &tail_len, &err);
    if (s_tail == EMBER_OK) {
        FUZZ_CHECK(s_all == EMBER_OK, "renders from %zu but not whole", from);
        FUZZ_CHECK(strlen(tail) == tail_len && tail_len <= all_len &&
                       memcmp(all + all_len - tail_len, tail, tail_len) == 0,
                   "from %zu: not the tail of the whole rendering", from);
    } else {
        FUZZ_CHECK(!tail && err.msg[0], "refused without a message");
    }
    free(all);
    free(tail);
    ember_chat_template_free(&t);
    free(buf);
    return 0;
}
