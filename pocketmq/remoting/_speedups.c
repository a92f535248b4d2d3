/* pocketmq.remoting._speedups: C forms of the native protocol's hottest Python steps (issue 32).
 *
 * Each function here does only the common case of a Python function that stays the reference, and answers None
 * ("not mine") for anything else, so the caller runs the Python for it: the C never raises for bad input, the
 * Python does, with its own error. What the C accepts it must turn into exactly what the Python makes of it;
 * tests/remoting/test_remoting_speedups.py holds the two together with hypothesis (valid input, mutated input,
 * random bytes). Every read is bounds-checked against the input's length; what is allocated is at most a few
 * times the size of the input (a writer's output: six bytes for a control character's escape) and is freed on
 * every path. Checked under AddressSanitizer and UndefinedBehaviorSanitizer with those tests.
 *
 * decode_json_header(data)  the command remoting_serializable.decode_json_header_fast makes of a JSON header of
 *                           Java's shape: {"code":N,"extFields":{"k":"v",...},"flag":N,"language":"NAME",
 *                           "opaque":N,"remark":"text","serializeTypeCurrentRPC":"JSON","version":N}, extFields
 *                           and remark optional, ints without leading zeros within 32 bits, no whitespace,
 *                           strings with JSON's simple escapes and \uXXXX outside the surrogates.
 * encode_json_header(cmd)   the bytes remoting_serializable.encode_json_header writes for a command whose int fields
 *                           are Java ints, whose language has a name, whose remark is None or a str, and whose ext
 *                           map is a dict of str keys and str, int or bool values (or None, left out).
 * decode_rocketmq_header(data), encode_rocketmq_header(cmd)
 *                           rocketmq_serializable's reader and writer of the binary header for a well-formed
 *                           header, and a command whose fields fit and whose ext values are str, int, bool or None.
 * ext_values(ext, specs)    the field values header_codec._compile's from_ext reads from an ext map, in field order,
 *                           when every field is present with its type or the common text of it (decimal ints of
 *                           up to 18 digits, 9 for Java ints, "true"/"false"), or absent and optional.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#ifndef POCKETMQ_SOURCE_HASH
#define POCKETMQ_SOURCE_HASH ""
#endif

/* Set once by configure(): the RemotingCommand class, the language names' codes, SerializeType.JSON. */
static PyObject *command_type = NULL;
static PyObject *language_codes = NULL; /* name -> code */
static PyObject *language_names = NULL; /* code -> name */
static PyObject *serialize_json = NULL;
/* A RemotingCommand's attribute names, interned. */
static PyObject *s_code, *s_flag, *s_opaque, *s_version, *s_language, *s_remark, *s_ext_fields;

static PyObject *
configure(PyObject *self, PyObject *args)
{
    PyObject *cmd, *codes, *names, *json;
    if (!PyArg_ParseTuple(args, "OO!O!O:configure", &cmd, &PyDict_Type, &codes, &PyDict_Type, &names, &json))
        return NULL;
    if (s_code == NULL) {
        s_code = PyUnicode_InternFromString("code");
        s_flag = PyUnicode_InternFromString("flag");
        s_opaque = PyUnicode_InternFromString("opaque");
        s_version = PyUnicode_InternFromString("version");
        s_language = PyUnicode_InternFromString("language");
        s_remark = PyUnicode_InternFromString("remark");
        s_ext_fields = PyUnicode_InternFromString("ext_fields");
        if (!s_code || !s_flag || !s_opaque || !s_version || !s_language || !s_remark || !s_ext_fields)
            return NULL;
    }
    Py_INCREF(cmd);
    Py_INCREF(codes);
    Py_INCREF(names);
    Py_INCREF(json);
    Py_XSETREF(command_type, cmd);
    Py_XSETREF(language_codes, codes);
    Py_XSETREF(language_names, names);
    Py_XSETREF(serialize_json, json);
    Py_RETURN_NONE;
}

/* ---- the JSON header ------------------------------------------------------------------------------------- */

typedef struct {
    const unsigned char *p;
    const unsigned char *end;
} cursor;

/* Step over the literal s (n bytes) when the input continues with it. */
static int
take(cursor *c, const char *s, Py_ssize_t n)
{
    if (c->end - c->p < n || memcmp(c->p, s, (size_t)n) != 0)
        return 0;
    c->p += n;
    return 1;
}

#define TAKE(c, lit) take((c), (lit), (Py_ssize_t)(sizeof(lit) - 1))

/* A Java int as fastjson writes it: 0 or -?[1-9][0-9]{0,9} within 32 bits. */
static int
take_int(cursor *c, long *out)
{
    const unsigned char *p = c->p;
    long long v = 0;
    int neg = 0, digits = 0;
    if (p < c->end && *p == '0') {
        c->p = p + 1;
        *out = 0;
        return 1;
    }
    if (p < c->end && *p == '-') {
        neg = 1;
        p++;
    }
    if (p >= c->end || *p < '1' || *p > '9')
        return 0;
    while (p < c->end && *p >= '0' && *p <= '9') {
        if (++digits > 10)
            return 0;
        v = v * 10 + (*p - '0');
        p++;
    }
    if (neg)
        v = -v;
    if (v < -2147483648LL || v > 2147483647LL)
        return 0;
    c->p = p;
    *out = (long)v;
    return 1;
}

static int
hex_digit(unsigned char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* The JSON string at c->p (its opening quote) as a str, the text decoded as UTF-8 with undecodable bytes replaced
 * (the Python decodes the whole header so first; a quote or backslash never sits inside a UTF-8 sequence, so
 * decoding the pieces between them gives the same characters). 1: *out is a new str; 0: not a string this
 * reader takes (the caller answers None); -1: an exception (memory). */
static int
take_string(cursor *c, PyObject **out)
{
    const unsigned char *start, *p, *q, *end = c->end;
    unsigned char stack_buf[256], *buf, *w;
    int escaped = 0;
    if (c->p >= end || *c->p != '"')
        return 0;
    start = p = c->p + 1;
    while (p < end && *p != '"') {
        if (*p == '\\') {
            if (end - p < 2)
                return 0;
            escaped = 1;
            p += 2;
        }
        else {
            p++;
        }
    }
    if (p >= end)
        return 0; /* unterminated */
    if (!escaped) {
        *out = PyUnicode_DecodeUTF8((const char *)start, p - start, "replace");
        if (*out == NULL)
            return -1;
        c->p = p + 1;
        return 1;
    }
    /* Unescaped into UTF-8 (never longer than the escaped text: \uXXXX is 6 bytes, its UTF-8 at most 3). */
    buf = (p - start) <= (Py_ssize_t)sizeof(stack_buf) ? stack_buf : PyMem_Malloc((size_t)(p - start));
    if (buf == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    buf[0] = 0; /* (gcc cannot see that an escape is written before the decode) */
    w = buf;
    q = start;
    while (q < p) {
        unsigned char ch = *q;
        if (ch != '\\') {
            *w++ = ch;
            q++;
            continue;
        }
        /* q + 1 < p: the scan above stepped over the escaped byte before finding the closing quote. */
        switch (q[1]) {
        case '"': *w++ = '"'; q += 2; continue;
        case '\\': *w++ = '\\'; q += 2; continue;
        case '/': *w++ = '/'; q += 2; continue;
        case 'b': *w++ = '\b'; q += 2; continue;
        case 'f': *w++ = '\f'; q += 2; continue;
        case 'n': *w++ = '\n'; q += 2; continue;
        case 'r': *w++ = '\r'; q += 2; continue;
        case 't': *w++ = '\t'; q += 2; continue;
        case 'u': {
            int d0, d1, d2, d3;
            unsigned int cp;
            if (p - q < 6)
                goto not_mine;
            d0 = hex_digit(q[2]);
            d1 = hex_digit(q[3]);
            d2 = hex_digit(q[4]);
            d3 = hex_digit(q[5]);
            if ((d0 | d1 | d2 | d3) < 0)
                goto not_mine;
            cp = (unsigned int)((d0 << 12) | (d1 << 8) | (d2 << 4) | d3);
            if (cp >= 0xD800 && cp <= 0xDFFF)
                goto not_mine; /* surrogates: pairs and lone ones, the Python's */
            if (cp < 0x80) {
                *w++ = (unsigned char)cp;
            }
            else if (cp < 0x800) {
                *w++ = (unsigned char)(0xC0 | (cp >> 6));
                *w++ = (unsigned char)(0x80 | (cp & 0x3F));
            }
            else {
                *w++ = (unsigned char)(0xE0 | (cp >> 12));
                *w++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
                *w++ = (unsigned char)(0x80 | (cp & 0x3F));
            }
            q += 6;
            continue;
        }
        default:
            goto not_mine;
        }
    }
    /* An escape's UTF-8 starts with a byte that is no continuation byte, as the backslash was: an undecodable
     * sequence before it ends there and is replaced alike. */
    *out = PyUnicode_DecodeUTF8((const char *)buf, w - buf, "replace");
    if (buf != stack_buf)
        PyMem_Free(buf);
    if (*out == NULL)
        return -1;
    c->p = p + 1;
    return 1;
not_mine:
    if (buf != stack_buf)
        PyMem_Free(buf);
    return 0;
}

/* The ext map at c->p ('{'): string keys and values only. 1: *out is a new dict; 0: not mine; -1: error. */
static int
take_ext(cursor *c, PyObject **out)
{
    PyObject *ext, *key = NULL, *value = NULL;
    int r;
    if (!TAKE(c, "{"))
        return 0;
    ext = PyDict_New();
    if (ext == NULL)
        return -1;
    if (TAKE(c, "}")) {
        *out = ext;
        return 1;
    }
    for (;;) {
        r = take_string(c, &key);
        if (r <= 0)
            goto fail;
        if (!TAKE(c, ":")) {
            r = 0;
            goto fail;
        }
        r = take_string(c, &value);
        if (r <= 0)
            goto fail;
        if (PyDict_SetItem(ext, key, value) < 0) { /* a repeated key: the last value, as json's dict */
            r = -1;
            goto fail;
        }
        Py_CLEAR(key);
        Py_CLEAR(value);
        if (TAKE(c, ","))
            continue;
        if (TAKE(c, "}"))
            break;
        r = 0;
        goto fail;
    }
    *out = ext;
    return 1;
fail:
    Py_XDECREF(key);
    Py_XDECREF(value);
    Py_DECREF(ext);
    return r;
}

/* The language's code: [A-Z]{1,8} between quotes, a name of language_codes. NULL (no exception): not mine. */
static PyObject *
take_language(cursor *c)
{
    const unsigned char *p = c->p;
    PyObject *name, *code;
    while (p < c->end && *p >= 'A' && *p <= 'Z' && p - c->p < 9)
        p++;
    if (p == c->p || p - c->p > 8 || p >= c->end || *p != '"')
        return NULL;
    name = PyUnicode_FromStringAndSize((const char *)c->p, p - c->p);
    if (name == NULL)
        return NULL;
    code = PyDict_GetItemWithError(language_codes, name); /* borrowed */
    Py_DECREF(name);
    if (code == NULL)
        return NULL;
    c->p = p + 1;
    Py_INCREF(code);
    return code;
}

static PyObject *
decode_json_header(PyObject *self, PyObject *data)
{
    Py_buffer view;
    cursor c;
    long code, flag, opaque, version;
    PyObject *ext = NULL, *language = NULL, *remark = NULL, *result = NULL;
    PyObject *args[9];
    int r;

    if (command_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_speedups.configure() was not called");
        return NULL;
    }
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear(); /* not bytes-like: the Python says what is wrong */
        Py_RETURN_NONE;
    }
    c.p = (const unsigned char *)view.buf;
    c.end = c.p + view.len;

    if (!TAKE(&c, "{\"code\":") || !take_int(&c, &code))
        goto not_mine;
    if (TAKE(&c, ",\"extFields\":")) {
        r = take_ext(&c, &ext);
        if (r < 0)
            goto error;
        if (r == 0)
            goto not_mine;
    }
    if (!TAKE(&c, ",\"flag\":") || !take_int(&c, &flag) || !TAKE(&c, ",\"language\":\""))
        goto not_mine;
    language = take_language(&c);
    if (language == NULL) {
        if (PyErr_Occurred())
            goto error;
        goto not_mine;
    }
    if (!TAKE(&c, ",\"opaque\":") || !take_int(&c, &opaque))
        goto not_mine;
    if (TAKE(&c, ",\"remark\":")) { /* (a response's: a pop's status name, an error's reason) */
        r = take_string(&c, &remark);
        if (r < 0)
            goto error;
        if (r == 0)
            goto not_mine;
    }
    if (!TAKE(&c, ",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":") || !take_int(&c, &version)
        || !TAKE(&c, "}") || c.p != c.end)
        goto not_mine;
    if (ext == NULL && (ext = PyDict_New()) == NULL)
        goto error;

    /* RemotingCommand(code, language, version, opaque, flag, remark, ext_fields, body, serialize_type) */
    args[0] = PyLong_FromLong(code);
    args[1] = language;
    args[2] = PyLong_FromLong(version);
    args[3] = PyLong_FromLong(opaque);
    args[4] = PyLong_FromLong(flag);
    args[5] = remark != NULL ? remark : Py_None;
    args[6] = ext;
    args[7] = Py_None;
    args[8] = serialize_json;
    if (args[0] != NULL && args[2] != NULL && args[3] != NULL && args[4] != NULL)
        result = PyObject_Vectorcall(command_type, args, 9, NULL);
    Py_XDECREF(args[0]);
    Py_XDECREF(args[2]);
    Py_XDECREF(args[3]);
    Py_XDECREF(args[4]);
    goto done;

not_mine:
    result = Py_None;
    Py_INCREF(result);
    goto done;
error:
    result = NULL;
done:
    Py_XDECREF(ext);
    Py_XDECREF(language);
    Py_XDECREF(remark);
    PyBuffer_Release(&view);
    return result;
}

/* ---- writing the JSON header -------------------------------------------------------------------------------- */

typedef struct {
    char *data;
    Py_ssize_t len, cap;
    char stack[1024];
} out_buf;

static int
grow(out_buf *b, Py_ssize_t more)
{
    Py_ssize_t need = b->len + more, cap = b->cap;
    char *data;
    if (need <= cap)
        return 0;
    if (need > PY_SSIZE_T_MAX / 2) {
        PyErr_NoMemory();
        return -1;
    }
    while (cap < need)
        cap *= 2;
    if (b->data == b->stack) {
        data = PyMem_Malloc((size_t)cap);
        if (data != NULL)
            memcpy(data, b->stack, (size_t)b->len);
    }
    else {
        data = PyMem_Realloc(b->data, (size_t)cap);
    }
    if (data == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->data = data;
    b->cap = cap;
    return 0;
}

static int
put(out_buf *b, const char *s, Py_ssize_t n)
{
    if (n == 0)
        return 0; /* (s may be NULL then: no remark) */
    if (grow(b, n) < 0)
        return -1;
    memcpy(b->data + b->len, s, (size_t)n);
    b->len += n;
    return 0;
}

#define PUT(b, lit) put((b), (lit), (Py_ssize_t)(sizeof(lit) - 1))

static void
buf_init(out_buf *b)
{
    b->data = b->stack;
    b->len = 0;
    b->cap = (Py_ssize_t)sizeof(b->stack);
}

static void
buf_free(out_buf *b)
{
    if (b->data != b->stack)
        PyMem_Free(b->data);
}

/* A command's seven header fields, held (new references) while a writer reads them. */
typedef struct {
    PyObject *code, *flag, *opaque, *version, *language, *remark, *ext;
} command_fields;

/* 1 with every field held; 0 when ``cmd`` lacks one (error cleared: not a command, and the Python writer says what
 * is wrong). release_fields is called either way. */
static int
fetch_fields(PyObject *cmd, command_fields *f)
{
    memset(f, 0, sizeof(*f));
    if ((f->code = PyObject_GetAttr(cmd, s_code)) && (f->flag = PyObject_GetAttr(cmd, s_flag))
        && (f->opaque = PyObject_GetAttr(cmd, s_opaque)) && (f->version = PyObject_GetAttr(cmd, s_version))
        && (f->language = PyObject_GetAttr(cmd, s_language)) && (f->remark = PyObject_GetAttr(cmd, s_remark))
        && (f->ext = PyObject_GetAttr(cmd, s_ext_fields)))
        return 1;
    PyErr_Clear();
    return 0;
}

static void
release_fields(command_fields *f)
{
    Py_XDECREF(f->code);
    Py_XDECREF(f->flag);
    Py_XDECREF(f->opaque);
    Py_XDECREF(f->version);
    Py_XDECREF(f->language);
    Py_XDECREF(f->remark);
    Py_XDECREF(f->ext);
}

/* A Java int's value of an int (any int subclass, as int() reads it); 0: not one (out of range, not an int). */
static int
int32_of(PyObject *v, long long *out)
{
    int overflow;
    long long n;
    if (!PyLong_Check(v))
        return 0;
    n = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow || (n == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 0;
    }
    if (n < -2147483648LL || n > 2147483647LL)
        return 0;
    *out = n;
    return 1;
}

static int
put_long(out_buf *b, long long n)
{
    char digits[24];
    int len = snprintf(digits, sizeof(digits), "%lld", n);
    return put(b, digits, len);
}

static const char HEX[] = "0123456789ABCDEF";

/* s as fastjson quotes it: '"' and '\\' and \b \t \n \f \r by their short forms, the other C0 controls and
 * U+007F-U+009F as \uXXXX (upper-case digits), the rest raw UTF-8. 1: written; 0: not mine (a lone surrogate,
 * which has no UTF-8: the Python writes it); -1: error. */
static int
put_quoted(out_buf *b, PyObject *s)
{
    Py_ssize_t n, i, run;
    const unsigned char *u;
    u = (const unsigned char *)PyUnicode_AsUTF8AndSize(s, &n);
    if (u == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError))
            return -1;
        PyErr_Clear();
        return 0;
    }
    /* At most 6 bytes out per byte in (a control as \u00XX). */
    if (n > (PY_SSIZE_T_MAX - 2) / 6) {
        PyErr_NoMemory();
        return -1;
    }
    if (grow(b, 6 * n + 2) < 0)
        return -1;
    b->data[b->len++] = '"';
    for (i = 0; i < n;) {
        unsigned char ch = u[i];
        char *w = b->data + b->len;
        /* A run that needs no escape, copied at once. */
        run = i;
        while (run < n && u[run] >= 0x20 && u[run] != '"' && u[run] != '\\' && u[run] != 0x7F
               && !(u[run] == 0xC2 && run + 1 < n && u[run + 1] >= 0x80 && u[run + 1] <= 0x9F))
            run++;
        if (run > i) {
            memcpy(w, u + i, (size_t)(run - i));
            b->len += run - i;
            i = run;
            continue;
        }
        switch (ch) {
        case '"': w[0] = '\\'; w[1] = '"'; b->len += 2; i++; continue;
        case '\\': w[0] = '\\'; w[1] = '\\'; b->len += 2; i++; continue;
        case '\b': w[0] = '\\'; w[1] = 'b'; b->len += 2; i++; continue;
        case '\t': w[0] = '\\'; w[1] = 't'; b->len += 2; i++; continue;
        case '\n': w[0] = '\\'; w[1] = 'n'; b->len += 2; i++; continue;
        case '\f': w[0] = '\\'; w[1] = 'f'; b->len += 2; i++; continue;
        case '\r': w[0] = '\\'; w[1] = 'r'; b->len += 2; i++; continue;
        default: {
            unsigned int cp = ch;
            if (ch == 0xC2) { /* U+0080-U+009F */
                cp = u[i + 1];
                i++;
            }
            w[0] = '\\'; w[1] = 'u'; w[2] = '0'; w[3] = '0';
            w[4] = HEX[cp >> 4];
            w[5] = HEX[cp & 0xF];
            b->len += 6;
            i++;
        }
        }
    }
    b->data[b->len++] = '"';
    return 1;
}

/* The ext map's entries, in the map's order, None values left out: `"name":"text"`, the text of a str as is, of
 * an int its decimal digits, of a bool true/false. Exact types only (a subclass's text is the Python's to make).
 * 1: written (*written: how many); 0: not mine; -1: error. */
static int
put_ext(out_buf *b, PyObject *ext, Py_ssize_t *written)
{
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    int r;
    *written = 0;
    while (PyDict_Next(ext, &pos, &k, &v)) {
        if (!PyUnicode_CheckExact(k))
            return 0; /* (even beside None: the Python refuses a key that is no str) */
        if (v == Py_None)
            continue;
        if (*written > 0 && PUT(b, ",") < 0)
            return -1;
        if ((r = put_quoted(b, k)) <= 0)
            return r;
        if (PUT(b, ":") < 0)
            return -1;
        if (PyUnicode_CheckExact(v)) {
            if ((r = put_quoted(b, v)) <= 0)
                return r;
        }
        else if (v == Py_True) {
            if (PUT(b, "\"true\"") < 0)
                return -1;
        }
        else if (v == Py_False) {
            if (PUT(b, "\"false\"") < 0)
                return -1;
        }
        else if (PyLong_CheckExact(v)) {
            int overflow;
            long long n = PyLong_AsLongLongAndOverflow(v, &overflow);
            if (n == -1 && PyErr_Occurred())
                return -1;
            if (overflow) {
                PyObject *text = PyObject_Str(v);
                const char *t;
                Py_ssize_t tn;
                if (text == NULL)
                    return -1;
                t = PyUnicode_AsUTF8AndSize(text, &tn);
                r = t == NULL || PUT(b, "\"") < 0 || put(b, t, tn) < 0 || PUT(b, "\"") < 0;
                Py_DECREF(text);
                if (r)
                    return -1;
            }
            else if (PUT(b, "\"") < 0 || put_long(b, n) < 0 || PUT(b, "\"") < 0) {
                return -1;
            }
        }
        else {
            return 0;
        }
        ++*written;
    }
    return 1;
}

static PyObject *
encode_json_header(PyObject *self, PyObject *cmd)
{
    command_fields f;
    PyObject *name, *result = NULL;
    long long n_code, n_flag, n_opaque, n_version;
    Py_ssize_t entries = 0, mark;
    out_buf b;
    int r;

    if (language_names == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_speedups.configure() was not called");
        return NULL;
    }
    buf_init(&b);
    if (!fetch_fields(cmd, &f))
        goto not_mine;
    if (!int32_of(f.code, &n_code) || !int32_of(f.flag, &n_flag) || !int32_of(f.opaque, &n_opaque)
        || !int32_of(f.version, &n_version) || (f.remark != Py_None && !PyUnicode_CheckExact(f.remark))
        || !PyLong_Check(f.language)
        || !PyDict_CheckExact(f.ext))
        goto not_mine;
    name = PyDict_GetItemWithError(language_names, f.language); /* borrowed */
    if (name == NULL) {
        if (PyErr_Occurred())
            goto error;
        goto not_mine; /* a code without a name: written as a number, by the Python */
    }
    if (!PyUnicode_CheckExact(name) || !PyUnicode_IS_ASCII(name))
        goto not_mine;
    if (PUT(&b, "{\"code\":") < 0 || put_long(&b, n_code) < 0)
        goto error;
    if (PyDict_GET_SIZE(f.ext) > 0) {
        mark = b.len;
        if (PUT(&b, ",\"extFields\":{") < 0)
            goto error;
        r = put_ext(&b, f.ext, &entries);
        if (r < 0)
            goto error;
        if (r == 0)
            goto not_mine;
        if (entries == 0)
            b.len = mark; /* only None values: no map, as Java leaves an empty one out */
        else if (PUT(&b, "}") < 0)
            goto error;
    }
    if (PUT(&b, ",\"flag\":") < 0 || put_long(&b, n_flag) < 0 || PUT(&b, ",\"language\":\"") < 0
        || put(&b, (const char *)PyUnicode_1BYTE_DATA(name), PyUnicode_GET_LENGTH(name)) < 0
        || PUT(&b, "\",\"opaque\":") < 0 || put_long(&b, n_opaque) < 0)
        goto error;
    if (f.remark != Py_None) {
        if (PUT(&b, ",\"remark\":") < 0)
            goto error;
        r = put_quoted(&b, f.remark);
        if (r < 0)
            goto error;
        if (r == 0)
            goto not_mine;
    }
    if (PUT(&b, ",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":") < 0 || put_long(&b, n_version) < 0
        || PUT(&b, "}") < 0)
        goto error;
    result = PyBytes_FromStringAndSize(b.data, b.len);
    goto done;
not_mine:
    result = Py_None;
    Py_INCREF(result);
    goto done;
error:
    result = NULL;
done:
    buf_free(&b);
    release_fields(&f);
    return result;
}

/* ---- the ROCKETMQ binary header -------------------------------------------------------------------------------- */

static PyObject *serialize_rocketmq = NULL;

static int32_t
be32(const unsigned char *p)
{
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3]);
}

static int16_t
be16(const unsigned char *p)
{
    return (int16_t)(((uint16_t)p[0] << 8) | (uint16_t)p[1]);
}

/* The command rocketmq_serializable.decode_rocketmq_header reads (its layout there), or None when the header is
 * malformed (the Python raises the error). An entry with an empty key or value is left out, as there. */
static PyObject *
decode_rocketmq_header(PyObject *self, PyObject *data)
{
    Py_buffer view;
    const unsigned char *b;
    Py_ssize_t n, pos, end;
    int32_t opaque, flag, remark_len, ext_len;
    PyObject *remark = NULL, *ext = NULL, *key = NULL, *value = NULL, *result = NULL;
    PyObject *args[9] = {NULL};

    if (command_type == NULL || serialize_rocketmq == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_speedups.configure_rocketmq() was not called");
        return NULL;
    }
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    b = (const unsigned char *)view.buf;
    n = view.len;
    if (n < 21) /* code 2, language 1, version 2, opaque 4, flag 4, remark length 4, ext length 4 */
        goto not_mine;
    opaque = be32(b + 5);
    flag = be32(b + 9);
    remark_len = be32(b + 13);
    pos = 17;
    if (remark_len < 0 || remark_len > n - pos - 4)
        goto not_mine;
    if (remark_len > 0) {
        remark = PyUnicode_DecodeUTF8((const char *)b + pos, remark_len, "replace");
        if (remark == NULL)
            goto error;
    }
    pos += remark_len;
    ext_len = be32(b + pos);
    pos += 4;
    if (ext_len < 0 || ext_len > n - pos)
        goto not_mine;
    end = pos + ext_len;
    if ((ext = PyDict_New()) == NULL)
        goto error;
    while (pos < end) {
        int16_t key_len;
        int32_t value_len;
        if (end - pos < 2)
            goto not_mine;
        key_len = be16(b + pos);
        pos += 2;
        if (key_len < 0 || key_len > end - pos - 4)
            goto not_mine;
        value_len = be32(b + pos + key_len);
        if (value_len < 0 || value_len > end - pos - key_len - 4)
            goto not_mine;
        if (key_len > 0 && value_len > 0) {
            key = PyUnicode_DecodeUTF8((const char *)b + pos, key_len, "replace");
            if (key == NULL)
                goto error;
            value = PyUnicode_DecodeUTF8((const char *)b + pos + key_len + 4, value_len, "replace");
            if (value == NULL || PyDict_SetItem(ext, key, value) < 0)
                goto error;
            Py_CLEAR(key);
            Py_CLEAR(value);
        }
        pos += key_len + 4 + value_len;
    }
    /* RemotingCommand(code, language, version, opaque, flag, remark, ext_fields, body, serialize_type) */
    args[0] = PyLong_FromLong(be16(b));
    args[1] = PyLong_FromLong(b[2]);
    args[2] = PyLong_FromLong(be16(b + 3));
    args[3] = PyLong_FromLong(opaque);
    args[4] = PyLong_FromLong(flag);
    if (args[0] && args[1] && args[2] && args[3] && args[4]) {
        args[5] = remark != NULL ? remark : Py_None;
        args[6] = ext;
        args[7] = Py_None;
        args[8] = serialize_rocketmq;
        result = PyObject_Vectorcall(command_type, args, 9, NULL);
    }
    for (int i = 0; i < 5; i++)
        Py_XDECREF(args[i]);
    goto done;
not_mine:
    result = Py_None;
    Py_INCREF(result);
    goto done;
error:
    result = NULL;
done:
    Py_XDECREF(key);
    Py_XDECREF(value);
    Py_XDECREF(remark);
    Py_XDECREF(ext);
    PyBuffer_Release(&view);
    return result;
}

static int
put_be(out_buf *b, uint32_t v, int bytes)
{
    char w[4];
    for (int i = 0; i < bytes; i++)
        w[i] = (char)(v >> (8 * (bytes - 1 - i)));
    return put(b, w, bytes);
}

/* One ext entry's text as Java's toString() writes it: a str as is, an int's digits, a bool true/false (exact
 * types only). 1: *text and *len set (*owner holds what must be released); 0: not mine; -1: error. */
static int
java_text_utf8(PyObject *v, const char **text, Py_ssize_t *len, PyObject **owner)
{
    *owner = NULL;
    if (PyUnicode_CheckExact(v)) {
        *text = PyUnicode_AsUTF8AndSize(v, len);
        if (*text == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError))
                return -1;
            PyErr_Clear();
            return 0; /* a lone surrogate: the Python's error */
        }
        return 1;
    }
    if (v == Py_True) {
        *text = "true";
        *len = 4;
        return 1;
    }
    if (v == Py_False) {
        *text = "false";
        *len = 5;
        return 1;
    }
    if (PyLong_CheckExact(v)) {
        *owner = PyObject_Str(v);
        if (*owner == NULL)
            return -1;
        *text = PyUnicode_AsUTF8AndSize(*owner, len);
        return *text == NULL ? -1 : 1;
    }
    return 0;
}

/* The bytes rocketmq_serializable.encode_rocketmq_header writes for a command whose fields fit (code and
 * version a short, language a byte, opaque and flag Java ints), whose remark is None or a str, and whose ext map is
 * a dict of str keys (of at most 32767 UTF-8 bytes) and str, int, bool or None values; None for any other. */
static PyObject *
encode_rocketmq_header(PyObject *self, PyObject *cmd)
{
    command_fields f;
    PyObject *result = NULL, *k, *v;
    long long n_code, n_flag, n_opaque, n_version, n_language;
    const char *remark_text = NULL;
    Py_ssize_t remark_len = 0, ext_start, pos = 0;
    out_buf b;
    int r;

    if (s_code == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_speedups.configure() was not called");
        return NULL;
    }
    buf_init(&b);
    if (!fetch_fields(cmd, &f))
        goto not_mine;
    if (!int32_of(f.code, &n_code) || !int32_of(f.flag, &n_flag) || !int32_of(f.opaque, &n_opaque)
        || !int32_of(f.version, &n_version) || !int32_of(f.language, &n_language) || !PyDict_CheckExact(f.ext)
        || n_code < -0x8000 || n_code > 0x7FFF || n_version < -0x8000 || n_version > 0x7FFF || n_language < 0
        || n_language > 0xFF)
        goto not_mine;
    if (f.remark != Py_None) {
        if (!PyUnicode_CheckExact(f.remark))
            goto not_mine;
        remark_text = PyUnicode_AsUTF8AndSize(f.remark, &remark_len);
        if (remark_text == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError))
                goto error;
            PyErr_Clear();
            goto not_mine;
        }
        if (remark_len > 0x7FFFFFFF)
            goto not_mine;
    }
    if (put_be(&b, (uint32_t)n_code, 2) < 0 || put_be(&b, (uint32_t)n_language, 1) < 0
        || put_be(&b, (uint32_t)n_version, 2) < 0 || put_be(&b, (uint32_t)n_opaque, 4) < 0
        || put_be(&b, (uint32_t)n_flag, 4) < 0 || put_be(&b, (uint32_t)remark_len, 4) < 0
        || put(&b, remark_text, remark_len) < 0 || put_be(&b, 0, 4) < 0)
        goto error;
    ext_start = b.len;
    while (PyDict_Next(f.ext, &pos, &k, &v)) {
        const char *key, *text;
        Py_ssize_t key_len, text_len;
        PyObject *owner;
        if (!PyUnicode_CheckExact(k))
            goto not_mine;
        if (v == Py_None)
            continue;
        key = PyUnicode_AsUTF8AndSize(k, &key_len);
        if (key == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError))
                goto error;
            PyErr_Clear();
            goto not_mine;
        }
        if (key_len > 0x7FFF)
            goto not_mine;
        r = java_text_utf8(v, &text, &text_len, &owner);
        if (r <= 0) {
            Py_XDECREF(owner);
            if (r < 0)
                goto error;
            goto not_mine;
        }
        r = text_len > 0x7FFFFFFF || put_be(&b, (uint32_t)key_len, 2) < 0 || put(&b, key, key_len) < 0
            || put_be(&b, (uint32_t)text_len, 4) < 0 || put(&b, text, text_len) < 0;
        Py_XDECREF(owner);
        if (r) {
            if (PyErr_Occurred())
                goto error;
            goto not_mine;
        }
    }
    if (b.len - ext_start > 0x7FFFFFFF)
        goto not_mine;
    {
        uint32_t ext_len = (uint32_t)(b.len - ext_start);
        unsigned char *w = (unsigned char *)b.data + ext_start - 4;
        w[0] = (unsigned char)(ext_len >> 24);
        w[1] = (unsigned char)(ext_len >> 16);
        w[2] = (unsigned char)(ext_len >> 8);
        w[3] = (unsigned char)ext_len;
    }
    result = PyBytes_FromStringAndSize(b.data, b.len);
    goto done;
not_mine:
    result = Py_None;
    Py_INCREF(result);
    goto done;
error:
    result = NULL;
done:
    buf_free(&b);
    release_fields(&f);
    return result;
}

static PyObject *
configure_rocketmq(PyObject *self, PyObject *serialize_type)
{
    Py_INCREF(serialize_type);
    Py_XSETREF(serialize_rocketmq, serialize_type);
    Py_RETURN_NONE;
}

/* ---- a typed header's fields from its ext map ------------------------------------------------------------- */

/* The kinds of header_codec._compile's field specs. */
enum { KIND_STR = 0, KIND_LONG = 1, KIND_INT = 2, KIND_BOOL = 3, KIND_FLOAT = 4 };

/* A decimal text [+-]?[0-9]{1,max_digits} as an int; NULL (no exception) when the text is not one. */
static PyObject *
int_from_text(PyObject *text, int max_digits, int java_int)
{
    Py_ssize_t n, i = 0;
    const char *s;
    long long v = 0;
    int neg = 0;
    if (!PyUnicode_IS_ASCII(text))
        return NULL;
    n = PyUnicode_GET_LENGTH(text);
    s = (const char *)PyUnicode_1BYTE_DATA(text);
    if (n > 0 && (s[0] == '-' || s[0] == '+')) {
        neg = s[0] == '-';
        i = 1;
    }
    if (n - i < 1 || n - i > max_digits)
        return NULL;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return NULL;
        v = v * 10 + (s[i] - '0');
    }
    if (neg)
        v = -v;
    if (java_int && (v < -2147483648LL || v > 2147483647LL))
        return NULL;
    return PyLong_FromLongLong(v);
}

static PyObject *
ext_values(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *ext, *specs, *out;
    Py_ssize_t i, n;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "ext_values(ext, specs) takes 2 arguments");
        return NULL;
    }
    ext = args[0];
    specs = args[1];
    if (!PyTuple_CheckExact(specs)) {
        PyErr_SetString(PyExc_TypeError, "specs must be a tuple");
        return NULL;
    }
    if (!PyDict_CheckExact(ext))
        Py_RETURN_NONE; /* another mapping: the Python reads it */
    n = PyTuple_GET_SIZE(specs);
    out = PyTuple_New(n);
    if (out == NULL)
        return NULL;
    for (i = 0; i < n; i++) {
        /* (wire name, kind, required, default, default factory or None) */
        PyObject *spec = PyTuple_GET_ITEM(specs, i), *v, *r = NULL;
        long kind;
        if (!PyTuple_CheckExact(spec) || PyTuple_GET_SIZE(spec) != 5) {
            PyErr_SetString(PyExc_TypeError, "a spec must be a 5-tuple");
            goto error;
        }
        kind = PyLong_AsLong(PyTuple_GET_ITEM(spec, 1));
        if (kind == -1 && PyErr_Occurred())
            goto error;
        v = PyDict_GetItemWithError(ext, PyTuple_GET_ITEM(spec, 0)); /* borrowed */
        if (v == NULL && PyErr_Occurred())
            goto error;
        if (v == NULL || v == Py_None) {
            PyObject *factory = PyTuple_GET_ITEM(spec, 4);
            if (PyObject_IsTrue(PyTuple_GET_ITEM(spec, 2)))
                goto not_mine; /* required: the Python says it is missing */
            if (factory != Py_None) {
                r = PyObject_CallNoArgs(factory);
                if (r == NULL)
                    goto error;
            }
            else {
                r = PyTuple_GET_ITEM(spec, 3);
                Py_INCREF(r);
            }
        }
        else {
            switch (kind) {
            case KIND_STR:
                if (PyUnicode_CheckExact(v)) {
                    r = v;
                    Py_INCREF(r);
                }
                break;
            case KIND_LONG:
            case KIND_INT:
                if (PyLong_CheckExact(v)) {
                    r = v;
                    Py_INCREF(r);
                }
                else if (PyUnicode_CheckExact(v)) {
                    r = int_from_text(v, kind == KIND_INT ? 9 : 18, kind == KIND_INT);
                    if (r == NULL && PyErr_Occurred())
                        goto error;
                }
                break;
            case KIND_BOOL:
                if (PyBool_Check(v)) {
                    r = v;
                    Py_INCREF(r);
                }
                else if (PyUnicode_CheckExact(v)) {
                    if (PyUnicode_CompareWithASCIIString(v, "true") == 0)
                        r = Py_True;
                    else if (PyUnicode_CompareWithASCIIString(v, "false") == 0)
                        r = Py_False;
                    Py_XINCREF(r);
                }
                break;
            case KIND_FLOAT:
                if (PyFloat_CheckExact(v)) {
                    r = v;
                    Py_INCREF(r);
                }
                break;
            default:
                PyErr_Format(PyExc_ValueError, "unknown field kind %ld", kind);
                goto error;
            }
            if (r == NULL)
                goto not_mine;
        }
        PyTuple_SET_ITEM(out, i, r);
    }
    return out;
not_mine:
    Py_DECREF(out);
    Py_RETURN_NONE;
error:
    Py_DECREF(out);
    return NULL;
}

/* ---- the module --------------------------------------------------------------------------------------------- */

static PyMethodDef speedups_methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(command_type, language_codes, serialize_json): what decode_json_header builds with."},
    {"decode_json_header", decode_json_header, METH_O,
     "The RemotingCommand of a JSON header of Java's shape, or None for the Python to read."},
    {"encode_json_header", encode_json_header, METH_O,
     "A command's JSON header as fastjson writes it, or None for the Python to write."},
    {"configure_rocketmq", configure_rocketmq, METH_O,
     "configure_rocketmq(serialize_rocketmq): what decode_rocketmq_header builds with."},
    {"decode_rocketmq_header", decode_rocketmq_header, METH_O,
     "The RemotingCommand of a well-formed ROCKETMQ header, or None for the Python to read."},
    {"encode_rocketmq_header", encode_rocketmq_header, METH_O,
     "A command's ROCKETMQ header, or None for the Python to write."},
    {"ext_values", (PyCFunction)(void (*)(void))ext_values, METH_FASTCALL,
     "A header's field values from its ext map in spec order, or None for the Python to read."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef speedups_module = {
    PyModuleDef_HEAD_INIT, "pocketmq.remoting._speedups",
    "C forms of the native protocol's hottest steps; the Python beside them is the reference.", -1,
    speedups_methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    PyObject *m = PyModule_Create(&speedups_module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddStringConstant(m, "SOURCE_HASH", POCKETMQ_SOURCE_HASH) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
