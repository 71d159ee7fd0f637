/* png.c — PNG = signature, IHDR, one IDAT of zlib data, IEND (png.h). The zlib stream is
 * one deflate block with the fixed Huffman codes (RFC 1951, 3.2.6); matches are found
 * with a one-entry hash table of 3-byte strings, which catches the runs of one colour
 * and the rows that repeat the row above. */
#include "png.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- CRC-32 and Adler-32 ---------------------------------------------------------- */

typedef struct crc_table {
    uint32_t t[256];
} crc_table;

static void crc_init(crc_table *ct)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        ct->t[i] = c;
    }
}

static uint32_t crc_update(const crc_table *ct, uint32_t crc, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) crc = ct->t[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
    return crc;
}

static uint32_t adler32(const uint8_t *p, size_t n)
{
    uint32_t a = 1, b = 0;
    for (size_t i = 0; i < n; i++) {
        a = (a + p[i]) % 65521;
        b = (b + a) % 65521;
    }
    return b << 16 | a;
}

/* ---- a bit writer ------------------------------------------------------------------ */

typedef struct bits {
    uint8_t *buf;
    size_t n, cap;
    uint32_t acc;
    int n_acc;
    int oom;
} bits;

static void put_byte(bits *b, uint8_t v)
{
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 65536;
        uint8_t *p = realloc(b->buf, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->buf = p, b->cap = cap;
    }
    b->buf[b->n++] = v;
}

/* n bits of v, least significant first (how deflate packs everything but codes). */
static void put_bits(bits *b, uint32_t v, int n)
{
    b->acc |= v << b->n_acc;
    b->n_acc += n;
    while (b->n_acc >= 8) {
        put_byte(b, (uint8_t)b->acc);
        b->acc >>= 8;
        b->n_acc -= 8;
    }
}

/* A Huffman code: written most significant bit first. */
static void put_code(bits *b, uint32_t code, int n)
{
    uint32_t r = 0;
    for (int i = 0; i < n; i++) r |= ((code >> i) & 1) << (n - 1 - i);
    put_bits(b, r, n);
}

static void flush_bits(bits *b)
{
    if (b->n_acc > 0) put_byte(b, (uint8_t)b->acc);
    b->acc = 0, b->n_acc = 0;
}

/* ---- fixed-Huffman deflate ----------------------------------------------------------- */

static void put_literal(bits *b, unsigned v)
{
    if (v < 144) put_code(b, 0x30 + v, 8);
    else if (v < 256) put_code(b, 0x190 + (v - 144), 9);
    else if (v < 280) put_code(b, v - 256, 7);
    else put_code(b, 0xC0 + (v - 280), 8);
}

static const uint16_t len_base[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                                      31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
static const uint8_t len_extra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                      2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
static const uint16_t dist_base[30] = {1,    2,    3,    4,    5,    7,     9,     13,    17,  25,
                                       33,   49,   65,   97,   129,  193,   257,   385,   513, 769,
                                       1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
static const uint8_t dist_extra[30] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6,
                                       6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

static void put_match(bits *b, unsigned len, unsigned dist)
{
    int l = 28;
    while (len_base[l] > len) l--;
    put_literal(b, 257 + (unsigned)l);
    put_bits(b, len - len_base[l], len_extra[l]);
    int d = 29;
    while (dist_base[d] > dist) d--;
    put_code(b, (uint32_t)d, 5);
    put_bits(b, dist - dist_base[d], dist_extra[d]);
}

#define HASH_BITS 15
#define WINDOW 32768
#define MAX_MATCH 258

static uint32_t hash3(const uint8_t *p) { return ((p[0] << 10) ^ (p[1] << 5) ^ p[2]) & ((1u << HASH_BITS) - 1); }

/* The zlib stream of data[0..n): header, one fixed-Huffman block, Adler-32. */
static int zlib_compress(const uint8_t *data, size_t n, bits *b)
{
    int32_t *head = malloc(sizeof(int32_t) << HASH_BITS);
    if (!head) return -1;
    memset(head, 0xFF, sizeof(int32_t) << HASH_BITS);
    put_byte(b, 0x78), put_byte(b, 0x01);
    put_bits(b, 1, 1); /* BFINAL */
    put_bits(b, 1, 2); /* BTYPE = fixed Huffman */
    size_t i = 0;
    while (i < n) {
        unsigned best = 0;
        size_t cand = 0;
        if (i + 3 <= n) {
            uint32_t h = hash3(data + i);
            int32_t c = head[h];
            head[h] = (int32_t)i;
            if (c >= 0 && i - (size_t)c <= WINDOW) {
                size_t max = n - i < MAX_MATCH ? n - i : MAX_MATCH;
                while (best < max && data[c + best] == data[i + best]) best++;
                cand = (size_t)c;
            }
        }
        if (best >= 3) {
            put_match(b, best, (unsigned)(i - cand));
            for (size_t k = i + 1; k < i + best && k + 3 <= n; k++) head[hash3(data + k)] = (int32_t)k;
            i += best;
        } else {
            put_literal(b, data[i++]);
        }
    }
    put_literal(b, 256); /* end of block */
    flush_bits(b);
    uint32_t a = adler32(data, n);
    for (int s = 24; s >= 0; s -= 8) put_byte(b, (uint8_t)(a >> s));
    free(head);
    return b->oom ? -1 : 0;
}

/* ---- the file ------------------------------------------------------------------------ */

static void be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

static int write_chunk(FILE *f, const crc_table *ct, const char *type, const uint8_t *data, uint32_t n)
{
    uint8_t hdr[8], crc_bytes[4];
    be32(hdr, n);
    memcpy(hdr + 4, type, 4);
    uint32_t crc = crc_update(ct, 0xFFFFFFFFu, hdr + 4, 4);
    crc = crc_update(ct, crc, data, n) ^ 0xFFFFFFFFu;
    be32(crc_bytes, crc);
    return fwrite(hdr, 1, 8, f) == 8 && (n == 0 || fwrite(data, 1, n, f) == n) && fwrite(crc_bytes, 1, 4, f) == 4;
}

/* The filtered image data: each row is a filter byte (0 = none) and its pixels. */
static uint8_t *raw_rows(const uint8_t *rgb, int w, int h, int stride, size_t *n)
{
    size_t row = 1 + (size_t)w * 3;
    uint8_t *raw = malloc(row * (size_t)h);
    if (!raw) return NULL;
    for (int y = 0; y < h; y++) {
        raw[y * row] = 0;
        memcpy(raw + y * row + 1, rgb + (size_t)y * (size_t)stride, (size_t)w * 3);
    }
    *n = row * (size_t)h;
    return raw;
}

int png_write_rgb(const char *path, const uint8_t *rgb, int width, int height, int stride, char *err, size_t err_cap)
{
    size_t n = 0;
    uint8_t *raw = raw_rows(rgb, width, height, stride, &n);
    bits z = {0};
    if (!raw || zlib_compress(raw, n, &z) != 0) {
        free(raw);
        free(z.buf);
        snprintf(err, err_cap, "out of memory encoding %s", path);
        return -1;
    }
    free(raw);
    static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    uint8_t ihdr[13];
    be32(ihdr, (uint32_t)width);
    be32(ihdr + 4, (uint32_t)height);
    ihdr[8] = 8;  /* bits per channel */
    ihdr[9] = 2;  /* RGB */
    ihdr[10] = ihdr[11] = ihdr[12] = 0; /* deflate, adaptive filters, no interlace */
    crc_table ct;
    crc_init(&ct);
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(sig, 1, 8, f) == 8 && write_chunk(f, &ct, "IHDR", ihdr, 13) &&
             write_chunk(f, &ct, "IDAT", z.buf, (uint32_t)z.n) && write_chunk(f, &ct, "IEND", NULL, 0);
    if (f && fclose(f) != 0) ok = 0;
    if (!ok) snprintf(err, err_cap, "cannot write %s: %s", path, strerror(errno));
    free(z.buf);
    return ok ? 0 : -1;
}
