/* The byte scan of orphan cleanup in native code (tablekeeper/core/reclaim/orphans/name_scan.py, issue 13).
 *
 * Why: the scan looks for every key "<prefix><36 of [0-9a-f-]>-<digits>." in the decompressed
 * manifest blocks and drops each key found from the set of keys not seen yet. With a regex,
 * findall builds a list of every key of every manifest (~200k bytes objects for the peer table)
 * before the set is updated; here each occurrence of the prefix is found with memchr, its tail
 * checked by hand, and only a key that passes a bit filter of the listed keys (most keys of a
 * manifest are not listed) becomes an object, discarded from the set at once.
 *
 * Every occurrence of the prefix is tried, overlapping ones too, so this finds at least the keys
 * the regex finds (name_scan's _keys_one_by_one semantics): a key found "too often" can only keep
 * a file, never delete one.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static int tail_char(unsigned char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == '-';
}

/* Length of the key tail at p (36 tail characters, '-', digits, '.'), or 0 when none. */
static Py_ssize_t key_tail(const unsigned char *p, const unsigned char *end) {
    const unsigned char *q = p;
    if (end - q < 36 + 3) {
        return 0;
    }
    for (int i = 0; i < 36; i++, q++) {
        if (!tail_char(*q)) {
            return 0;
        }
    }
    if (*q++ != '-') {
        return 0;
    }
    const unsigned char *digits = q;
    while (q < end && *q >= '0' && *q <= '9') {
        q++;
    }
    if (q == digits || q >= end || *q != '.') {
        return 0;
    }
    return (q + 1) - p;
}

/* FNV-1a, 64 bits: the filter's hash of a key. */
static uint64_t key_hash(const unsigned char *p, Py_ssize_t n) {
    uint64_t h = 14695981039346656037ULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

PyDoc_STRVAR(make_filter_doc,
"make_filter(joined) -> bytes\n\n"
"A bit filter of the keys in ``joined`` (keys separated by line breaks) for discard_keys: a key\n"
"whose bit is clear is certainly not among them (so no object is made for it).");

static PyObject *make_filter(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer joined;
    if (!PyArg_ParseTuple(args, "y*", &joined)) {
        return NULL;
    }
    const unsigned char *p = joined.buf;
    const unsigned char *end = p + joined.len;
    Py_ssize_t keys = 1;
    for (const unsigned char *q = p; q < end; q++) {
        keys += *q == '\n';
    }
    Py_ssize_t bits = 1 << 16;
    while (bits < keys * 32 && bits < ((Py_ssize_t)1 << 30)) {
        bits <<= 1;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, bits / 8);
    if (out == NULL) {
        PyBuffer_Release(&joined);
        return NULL;
    }
    unsigned char *map = (unsigned char *)PyBytes_AS_STRING(out);
    memset(map, 0, (size_t)(bits / 8));
    while (p <= end) {
        const unsigned char *nl = memchr(p, '\n', (size_t)(end - p));
        const unsigned char *stop = nl == NULL ? end : nl;
        if (stop > p) {
            uint64_t bit = key_hash(p, stop - p) & (uint64_t)(bits - 1);
            map[bit >> 3] |= (unsigned char)(1u << (bit & 7));
        }
        if (nl == NULL) {
            break;
        }
        p = nl + 1;
    }
    PyBuffer_Release(&joined);
    return out;
}

PyDoc_STRVAR(discard_keys_doc,
"discard_keys(block, prefix, unseen, filter) -> int\n\n"
"Discard from the set ``unseen`` every key <prefix><36 of [0-9a-f-]>-<digits>. that occurs in\n"
"``block`` (every occurrence of the prefix is tried) and passes ``filter`` (make_filter of a\n"
"superset of ``unseen``); returns the number of keys found.");

static PyObject *discard_keys(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer block, prefix, filter;
    PyObject *unseen;
    if (!PyArg_ParseTuple(args, "y*y*O!y*", &block, &prefix, &PySet_Type, &unseen, &filter)) {
        return NULL;
    }
    const unsigned char *map = filter.buf;
    uint64_t mask = (uint64_t)filter.len * 8 - 1;
    const unsigned char *start = block.buf;
    const unsigned char *end = start + block.len;
    const unsigned char *pre = prefix.buf;
    Py_ssize_t plen = prefix.len;
    Py_ssize_t found = 0;
    PyObject *result = NULL;
    if (plen == 0 || filter.len < 8 || (filter.len & (filter.len - 1)) != 0) {
        PyErr_SetString(PyExc_ValueError, "empty prefix or a filter not made by make_filter");
        goto done;
    }
    /* every occurrence of the prefix holds its "anchor" byte at offset k: the first byte that no
     * key tail holds (rarer in manifests than hex digits), found with memchr */
    Py_ssize_t k = 0;
    while (k < plen - 1 && tail_char(pre[k])) {
        k++;
    }
    const unsigned char *p = start + k;
    while (end - p >= plen - k) {
        const unsigned char *anchor = memchr(p, pre[k], (size_t)(end - p));
        if (anchor == NULL) {
            break;
        }
        p = anchor + 1;
        const unsigned char *hit = anchor - k;
        if (end - hit < plen || memcmp(hit, pre, (size_t)plen) != 0) {
            continue;
        }
        Py_ssize_t tail = key_tail(hit + plen, end);
        if (tail > 0) {
            found++;
            uint64_t bit = key_hash(hit, plen + tail) & mask;
            if (PySet_GET_SIZE(unseen) > 0 && (map[bit >> 3] >> (bit & 7)) & 1) {
                PyObject *key = PyBytes_FromStringAndSize((const char *)hit, plen + tail);
                if (key == NULL) {
                    goto done;
                }
                int rc = PySet_Discard(unseen, key);
                Py_DECREF(key);
                if (rc < 0) {
                    goto done;
                }
            }
        }
    }
    result = PyLong_FromSsize_t(found);
done:
    PyBuffer_Release(&block);
    PyBuffer_Release(&prefix);
    PyBuffer_Release(&filter);
    return result;
}

static PyMethodDef methods[] = {
    {"make_filter", make_filter, METH_VARARGS, make_filter_doc},
    {"discard_keys", discard_keys, METH_VARARGS, discard_keys_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_name_scan_native",
    "Native byte scan of manifest blocks for listed file names (see name_scan.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__name_scan_native(void) {
    return PyModule_Create(&module);
}
