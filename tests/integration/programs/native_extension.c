/* A C extension whose functions call back into Python, for `record --native`:
 * built by the test at -O2 -fomit-frame-pointer, so only CFI unwinds it. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

__attribute__((noinline)) static long inner(PyObject *callback) {
  PyObject *result = PyObject_CallObject(callback, NULL);
  if (result == NULL) return -1;
  long value = PyLong_AsLong(result);
  Py_DECREF(result);
  __asm__ volatile("" ::: "memory"); /* no tail call: inner stays on the stack */
  return value + 1;
}

__attribute__((noinline)) static long outer(PyObject *callback) {
  long value = inner(callback);
  __asm__ volatile("" ::: "memory");
  return value * 2;
}

static PyObject *call_through(PyObject *self, PyObject *callback) {
  (void)self;
  long value = outer(callback);
  if (value < 0 && PyErr_Occurred()) return NULL;
  return PyLong_FromLong(value);
}

static PyMethodDef methods[] = {
    {"call_through", call_through, METH_O, "outer -> inner -> callback()"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "native_extension", NULL, -1, methods};

PyMODINIT_FUNC PyInit_native_extension(void) { return PyModule_Create(&module); }
