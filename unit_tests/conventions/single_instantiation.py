#!/usr/bin/env python3
"""Fails when a template with device lambdas is instantiated in two object files of one program.

nvcc turns each extended __host__ __device__ lambda into a wrapper whose call pointer lives in an
anonymous namespace of its translation unit; when the linker takes one part of such an
instantiation from one object file and another part from a second one, the call goes through a
pointer the second unit never set (a jump to address 0). So every such instantiation must come
from one translation unit: libkess compiles its templates once, and tests and benchmarks call
them through declarations. Usage: single_instantiation.py SOURCE_DIR BUILD_DIR
"""
import collections
import pathlib
import subprocess
import sys

MARK = "__nv_hdl_wrapper_t"


def wrappers(obj):
    out = subprocess.run(["nm", "--defined-only", str(obj)], capture_output=True, text=True).stdout
    return {line.split()[-1] for line in out.splitlines()
            if MARK in line and "do_call" in line and line.split()[1] in "WwTt"}


def target_of(obj):
    for part in obj.parts:
        if part.endswith(".dir"):
            return part[: -len(".dir")]
    return str(obj.parent)


def source_exists(obj, source, build):
    """Whether obj's source is still part of the tree (a removed file leaves its object behind)."""
    parts = obj.relative_to(build).parts
    i = parts.index("CMakeFiles")
    j = next(k for k in range(i, len(parts)) if parts[k].endswith(".dir"))
    rel = pathlib.Path(*parts[:i], *parts[j + 1:])
    rel = rel.with_name(rel.name[: -len(".o")])
    return (source / rel).exists() or (build / rel).exists()


def main():
    source, build = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    objects = [o for o in build.rglob("*.o")
               if "CMakeFiles" in o.parts and source_exists(o, source, build)]
    by_target = collections.defaultdict(list)
    for o in objects:
        by_target[target_of(o)].append(o)
    library = {o: wrappers(o) for o in by_target.pop("kess", [])}
    problems = []
    # within libkess, and within each program together with libkess
    groups = [("kess", library)]
    for target, objs in sorted(by_target.items()):
        groups.append((target, {**library, **{o: wrappers(o) for o in objs}}))
    for target, syms in groups:
        seen = collections.defaultdict(list)
        for obj, names in syms.items():
            for name in names:
                seen[name].append(obj)
        for name, objs in seen.items():
            if len(objs) > 1:
                problems.append((target, name, objs))
    reported = set()
    for target, name, objs in problems:
        key = (name, tuple(sorted(map(str, objs))))
        if key in reported:
            continue
        reported.add(key)
        demangled = subprocess.run(["c++filt", name], capture_output=True, text=True).stdout.strip()
        print(f"{target}: {demangled[:300]}\n  in " + ", ".join(str(o.relative_to(build)) for o in objs))
    print(f"{len(reported)} lambda instantiations in more than one object file of a program")
    return 1 if reported else 0


if __name__ == "__main__":
    sys.exit(main())
