/* decimal_range.c — decimal ranges as GBNF. The integer part is a range of naturals
 * (digit by digit, same_length); the fraction at the bounds' own integer parts is held
 * digit by digit to the bounds' fraction digits: at or above the lower one, at or below
 * the upper one, or between both. Each builder appends alternatives and says whether
 * there were any (none: that part of the range is empty). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decimal_range.h"

#define MAX_DIGITS 16 /* integer digits of an open range; fraction digits written */

/* ---- naturals ---------------------------------------------------------------------- */

/* The decimal numbers a..b whose digits (a, b: n of them) run alike. */
static void same_length(ember_sbuf *o, const char *a, const char *b, int n)
{
    if (n == 0) return;
    if (a[0] == b[0]) {
        ember_sbuf_printf(o, "\"%c\" ", a[0]);
        same_length(o, a + 1, b + 1, n - 1);
        return;
    }
    bool a_low = strspn(a + 1, "0") == (size_t)(n - 1), b_high = strspn(b + 1, "9") == (size_t)(n - 1);
    char lo = a_low ? a[0] : (char)(a[0] + 1), hi = b_high ? b[0] : (char)(b[0] - 1);
    const char *sep = "";
    ember_sbuf_puts(o, "(");
    if (!a_low) {
        char nines[24];
        memset(nines, '9', (size_t)n - 1), nines[n - 1] = 0;
        ember_sbuf_printf(o, "\"%c\" ", a[0]);
        same_length(o, a + 1, nines, n - 1);
        sep = "| ";
    }
    if (lo <= hi) {
        ember_sbuf_printf(o, "%s[%c-%c]", sep, lo, hi);
        if (n > 1) ember_sbuf_printf(o, " [0-9]{%d}", n - 1);
        ember_sbuf_puts(o, " ");
        sep = "| ";
    }
    if (!b_high) {
        char zeros[24];
        memset(zeros, '0', (size_t)n - 1), zeros[n - 1] = 0;
        ember_sbuf_printf(o, "%s\"%c\" ", sep, b[0]);
        same_length(o, zeros, b + 1, n - 1);
    }
    ember_sbuf_puts(o, ") ");
}

void ember_naturals(ember_sbuf *o, uint64_t lo, uint64_t hi)
{
    char a[24], b[24];
    int la = snprintf(a, sizeof a, "%llu", (unsigned long long)lo);
    int lb = hi == UINT64_MAX ? MAX_DIGITS : snprintf(b, sizeof b, "%llu", (unsigned long long)hi);
    const char *sep = "";
    ember_sbuf_puts(o, "(");
    for (int len = la; len <= lb; len++) {
        char x[24], y[24];
        if (len == la) memcpy(x, a, (size_t)la + 1);
        else memset(x, '0', (size_t)len), x[0] = '1', x[len] = 0;
        if (len == lb && hi != UINT64_MAX) memcpy(y, b, (size_t)lb + 1);
        else memset(y, '9', (size_t)len), y[len] = 0;
        if (hi == UINT64_MAX && len > la) { /* every longer number at once */
            ember_sbuf_printf(o, "%s[1-9] [0-9]{%d,%d} ", sep, len - 1, MAX_DIGITS - 1);
            break;
        }
        ember_sbuf_puts(o, sep);
        same_length(o, x, y, len);
        sep = "| ";
    }
    ember_sbuf_puts(o, ")");
}

/* ---- fractions, digit by digit ----------------------------------------------------- */

#define ANY_MORE "[0-9]{0,15}"
#define NONZERO_MORE "\"0\"{0,15} [1-9] [0-9]{0,15}"

/* Digit strings (one or more) F with 0.F >= 0.d (incl) or > 0.d. */
static bool ge_digits(ember_sbuf *o, const char *d, bool incl)
{
    if (!*d) return ember_sbuf_puts(o, incl ? "[0-9]{1,16}" : NONZERO_MORE), true;
    ember_sbuf_puts(o, "(");
    if (d[0] < '9') ember_sbuf_printf(o, "[%c-9] " ANY_MORE " | ", d[0] + 1);
    ember_sbuf_printf(o, "\"%c\" ", d[0]);
    if (!d[1]) ember_sbuf_puts(o, incl ? ANY_MORE : NONZERO_MORE);
    else ge_digits(o, d + 1, incl);
    ember_sbuf_puts(o, ")");
    return true;
}

/* Digit strings (one or more) F with 0.F <= 0.d (incl) or < 0.d; false: none. */
static bool le_digits(ember_sbuf *o, const char *d, bool incl)
{
    if (!*d) return incl ? (ember_sbuf_puts(o, "\"0\"{1,16}"), true) : false;
    size_t mark = o->len;
    const char *sep = "";
    ember_sbuf_puts(o, "(");
    if (d[0] > '0') ember_sbuf_printf(o, "[0-%c] " ANY_MORE, d[0] - 1), sep = " | ";
    if (d[1]) { /* d[0], then nothing more (below d), or digits at or below the rest */
        ember_sbuf_printf(o, "%s\"%c\" (", sep, d[0]);
        if (le_digits(o, d + 1, incl)) ember_sbuf_puts(o, ")?");
        else ember_sbuf_puts(o, "\"\")");
        sep = " | ";
    } else if (incl) { /* d[0] and zeros: d itself */
        ember_sbuf_printf(o, "%s\"%c\" \"0\"{0,15}", sep, d[0]), sep = " | ";
    }
    if (!*sep) return o->len = mark, o->s[mark] = 0, false;
    ember_sbuf_puts(o, ")");
    return true;
}

/* Digit strings (one or more) F with x <= 0.F <= y (each bound in or out), y > 0. */
static bool between_digits(ember_sbuf *o, const char *x, bool xi, const char *y, bool yi)
{
    char x0 = *x ? *x : '0', y0 = *y;
    const char *xr = *x ? x + 1 : x, *yr = y + 1;
    size_t mark = o->len;
    const char *sep = "";
    ember_sbuf_puts(o, "(");
    if (x0 == y0) {
        ember_sbuf_printf(o, "\"%c\" ", x0);
        bool end = !*xr && xi && *yr; /* F ends here: equal to x, below y */
        if (!*yr) { /* y ends here: F is y (and zeros) when y is in */
            if (*xr || !yi || (!*xr && !xi)) return o->len = mark, o->s[mark] = 0, false;
            ember_sbuf_puts(o, "\"0\"{0,15})");
            return true;
        }
        ember_sbuf_puts(o, "(");
        if (!between_digits(o, xr, xi, yr, yi) && !end) return o->len = mark, o->s[mark] = 0, false;
        ember_sbuf_puts(o, end ? ")?)" : "))");
        return true;
    }
    ember_sbuf_printf(o, "\"%c\" ", x0); /* x0: at or above the rest of x */
    if (!*xr) ember_sbuf_puts(o, xi ? ANY_MORE : NONZERO_MORE);
    else ge_digits(o, xr, xi);
    sep = " | ";
    if (x0 + 1 <= y0 - 1) ember_sbuf_printf(o, "%s[%c-%c] " ANY_MORE, sep, x0 + 1, y0 - 1);
    if (*yr) { /* y0: nothing more, or at or below the rest of y */
        ember_sbuf_printf(o, "%s\"%c\" (", sep, y0);
        if (le_digits(o, yr, yi)) ember_sbuf_puts(o, ")?");
        else ember_sbuf_puts(o, "\"\")");
    } else if (yi) {
        ember_sbuf_printf(o, "%s\"%c\" \"0\"{0,15}", sep, y0);
    }
    ember_sbuf_puts(o, ")");
    return true;
}

/* The fraction (absent, or "." and digits) at the integer part of the bounds: at or
 * above lo's digits (lo NULL: 0 inclusive), at or below hi's (NULL: open). */
static bool fraction(ember_sbuf *o, const ember_decimal *lo, const ember_decimal *hi)
{
    const char *x = lo ? lo->frac : "";
    bool xi = lo ? lo->inclusive : true, absent = !*x && xi && (!hi || *hi->frac || hi->inclusive);
    ember_sbuf d = {0};
    bool digits = !hi ? ge_digits(&d, x, xi) : !*hi->frac ? le_digits(&d, "", hi->inclusive) && !*x && xi
                                                    : lo ? between_digits(&d, x, xi, hi->frac, hi->inclusive)
                                                         : le_digits(&d, hi->frac, hi->inclusive);
    if (digits) ember_sbuf_printf(o, absent ? "(\".\" %s)?" : "\".\" %s", d.s);
    else if (absent) ember_sbuf_puts(o, "\"\"");
    free(d.s);
    return digits || absent;
}

/* ---- magnitudes -------------------------------------------------------------------- */

static int compare(const ember_decimal *a, const ember_decimal *b)
{
    if (a->ipart != b->ipart) return a->ipart < b->ipart ? -1 : 1;
    int c = strcmp(a->frac, b->frac); /* no trailing zeros: as decimals, shorter is below */
    return c < 0 ? -1 : c > 0;
}

/* Magnitudes m with lo <= m <= hi (each in or out; lo NULL: 0 inclusive, hi NULL: open). */
static bool magnitudes(ember_sbuf *o, const ember_decimal *lo, const ember_decimal *hi)
{
    uint64_t a = lo ? lo->ipart : 0;
    const char *sep = "";
    ember_sbuf_puts(o, "(");
    if (!hi || hi->ipart > a + 1) { /* whole numbers strictly between: any fraction */
        ember_sbuf_puts(o, "(");
        ember_naturals(o, a + 1, hi ? hi->ipart - 1 : UINT64_MAX);
        ember_sbuf_puts(o, " (\".\" [0-9]{1,16})?)");
        sep = " | ";
    }
    ember_sbuf f = {0};
    if (fraction(&f, lo, hi && hi->ipart == a ? hi : NULL)) /* at lo's integer part */
        ember_sbuf_printf(o, "%s(\"%llu\" %s)", sep, (unsigned long long)a, f.s), sep = " | ";
    ember_sbuf_clear(&f);
    ember_decimal zero = {.inclusive = true};
    if (hi && hi->ipart > a && fraction(&f, &zero, hi)) /* at hi's integer part */
        ember_sbuf_printf(o, "%s(\"%llu\" %s)", sep, (unsigned long long)hi->ipart, f.s), sep = " | ";
    free(f.s);
    ember_sbuf_puts(o, ")");
    return *sep != 0;
}

bool ember_decimal_range(ember_sbuf *out, const ember_decimal *lo, const ember_decimal *hi)
{
    ember_decimal zero = {.inclusive = true}, mlo, mhi;
    const char *sep = "";
    ember_sbuf_puts(out, "(");
    if (!hi || !hi->neg) { /* v >= 0: lo's magnitude (or 0), up to hi */
        const ember_decimal *l = lo && !lo->neg ? lo : &zero;
        if (!hi || compare(l, hi) < 0 || (compare(l, hi) == 0 && l->inclusive && hi->inclusive))
            if (magnitudes(out, l, hi)) sep = " | ";
    }
    if (!lo || lo->neg) { /* v < 0: "-" and a magnitude from -hi (or above 0) up to -lo */
        bool open_zero = !hi || !hi->neg;
        if (!open_zero) mlo = *hi, mlo.neg = false;
        else mlo = (ember_decimal){.inclusive = false};
        if (lo) mhi = *lo, mhi.neg = false;
        bool some = !lo || compare(&mlo, &mhi) < 0 || (compare(&mlo, &mhi) == 0 && mlo.inclusive && mhi.inclusive);
        ember_sbuf m = {0};
        if (some && magnitudes(&m, &mlo, lo ? &mhi : NULL)) ember_sbuf_printf(out, "%s\"-\" %s", sep, m.s), sep = " | ";
        free(m.s);
    }
    ember_sbuf_puts(out, ")");
    return *sep != 0;
}

bool ember_decimal_parse(const char *text, ember_decimal *d)
{
    char digits[64];
    int n = 0, point = -1, exp = 0;
    const char *p = text;
    *d = (ember_decimal){.neg = *p == '-', .inclusive = true};
    p += *p == '-';
    for (; (*p >= '0' && *p <= '9') || *p == '.'; p++) {
        if (*p == '.') point = n;
        else if (n < 60) digits[n++] = *p;
        else return false;
    }
    if (*p == 'e' || *p == 'E') exp = atoi(p + 1);
    if (point < 0) point = n;
    point += exp;
    if (point > 15 || n - point > 31 || exp < -40) return false;
    for (int i = 0; i < point; i++) d->ipart = d->ipart * 10 + (uint64_t)(i < n ? digits[i] - '0' : 0);
    int k = 0;
    for (int i = point; i < n; i++) d->frac[k++] = i < 0 ? '0' : digits[i];
    while (k > 0 && d->frac[k - 1] == '0') k--;
    d->frac[k] = 0;
    if (!d->ipart && !k) d->neg = false; /* -0 is 0 */
    return true;
}
