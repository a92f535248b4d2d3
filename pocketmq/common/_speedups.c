/* pocketmq.common._speedups: the C form of the client's hottest decoding step (issue 32 item 4).
 *
 * decode_records(buf, offset, slow_bits, out, cls, unpack_host, extra, sep_extra) -> int
 *     What codec._decode_common_py does: the commit-log records of ``buf`` (bytes) from ``offset``, one after the
 *     other, each appended to ``out`` as ``cls(...)`` (MessageExt, its 16 stored fields in order) while it is the
 *     common record: MESSAGE_MAGIC_CODE, no flag of ``slow_bits`` (IPv6 hosts; a compressed body when the caller
 *     inflates), lengths that fit the record exactly, topic and properties in UTF-8. The answer is where it
 *     stopped: the end, or the first record it leaves to codec.decode (the reference), which says what is wrong
 *     with a damaged one. Hosts go through ``unpack_host`` (bytes -> "ip:port"), called only when a record's
 *     raw host differs from the previous record's, as the topic is decoded only when its bytes differ; each
 *     record's properties are its stored string with ``extra`` appended, after ``sep_extra`` (``"\x02" + extra``)
 *     when the stored string lacks its last separator.
 *
 * tests/common/test_common_speedups.py holds it to the Python with hypothesis (random, damaged and truncated
 * records, non-UTF-8 text, every flag).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

#ifndef POCKETMQ_SOURCE_HASH
#define POCKETMQ_SOURCE_HASH ""
#endif

#define MESSAGE_MAGIC_CODE 0xDAA320A7u /* 3668123815 */
#define HEAD 88                          /* BODY_POS_V4: everything before the body */
#define AFTER_BODY 3                     /* topic length (1 byte) and properties length (2) */
#define FIELDS 16
#define SLOTS 18 /* the 16 stored fields, then _properties and body_inflate_error (None) */

/* Where each of ``cls``'s 18 __slots__ lives in an instance, found once per class: a message is then made
 * without its dataclass __init__ (a Python frame that stores 18 attributes, a third of this step), by
 * storing into those slots as that __init__ would. Another class or another shape: the __init__ is called. */
static PyObject *slots_cls = NULL; /* (a strong reference) */
static Py_ssize_t slot_offsets[SLOTS];
static int slots_usable = 0;

static void
find_slots(PyObject *cls)
{
    Py_XSETREF(slots_cls, Py_NewRef(cls));
    slots_usable = 0;
    if (!PyType_Check(cls) || ((PyTypeObject *)cls)->tp_alloc != PyType_GenericAlloc
        || ((PyTypeObject *)cls)->tp_base != &PyBaseObject_Type)
        return;
    PyObject *names = PyObject_GetAttrString(cls, "__slots__");
    if (names == NULL || !PyTuple_Check(names) || PyTuple_GET_SIZE(names) != SLOTS) {
        Py_XDECREF(names);
        PyErr_Clear();
        return;
    }
    PyObject *dict = ((PyTypeObject *)cls)->tp_dict;
    for (Py_ssize_t i = 0; i < SLOTS; i++) {
        PyObject *descr = PyDict_GetItemWithError(dict, PyTuple_GET_ITEM(names, i));
        if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type)
            || ((PyMemberDescrObject *)descr)->d_member->type != T_OBJECT_EX) {
            Py_DECREF(names);
            PyErr_Clear();
            return;
        }
        slot_offsets[i] = ((PyMemberDescrObject *)descr)->d_member->offset;
    }
    Py_DECREF(names);
    slots_usable = 1;
}

/* cls(*f) for the 16 fields ``f`` (references borrowed). */
static PyObject *
make_message(PyObject *cls, PyObject **f)
{
    if (cls != slots_cls)
        find_slots(cls);
    if (!slots_usable)
        return PyObject_Vectorcall(cls, f, FIELDS, NULL);
    PyObject *msg = ((PyTypeObject *)cls)->tp_alloc((PyTypeObject *)cls, 0);
    if (msg == NULL)
        return NULL;
    for (int i = 0; i < SLOTS; i++)
        *(PyObject **)((char *)msg + slot_offsets[i]) = Py_NewRef(i < FIELDS ? f[i] : Py_None);
    return msg;
}

static int32_t
be32(const unsigned char *p)
{
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3]);
}

static int64_t
be64(const unsigned char *p)
{
    return (int64_t)(((uint64_t)(uint32_t)be32(p) << 32) | (uint64_t)(uint32_t)be32(p + 4));
}

/* The str of a host's 8 raw bytes: the previous record's when they are the same (``*raw``, ``*text`` hold it). */
static PyObject *
host(const unsigned char *p, PyObject *unpack_host, PyObject **raw, PyObject **text)
{
    if (*raw != NULL && memcmp(PyBytes_AS_STRING(*raw), p, 8) == 0)
        return Py_NewRef(*text);
    PyObject *b = PyBytes_FromStringAndSize((const char *)p, 8);
    if (b == NULL)
        return NULL;
    PyObject *s = PyObject_CallOneArg(unpack_host, b);
    if (s == NULL) {
        Py_DECREF(b);
        return NULL;
    }
    Py_XSETREF(*raw, b);
    Py_XSETREF(*text, Py_NewRef(s));
    return s;
}

static PyObject *
decode_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 8 || !PyBytes_CheckExact(args[0]) || !PyList_CheckExact(args[3]) || !PyUnicode_Check(args[6])
        || !PyUnicode_Check(args[7])) {
        PyErr_SetString(PyExc_TypeError,
                        "decode_records(buf: bytes, offset, slow_bits, out: list, cls, unpack_host, extra: str, "
                        "sep_extra: str)");
        return NULL;
    }
    Py_ssize_t offset = PyLong_AsSsize_t(args[1]);
    long slow_bits = PyLong_AsLong(args[2]);
    if (PyErr_Occurred())
        return NULL;
    const unsigned char *buf = (const unsigned char *)PyBytes_AS_STRING(args[0]);
    Py_ssize_t end = PyBytes_GET_SIZE(args[0]);
    PyObject *out = args[3], *cls = args[4], *unpack_host = args[5], *extra = args[6], *sep_extra = args[7];
    int has_extra = PyUnicode_GET_LENGTH(extra) > 0;
    PyObject *raw_topic = NULL, *topic = NULL, *born_raw = NULL, *born = NULL, *store_raw = NULL, *store = NULL;
    int failed = 0;

    while (offset >= 0 && end - offset >= HEAD) {
        const unsigned char *r = buf + offset;
        int32_t size = be32(r);
        uint32_t magic = (uint32_t)be32(r + 4);
        int32_t sys_flag = be32(r + 36);
        int32_t body_len = be32(r + 84);
        Py_ssize_t record_end = offset + (Py_ssize_t)size;
        Py_ssize_t body_end = offset + HEAD + (Py_ssize_t)body_len;
        if (magic != MESSAGE_MAGIC_CODE || (sys_flag & slow_bits) || size < HEAD || record_end > end || body_len < 0
            || body_end + AFTER_BODY > record_end)
            break;
        Py_ssize_t topic_len = buf[body_end];
        Py_ssize_t props_pos = body_end + 1 + topic_len;
        if (props_pos + 2 > record_end)
            break;
        Py_ssize_t props_len = (int16_t)(((uint16_t)buf[props_pos] << 8) | buf[props_pos + 1]);
        if (props_pos + 2 + props_len != record_end)
            break;
        const unsigned char *topic_p = buf + body_end + 1;
        if (raw_topic == NULL || PyBytes_GET_SIZE(raw_topic) != topic_len
            || memcmp(PyBytes_AS_STRING(raw_topic), topic_p, (size_t)topic_len) != 0) {
            PyObject *t = PyUnicode_DecodeUTF8((const char *)topic_p, topic_len, "strict");
            if (t == NULL) {
                if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
                    failed = 1;
                    break;
                }
                PyErr_Clear();
                break;
            }
            PyObject *b = PyBytes_FromStringAndSize((const char *)topic_p, topic_len);
            if (b == NULL) {
                Py_DECREF(t);
                failed = 1;
                break;
            }
            Py_XSETREF(raw_topic, b);
            Py_XSETREF(topic, t);
        }
        PyObject *props = PyUnicode_DecodeUTF8((const char *)buf + props_pos + 2, props_len, "strict");
        if (props == NULL) {
            if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
                PyErr_Clear();
            else
                failed = 1;
            break;
        }
        if (has_extra) {
            Py_ssize_t n = PyUnicode_GET_LENGTH(props);
            PyObject *tail = (n == 0 || PyUnicode_READ_CHAR(props, n - 1) == 2) ? extra : sep_extra;
            Py_SETREF(props, PyUnicode_Concat(props, tail));
            if (props == NULL) {
                failed = 1;
                break;
            }
        }
        PyObject *f[FIELDS] = {NULL};
        f[8] = host(r + 48, unpack_host, &born_raw, &born);
        f[10] = f[8] ? host(r + 64, unpack_host, &store_raw, &store) : NULL;
        if (f[10] == NULL) {
            Py_XDECREF(f[8]);
            Py_DECREF(props);
            failed = 1;
            break;
        }
        f[0] = PyLong_FromLong(size);
        f[1] = PyLong_FromLong(be32(r + 8));      /* BODYCRC */
        f[2] = PyLong_FromLong(be32(r + 12));     /* QUEUEID */
        f[3] = PyLong_FromLong(be32(r + 16));     /* FLAG */
        f[4] = PyLong_FromLongLong(be64(r + 20)); /* QUEUEOFFSET */
        f[5] = PyLong_FromLongLong(be64(r + 28)); /* PHYSICALOFFSET */
        f[6] = PyLong_FromLong(sys_flag);
        f[7] = PyLong_FromLongLong(be64(r + 40));     /* BORNTIMESTAMP */
        f[9] = PyLong_FromLongLong(be64(r + 56));     /* STORETIMESTAMP */
        f[11] = PyLong_FromLong(be32(r + 72));        /* RECONSUMETIMES */
        f[12] = PyLong_FromLongLong(be64(r + 76));    /* PREPAREDTRANSACTIONOFFSET */
        f[13] = PyBytes_FromStringAndSize((const char *)r + HEAD, body_len);
        f[14] = Py_NewRef(topic);
        f[15] = props;
        PyObject *msg = NULL;
        int ok = 1;
        for (int i = 0; i < FIELDS; i++)
            if (f[i] == NULL)
                ok = 0;
        if (ok)
            msg = make_message(cls, f);
        for (int i = 0; i < FIELDS; i++)
            Py_XDECREF(f[i]);
        if (msg == NULL) {
            failed = 1;
            break;
        }
        int appended = PyList_Append(out, msg);
        Py_DECREF(msg);
        if (appended < 0) {
            failed = 1;
            break;
        }
        offset = record_end;
    }
    Py_XDECREF(raw_topic);
    Py_XDECREF(topic);
    Py_XDECREF(born_raw);
    Py_XDECREF(born);
    Py_XDECREF(store_raw);
    Py_XDECREF(store);
    if (failed)
        return NULL;
    return PyLong_FromSsize_t(offset);
}

static PyMethodDef speedups_methods[] = {
    {"decode_records", (PyCFunction)(void (*)(void))decode_records, METH_FASTCALL,
     "Decode the common records of buf from offset into out; where it stopped."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef speedups_module = {
    PyModuleDef_HEAD_INIT, "pocketmq.common._speedups",
    "The C form of the client's record decoding; codec._decode_common_py is the reference.", -1, speedups_methods,
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
