/* Native batch unlink for tablekeeper's local deletes (issue 13: an expiration of the peer table
 * unlinks ~103k files; in a Python loop each costs an os.unlink call, its exception machinery
 * for the rare failure and a result object, and only one core works).
 *
 * unlink_many(paths, threads[, slow_ns]) -> (failures, stop)
 *   paths:    a list of str (raw local paths)
 *   threads:  how many threads may unlink at once (1 = the caller's thread only)
 *   slow_ns:  optional; the pace (ns a file) from which helpers start (tests: 0, at once)
 *   failures: [(index, errno), ...] in index order, for the paths whose unlink failed
 *   stop:     how many leading paths were handled here; the caller handles paths[stop:] itself
 *             (a path that is not a str, not valid UTF-8 without surrogates, or holds a NUL:
 *             os.unlink encodes or refuses those its own way, so they never reach unlink(2) here)
 *
 * The GIL is released for the whole batch. Threads pay off only where an unlink waits: removing
 * a file's last link frees its blocks, which on ext4 here often waits on the journal or the disk
 * (0.2-2 ms a file, against ~10 us of CPU for a link whose inode stays), and those waits overlap
 * (2-4 threads: 5-10x faster). Where unlinks are quick they are CPU-bound, and a second thread
 * only competes for a core with the first (measured slower on a busy 2-core machine). So the
 * caller's thread starts alone and starts helpers (up to threads - 1) once a window of files took
 * longer than SLOW_NS each; all of them claim CHUNK consecutive paths at a time. The caller still
 * gets one outcome per path, and the batch is complete when the call returns.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 16
#define CHUNK 16          /* paths a thread claims at once */
#define WINDOW 64         /* files over which the caller's pace is judged */
#define SLOW_NS 50000     /* a file's unlink slower than this (ns) on average: helpers start */

typedef struct {
    const char **paths;
    int *errs;
    size_t n;
    atomic_size_t next; /* the first index no thread has claimed */
} Shared;

/* Claim the next CHUNK paths and unlink them; returns how many, 0 when none are left. */
static size_t unlink_chunk(Shared *s) {
    size_t from = atomic_fetch_add(&s->next, CHUNK);
    if (from >= s->n) {
        return 0;
    }
    size_t to = from + CHUNK < s->n ? from + CHUNK : s->n;
    for (size_t i = from; i < to; i++) {
        s->errs[i] = unlink(s->paths[i]) == 0 ? 0 : errno;
    }
    return to - from;
}

static void *helper(void *arg) {
    while (unlink_chunk((Shared *)arg) > 0) {
    }
    return NULL;
}

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Unlink every path: the caller's thread alone while unlinks are quick (they are CPU-bound then,
 * and a second thread only competes for a core), with up to threads - 1 helpers from the first
 * window of WINDOW files that took longer than SLOW_NS a file (unlinks that wait: they overlap). */
static void unlink_all(Shared *s, int threads, long long slow_ns) {
    pthread_t ids[MAX_THREADS];
    int helpers = 0;
    size_t window = 0;
    int64_t since = now_ns();
    size_t done;
    while ((done = unlink_chunk(s)) > 0) {
        if (helpers > 0 || threads <= 1) {
            continue;
        }
        window += done;
        if (window < WINDOW) {
            continue;
        }
        int64_t t = now_ns();
        if (t - since >= (int64_t)window * slow_ns) {
            for (int k = 1; k < threads; k++) {
                if (pthread_create(&ids[helpers], NULL, helper, s) == 0) {
                    helpers++;
                }
            }
        }
        window = 0;
        since = t;
    }
    for (int k = 0; k < helpers; k++) {
        pthread_join(ids[k], NULL);
    }
}

PyDoc_STRVAR(unlink_many_doc,
             "unlink_many(paths: list[str], threads: int, slow_ns: int = 50000) -> tuple[list[tuple[int, int]], int]\n\n"
             "Unlink each path; return the failures as (index, errno) in index order and how many\n"
             "leading paths were handled (the caller handles the rest). Helper threads start once\n"
             "unlinks take slow_ns or more each (0: after the first window, as tests use it).");

static PyObject *unlink_many(PyObject *self, PyObject *args) {
    PyObject *list;
    int threads;
    long long slow_ns = SLOW_NS;
    (void)self;
    if (!PyArg_ParseTuple(args, "O!i|L", &PyList_Type, &list, &threads, &slow_ns)) {
        return NULL;
    }
    if (threads < 1) {
        threads = 1;
    }
    if (threads > MAX_THREADS) {
        threads = MAX_THREADS;
    }
    /* a tuple of the items keeps them (and their UTF-8 buffers) alive while the GIL is released,
     * whatever another thread does to the list meanwhile */
    PyObject *items = PySequence_Tuple(list);
    if (items == NULL) {
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    PyObject *result = NULL;
    const char **paths = PyMem_RawMalloc(sizeof(char *) * (size_t)(n ? n : 1));
    int *errs = PyMem_RawCalloc((size_t)(n ? n : 1), sizeof(int));
    if (paths == NULL || errs == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t stop = 0;
    for (; stop < n; stop++) {
        PyObject *item = PyTuple_GET_ITEM(items, stop);
        if (!PyUnicode_CheckExact(item)) {
            break;
        }
        Py_ssize_t len;
        const char *s = PyUnicode_AsUTF8AndSize(item, &len);
        if (s == NULL) { /* lone surrogates: os.unlink encodes them with surrogateescape */
            PyErr_Clear();
            break;
        }
        if ((Py_ssize_t)strlen(s) != len) { /* an embedded NUL: os.unlink raises ValueError */
            break;
        }
        paths[stop] = s;
    }
    Shared shared = {paths, errs, (size_t)stop, 0};
    Py_BEGIN_ALLOW_THREADS
    unlink_all(&shared, threads, slow_ns);
    Py_END_ALLOW_THREADS
    PyObject *failures = PyList_New(0);
    if (failures == NULL) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < stop; i++) {
        if (errs[i] == 0) {
            continue;
        }
        PyObject *pair = Py_BuildValue("(ni)", i, errs[i]);
        if (pair == NULL || PyList_Append(failures, pair) < 0) {
            Py_XDECREF(pair);
            Py_DECREF(failures);
            goto done;
        }
        Py_DECREF(pair);
    }
    result = Py_BuildValue("(Nn)", failures, stop);
done:
    PyMem_RawFree(errs);
    PyMem_RawFree(paths);
    Py_DECREF(items);
    return result;
}

static PyMethodDef methods[] = {
    {"unlink_many", unlink_many, METH_VARARGS, unlink_many_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fs_native",
    "Native batch unlink of local files (see tablekeeper/core/storage/native_unlink.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__fs_native(void) {
    return PyModule_Create(&module);
}
