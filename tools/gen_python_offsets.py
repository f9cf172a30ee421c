#!/usr/bin/env python3
"""Generate src/collectors/python/offsets_generated.hpp from CPython's headers.

The stack reader needs the byte offsets of fields inside CPython's internal
structs (_PyRuntimeState, PyThreadState, frames, code objects, strings). They
change from one minor version to the next, and typing them by hand is how
profilers end up silently wrong. Instead, for each CPython 3.8-3.12 installed
by pyenv, this script compiles a small C program against that version's real
headers (internal ones included, reached by defining Py_BUILD_CORE) that
prints offsetof/sizeof of every field, and writes one constexpr PythonLayout
per minor version.

3.13 and later publish the same facts in _Py_DebugOffsets inside the running
interpreter, so they need no table (see src/collectors/python/debug_offsets.cpp).

Usage: tools/gen_python_offsets.py [--pyenv-root DIR] [--output FILE] [--cc CC]
Standard library only. tests/integration/test_python_offsets_generated.sh
reruns it and compares with the committed file.
"""

import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

MINORS = (8, 9, 10, 11, 12)
REPO = pathlib.Path(__file__).resolve().parent.parent
DEFAULT_OUTPUT = REPO / "src" / "collectors" / "python" / "offsets_generated.hpp"


def includes(minor):
    """Headers that declare the structs the probe measures."""
    common = ["Python.h", "frameobject.h"]
    if minor == 8:
        return common + ["internal/pycore_pystate.h"]
    if minor <= 10:
        return common + ["internal/pycore_runtime.h", "internal/pycore_interp.h"]
    return common + ["internal/pycore_runtime.h", "internal/pycore_interp.h",
                     "internal/pycore_frame.h"]


def fields(minor):
    """(C++ member path in PythonLayout, C expression) for every value.

    A None expression means the version lacks the field (kAbsent)."""
    frames_in_objects = minor <= 10
    f = []
    f.append(("runtime.interpreters_head", "offsetof(_PyRuntimeState, interpreters.head)"))
    f.append(("runtime.interpreters_main", "offsetof(_PyRuntimeState, interpreters.main)"))
    f.append(("interpreter.next", "offsetof(PyInterpreterState, next)"))
    f.append(("interpreter.runtime",
              "offsetof(PyInterpreterState, runtime)" if minor >= 9 else None))
    f.append(("interpreter.threads_head",
              "offsetof(PyInterpreterState, tstate_head)" if minor <= 10
              else "offsetof(PyInterpreterState, threads.head)"))
    if minor <= 11:
        f.append(("gil.locked", "offsetof(_PyRuntimeState, ceval.gil.locked)"))
        f.append(("gil.last_holder", "offsetof(_PyRuntimeState, ceval.gil.last_holder)"))
    else:
        f.append(("gil.locked", "offsetof(PyInterpreterState, _gil.locked)"))
        f.append(("gil.last_holder", "offsetof(PyInterpreterState, _gil.last_holder)"))

    f.append(("thread.prev", "offsetof(PyThreadState, prev)"))
    f.append(("thread.next", "offsetof(PyThreadState, next)"))
    f.append(("thread.interp", "offsetof(PyThreadState, interp)"))
    f.append(("thread.frame", "offsetof(PyThreadState, frame)" if frames_in_objects
              else "offsetof(PyThreadState, cframe)"))
    f.append(("thread.thread_id", "offsetof(PyThreadState, thread_id)"))
    new = not frames_in_objects
    f.append(("thread.native_thread_id",
              "offsetof(PyThreadState, native_thread_id)" if new else None))
    f.append(("thread.datastack_chunk",
              "offsetof(PyThreadState, datastack_chunk)" if new else None))
    f.append(("cframe.current_frame", "offsetof(_PyCFrame, current_frame)" if new else None))

    f.append(("interpreter_frame.size", "sizeof(_PyInterpreterFrame)" if new else None))
    f.append(("interpreter_frame.code", "offsetof(_PyInterpreterFrame, f_code)" if new else None))
    f.append(("interpreter_frame.previous",
              "offsetof(_PyInterpreterFrame, previous)" if new else None))
    f.append(("interpreter_frame.instr",
              "offsetof(_PyInterpreterFrame, prev_instr)" if new else None))
    f.append(("interpreter_frame.owner", "offsetof(_PyInterpreterFrame, owner)" if new else None))
    f.append(("interpreter_frame.is_entry",
              "offsetof(_PyInterpreterFrame, is_entry)" if minor == 11 else None))
    f.append(("interpreter_frame.owned_by_generator", "FRAME_OWNED_BY_GENERATOR" if new else None))
    f.append(("interpreter_frame.owned_by_cstack", "FRAME_OWNED_BY_CSTACK" if minor >= 12 else None))

    old = frames_in_objects
    f.append(("frame_object.back", "offsetof(PyFrameObject, f_back)" if old else None))
    f.append(("frame_object.code", "offsetof(PyFrameObject, f_code)" if old else None))
    f.append(("frame_object.lasti", "offsetof(PyFrameObject, f_lasti)" if old else None))
    f.append(("frame_object.lineno", "offsetof(PyFrameObject, f_lineno)" if old else None))
    f.append(("frame_object.trace", "offsetof(PyFrameObject, f_trace)" if old else None))

    f.append(("object.type", "offsetof(PyObject, ob_type)"))
    f.append(("code.filename", "offsetof(PyCodeObject, co_filename)"))
    f.append(("code.name", "offsetof(PyCodeObject, co_name)"))
    f.append(("code.qualname", "offsetof(PyCodeObject, co_qualname)" if new else None))
    f.append(("code.firstlineno", "offsetof(PyCodeObject, co_firstlineno)"))
    f.append(("code.flags", "offsetof(PyCodeObject, co_flags)"))
    f.append(("code.linetable", "offsetof(PyCodeObject, co_lnotab)" if minor <= 9
              else "offsetof(PyCodeObject, co_linetable)"))
    f.append(("code.code_adaptive", "offsetof(PyCodeObject, co_code_adaptive)" if new else None))
    f.append(("code.firsttraceable",
              "offsetof(PyCodeObject, _co_firsttraceable)" if new else None))

    f.append(("unicode.length", "offsetof(PyASCIIObject, length)"))
    f.append(("unicode.state", "offsetof(PyASCIIObject, state)"))
    f.append(("unicode.ascii_size", "sizeof(PyASCIIObject)"))
    f.append(("unicode.compact_size", "sizeof(PyCompactUnicodeObject)"))
    # Bit fields have no offsetof: set each one in a zeroed object and see
    # which bits of the 32-bit state word moved.
    for bit in ("kind", "compact", "ascii"):
        f.append((f"unicode.{bit}_mask", f"state_mask_{bit}()"))

    f.append(("bytes.ob_size", "offsetof(PyBytesObject, ob_base.ob_size)"))
    f.append(("bytes.ob_sval", "offsetof(PyBytesObject, ob_sval)"))
    return f


STATE_MASK_FUNCTION = """
static unsigned long state_mask_{bit}(void) {{
  PyASCIIObject o;
  unsigned int word;
  memset(&o, 0, sizeof o);
  o.state.{bit} = ~0u;
  memcpy(&word, (const char*)&o + offsetof(PyASCIIObject, state), sizeof word);
  return word;
}}
"""


def probe_source(minor):
    lines = ["#define Py_BUILD_CORE 1", "#include <stddef.h>", "#include <stdio.h>",
             "#include <string.h>"]
    lines += [f'#include "{h}"' for h in includes(minor)]
    for bit in ("kind", "compact", "ascii"):
        lines.append(STATE_MASK_FUNCTION.format(bit=bit))
    lines.append("int main(void) {")
    for name, expr in fields(minor):
        if expr is not None:
            lines.append(f'  printf("{name} %lu\\n", (unsigned long)({expr}));')
    lines.append("  return 0;\n}")
    return "\n".join(lines) + "\n"


def newest_install(pyenv_root, minor):
    """The highest installed 3.<minor>.N (release builds only)."""
    best = None
    versions = pyenv_root / "versions"
    if not versions.is_dir():
        return None
    for entry in versions.iterdir():
        m = re.fullmatch(rf"3\.{minor}\.(\d+)", entry.name)
        if m and (entry / "include" / f"python3.{minor}" / "Python.h").is_file():
            if best is None or int(m.group(1)) > best[0]:
                best = (int(m.group(1)), entry)
    return best[1] if best else None


def run_probe(cc, install, minor, workdir):
    source = workdir / f"probe_3_{minor}.c"
    binary = workdir / f"probe_3_{minor}"
    source.write_text(probe_source(minor))
    include = install / "include" / f"python3.{minor}"
    subprocess.run([cc, "-std=gnu11", "-w", f"-I{include}", f"-I{include}/internal",
                    str(source), "-o", str(binary)], check=True)
    out = subprocess.run([str(binary)], check=True, capture_output=True, text=True).stdout
    values = {}
    for line in out.splitlines():
        name, value = line.split()
        values[name] = int(value)
    return values


ENUMS = {
    "frame_model": lambda minor: "FrameModel::kFrameObjects" if minor <= 10 else "FrameModel::kCFrame",
    "line_table": lambda minor: ("LineTableFormat::kLnotab" if minor <= 9 else
                                 "LineTableFormat::kLinetable310" if minor == 10 else
                                 "LineTableFormat::kLocations311"),
}


def render_table(minor, version, values):
    """A designated initializer, in PythonLayout's declaration order."""
    groups = {}
    for name, expr in fields(minor):
        group, member = name.split(".")
        if expr is None:
            text = "-1" if member.startswith("owned_by") else "kAbsent"
        elif member.endswith("_mask"):
            text = f"0x{values[name]:x}u"
        else:
            text = str(values[name])
        groups.setdefault(group, []).append(f".{member} = {text}")
    gil_scope = "GilScope::kRuntime" if minor <= 11 else "GilScope::kInterpreter"
    groups["gil"].insert(0, f".scope = {gil_scope}")
    if minor <= 10:
        groups["frame_object"].append(
            f".lasti_in_code_units = {'true' if minor == 10 else 'false'}")
    body = [f"    .major = 3,", f"    .minor = {minor},"]
    for key, make in ENUMS.items():
        body.append(f"    .{key} = {make(minor)},")
    order = ["runtime", "interpreter", "gil", "thread", "cframe", "interpreter_frame",
             "frame_object", "object", "code", "unicode", "bytes"]
    for group in order:
        members = "".join(f"        {member},\n" for member in groups[group])
        body.append(f"    .{group} = {{\n{members}    }},")
    return (f"// CPython {version}\n"
            f"inline constexpr PythonLayout kLayout3_{minor} = {{\n" + "\n".join(body) + "\n};\n")


def render_file(tables, versions):
    lines = [
        "// generated by tools/gen_python_offsets.py from the headers of CPython "
        + ", ".join(versions) + " — do not edit.",
        "// Regenerate: python3 tools/gen_python_offsets.py",
        "#pragma once",
        "",
        '#include "collectors/python/layout.hpp"',
        "",
        "namespace stepscope::python {",
        "",
    ]
    lines += tables
    names = ", ".join(f"&kLayout3_{minor}" for minor in MINORS)
    lines += ["// Every generated table, oldest first.",
              f"inline constexpr const PythonLayout* kGeneratedLayouts[] = {{{names}}};", "",
              "}  // namespace stepscope::python", ""]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pyenv-root", type=pathlib.Path,
                        default=pathlib.Path(os.environ.get("PYENV_ROOT", "~/.pyenv")).expanduser())
    parser.add_argument("--output", type=pathlib.Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--cc", default=os.environ.get("CC") or shutil.which("gcc") or "cc")
    args = parser.parse_args()

    tables, versions = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for minor in MINORS:
            install = newest_install(args.pyenv_root, minor)
            if install is None:
                sys.exit(f"gen_python_offsets: CPython 3.{minor} not found under "
                         f"{args.pyenv_root}/versions (pyenv install 3.{minor})")
            values = run_probe(args.cc, install, minor, pathlib.Path(tmp))
            tables.append(render_table(minor, install.name, values))
            versions.append(install.name)
    args.output.write_text(render_file(tables, versions))


if __name__ == "__main__":
    main()
