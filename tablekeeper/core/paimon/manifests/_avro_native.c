/* Native decoding of Avro record blocks for tablekeeper's manifest readers (issue 13: an
 * expiration spends most of its CPU decoding manifests, about 12 us an entry in Python).
 *
 * Why a program and not a schema: the Python side (manifest_native.py) walks a file's writer
 * schema once and compiles it to a flat program of ops (read a long / bytes / string into a slot,
 * skip one, a [null, T] union, an array of primitives), exactly the shapes the generated Python
 * decoders handle; anything else never reaches this module. Here the program is interpreted per
 * record and the output rows are built from the slots by a template (nested tuples, optionally
 * of a NamedTuple class), so rows are equal to what the Python decoders build.
 *
 * Strict: any malformed input (truncation, a bad union index, a negative length, bad UTF-8 in a
 * string that is read, an array or map block count of -2**63, whose item count cannot be negated,
 * a block whose items do not end where its byte size says)
 * raises the caller's "bad" exception and the caller hands the file to the fastavro reader, which
 * judges it; a record whose version slot is not the expected version raises the caller's version
 * exception with the value (as the Python decoders do).
 *
 * Bounded: a program must read at least one byte per record (every op but a zero-size fixed
 * does), so a record count beyond the bytes left is refused before any record is decoded, and
 * no call loops longer than its input (a hand-built program of no ops is a ValueError).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

enum {
    OP_LONG = 0,   /* int or long: zig-zag varint */
    OP_BYTES = 1,  /* bytes */
    OP_STR = 2,    /* string (UTF-8) */
    OP_FIXED = 3,  /* a = size (boolean 1, float 4, double 8): always skipped */
    OP_UNION = 4,  /* a = index of the null branch; the next op is the other branch */
    OP_ARRAY = 5,  /* a = item op (LONG, BYTES, STR), b = null index of nullable items or -1 */
    OP_MAP = 6,    /* as OP_ARRAY, each item preceded by its string key: always skipped */
};

typedef struct {
    const unsigned char *p;
    const unsigned char *end;
} Cursor;

static int read_varint(Cursor *c, int64_t *out) {
    uint64_t acc = 0;
    int shift = 0;
    while (c->p < c->end) {
        unsigned char byte = *c->p++;
        acc |= (uint64_t)(byte & 0x7F) << shift;
        if (!(byte & 0x80)) {
            *out = (int64_t)(acc >> 1) ^ -(int64_t)(acc & 1);
            return 0;
        }
        shift += 7;
        if (shift > 63) {
            return -1;
        }
    }
    return -1;
}

static int read_length(Cursor *c, Py_ssize_t *len) {
    int64_t n;
    if (read_varint(c, &n) < 0 || n < 0 || n > (int64_t)(c->end - c->p)) {
        return -1;
    }
    *len = (Py_ssize_t)n;
    return 0;
}

/* One primitive value: into *out when out != NULL (a new reference), else skipped.
 * Returns 0, or -1 on malformed input (no Python error set), or -2 with a Python error set. */
static int primitive(Cursor *c, long op, PyObject **out) {
    int64_t v;
    Py_ssize_t len;
    switch (op) {
    case OP_LONG:
        if (read_varint(c, &v) < 0) {
            return -1;
        }
        if (out != NULL && (*out = PyLong_FromLongLong(v)) == NULL) {
            return -2;
        }
        return 0;
    case OP_BYTES:
    case OP_STR:
        if (read_length(c, &len) < 0) {
            return -1;
        }
        if (out != NULL) {
            if (op == OP_BYTES) {
                *out = PyBytes_FromStringAndSize((const char *)c->p, len);
            } else {
                *out = PyUnicode_DecodeUTF8((const char *)c->p, len, "strict");
                if (*out == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
                    PyErr_Clear();
                    return -1;
                }
            }
            if (*out == NULL) {
                return -2;
            }
        }
        c->p += len;
        return 0;
    default:
        return -1;
    }
}

/* An array of primitives (nullable items when null_index >= 0): a tuple into *out, or skipped;
 * ``keyed``: a map (a string key before each item), skipped only. */
static int array(Cursor *c, long item, long null_index, int keyed, PyObject **out) {
    PyObject *list = NULL;
    int64_t count;
    if (out != NULL && (list = PyList_New(0)) == NULL) {
        return -2;
    }
    for (;;) {
        const unsigned char *block_end = NULL;
        if (read_varint(c, &count) < 0) {
            goto bad;
        }
        if (count == 0) {
            break;
        }
        if (count < 0) {
            int64_t size;
            if (count == INT64_MIN) { /* -count is not an int64: refused, as the Python decoders do */
                goto bad;
            }
            count = -count;
            /* the block's byte size, which skipping readers (fastavro, Java) seek by: its items
             * must end exactly there, or readers would disagree on where the next field starts */
            if (read_varint(c, &size) < 0 || size < 0 || size > (int64_t)(c->end - c->p)) {
                goto bad;
            }
            block_end = c->p + size;
        }
        if (count > (int64_t)(c->end - c->p)) { /* every item takes at least one byte */
            goto bad;
        }
        for (int64_t i = 0; i < count; i++) {
            PyObject *value = NULL;
            int rc;
            if (keyed && primitive(c, OP_STR, NULL) < 0) {
                goto bad;
            }
            if (null_index >= 0) {
                int64_t index;
                if (read_varint(c, &index) < 0) {
                    goto bad;
                }
                if (index == null_index) {
                    if (list != NULL && PyList_Append(list, Py_None) < 0) {
                        goto error;
                    }
                    continue;
                }
                if (index != 1 - null_index) {
                    goto bad;
                }
            }
            rc = primitive(c, item, list != NULL ? &value : NULL);
            if (rc == -1) {
                goto bad;
            }
            if (rc == -2) {
                goto error;
            }
            if (list != NULL) {
                rc = PyList_Append(list, value);
                Py_DECREF(value);
                if (rc < 0) {
                    goto error;
                }
            }
        }
        if (block_end != NULL && c->p != block_end) {
            goto bad;
        }
    }
    if (list != NULL) {
        *out = PyList_AsTuple(list);
        Py_DECREF(list);
        if (*out == NULL) {
            return -2;
        }
    }
    return 0;
bad:
    Py_XDECREF(list);
    return -1;
error:
    Py_XDECREF(list);
    return -2;
}

/* Execute one op (and for a union, its body op): returns the index of the next op. */
static Py_ssize_t run_op(Cursor *c, const long *prog, Py_ssize_t nops, Py_ssize_t i, PyObject **slots,
                         int *status) {
    long op = prog[4 * i], slot = prog[4 * i + 1], a = prog[4 * i + 2], b = prog[4 * i + 3];
    PyObject **out = slot >= 0 ? &slots[slot] : NULL;
    int rc;
    if (op == OP_UNION) {
        int64_t index;
        if (i + 1 >= nops || read_varint(c, &index) < 0) {
            *status = -1;
            return i + 1;
        }
        if (index == a) { /* null: the body's slot (if any) stays None */
            return i + 2;
        }
        if (index != 1 - a) {
            *status = -1;
            return i + 2;
        }
        return run_op(c, prog, nops, i + 1, slots, status);
    }
    if (out != NULL) {
        Py_CLEAR(*out);
    }
    if (op == OP_FIXED) {
        if (a < 0 || a > (long)(c->end - c->p)) {
            rc = -1;
        } else {
            c->p += a;
            rc = 0;
        }
    } else if (op == OP_ARRAY || op == OP_MAP) {
        rc = array(c, a, b, op == OP_MAP, out);
    } else {
        rc = primitive(c, op, out);
    }
    if (rc < 0) {
        *status = rc;
    }
    return i + 1;
}

static PyObject *build(PyObject *template, PyObject **slots);

static PyObject *item_of(PyObject *item, PyObject **slots) {
    if (PyTuple_Check(item)) {
        return build(item, slots);
    }
    long k = PyLong_AsLong(item);
    if (k == -1 && PyErr_Occurred()) {
        return NULL;
    }
    PyObject *value = slots[k >= 0 ? k : ~k];
    if (value == NULL) {
        value = k >= 0 ? Py_None : PyTuple_New(0) /* () for an absent or null array */;
        if (k < 0) {
            return value;
        }
    }
    Py_INCREF(value);
    return value;
}

/* template: (class or None, item, ...); an item is a slot k (>= 0: its value or None; < 0: slot
 * ~k, or () when None) or a nested template. */
static PyObject *build(PyObject *template, PyObject **slots) {
    Py_ssize_t n = PyTuple_GET_SIZE(template) - 1;
    PyObject *cls = PyTuple_GET_ITEM(template, 0);
    PyObject *row;
    if (cls == Py_None) {
        row = PyTuple_New(n);
    } else {
        /* a tuple subclass (a NamedTuple): allocated as tuple.__new__(cls, items) does */
        row = ((PyTypeObject *)cls)->tp_alloc((PyTypeObject *)cls, n);
    }
    if (row == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *value = item_of(PyTuple_GET_ITEM(template, i + 1), slots);
        if (value == NULL) {
            Py_DECREF(row);
            return NULL;
        }
        PyTuple_SET_ITEM(row, i, value);
    }
    return row;
}

static int check_template(PyObject *template, Py_ssize_t nslots) {
    if (!PyTuple_Check(template) || PyTuple_GET_SIZE(template) < 1) {
        PyErr_SetString(PyExc_TypeError, "template must be a non-empty tuple");
        return -1;
    }
    PyObject *cls = PyTuple_GET_ITEM(template, 0);
    if (cls != Py_None && !(PyType_Check(cls) && PyType_IsSubtype((PyTypeObject *)cls, &PyTuple_Type))) {
        PyErr_SetString(PyExc_TypeError, "template class must be None or a tuple subclass");
        return -1;
    }
    for (Py_ssize_t i = 1; i < PyTuple_GET_SIZE(template); i++) {
        PyObject *item = PyTuple_GET_ITEM(template, i);
        if (PyTuple_Check(item)) {
            if (check_template(item, nslots) < 0) {
                return -1;
            }
            continue;
        }
        long k = PyLong_Check(item) ? PyLong_AsLong(item) : nslots;
        if (k == -1 && PyErr_Occurred()) {
            return -1;
        }
        if ((k >= 0 ? k : ~k) >= nslots) {
            PyErr_SetString(PyExc_ValueError, "template names a slot out of range");
            return -1;
        }
    }
    return 0;
}

PyDoc_STRVAR(decode_doc,
"decode(data, start, count, program, nslots, template, version_slot, version, bad, mismatch, out)\n"
"--\n\n"
"Decode ``count`` records of a decompressed Avro block from byte ``start`` of ``data`` with\n"
"``program`` (flat ints, four per op) and append the rows built by ``template`` to the list\n"
"``out``. Returns the position after the last record. Raises ``bad`` on malformed input and\n"
"``mismatch(value)`` when a record's ``version_slot`` (if >= 0) is not ``version``.");

static PyObject *decode(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer data;
    Py_ssize_t start, count, nslots, version_slot;
    long long version;
    PyObject *program, *template, *bad, *mismatch, *out;
    if (!PyArg_ParseTuple(args, "y*nnO!nO!nLOOO!", &data, &start, &count, &PyTuple_Type, &program, &nslots,
                          &PyTuple_Type, &template, &version_slot, &version, &bad, &mismatch, &PyList_Type, &out)) {
        return NULL;
    }
    PyObject *result = NULL;
    PyObject **slots = NULL;
    long *prog = NULL;
    Py_ssize_t nints = PyTuple_GET_SIZE(program), nops = nints / 4;
    if (nints % 4 != 0 || nslots < 0 || nslots > 4096 || start < 0 || start > data.len || count < 0
        || version_slot >= nslots) {
        PyErr_SetString(PyExc_ValueError, "bad program, slots or start");
        goto done;
    }
    if (check_template(template, nslots) < 0) {
        goto done;
    }
    prog = PyMem_Malloc(sizeof(long) * (size_t)(nints ? nints : 1));
    slots = PyMem_Calloc((size_t)(nslots ? nslots : 1), sizeof(PyObject *));
    if (prog == NULL || slots == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < nints; i++) {
        prog[i] = PyLong_AsLong(PyTuple_GET_ITEM(program, i));
        if (prog[i] == -1 && PyErr_Occurred()) {
            goto done;
        }
    }
    int reads = 0; /* whether some op reads at least one byte of every record */
    for (Py_ssize_t i = 0; i < nops; i++) {
        long op = prog[4 * i], slot = prog[4 * i + 1], a = prog[4 * i + 2], b = prog[4 * i + 3];
        int ok = op >= OP_LONG && op <= OP_MAP && slot >= -1 && slot < nslots;
        reads = reads || op != OP_FIXED || a > 0; /* (a union body's union reads its index) */
        if (op == OP_UNION) {
            ok = ok && (a == 0 || a == 1) && slot == -1 && i + 1 < nops && prog[4 * (i + 1)] != OP_UNION;
        }
        if (op == OP_ARRAY || op == OP_MAP) {
            ok = ok && a >= OP_LONG && a <= OP_STR && b >= -1 && b <= 1;
        }
        if (op == OP_FIXED || op == OP_MAP) {
            ok = ok && slot == -1;
        }
        if (!ok) {
            PyErr_SetString(PyExc_ValueError, "bad program op");
            goto done;
        }
    }
    if (!reads) {
        PyErr_SetString(PyExc_ValueError, "bad program: it reads no byte of a record");
        goto done;
    }
    Cursor c = {(const unsigned char *)data.buf + start, (const unsigned char *)data.buf + data.len};
    if (count > (Py_ssize_t)(c.end - c.p)) { /* every record takes at least one byte */
        PyErr_SetString(bad, "more records than bytes");
        goto done;
    }
    for (Py_ssize_t r = 0; r < count; r++) {
        int status = 0;
        for (Py_ssize_t k = 0; k < nslots; k++) {
            Py_CLEAR(slots[k]);
        }
        for (Py_ssize_t i = 0; i < nops && status == 0;) {
            i = run_op(&c, prog, nops, i, slots, &status);
        }
        if (status == -1) {
            PyErr_SetString(bad, "malformed record");
            goto done;
        }
        if (status == -2) {
            goto done;
        }
        if (version_slot >= 0) {
            PyObject *v = slots[version_slot] != NULL ? slots[version_slot] : Py_None;
            int overflow = 0, same = 0;
            if (PyLong_Check(v)) { /* anything else (None, bytes...) is never the version */
                long long got = PyLong_AsLongLongAndOverflow(v, &overflow);
                if (got == -1 && PyErr_Occurred()) {
                    goto done;
                }
                same = !overflow && got == version;
            }
            if (!same) {
                PyObject *exc = PyObject_CallOneArg(mismatch, v);
                if (exc != NULL) {
                    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
                    Py_DECREF(exc);
                }
                goto done;
            }
        }
        PyObject *row = build(template, slots);
        if (row == NULL) {
            goto done;
        }
        int rc = PyList_Append(out, row);
        Py_DECREF(row);
        if (rc < 0) {
            goto done;
        }
    }
    result = PyLong_FromSsize_t((Py_ssize_t)(c.p - (const unsigned char *)data.buf));
done:
    if (slots != NULL) {
        for (Py_ssize_t k = 0; k < nslots; k++) {
            Py_XDECREF(slots[k]);
        }
        PyMem_Free(slots);
    }
    PyMem_Free(prog);
    PyBuffer_Release(&data);
    return result;
}

static PyMethodDef methods[] = {
    {"decode", decode, METH_VARARGS, decode_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_avro_native",
    "Native interpreter of tablekeeper's compiled Avro record programs (see manifest_native.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__avro_native(void) {
    return PyModule_Create(&module);
}
