/* pocketmq.storage._speedups: the C form of the dispatcher's hottest Python step (issue 32).
 *
 * index_record(mm, props, prefix_hash, hash_slot_num, index_num, entries_base, index_count, begin_timestamp,
 *              phy_offset, store_timestamp)
 *     What ReputMessageService._classify and IndexService.build_index_raw do for one record whose properties are
 *     ``props`` (the stored form: name \x01 value \x02 ...): the record's UNIQ_KEY and each of its KEYS (split at
 *     spaces, empty ones left out) are written to the index file mapped at ``mm`` as IndexFile.put_hashed writes
 *     them, from entry ``index_count`` on, hashed as String.hashCode of "topic#key" from ``prefix_hash``, the hash of
 *     "topic#"; the answer is (tags code, index_count after, hash slots newly taken).
 *
 *     It answers None, having written nothing, for whatever the Python does otherwise or more than this: a pair
 *     of properties without exactly one \x01, TAGS, KEYS or UNIQ_KEY given twice, a non-ASCII key or tags value,
 *     an index file that is new (its first entry also writes the header) or has no room for every key of the
 *     record. The caller then runs the Python
 *     (the reference), which has its own answer for each of those. What the C takes it must turn into exactly the
 *     bytes and the code the Python makes; tests/storage/test_storage_speedups.py holds the two together with
 *     hypothesis. Every write is bounds-checked against the mapping's length before the first one.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#ifndef POCKETMQ_SOURCE_HASH
#define POCKETMQ_SOURCE_HASH ""
#endif

#define INDEX_HEADER_SIZE 40
#define INDEX_SLOT_SIZE 4
#define INDEX_ENTRY_SIZE 20
#define MAX_INT 0x7FFFFFFFLL
/* A record with more keys than this is the Python's (it is not a batch's message). */
#define MAX_KEYS 64

typedef struct {
    const unsigned char *p;
    Py_ssize_t n;
    int found;
} span;

/* The value of TAGS, KEYS and UNIQ_KEY in ``s``; -1 when a pair of it is not name \x01 value, or when one of the
 * three comes twice (the Python takes the last non-empty one, as Java's HashMap of the properties keeps). */
static int
find_properties(const unsigned char *s, Py_ssize_t n, span *tags, span *keys, span *uniq)
{
    Py_ssize_t i = 0;
    tags->found = keys->found = uniq->found = 0;
    while (i < n) {
        const unsigned char *seg = s + i;
        const unsigned char *stop = memchr(seg, 2, (size_t)(n - i));
        Py_ssize_t len = stop ? stop - seg : n - i;
        if (len > 0) {
            const unsigned char *sep = memchr(seg, 1, (size_t)len);
            if (sep == NULL)
                return -1;
            Py_ssize_t name_len = sep - seg;
            const unsigned char *value = sep + 1;
            Py_ssize_t value_len = len - name_len - 1;
            if (memchr(value, 1, (size_t)value_len) != NULL)
                return -1;
            span *target = NULL;
            if (name_len == 4 && memcmp(seg, "TAGS", 4) == 0)
                target = tags;
            else if (name_len == 4 && memcmp(seg, "KEYS", 4) == 0)
                target = keys;
            else if (name_len == 8 && memcmp(seg, "UNIQ_KEY", 8) == 0)
                target = uniq;
            if (target != NULL && target->found)
                return -1;
            if (target != NULL) {
                target->p = value;
                target->n = value_len;
                target->found = 1;
            }
        }
        i += len + 1;
    }
    return 0;
}

static int
is_ascii(const unsigned char *p, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++)
        if (p[i] & 0x80)
            return 0;
    return 1;
}

static uint32_t
extend_hash(uint32_t h, const unsigned char *p, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++)
        h = h * 31u + p[i];
    return h;
}

static void
put_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static void
put_be64(unsigned char *p, uint64_t v)
{
    put_be32(p, (uint32_t)(v >> 32));
    put_be32(p + 4, (uint32_t)v);
}

static int32_t
get_be32(const unsigned char *p)
{
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3]);
}

static int
as_long_long(PyObject *o, long long *out)
{
    int overflow = 0;
    *out = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow != 0) {
        PyErr_SetString(PyExc_OverflowError, "index_record: an int out of range");
        return -1;
    }
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

static PyObject *
index_record(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 10) {
        PyErr_SetString(PyExc_TypeError, "index_record takes 10 arguments");
        return NULL;
    }
    PyObject *props_obj = args[1];
    if (!PyBytes_Check(props_obj)) {
        PyErr_SetString(PyExc_TypeError, "index_record: props must be bytes");
        return NULL;
    }
    long long prefix, slot_num, index_num, entries_base, count, begin, phy, ts;
    if (as_long_long(args[2], &prefix) || as_long_long(args[3], &slot_num) || as_long_long(args[4], &index_num) ||
        as_long_long(args[5], &entries_base) || as_long_long(args[6], &count) || as_long_long(args[7], &begin) ||
        as_long_long(args[8], &phy) || as_long_long(args[9], &ts))
        return NULL;

    const unsigned char *props = (const unsigned char *)PyBytes_AS_STRING(props_obj);
    span tags, keys, uniq;
    if (find_properties(props, PyBytes_GET_SIZE(props_obj), &tags, &keys, &uniq) < 0)
        Py_RETURN_NONE;

    /* tagsString2tagsCode: the signed hash of the TAGS value, 0 without one */
    long long code = 0;
    if (tags.found && tags.n > 0) {
        if (!is_ascii(tags.p, tags.n))
            Py_RETURN_NONE;
        code = (int32_t)extend_hash(0, tags.p, tags.n);
    }

    /* the keys to index: UNIQ_KEY, then KEYS split at spaces, empty ones left out */
    span found[MAX_KEYS];
    int k = 0;
    if (uniq.found && uniq.n > 0)
        found[k++] = uniq;
    if (keys.found) {
        Py_ssize_t i = 0;
        while (i <= keys.n) {
            const unsigned char *start = keys.p + i;
            const unsigned char *space = i < keys.n ? memchr(start, ' ', (size_t)(keys.n - i)) : NULL;
            Py_ssize_t len = space ? space - start : keys.n - i;
            if (len > 0) {
                if (k == MAX_KEYS)
                    Py_RETURN_NONE;
                found[k].p = start;
                found[k].n = len;
                k++;
            }
            i += len + 1;
        }
    }
    for (int j = 0; j < k; j++)
        if (!is_ascii(found[j].p, found[j].n))
            Py_RETURN_NONE;
    if (k == 0)
        return Py_BuildValue("(LLi)", code, count, 0);
    if (slot_num <= 0 || index_num <= 0 || count <= 1 || count > index_num - k || prefix < 0 ||
        prefix > 0xFFFFFFFFLL)
        Py_RETURN_NONE;

    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_WRITABLE) < 0)
        return NULL;
    long long len = (long long)view.len;
    /* (each product is bounded by the length before it is taken: no overflow) */
    if (slot_num > len / INDEX_SLOT_SIZE || index_num > len / INDEX_ENTRY_SIZE ||
        entries_base < INDEX_HEADER_SIZE + slot_num * INDEX_SLOT_SIZE ||
        entries_base > len - index_num * INDEX_ENTRY_SIZE) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "index_record: the layout does not fit the mapping");
        return NULL;
    }
    unsigned char *mm = (unsigned char *)view.buf;
    long long time_diff = 0;
    if (begin > 0) {
        /* Python's floor division; a negative difference ends at 0 either way */
        time_diff = ts < begin ? 0 : (ts - begin) / 1000;
        if (time_diff > MAX_INT)
            time_diff = MAX_INT;
    }
    int added = 0;
    for (int j = 0; j < k; j++) {
        uint32_t h = extend_hash((uint32_t)prefix, found[j].p, found[j].n);
        /* abs of the signed hash; Integer.MIN_VALUE stays negative in Java and becomes 0 */
        if (h & 0x80000000u)
            h = (uint32_t)(0x100000000ULL - h);
        if (h > 0x7FFFFFFFu)
            h = 0;
        unsigned char *slot = mm + INDEX_HEADER_SIZE + (long long)(h % (uint64_t)slot_num) * INDEX_SLOT_SIZE;
        int32_t slot_value = get_be32(slot);
        if (slot_value <= 0 || slot_value > count) {
            slot_value = 0;
            added++;
        }
        unsigned char *entry = mm + entries_base + count * INDEX_ENTRY_SIZE;
        put_be32(entry, h);
        put_be64(entry + 4, (uint64_t)phy);
        put_be32(entry + 12, (uint32_t)time_diff);
        put_be32(entry + 16, (uint32_t)slot_value);
        put_be32(slot, (uint32_t)count);
        count++;
    }
    PyBuffer_Release(&view);
    return Py_BuildValue("(LLi)", code, count, added);
}

static PyMethodDef speedups_methods[] = {
    {"index_record", (PyCFunction)(void (*)(void))index_record, METH_FASTCALL,
     "Index one record's UNIQ_KEY and KEYS and answer (tags code, index count, slots taken), or None for the "
     "Python to do it."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef speedups_module = {
    PyModuleDef_HEAD_INIT, "pocketmq.storage._speedups",
    "The C form of the dispatcher's index step; the Python beside it is the reference.", -1, speedups_methods,
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
