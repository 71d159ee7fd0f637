/* detok.c — streaming detokenization: token ids in, valid UTF-8 out, piece by piece.
 *
 * A token may end inside a character: SentencePiece byte tokens (<0xE4>) and GPT-2
 * byte-level pieces split multi-byte characters (CJK, emoji) across tokens. The
 * decoder holds back the bytes of an unfinished character (at most 3) until a later
 * token completes it, so every chunk it returns is valid UTF-8 and the chunks joined
 * are the text. Bytes that can never form a character (a stray continuation byte, an
 * overlong form, a surrogate, a sequence cut short by a byte that cannot continue it)
 * come out as U+FFFD, one per maximal ill-formed subpart as Unicode recommends; so do
 * the held-back bytes on ember_detok_flush. */
#include "common/alloc.h"
#include "detok.h"

#include <stdlib.h>
#include <string.h>

#include "tokenizer.h"
#include "utf8.h"
#include "vocab.h"

#define REPLACEMENT "\xef\xbf\xbd" /* U+FFFD */

void ember_detok_init(ember_detok *d)
{
    memset(d, 0, sizeof *d);
}

/* Emits every complete character (or U+FFFD) at the front of d->pending; keeps a valid
 * unfinished tail unless final. */
static size_t drain(ember_detok *d, char *buf, size_t cap, size_t o, bool final)
{
    size_t i = 0;
    while (i < d->n_pending) {
        size_t len = 1;
        uint32_t cp;
        ember_utf8_result r = ember_utf8_decode(d->pending + i, d->n_pending - i, &len, &cp);
        if (r == EMBER_UTF8_TRUNCATED && !final)
            break;
        if (r == EMBER_UTF8_OK)
            o = ember_tok_put(buf, cap, o, (const char *)d->pending + i, len);
        else
            o = ember_tok_put(buf, cap, o, REPLACEMENT, 3);
        i += len;
    }
    memmove(d->pending, d->pending + i, d->n_pending - i);
    d->n_pending = (uint8_t)(d->n_pending - i);
    return o;
}

/* Feeds bytes; the pending buffer never overflows because a held-back tail is at most 3
 * bytes, and a 4th byte always completes or breaks it. */
static size_t feed(ember_detok *d, const char *s, size_t n, char *buf, size_t cap, size_t o)
{
    for (size_t i = 0; i < n; i++) {
        if (d->n_pending == 0 && (uint8_t)s[i] < 0x80) { /* the common case, ASCII */
            o = ember_tok_put(buf, cap, o, s + i, 1);
            continue;
        }
        d->pending[d->n_pending++] = (uint8_t)s[i];
        o = drain(d, buf, cap, o, false);
    }
    return o;
}

size_t ember_detok_push(ember_detok *d, const ember_tokenizer *t, uint32_t id, char *buf,
                        size_t cap)
{
    if (!buf)
        cap = 0;
    char small[512], *piece = small;
    size_t (*bytes)(const ember_tokenizer *, uint32_t, char *, size_t) =
        d->special ? ember_tokenizer_text : ember_tokenizer_decode;
    size_t n = bytes(t, id, NULL, 0);
    if (n > sizeof small && !(piece = ember_malloc(n)))
        return 0; /* documented: a long piece is dropped when memory runs out */
    bytes(t, id, piece, n);
    ember_detok next = *d; /* committed only when the result fits */
    size_t o = feed(&next, piece, n, buf, cap, 0);
    if (o <= cap)
        *d = next;
    if (piece != small)
        ember_free(piece);
    return o;
}

size_t ember_detok_flush(ember_detok *d, char *buf, size_t cap)
{
    if (!buf)
        cap = 0;
    ember_detok next = *d;
    size_t o = drain(&next, buf, cap, 0, true);
    if (o <= cap)
        *d = next;
    return o;
}

size_t ember_detok_max(const ember_tokenizer *t)
{
    size_t longest = t->max_piece > 3 ? t->max_piece : 3; /* SPM <unk> decodes to U+2585 */
    /* every byte of the piece and of the held-back tail may become U+FFFD */
    return 3 * (longest + 3);
}
