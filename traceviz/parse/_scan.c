/*
 * traceviz.parse._scan: an optional, validating scanner from Chrome/Kineto trace JSON bytes to
 * columns (see the module docstring below and _scan.pyi for the interface).
 *
 * It reads the events array of a trace one batch at a time and, for each event and each field
 * the caller names (top-level keys of the event, then keys of its "args" object), writes a kind
 * byte and an 8-byte value. Strings and raw JSON texts become codes into two lists of distinct
 * values, so a Python object is made once per distinct value, never per event.
 *
 * Its answer must equal what msgspec's decode into traceviz.parse.events.Event gives; whatever
 * it is not sure of raises Unsupported and the caller parses the file the Python way. The buffer
 * is not NUL-terminated: every read is checked against s->len.
 *
 * The GIL is released while a batch is scanned, so another thread's Python (or a second
 * scanner) runs meanwhile: nothing in the scanning code touches a Python object. Distinct
 * strings get their codes at once but their Python objects when the batch is handed over
 * (flush_new_values); a failure is recorded (fail, no_memory) and raised once the GIL is back
 * (raise_recorded); memory comes from the PyMem_Raw allocators; the batch buffers (bytes
 * objects) are made or grown with the GIL held, between stretches of scanning.
 *
 * C99 against the CPython C API only; no global state but the Unsupported exception type and
 * the "C" locale numbers are read in.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__APPLE__) || defined(__FreeBSD__)
#include <xlocale.h>
#endif

/* strtod in the "C" locale needs no GIL (PyOS_string_to_double does); both round correctly,
 * so they agree on every number. Elsewhere the GIL is taken back for each slow-path float. */
#if defined(__GLIBC__) || defined(__APPLE__) || defined(__FreeBSD__)
#define SCAN_HAVE_STRTOD_L 1
#endif

enum { K_ABSENT = 0, K_NULL = 1, K_INT = 2, K_FLOAT = 3, K_STR = 4, K_RAW = 5 };
enum { S_FIRST = 0, S_NEXT = 1, S_DONE = 2, S_FAILED = 3 };

#define MAX_DEPTH 256
#define MAX_KEYS 1024
#define FIRST_CAP 131072 /* events a batch first has room for (9 bytes a field each) */

static PyObject *Unsupported; /* the exception type, created at module init */
#ifdef SCAN_HAVE_STRTOD_L
static locale_t c_locale; /* the "C" locale, made at module init */
#endif

/* ---------------------------------------------------------------------------------------- */
/* Intern tables: distinct byte strings -> codes, open addressing over (hash, bytes).        */

typedef struct {
    uint64_t hash;
    const char *key; /* the value's bytes, a copy the table owns (by_code[code].key) */
    Py_ssize_t len;
    Py_ssize_t code; /* -1: empty slot */
} Slot;

typedef struct {
    const char *key;
    Py_ssize_t len;
} Entry;

typedef struct {
    Slot *slots;
    Py_ssize_t cap; /* a power of two, 0 before the first insert */
    Py_ssize_t used;
    Entry *by_code; /* the bytes of value `code`, in code order */
    Py_ssize_t by_code_cap;
} Table;

/* Hash of n bytes at p, 8 bytes at a time; any 64-bit mix does, it only spreads slots. */
static inline uint64_t hash_bytes(const unsigned char *p, Py_ssize_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)n;
    uint64_t w = 0;
    if (n >= 8) {
        const unsigned char *last = p + n - 8; /* the last word overlaps the one before */
        for (; p < last; p += 8) {
            memcpy(&w, p, 8);
            h = (h ^ w) * 0xBF58476D1CE4E5B9ULL;
            h ^= h >> 31;
        }
        memcpy(&w, last, 8);
    } else {
        for (Py_ssize_t i = 0; i < n; i++)
            w |= (uint64_t)p[i] << (8 * i);
    }
    h = (h ^ w) * 0x94D049BB133111EBULL;
    h ^= h >> 29;
    return h;
}

/* Whether the n bytes at a and at b are equal (8 at a time; short keys without a call). */
static inline int bytes_equal(const unsigned char *a, const unsigned char *b, Py_ssize_t n)
{
    uint64_t u, v;
    if (n >= 8) {
        for (Py_ssize_t i = 0; i + 8 <= n; i += 8) {
            memcpy(&u, a + i, 8);
            memcpy(&v, b + i, 8);
            if (u != v)
                return 0;
        }
        memcpy(&u, a + n - 8, 8); /* the last 8 bytes, overlapping what was compared */
        memcpy(&v, b + n - 8, 8);
        return u == v;
    }
    if (n >= 4) { /* the first 4 and the last 4 bytes, overlapping */
        uint32_t x, y, x2, y2;
        memcpy(&x, a, 4);
        memcpy(&y, b, 4);
        memcpy(&x2, a + n - 4, 4);
        memcpy(&y2, b + n - 4, 4);
        return x == y && x2 == y2;
    }
    if (n >= 2) {
        uint16_t x, y, x2, y2;
        memcpy(&x, a, 2);
        memcpy(&y, b, 2);
        memcpy(&x2, a + n - 2, 2);
        memcpy(&y2, b + n - 2, 2);
        return x == y && x2 == y2;
    }
    return n == 0 || a[0] == b[0];
}

/* Frees the table's slots and its copies of the values' bytes (it holds no objects). */
static void table_free(Table *t)
{
    for (Py_ssize_t c = 0; c < t->used; c++)
        PyMem_RawFree((void *)t->by_code[c].key);
    PyMem_RawFree(t->slots);
    PyMem_RawFree(t->by_code);
    t->slots = NULL;
    t->by_code = NULL;
    t->cap = t->used = t->by_code_cap = 0;
}

/* Doubles the slot array (or makes the first one); 0, or -1 when out of memory (nothing
 * changed). Needs no GIL. */
static int table_grow(Table *t)
{
    Py_ssize_t ncap = t->cap ? t->cap * 2 : 256;
    Slot *ns = PyMem_RawCalloc((size_t)ncap, sizeof(Slot));
    if (ns == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < ncap; i++)
        ns[i].code = -1;
    for (Py_ssize_t i = 0; i < t->cap; i++) {
        Slot *o = &t->slots[i];
        if (o->code < 0)
            continue;
        Py_ssize_t k = (Py_ssize_t)(o->hash & (uint64_t)(ncap - 1));
        while (ns[k].code >= 0)
            k = (k + 1) & (ncap - 1);
        ns[k] = *o;
    }
    PyMem_RawFree(t->slots);
    t->slots = ns;
    t->cap = ncap;
    return 0;
}

/*
 * The code of the n bytes at p in table t, giving them the next code (and a copy of their
 * bytes) when new; their Python object is made later, by flush_new_values. Returns the
 * code, or -1 when out of memory (the table unchanged). Needs no GIL.
 */
static Py_ssize_t intern(Table *t, const unsigned char *p, Py_ssize_t n)
{
    if (t->cap == 0 && table_grow(t) < 0)
        return -1;
    uint64_t h = hash_bytes(p, n);
    Py_ssize_t mask = t->cap - 1;
    Py_ssize_t k = (Py_ssize_t)(h & (uint64_t)mask);
    for (;;) {
        Slot *sl = &t->slots[k];
        if (sl->code < 0)
            break;
        if (sl->hash == h && sl->len == n && bytes_equal((const unsigned char *)sl->key, p, n))
            return sl->code;
        k = (k + 1) & mask;
    }
    /* New value: room for its entry and a copy of its bytes, then the free slot found above
     * (the table grows after, so a failure leaves it as it was). */
    Py_ssize_t code = t->used;
    if (code == t->by_code_cap) {
        Py_ssize_t ncap = t->by_code_cap ? t->by_code_cap * 2 : 256;
        Entry *ne = PyMem_RawRealloc(t->by_code, (size_t)ncap * sizeof(Entry));
        if (ne == NULL)
            return -1;
        t->by_code = ne;
        t->by_code_cap = ncap;
    }
    char *key = PyMem_RawMalloc((size_t)(n ? n : 1));
    if (key == NULL)
        return -1;
    memcpy(key, p, (size_t)n);
    t->by_code[code].key = key;
    t->by_code[code].len = n;
    Slot *sl = &t->slots[k];
    sl->hash = h;
    sl->key = key;
    sl->len = n;
    sl->code = code;
    if (++t->used * 2 > t->cap && table_grow(t) < 0)
        return -1; /* the value is in: the next insert grows it */
    return code;
}

/*
 * Appends to the list `values` the objects of the table's codes it lacks (str decoded from
 * UTF-8 when as_str, else bytes), so that values[code] is the value of every code given.
 * The GIL must be held. 0, or -1 with an exception.
 */
static int table_flush(Table *t, PyObject *values, int as_str)
{
    for (Py_ssize_t c = PyList_GET_SIZE(values); c < t->used; c++) {
        const Entry *e = &t->by_code[c];
        PyObject *obj = as_str ? PyUnicode_DecodeUTF8(e->key, e->len, "strict")
                               : PyBytes_FromStringAndSize(e->key, e->len);
        if (obj == NULL)
            return -1;
        int rc = PyList_Append(values, obj);
        Py_DECREF(obj);
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Key tables: the field keys, matched by length first, then bytes.                           */

typedef struct {
    char *text;
    Py_ssize_t len;
    int field; /* j */
} Key;

typedef struct {
    Key *keys; /* sorted by length once complete (keyset_index) */
    int n;
    Py_ssize_t maxlen;
    int *by_len; /* keys[by_len[L] .. by_len[L+1]) have length L, for L <= maxlen */
} KeySet;

/* Field number of the key [p, p+n) in ks, or -1 when it is not one of them. */
static inline int keyset_find(const KeySet *ks, const unsigned char *p, Py_ssize_t n)
{
    if (n > ks->maxlen)
        return -1;
    if (ks->by_len != NULL) {
        for (int i = ks->by_len[n]; i < ks->by_len[n + 1]; i++) {
            const Key *k = &ks->keys[i];
            if (bytes_equal((const unsigned char *)k->text, p, n))
                return k->field;
        }
        return -1;
    }
    for (int i = 0; i < ks->n; i++) { /* while the set is being built */
        const Key *k = &ks->keys[i];
        if (k->len == n && memcmp(k->text, p, (size_t)n) == 0)
            return k->field;
    }
    return -1;
}

/* Sorts the keys by length and builds by_len. 0, or -1 with MemoryError. */
static int keyset_index(KeySet *ks)
{
    for (int i = 1; i < ks->n; i++) { /* insertion sort: a few dozen keys */
        Key k = ks->keys[i];
        int j = i - 1;
        while (j >= 0 && ks->keys[j].len > k.len) {
            ks->keys[j + 1] = ks->keys[j];
            j--;
        }
        ks->keys[j + 1] = k;
    }
    ks->by_len = PyMem_Calloc((size_t)ks->maxlen + 2, sizeof(int));
    if (ks->by_len == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    int i = 0;
    for (Py_ssize_t len = 0; len <= ks->maxlen + 1; len++) {
        while (i < ks->n && ks->keys[i].len < len)
            i++;
        ks->by_len[len] = i;
    }
    return 0;
}

/* Frees the copies of the key texts. */
static void keyset_free(KeySet *ks)
{
    for (int i = 0; i < ks->n; i++)
        PyMem_Free(ks->keys[i].text);
    PyMem_Free(ks->keys);
    PyMem_Free(ks->by_len);
    ks->keys = NULL;
    ks->by_len = NULL;
    ks->n = 0;
}

/* ---------------------------------------------------------------------------------------- */
/* The Scanner object.                                                                        */

typedef struct {
    PyObject_HEAD
    Py_buffer view;
    int have_view;
    const unsigned char *buf;
    Py_ssize_t len;
    Py_ssize_t pos;
    char bare;
    Py_ssize_t events_start;
    Py_ssize_t events_end;
    int state;
    int busy;          /* next() is running: a call from inside it (a gc callback or a
                        * finalizer run by an allocation, or another thread it let in) fails */
    PyObject *failure; /* the message of the Unsupported that stopped it, once failed */
    /* A failure met while scanning (without the GIL), raised by raise_recorded: */
    const char *fail_what; /* Unsupported: what (a string literal) ... */
    Py_ssize_t fail_pos;   /* ... and at which byte */
    int out_of_memory;     /* or a MemoryError */
    PyObject *strings; /* private: Python gets copies (the codes are their indices) */
    PyObject *raws;
    Table str_table;
    Table raw_table;
    KeySet top;
    KeySet args;
    int nfields;
    unsigned char *is_raw; /* per field */
    uint64_t *seen;        /* bit j: field j was read in the current event */
    int seen_words;
    /* The batch being filled: one bytes object per field for kinds and for values. */
    PyObject **kinds_obj;
    PyObject **values_obj;
    Py_ssize_t cap;
    unsigned char **kinds; /* kinds[j] = PyBytes_AS_STRING(kinds_obj[j]) */
    int64_t **values;
    /* Scratch for decoding escaped strings and number texts. */
    unsigned char *scratch;
    Py_ssize_t scratch_cap;
} Scanner;

/* Records the failure Unsupported "<what> at byte <pos>" (what: a string literal), the
 * first one only, for raise_recorded; returns -1. Needs no GIL. */
static int fail(Scanner *s, Py_ssize_t pos, const char *what)
{
    if (s->fail_what == NULL && !s->out_of_memory) {
        s->fail_what = what;
        s->fail_pos = pos;
    }
    return -1;
}

/* Records a MemoryError for raise_recorded; returns -1. Needs no GIL. */
static int no_memory(Scanner *s)
{
    if (s->fail_what == NULL)
        s->out_of_memory = 1;
    return -1;
}

/* Raises the failure recorded by fail or no_memory (the GIL held) and keeps an Unsupported's
 * message (a failed scanner raises it again); returns -1. */
static int raise_recorded(Scanner *s)
{
    if (s->out_of_memory) {
        PyErr_NoMemory();
        return -1;
    }
    if (s->fail_what == NULL) {
        PyErr_SetString(PyExc_SystemError, "the scanner failed without recording why");
        return -1;
    }
    PyObject *msg = PyUnicode_FromFormat("%s at byte %zd", s->fail_what, s->fail_pos);
    if (msg == NULL)
        return -1;
    PyErr_SetObject(Unsupported, msg);
    Py_XSETREF(s->failure, msg);
    return -1;
}

/* Makes the scratch buffer hold at least n bytes; 0, or -1 (no_memory). Needs no GIL. */
static int scratch_reserve(Scanner *s, Py_ssize_t n)
{
    if (n <= s->scratch_cap)
        return 0;
    Py_ssize_t ncap = s->scratch_cap ? s->scratch_cap : 256;
    while (ncap < n)
        ncap *= 2;
    unsigned char *p = PyMem_RawRealloc(s->scratch, (size_t)ncap);
    if (p == NULL)
        return no_memory(s);
    s->scratch = p;
    s->scratch_cap = ncap;
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Lexing. Each function starts at s->pos and leaves s->pos just past what it consumed.      */
/* None of these nor the event functions below needs the GIL: "-1 with Unsupported" or "with  */
/* a recorded failure" means fail or no_memory recorded it, for raise_recorded.              */

/* Consumes JSON whitespace (space, \t, \n, \r). */
static inline void skip_ws(Scanner *s)
{
    const unsigned char *b = s->buf;
    Py_ssize_t p = s->pos, n = s->len;
    while (p < n && (b[p] == ' ' || b[p] == '\n' || b[p] == '\r' || b[p] == '\t'))
        p++;
    s->pos = p;
}

/* The byte at s->pos, or -1 at the end of the buffer (consumes nothing). */
static inline int peek(const Scanner *s)
{
    return s->pos < s->len ? s->buf[s->pos] : -1;
}

/* Consumes the byte c, or fails with `what` when another byte (or the end) is there. */
static inline int expect(Scanner *s, unsigned char c, const char *what)
{
    if (s->pos < s->len && s->buf[s->pos] == c) {
        s->pos++;
        return 0;
    }
    return fail(s, s->pos, what);
}

/* The value of one hex digit, or -1. */
static inline int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The 4 hex digits at p (bounds already checked) as a code unit, or -1. */
static inline long hex4(const unsigned char *p)
{
    long v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(p[i]);
        if (h < 0)
            return -1;
        v = (v << 4) | h;
    }
    return v;
}

/*
 * Reads the escape at s->pos (a backslash) and returns its code point (surrogate pairs
 * joined), consuming it; -1 with Unsupported for a bad escape or a lone surrogate.
 */
static long read_escape(Scanner *s)
{
    const unsigned char *b = s->buf;
    Py_ssize_t p = s->pos;
    if (p + 1 >= s->len)
        return fail(s, p, "unterminated escape in a string");
    switch (b[p + 1]) {
    case '"': s->pos = p + 2; return '"';
    case '\\': s->pos = p + 2; return '\\';
    case '/': s->pos = p + 2; return '/';
    case 'b': s->pos = p + 2; return '\b';
    case 'f': s->pos = p + 2; return '\f';
    case 'n': s->pos = p + 2; return '\n';
    case 'r': s->pos = p + 2; return '\r';
    case 't': s->pos = p + 2; return '\t';
    case 'u': break;
    default: return fail(s, p, "invalid escape in a string");
    }
    if (p + 6 > s->len)
        return fail(s, p, "truncated \\u escape");
    long cp = hex4(b + p + 2);
    if (cp < 0)
        return fail(s, p, "invalid \\u escape");
    if (cp >= 0xDC00 && cp <= 0xDFFF)
        return fail(s, p, "lone low surrogate in a \\u escape");
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (p + 12 > s->len || b[p + 6] != '\\' || b[p + 7] != 'u')
            return fail(s, p, "lone high surrogate in a \\u escape");
        long lo = hex4(b + p + 8);
        if (lo < 0xDC00 || lo > 0xDFFF)
            return fail(s, p, "lone high surrogate in a \\u escape");
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        s->pos = p + 12;
        return cp;
    }
    s->pos = p + 6;
    return cp;
}

/* Consumes one well-formed UTF-8 sequence of 2 to 4 bytes at s->pos; -1 when invalid. */
static int skip_utf8(Scanner *s)
{
    const unsigned char *b = s->buf;
    Py_ssize_t p = s->pos;
    unsigned char c = b[p];
    int n;
    unsigned char lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0; /* no overlongs */
        else if (c == 0xED)
            hi = 0x9F; /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F; /* nothing above U+10FFFF */
    } else
        return fail(s, p, "invalid UTF-8 in a string");
    if (p + n > s->len)
        return fail(s, p, "truncated UTF-8 in a string");
    if (b[p + 1] < lo || b[p + 1] > hi)
        return fail(s, p, "invalid UTF-8 in a string");
    for (int i = 2; i < n; i++)
        if ((b[p + i] & 0xC0) != 0x80)
            return fail(s, p, "invalid UTF-8 in a string");
    s->pos = p + n;
    return 0;
}

#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SCAN_SWAR 1
/* A mask with the high bit set in (at least) the lowest byte of w that is '"', '\\',
 * below 0x20 or above 0x7F, and 0 when w holds none of those; bits above the first such
 * byte may be spurious, so only its lowest set bit is used. */
static inline uint64_t special_bytes(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
    uint64_t q = w ^ (ones * '"');
    uint64_t bs = w ^ (ones * '\\');
    return (((q - ones) & ~q) | ((bs - ones) & ~bs) | (w - ones * 0x20) | w) & high;
}
#endif

/*
 * Consumes a string at s->pos (its opening quote), validating it (escapes, surrogates,
 * UTF-8, no control characters). Sets *start and *end to its body (between the quotes, escapes
 * as written) and *escaped when it holds a backslash. 0, or -1 with Unsupported.
 */
static int scan_string(Scanner *s, Py_ssize_t *start, Py_ssize_t *end, int *escaped)
{
    const unsigned char *b = s->buf;
    Py_ssize_t n = s->len;
    Py_ssize_t open = s->pos;
    Py_ssize_t p = open + 1; /* the caller saw the quote */
    *escaped = 0;
    for (;;) {
#ifdef SCAN_SWAR
        while (p + 8 <= n) {
            uint64_t w;
            memcpy(&w, b + p, 8);
            uint64_t m = special_bytes(w);
            if (m) {
                p += __builtin_ctzll(m) >> 3;
                break;
            }
            p += 8;
        }
#endif
        if (p >= n)
            return fail(s, open, "unterminated string");
        unsigned char c = b[p];
        if (c == '"') {
            *start = open + 1;
            *end = p;
            s->pos = p + 1;
            return 0;
        }
        if (c == '\\') {
            s->pos = p;
            if (read_escape(s) < 0)
                return -1;
            p = s->pos;
            *escaped = 1;
        } else if (c < 0x20) {
            return fail(s, p, "control character in a string");
        } else if (c >= 0x80) {
            s->pos = p;
            if (skip_utf8(s) < 0)
                return -1;
            p = s->pos;
        } else {
            p++;
        }
    }
}

/* Appends code point cp as UTF-8 at out; returns the number of bytes written. */
static inline int put_utf8(unsigned char *out, long cp)
{
    if (cp < 0x80) {
        out[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xC0 | (cp >> 6));
        out[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xE0 | (cp >> 12));
        out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | (cp >> 18));
    out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/*
 * Decodes the already validated string body [start, end) into s->scratch as UTF-8; sets
 * *out_len. Every escape gives at most as many bytes as it takes, so end - start is enough
 * room. 0, or -1 with a recorded failure.
 */
static int decode_string(Scanner *s, Py_ssize_t start, Py_ssize_t end, Py_ssize_t *out_len)
{
    if (scratch_reserve(s, end - start + 1) < 0)
        return -1;
    unsigned char *out = s->scratch;
    Py_ssize_t o = 0, p = start;
    Py_ssize_t saved = s->pos;
    while (p < end) {
        unsigned char c = s->buf[p];
        if (c != '\\') {
            out[o++] = c;
            p++;
            continue;
        }
        s->pos = p;
        long cp = read_escape(s);
        if (cp < 0)
            return -1;
        p = s->pos;
        o += put_utf8(out + o, cp);
    }
    s->pos = saved;
    *out_len = o;
    return 0;
}

/* Consumes the literal word (null, true or false) at s->pos, or fails. */
static int expect_word(Scanner *s, const char *word, Py_ssize_t wlen)
{
    if (s->pos + wlen > s->len || memcmp(s->buf + s->pos, word, (size_t)wlen) != 0)
        return fail(s, s->pos, "invalid JSON value");
    s->pos += wlen;
    return 0;
}

static const double POW10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/*
 * The float value of the validated number text [start, end): Clinger's exact fast path when
 * the significant digits (sig, nsig of them, at most 15) times 10^exp10 is one IEEE operation
 * on exact operands, else strtod in the "C" locale (correctly rounded, as Python's float() is;
 * PyOS_string_to_double where there is no strtod_l). Fails on overflow to inf.
 */
static int number_to_double(Scanner *s, Py_ssize_t start, Py_ssize_t end, uint64_t sig,
                            int nsig, int64_t exp10, int negative, double *out)
{
    double d;
    if (nsig <= 15 && exp10 >= -22 && exp10 <= 22) {
        d = (double)sig;
        d = exp10 < 0 ? d / POW10[-exp10] : d * POW10[exp10];
        *out = negative ? -d : d;
        return 0;
    }
    Py_ssize_t n = end - start;
    if (scratch_reserve(s, n + 1) < 0)
        return -1;
    memcpy(s->scratch, s->buf + start, (size_t)n);
    s->scratch[n] = '\0';
    char *stop = NULL;
#ifdef SCAN_HAVE_STRTOD_L
    d = strtod_l((const char *)s->scratch, &stop, c_locale);
#else
    PyGILState_STATE gil = PyGILState_Ensure();
    d = PyOS_string_to_double((const char *)s->scratch, &stop, NULL);
    int bad = d == -1.0 && PyErr_Occurred();
    if (bad)
        PyErr_Clear();
    PyGILState_Release(gil);
    if (bad)
        return fail(s, start, "number not parsed as a float");
#endif
    if (stop != (char *)s->scratch + n)
        return fail(s, start, "number not parsed as a float");
    if (!isfinite(d))
        return fail(s, start, "number out of the float range");
    *out = d;
    return 0;
}

/* What scan_number gathers from a number's text, one part after the other. */
typedef struct {
    uint64_t sig;  /* the first 19 significant digits (19 digits always fit) */
    int nsig;      /* how many significant digits there are in all; 20 stands for more than 19
                    * (a count would overflow on 2^31 digits): only == 0, <= 15, < 19 and > 19
                    * are asked */
    int64_t exp10; /* the power of ten applying to sig */
    int exp_huge;  /* the exponent has too many digits for exp10: no fast path */
    int is_float;  /* a fraction or an exponent was seen */
} Digits;

/* Consumes the integer part at *p (a digit is there): "0", or digits without a leading
 * zero, into d. 0, or -1 with Unsupported (start: the number's first byte). */
static inline int scan_int_part(Scanner *s, Py_ssize_t start, Py_ssize_t *p, Digits *d)
{
    const unsigned char *b = s->buf;
    Py_ssize_t q = *p, n = s->len;
    if (b[q] == '0') {
        q++;
        if (q < n && b[q] >= '0' && b[q] <= '9')
            return fail(s, start, "invalid number (leading zero)");
    } else {
        for (; q < n && b[q] >= '0' && b[q] <= '9'; q++) {
            if (d->nsig < 19) {
                d->sig = d->sig * 10 + (unsigned)(b[q] - '0');
                d->nsig++;
            } else { /* dropped: it only scales sig */
                d->exp10++;
                d->nsig = 20;
            }
        }
    }
    *p = q;
    return 0;
}

/* Consumes a fraction ('.' and one or more digits) at *p when there is one, into d.
 * 0, or -1 with Unsupported. */
static inline int scan_fraction(Scanner *s, Py_ssize_t start, Py_ssize_t *p, Digits *d)
{
    const unsigned char *b = s->buf;
    Py_ssize_t q = *p, n = s->len;
    if (q >= n || b[q] != '.')
        return 0;
    d->is_float = 1;
    q++;
    if (q >= n || b[q] < '0' || b[q] > '9')
        return fail(s, start, "invalid number (fraction)");
    for (; q < n && b[q] >= '0' && b[q] <= '9'; q++) {
        unsigned c = b[q] - '0';
        if (d->nsig == 0 && c == 0) {
            d->exp10--; /* a leading zero of the fraction */
        } else if (d->nsig < 19) {
            d->sig = d->sig * 10 + c;
            d->exp10--;
            d->nsig++;
        } else { /* dropped */
            d->nsig = 20;
        }
    }
    *p = q;
    return 0;
}

/* Consumes an exponent ('e' or 'E', a sign or none, one or more digits) at *p when there
 * is one, into d. 0, or -1 with Unsupported. */
static inline int scan_exponent(Scanner *s, Py_ssize_t start, Py_ssize_t *p, Digits *d)
{
    const unsigned char *b = s->buf;
    Py_ssize_t q = *p, n = s->len;
    if (q >= n || (b[q] != 'e' && b[q] != 'E'))
        return 0;
    d->is_float = 1;
    q++;
    int eneg = 0;
    if (q < n && (b[q] == '+' || b[q] == '-')) {
        eneg = b[q] == '-';
        q++;
    }
    if (q >= n || b[q] < '0' || b[q] > '9')
        return fail(s, start, "invalid number (exponent)");
    int64_t e = 0;
    for (; q < n && b[q] >= '0' && b[q] <= '9'; q++) {
        if (e < 100000)
            e = e * 10 + (b[q] - '0');
        else
            d->exp_huge = 1;
    }
    d->exp10 += eneg ? -e : e;
    *p = q;
    return 0;
}

/*
 * Consumes a JSON number at s->pos. When kind is not NULL, also converts it: *kind = K_INT and
 * *value the int64 for an integer, *kind = K_FLOAT and *value the float64 bits for a number
 * with a fraction or an exponent; an integer outside int64 or a float overflowing to inf
 * fails. With kind NULL only the grammar is checked. 0, or -1 with Unsupported.
 */
static int scan_number(Scanner *s, int *kind, int64_t *value)
{
    Py_ssize_t start = s->pos, p = s->pos;
    int negative = p < s->len && s->buf[p] == '-';
    p += negative;
    if (p >= s->len || s->buf[p] < '0' || s->buf[p] > '9')
        return fail(s, start, "invalid number");
    Digits d = {0, 0, 0, 0, 0};
    if (scan_int_part(s, start, &p, &d) < 0 || scan_fraction(s, start, &p, &d) < 0 ||
        scan_exponent(s, start, &p, &d) < 0)
        return -1;
    s->pos = p;
    if (kind == NULL)
        return 0;
    if (!d.is_float) {
        /* An integer's digits are all significant: more than 19 is at least 10^19. */
        if (d.nsig > 19 || d.sig > (uint64_t)INT64_MAX + (uint64_t)negative)
            return fail(s, start, "integer outside int64");
        *kind = K_INT;
        *value = negative ? (int64_t)(0 - d.sig) : (int64_t)d.sig;
        return 0;
    }
    double x = 0.0;
    if (number_to_double(s, start, p, d.sig, d.exp_huge ? 99 : d.nsig, d.exp10, negative, &x) < 0)
        return -1;
    *kind = K_FLOAT;
    memcpy(value, &x, 8);
    return 0;
}

/*
 * Consumes any JSON value at s->pos, validating it. depth is the nesting level of the value
 * (a container deeper than MAX_DEPTH fails). strict: numbers must also convert (int64 and
 * finite float; msgspec decodes, rather than skips, the values of the document's other
 * top-level keys). 0, or -1 with Unsupported.
 */
static int skip_value(Scanner *s, int depth, int strict)
{
    int c = peek(s);
    Py_ssize_t a, z;
    int esc;
    switch (c) {
    case '"':
        return scan_string(s, &a, &z, &esc);
    case 'n':
        return expect_word(s, "null", 4);
    case 't':
        return expect_word(s, "true", 4);
    case 'f':
        return expect_word(s, "false", 5);
    case '{':
    case '[':
        break;
    default:
        if (c == '-' || (c >= '0' && c <= '9')) {
            int k;
            int64_t v;
            return scan_number(s, strict ? &k : NULL, strict ? &v : NULL);
        }
        return fail(s, s->pos, c < 0 ? "unexpected end of the document" : "invalid JSON value");
    }
    if (depth > MAX_DEPTH)
        return fail(s, s->pos, "nesting deeper than 256 levels");
    int is_obj = c == '{';
    unsigned char close = is_obj ? '}' : ']';
    s->pos++;
    skip_ws(s);
    if (peek(s) == close) {
        s->pos++;
        return 0;
    }
    for (;;) {
        if (is_obj) {
            if (peek(s) != '"')
                return fail(s, s->pos, "expected a key");
            if (scan_string(s, &a, &z, &esc) < 0)
                return -1;
            skip_ws(s);
            if (expect(s, ':', "expected ':'") < 0)
                return -1;
            skip_ws(s);
        }
        if (skip_value(s, depth + 1, strict) < 0)
            return -1;
        skip_ws(s);
        c = peek(s);
        if (c == ',') {
            s->pos++;
            skip_ws(s);
        } else if (c == close) {
            s->pos++;
            return 0;
        } else {
            return fail(s, s->pos, is_obj ? "expected ',' or '}'" : "expected ',' or ']'");
        }
    }
}

/* Consumes a key at s->pos (must be a string without escapes) and the ':' after it, with
 * whitespace; sets [*start, *end) to the key's bytes. 0, or -1 with Unsupported. */
static int read_key(Scanner *s, Py_ssize_t *start, Py_ssize_t *end)
{
    int esc;
    if (peek(s) != '"')
        return fail(s, s->pos, "expected a key");
    Py_ssize_t at = s->pos;
    if (scan_string(s, start, end, &esc) < 0)
        return -1;
    if (esc)
        return fail(s, at, "escaped key");
    skip_ws(s);
    if (expect(s, ':', "expected ':'") < 0)
        return -1;
    skip_ws(s);
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Events.                                                                                    */

/*
 * Consumes a string value at s->pos (its opening quote) and interns its decoded text in
 * `strings`. Returns the code, or -1 with a recorded failure.
 */
static Py_ssize_t read_string_code(Scanner *s)
{
    Py_ssize_t a, z, dn;
    int esc;
    if (scan_string(s, &a, &z, &esc) < 0)
        return -1;
    Py_ssize_t code;
    if (!esc) {
        code = intern(&s->str_table, s->buf + a, z - a);
    } else {
        if (decode_string(s, a, z, &dn) < 0)
            return -1;
        code = intern(&s->str_table, s->scratch, dn);
    }
    return code < 0 ? no_memory(s) : code;
}

/*
 * Consumes the value of a field at s->pos (depth: its nesting level) and sets *kind and
 * *value: a raw field's exact text as a code into `raws`; else a string, null or number.
 * 0, or -1 with a recorded failure (Unsupported for a value the field cannot hold).
 */
static int read_value(Scanner *s, int raw, int depth, int *kind, int64_t *value)
{
    Py_ssize_t at = s->pos, code;
    int c = peek(s);
    if (raw) {
        if (skip_value(s, depth, 0) < 0)
            return -1;
        code = intern(&s->raw_table, s->buf + at, s->pos - at);
        if (code < 0)
            return no_memory(s);
        *kind = K_RAW;
    } else if (c == '"') {
        code = read_string_code(s);
        *kind = K_STR;
    } else if (c == 'n') {
        *kind = K_NULL;
        *value = 0;
        return expect_word(s, "null", 4);
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        return scan_number(s, kind, value);
    } else if (c == 't' || c == 'f' || c == '[' || c == '{') {
        return fail(s, at, "a field holds true, false, an array or an object");
    } else {
        return fail(s, at, c < 0 ? "unexpected end of the document" : "invalid JSON value");
    }
    if (code < 0)
        return -1;
    *value = code;
    return 0;
}

/*
 * Consumes the value of field j of event i at s->pos (depth: its nesting level) and stores
 * its kind and value in the batch; a known key seen twice fails. 0, or -1 with a recorded
 * failure.
 */
static int read_field(Scanner *s, int j, Py_ssize_t i, int depth)
{
    uint64_t bit = (uint64_t)1 << (j & 63);
    if (s->seen[j >> 6] & bit)
        return fail(s, s->pos, "a known key twice in one object");
    s->seen[j >> 6] |= bit;
    int kind;
    int64_t value;
    if (read_value(s, s->is_raw[j], depth, &kind, &value) < 0)
        return -1;
    s->kinds[j][i] = (unsigned char)kind;
    s->values[j][i] = value;
    return 0;
}

/*
 * Consumes an object at s->pos (its '{') whose keys are looked up in ks: known keys go to
 * their field of event i, other values are skipped. With is_event, an "args" key is read
 * as the args object. depth: the object's nesting level. 0, or -1 with a recorded failure.
 */
static int read_object(Scanner *s, Py_ssize_t i, int depth, int is_event)
{
    const KeySet *ks = is_event ? &s->top : &s->args;
    int seen_args = 0;
    if (depth > MAX_DEPTH)
        return fail(s, s->pos, "nesting deeper than 256 levels");
    s->pos++;
    skip_ws(s);
    if (peek(s) == '}') {
        s->pos++;
        return 0;
    }
    for (;;) {
        Py_ssize_t a, z;
        if (read_key(s, &a, &z) < 0)
            return -1;
        const unsigned char *key = s->buf + a;
        Py_ssize_t klen = z - a;
        int j = klen ? keyset_find(ks, key, klen) : -1;
        if (j >= 0) {
            if (read_field(s, j, i, depth + 1) < 0)
                return -1;
        } else if (is_event && klen == 4 && memcmp(key, "args", 4) == 0) {
            if (seen_args)
                return fail(s, s->pos, "\"args\" twice in one event");
            seen_args = 1;
            if (peek(s) != '{')
                return fail(s, s->pos, "\"args\" is not an object");
            if (read_object(s, i, depth + 1, 0) < 0)
                return -1;
        } else if (skip_value(s, depth + 1, 0) < 0) {
            return -1;
        }
        skip_ws(s);
        int c = peek(s);
        if (c == ',') {
            s->pos++;
            skip_ws(s);
        } else if (c == '}') {
            s->pos++;
            return 0;
        } else {
            return fail(s, s->pos, "expected ',' or '}'");
        }
    }
}

/* The nesting level of an event object: inside the document's array (and object). */
static inline int event_depth(const Scanner *s)
{
    return s->bare ? 2 : 3;
}

/*
 * Consumes the rest of the document after the events array's ']' (at s->pos): the other
 * top-level keys of an object document (validated; "traceEvents" again fails), the closing
 * '}', then only whitespace. 0, or -1 with Unsupported.
 */
static int finish_document(Scanner *s)
{
    if (!s->bare) {
        for (;;) {
            skip_ws(s);
            int c = peek(s);
            if (c == '}') {
                s->pos++;
                break;
            }
            if (c != ',')
                return fail(s, s->pos, "expected ',' or '}'");
            s->pos++;
            skip_ws(s);
            Py_ssize_t a, z;
            if (read_key(s, &a, &z) < 0)
                return -1;
            if (z - a == 11 && memcmp(s->buf + a, "traceEvents", 11) == 0)
                return fail(s, a, "\"traceEvents\" twice");
            if (skip_value(s, 2, 1) < 0)
                return -1;
        }
    }
    skip_ws(s);
    if (s->pos != s->len)
        return fail(s, s->pos, "trailing data after the document");
    return 0;
}

/*
 * Consumes the document up to (and including) the '[' that opens the events array, setting
 * bare and events_start. 0, or -1 with Unsupported.
 */
static int find_events(Scanner *s)
{
    skip_ws(s);
    int c = peek(s);
    if (c == '[') {
        s->bare = 1;
        s->events_start = s->pos++;
        return 0;
    }
    if (c != '{')
        return fail(s, s->pos, "the document is neither an array nor an object");
    s->bare = 0;
    s->pos++;
    skip_ws(s);
    if (peek(s) == '}')
        return fail(s, s->pos, "no \"traceEvents\" key");
    for (;;) {
        Py_ssize_t a, z;
        if (read_key(s, &a, &z) < 0)
            return -1;
        if (z - a == 11 && memcmp(s->buf + a, "traceEvents", 11) == 0) {
            if (peek(s) != '[')
                return fail(s, s->pos, "\"traceEvents\" is not an array");
            s->events_start = s->pos++;
            return 0;
        }
        if (skip_value(s, 2, 1) < 0)
            return -1;
        skip_ws(s);
        c = peek(s);
        if (c == ',') {
            s->pos++;
            skip_ws(s);
        } else if (c == '}') {
            return fail(s, s->pos, "no \"traceEvents\" key");
        } else {
            return fail(s, s->pos, "expected ',' or '}'");
        }
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Batch buffers.                                                                             */

/* Drops the bytes objects of the current batch. */
static void batch_clear(Scanner *s)
{
    for (int j = 0; j < s->nfields; j++) {
        Py_CLEAR(s->kinds_obj[j]);
        Py_CLEAR(s->values_obj[j]);
    }
    s->cap = 0;
}

/* Makes the batch hold room for ncap events (new room zeroed: ABSENT, 0). 0, or -1. */
static int batch_grow(Scanner *s, Py_ssize_t ncap)
{
    for (int j = 0; j < s->nfields; j++) {
        if (s->kinds_obj[j] == NULL) {
            s->kinds_obj[j] = PyBytes_FromStringAndSize(NULL, ncap);
            s->values_obj[j] = PyBytes_FromStringAndSize(NULL, ncap * 8);
            if (s->kinds_obj[j] == NULL || s->values_obj[j] == NULL)
                return -1;
        } else if (_PyBytes_Resize(&s->kinds_obj[j], ncap) < 0 ||
                   _PyBytes_Resize(&s->values_obj[j], ncap * 8) < 0) {
            return -1;
        }
        s->kinds[j] = (unsigned char *)PyBytes_AS_STRING(s->kinds_obj[j]);
        s->values[j] = (int64_t *)PyBytes_AS_STRING(s->values_obj[j]);
        memset(s->kinds[j] + s->cap, 0, (size_t)(ncap - s->cap));
        memset(s->values[j] + s->cap, 0, (size_t)(ncap - s->cap) * 8);
    }
    s->cap = ncap;
    return 0;
}

/* The (n, kinds, values) tuple of the batch of n events, handing its bytes objects over. */
static PyObject *batch_result(Scanner *s, Py_ssize_t n)
{
    PyObject *kinds = PyList_New(s->nfields);
    PyObject *values = PyList_New(s->nfields);
    if (kinds == NULL || values == NULL)
        goto error;
    for (int j = 0; j < s->nfields; j++) {
        if (_PyBytes_Resize(&s->kinds_obj[j], n) < 0 ||
            _PyBytes_Resize(&s->values_obj[j], n * 8) < 0)
            goto error;
        PyList_SET_ITEM(kinds, j, s->kinds_obj[j]);
        PyList_SET_ITEM(values, j, s->values_obj[j]);
        s->kinds_obj[j] = s->values_obj[j] = NULL;
    }
    s->cap = 0;
    PyObject *res = Py_BuildValue("(nNN)", n, kinds, values);
    return res;
error:
    Py_XDECREF(kinds);
    Py_XDECREF(values);
    batch_clear(s);
    return NULL;
}

/* ---------------------------------------------------------------------------------------- */
/* Python methods.                                                                            */

enum { SCAN_DONE = 0, SCAN_NEEDS_ROOM = 1 };

/* Whether another event follows at s->pos (after whitespace, consumed): a ',' after an event,
 * or a '{' first. What else is there is left for scan_events to take or refuse. */
static int event_follows(Scanner *s)
{
    skip_ws(s);
    return peek(s) == (s->state == S_NEXT ? ',' : '{');
}

/*
 * Scans events into the batch from event *n on, until max_events, the array's end, or the
 * batch's room is full with another event to come; sets *n. SCAN_DONE, SCAN_NEEDS_ROOM, or
 * -1 with a recorded failure. Needs no GIL (it runs without it).
 */
static int scan_events(Scanner *s, Py_ssize_t *n_io, Py_ssize_t max_events)
{
    Py_ssize_t n = *n_io;
    int depth = event_depth(s);
    int rc = SCAN_DONE;
    while (n < max_events) {
        if (n == s->cap && event_follows(s)) {
            rc = SCAN_NEEDS_ROOM; /* nothing consumed but whitespace */
            break;
        }
        skip_ws(s);
        int c = peek(s);
        if (s->state == S_NEXT) {
            if (c == ']')
                break;
            if (c != ',')
                return fail(s, s->pos, "expected ',' or ']' in the events array");
            s->pos++;
            skip_ws(s);
            c = peek(s);
        } else if (c == ']') {
            break;
        }
        if (c != '{')
            return fail(s, s->pos, "an element of the events array is not an object");
        memset(s->seen, 0, (size_t)s->seen_words * sizeof(uint64_t));
        if (read_object(s, n, depth, 1) < 0)
            return -1;
        s->state = S_NEXT;
        n++;
        *n_io = n;
    }
    if (rc == SCAN_NEEDS_ROOM)
        return rc;
    skip_ws(s);
    if (peek(s) == ']') {
        s->pos++;
        s->events_end = s->pos;
        if (finish_document(s) < 0)
            return -1;
        s->state = S_DONE;
    }
    return SCAN_DONE;
}

/* Grows the batch's room (the GIL held): for the whole batch at once (growing copies it), up
 * to FIRST_CAP events: an event takes at least 3 bytes ("{}" and a comma), so no more than
 * (bytes left) / 2 are left. Doubling after that. 0, or -1 with an exception. */
static int grow_batch_for(Scanner *s, Py_ssize_t max_events)
{
    Py_ssize_t ncap = s->cap ? s->cap * 2 : (s->len - s->pos) / 2 + 1;
    if (s->cap == 0 && ncap > FIRST_CAP)
        ncap = FIRST_CAP;
    if (ncap > max_events)
        ncap = max_events;
    return batch_grow(s, ncap);
}

/*
 * Scans the next batch of up to max_events events, the GIL released while scanning: taken
 * back to grow the batch's room (bytes objects) and, at the end, to make the objects of the
 * new distinct values and raise a recorded failure. The number read, or -1 with an exception.
 */
static Py_ssize_t scan_batch(Scanner *s, Py_ssize_t max_events)
{
    Py_ssize_t n = 0;
    int rc;
    for (;;) {
        /* Room first (the GIL is held), so that the GIL is taken back once per batch. */
        if (n == s->cap && event_follows(s)) {
            if (grow_batch_for(s, max_events) < 0)
                return -1;
        }
        Py_BEGIN_ALLOW_THREADS
        rc = scan_events(s, &n, max_events);
        Py_END_ALLOW_THREADS
        if (rc != SCAN_NEEDS_ROOM)
            break;
    }
    /* The values met so far get their objects even when the scan failed, so the lists and
     * the tables stay in step. */
    if (table_flush(&s->str_table, s->strings, 1) < 0 ||
        table_flush(&s->raw_table, s->raws, 0) < 0)
        return -1;
    if (rc < 0)
        return raise_recorded(s);
    return n;
}

/* The batch of up to max_events events after those already given, as (n, kinds, values);
 * None once the array is exhausted. Any failure leaves the scanner failed. */
static PyObject *scan_next(Scanner *s, Py_ssize_t max_events)
{
    if (s->state == S_FAILED) {
        if (s->failure != NULL)
            PyErr_SetObject(Unsupported, s->failure);
        else /* a MemoryError (or a failed __init__) stopped it */
            PyErr_SetString(Unsupported, "the scanner failed earlier");
        return NULL;
    }
    if (s->state == S_DONE)
        Py_RETURN_NONE;
    Py_ssize_t n = scan_batch(s, max_events);
    PyObject *res = NULL;
    if (n == 0)
        res = Py_NewRef(Py_None);
    else if (n > 0)
        res = batch_result(s, n);
    if (res == NULL || n == 0)
        batch_clear(s);
    if (res == NULL) /* the batch's events are lost: no later call may skip past them */
        s->state = S_FAILED;
    return res;
}

/* Scanner.next(max_events): checks the argument and that no other next() of this scanner is
 * running (see busy), then scan_next. */
static PyObject *Scanner_next(Scanner *s, PyObject *arg)
{
    Py_ssize_t max_events = PyLong_AsSsize_t(arg);
    if (max_events == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        PyErr_SetString(PyExc_TypeError, "max_events must be an int");
        return NULL;
    }
    if (max_events < 1) {
        PyErr_SetString(PyExc_TypeError, "max_events must be >= 1");
        return NULL;
    }
    if (!s->have_view) {
        PyErr_SetString(PyExc_TypeError, "Scanner.__init__ was not called");
        return NULL;
    }
    if (s->busy) {
        PyErr_SetString(PyExc_RuntimeError, "Scanner.next is already running");
        return NULL;
    }
    s->busy = 1;
    PyObject *res = scan_next(s, max_events);
    s->busy = 0;
    return res;
}

/* Copies the UTF-8 texts of the str items of `keys` into ks, numbering them from first;
 * a raw key (in raw_keys) sets is_raw. 0, or -1 with TypeError / MemoryError. */
static int keyset_init(Scanner *s, KeySet *ks, PyObject *keys, int first, PyObject *raw_keys)
{
    Py_ssize_t n = PyTuple_GET_SIZE(keys);
    ks->keys = PyMem_Calloc((size_t)(n ? n : 1), sizeof(Key));
    if (ks->keys == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    ks->n = 0;
    ks->maxlen = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *k = PyTuple_GET_ITEM(keys, i);
        if (!PyUnicode_Check(k)) {
            PyErr_SetString(PyExc_TypeError, "field keys must be str");
            return -1;
        }
        Py_ssize_t len;
        const char *u = PyUnicode_AsUTF8AndSize(k, &len);
        if (u == NULL)
            return -1;
        if (len == 0 || (len == 4 && memcmp(u, "args", 4) == 0 && ks == &s->top)) {
            PyErr_SetString(PyExc_TypeError, "a field key is empty or \"args\"");
            return -1;
        }
        if (keyset_find(ks, (const unsigned char *)u, len) >= 0) {
            PyErr_SetString(PyExc_TypeError, "a field key is given twice");
            return -1;
        }
        char *copy = PyMem_Malloc((size_t)len);
        if (copy == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        memcpy(copy, u, (size_t)len);
        ks->keys[ks->n].text = copy;
        ks->keys[ks->n].len = len;
        ks->keys[ks->n].field = first + (int)i;
        ks->n++;
        if (len > ks->maxlen)
            ks->maxlen = len;
        int raw = PySet_Contains(raw_keys, k);
        if (raw < 0)
            return -1;
        if (raw && ks == &s->top) {
            PyErr_SetString(PyExc_TypeError, "only arg keys may be raw");
            return -1;
        }
        s->is_raw[first + i] = (unsigned char)raw;
    }
    return keyset_index(ks);
}

/* Allocates the per-field arrays for nfields fields. 0, or -1 with MemoryError (then
 * nfields stays 0: batch_clear must not walk arrays that were not all made). */
static int fields_alloc(Scanner *s, int nfields)
{
    size_t m = (size_t)(nfields ? nfields : 1);
    s->is_raw = PyMem_Calloc(m, 1);
    s->seen_words = (int)((m + 63) / 64);
    s->seen = PyMem_Calloc((size_t)s->seen_words, sizeof(uint64_t));
    s->kinds_obj = PyMem_Calloc(m, sizeof(PyObject *));
    s->values_obj = PyMem_Calloc(m, sizeof(PyObject *));
    s->kinds = PyMem_Calloc(m, sizeof(unsigned char *));
    s->values = PyMem_Calloc(m, sizeof(int64_t *));
    if (!s->is_raw || !s->seen || !s->kinds_obj || !s->values_obj || !s->kinds || !s->values) {
        PyErr_NoMemory();
        return -1;
    }
    s->nfields = nfields;
    return 0;
}

/* Scanner(data, top_keys, arg_keys, raw_keys): holds data's buffer, copies the keys, and
 * scans up to the events array's '['. 0, or -1 with TypeError, MemoryError or Unsupported
 * (the scanner then stays failed; a second call is a TypeError). */
static int Scanner_init(Scanner *s, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"data", "top_keys", "arg_keys", "raw_keys", NULL};
    PyObject *data, *top_keys, *arg_keys, *raw_keys;
    if (s->have_view || s->nfields || s->strings) {
        PyErr_SetString(PyExc_TypeError, "Scanner is initialised once");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO!O!O:Scanner", kwlist, &data, &PyTuple_Type,
                                     &top_keys, &PyTuple_Type, &arg_keys, &raw_keys))
        return -1;
    if (!PyAnySet_Check(raw_keys)) {
        PyErr_SetString(PyExc_TypeError, "raw_keys must be a frozenset or set");
        return -1;
    }
    Py_ssize_t ntop = PyTuple_GET_SIZE(top_keys), narg = PyTuple_GET_SIZE(arg_keys);
    if (ntop + narg > MAX_KEYS) {
        PyErr_SetString(PyExc_TypeError, "too many field keys");
        return -1;
    }
    if (PyObject_GetBuffer(data, &s->view, PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    s->have_view = 1;
    s->state = S_FAILED; /* until the start of the events array is found */
    s->buf = s->view.buf;
    s->len = s->view.len;
    s->strings = PyList_New(0);
    s->raws = PyList_New(0);
    if (s->strings == NULL || s->raws == NULL)
        return -1;
    if (fields_alloc(s, (int)(ntop + narg)) < 0 ||
        keyset_init(s, &s->top, top_keys, 0, raw_keys) < 0 ||
        keyset_init(s, &s->args, arg_keys, (int)ntop, raw_keys) < 0)
        return -1;
    s->events_end = -1;
    s->pos = 0;
    if (find_events(s) < 0) {
        /* The caller gets Unsupported from the constructor; the object is not used. */
        return raise_recorded(s);
    }
    s->state = S_FIRST;
    return 0;
}

/* Releases everything a scanner holds, whatever point its __init__ reached. */
static void Scanner_dealloc(Scanner *s)
{
    if (s->kinds_obj)
        batch_clear(s);
    if (s->have_view) {
        PyBuffer_Release(&s->view);
        s->have_view = 0;
    }
    table_free(&s->str_table);
    table_free(&s->raw_table);
    keyset_free(&s->top);
    keyset_free(&s->args);
    PyMem_Free(s->is_raw);
    PyMem_Free(s->seen);
    PyMem_Free(s->kinds_obj);
    PyMem_Free(s->values_obj);
    PyMem_Free(s->kinds);
    PyMem_Free(s->values);
    PyMem_RawFree(s->scratch);
    Py_XDECREF(s->strings);
    Py_XDECREF(s->raws);
    Py_XDECREF(s->failure);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static PyObject *Scanner_get_bare(Scanner *s, void *closure)
{
    return PyBool_FromLong(s->bare);
}

/* A new list with the items of the private list `values` (NULL before __init__: empty), so
 * that what a caller does to it cannot change the codes of later events. */
static PyObject *copy_values(PyObject *values)
{
    return values == NULL ? PyList_New(0) : PyList_GetSlice(values, 0, PY_SSIZE_T_MAX);
}

static PyObject *Scanner_get_strings(Scanner *s, void *closure)
{
    return copy_values(s->strings);
}

static PyObject *Scanner_get_raws(Scanner *s, void *closure)
{
    return copy_values(s->raws);
}

static PyMethodDef Scanner_methods[] = {
    {"next", (PyCFunction)Scanner_next, METH_O,
     "next(max_events) -> (n, kinds, values) | None\n\n"
     "The next up-to-max_events events: kinds[j] is n bytes (one kind per event), values[j]\n"
     "8*n bytes (native int64 or float64). None once the events array is exhausted."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef Scanner_members[] = {
    {"events_start", T_PYSSIZET, offsetof(Scanner, events_start), READONLY,
     "offset of the '[' that opens the events array"},
    {"events_end", T_PYSSIZET, offsetof(Scanner, events_end), READONLY,
     "offset just past the events array's ']' (-1 until the array is exhausted)"},
    {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef Scanner_getset[] = {
    {"bare", (getter)Scanner_get_bare, NULL, "the document is a bare array of events", NULL},
    {"strings", (getter)Scanner_get_strings, NULL,
     "distinct strings so far (a new list each time); a STR value indexes it", NULL},
    {"raws", (getter)Scanner_get_raws, NULL,
     "distinct raw JSON texts so far (a new list each time); a RAW value indexes it", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "traceviz.parse._scan.Scanner",
    .tp_basicsize = sizeof(Scanner),
    .tp_dealloc = (destructor)Scanner_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Scanner(data, top_keys, arg_keys, raw_keys): columns of a trace's events, a "
              "batch at a time (see traceviz/parse/_scan.pyi).",
    .tp_methods = Scanner_methods,
    .tp_members = Scanner_members,
    .tp_getset = Scanner_getset,
    .tp_init = (initproc)Scanner_init,
    .tp_new = PyType_GenericNew,
};

static struct PyModuleDef scan_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "traceviz.parse._scan",
    .m_doc = "Optional C scanner: trace JSON bytes to event columns (see _scan.pyi).",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__scan(void)
{
    if (PyType_Ready(&ScannerType) < 0)
        return NULL;
#ifdef SCAN_HAVE_STRTOD_L
    if (c_locale == (locale_t)0) {
        c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
        if (c_locale == (locale_t)0) {
            PyErr_SetString(PyExc_ImportError, "cannot make the \"C\" locale");
            return NULL;
        }
    }
#endif
    PyObject *m = PyModule_Create(&scan_module);
    if (m == NULL)
        return NULL;
    if (Unsupported == NULL) {
        Unsupported = PyErr_NewExceptionWithDoc(
            "traceviz.parse._scan.Unsupported",
            "The input is outside what the scanner handles exactly; parse it the Python way. "
            "str(err) says what and where (byte offset).",
            NULL, NULL);
        if (Unsupported == NULL) {
            Py_DECREF(m);
            return NULL;
        }
    }
    Py_INCREF(Unsupported);
    if (PyModule_AddObject(m, "Unsupported", Unsupported) < 0) {
        Py_DECREF(Unsupported);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&ScannerType);
    if (PyModule_AddObject(m, "Scanner", (PyObject *)&ScannerType) < 0) {
        Py_DECREF(&ScannerType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
