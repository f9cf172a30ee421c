/* A callable that times the callable it wraps and keeps the (start, end) pairs in a
 * fixed buffer: what a step hook does at its place, in C instead of Python.
 * bench/hook_wrappers.py builds it against the measuring interpreter (stable ABI, 3.8+)
 * and sets it against the same wrapper written in Python. */
#define Py_LIMITED_API 0x03080000
#include <Python.h>
#include <stdint.h>
#include <time.h>

#define CAPACITY 65536

typedef struct {
  int64_t start, end;
} Span;

typedef struct {
  PyObject_HEAD
  PyObject *callable;
} Timed;

static Span spans[CAPACITY];
static size_t span_count;
static PyObject *timed_type;

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static PyObject *timed_call(PyObject *self, PyObject *args, PyObject *kwargs) {
  int64_t start = now_ns();
  PyObject *result = PyObject_Call(((Timed *)self)->callable, args, kwargs);
  if (span_count < CAPACITY) {
    spans[span_count].start = start;
    spans[span_count].end = now_ns();
    span_count++;
  }
  return result;
}

static void timed_dealloc(PyObject *self) {
  PyTypeObject *type = Py_TYPE(self);
  Py_XDECREF(((Timed *)self)->callable);
  ((freefunc)PyType_GetSlot(type, Py_tp_free))(self);
  Py_DECREF(type);
}

static PyObject *wrap(PyObject *module, PyObject *callable) {
  Timed *timed = (Timed *)PyType_GenericAlloc((PyTypeObject *)timed_type, 0);
  if (timed == NULL) return NULL;
  Py_INCREF(callable);
  timed->callable = callable;
  return (PyObject *)timed;
}

/* The spans kept since the last call, as a count; the buffer starts over. */
static PyObject *drain(PyObject *module, PyObject *unused) {
  PyObject *count = PyLong_FromSize_t(span_count);
  span_count = 0;
  return count;
}

static PyType_Slot timed_slots[] = {{Py_tp_call, timed_call}, {Py_tp_dealloc, timed_dealloc}, {0, NULL}};
static PyType_Spec timed_spec = {"timed_call.Timed", sizeof(Timed), 0, Py_TPFLAGS_DEFAULT, timed_slots};
static PyMethodDef methods[] = {{"wrap", wrap, METH_O, "wrap(callable): a timed callable"},
                                {"drain", drain, METH_NOARGS, "drain(): spans kept since the last drain"},
                                {NULL, NULL, 0, NULL}};
static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "timed_call", NULL, -1, methods};

PyMODINIT_FUNC PyInit_timed_call(void) {
  PyObject *module = PyModule_Create(&module_def);
  if (module == NULL) return NULL;
  timed_type = PyType_FromSpec(&timed_spec);
  if (timed_type == NULL) return NULL;
  return module;
}
