/* test_chat_text.c — the demo's pure text code, without a window: UTF-8 stepping, word
 * wrapping, and the input line's editing and history. Registered by demo/CMakeLists.txt
 * (label unit). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_text.h"
#include "input_line.h"
#include "test_check.h"

/* Every code point 10 px wide, so wrap widths are counts of characters. */
static int ten(void *ctx, uint32_t cp) { return 10; }

static void test_utf8(void)
{
    const char *s = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80z"; /* a é € 😀 z */
    size_t len = strlen(s), next;
    CHECK(utf8_next(s, len, 0) == 1);
    CHECK(utf8_next(s, len, 1) == 3);
    CHECK(utf8_next(s, len, 3) == 6);
    CHECK(utf8_next(s, len, 6) == 10);
    CHECK(utf8_prev(s, 10) == 6 && utf8_prev(s, 6) == 3 && utf8_prev(s, 3) == 1 && utf8_prev(s, 1) == 0);
    CHECK(utf8_decode(s, len, 1, &next) == 0xE9 && next == 3);
    CHECK(utf8_decode(s, len, 3, &next) == 0x20AC && next == 6);
    CHECK(utf8_decode(s, len, 6, &next) == 0x1F600 && next == 10);
    /* a truncated sequence and a stray continuation byte decode as U+FFFD, one byte each */
    CHECK(utf8_decode("\xE2\x82", 2, 0, &next) == 0xFFFD && next == 1);
    CHECK(utf8_decode("\x80", 1, 0, &next) == 0xFFFD && next == 1);
    char out[16];
    size_t n = text_sanitize(out, "a\tb\rc\n\x01", 7);
    CHECK(n == 5 && memcmp(out, "a bc\n", 5) == 0);
}

static void test_wrap(void)
{
    wrap_line *lines = NULL;
    int cap = 0;
    const char *s = "the quick brown fox";
    int n = wrap_text(s, strlen(s), 100, ten, NULL, &lines, &cap); /* 10 characters a line */
    CHECK(n == 2);
    CHECK(lines[0].start == 0 && lines[0].len == 9);      /* "the quick" */
    CHECK(lines[1].start == 10 && lines[1].len == 9);     /* "brown fox" */
    CHECK(lines[0].width == 90);
    s = "abcdefghijklmnopqrstuvwxyz"; /* one long word breaks inside */
    n = wrap_text(s, strlen(s), 100, ten, NULL, &lines, &cap);
    CHECK(n == 3 && lines[0].len == 10 && lines[1].len == 10 && lines[2].len == 6);
    s = "one\n\ntwo";
    n = wrap_text(s, strlen(s), 100, ten, NULL, &lines, &cap);
    CHECK(n == 3 && lines[1].len == 0 && lines[2].start == 5);
    n = wrap_text("", 0, 100, ten, NULL, &lines, &cap);
    CHECK(n == 1 && lines[0].len == 0);
    s = "\xC3\xA9\xC3\xA9\xC3\xA9 \xC3\xA9\xC3\xA9"; /* é characters are 2 bytes, one width */
    n = wrap_text(s, strlen(s), 40, ten, NULL, &lines, &cap);
    CHECK(n == 2 && lines[0].len == 6 && lines[1].start == 7 && lines[1].len == 4);
    free(lines);
}

static void test_input(void)
{
    input_line in;
    CHECK(input_init(&in) == 0);
    input_insert(&in, "h\xC3\xA9llo");                  /* héllo */
    CHECK(strcmp(in.buf, "h\xC3\xA9llo") == 0 && in.cursor == 6);
    input_apply(&in, EDIT_HOME);
    input_apply(&in, EDIT_RIGHT);
    CHECK(in.cursor == 1);
    input_apply(&in, EDIT_DELETE);                       /* removes é, both bytes */
    CHECK(strcmp(in.buf, "hllo") == 0);
    input_apply(&in, EDIT_END);
    input_insert(&in, "\xE2\x82\xAC");                   /* € */
    input_apply(&in, EDIT_BACKSPACE);
    CHECK(strcmp(in.buf, "hllo") == 0 && in.cursor == 4);
    input_apply(&in, EDIT_LEFT);
    input_insert(&in, "a\tb\nc");                        /* tab, newline become spaces */
    CHECK(strcmp(in.buf, "hlla b co") == 0);
    char *sent = input_take(&in);
    CHECK(sent && in.len == 0 && in.cursor == 0);
    free(sent);
    input_insert(&in, "second");
    free(input_take(&in));
    input_insert(&in, "draft");
    input_apply(&in, EDIT_HISTORY_UP);
    CHECK(strcmp(in.buf, "second") == 0);
    input_apply(&in, EDIT_HISTORY_UP);
    CHECK(strncmp(in.buf, "hll", 3) == 0);
    input_apply(&in, EDIT_HISTORY_UP);                   /* stays at the oldest */
    CHECK(strncmp(in.buf, "hll", 3) == 0);
    input_apply(&in, EDIT_HISTORY_DOWN);
    input_apply(&in, EDIT_HISTORY_DOWN);
    CHECK(strcmp(in.buf, "draft") == 0);                 /* the line being typed comes back */
    input_apply(&in, EDIT_HOME);
    input_apply(&in, EDIT_LEFT);                         /* at the start: nothing */
    input_apply(&in, EDIT_BACKSPACE);
    CHECK(in.cursor == 0 && strcmp(in.buf, "draft") == 0);
    free(input_take(&in));
    input_insert(&in, "   ");
    CHECK(input_take(&in) == NULL);                      /* blank lines are not sent */
    input_free(&in);
}

int main(void)
{
    test_utf8();
    test_wrap();
    test_input();
    printf("test_chat_text: %s\n", failures ? "FAILED" : "all passed");
    return failures ? 1 : 0;
}
