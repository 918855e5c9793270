#!/usr/bin/env python3
"""lint_tidy.py - clang-tidy on the project's translation units of a build, with a result cache.

    tools/lint_tidy.py TOP [--jobs N] BUILD_DIR [DIR_OR_FILE...]

Runs clang-tidy on every project translation unit of BUILD_DIR's compile_commands.json under the
given paths, relative to TOP (default: all), N at a time (default: the number of CPUs). Exit
status 0 only when all are clean.

Unity builds: compile_commands.json lists CMake's unity sources (build/.../Unity/unity_N_cxx.cxx),
not the files they include. Each unity source is expanded into one entry per included file, with
the unity source's command, into BUILD_DIR/tidy/compile_commands.json, which clang-tidy reads:
every file is checked as its own translation unit, as it would be compiled without unity.

The cache: a translation unit found clean is recorded under a key made of the clang-tidy
version, every .clang-tidy file of the project, the compile command (paths relative to the tree
and the build) and the contents of every file the compiler reads for it (the main file and every
header, as `c++ -M` lists them). A clean unit whose key is recorded is not checked again. A unit
with findings is never recorded, so its findings are printed every run. DXPU_TIDY_CACHE sets the
directory (default ~/.cache/dxpu/tidy); DXPU_TIDY_CACHE=off turns the cache off.
"""
import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
import time

FINDING = re.compile(r"(warning|error):")
NOISE = re.compile(r"^[0-9]+ warnings? generated|^Suppressed [0-9]+ warnings|^Use -header-filter")


def expand_units(top, build, db):
    """(source, entry) for every project translation unit, unity sources expanded."""
    include = re.compile(r'^#include "([^"]+)"', re.M)
    for e in db:
        f = os.path.realpath(os.path.join(e["directory"], e["file"]))
        if re.search(r"/Unity/unity_[0-9]+_(cxx|c)\.(cxx|c)$", f):
            with open(f) as u:
                members = include.findall(u.read())
            for m in members:
                m = os.path.realpath(m)
                entry = dict(e)
                entry["file"] = m
                entry["command"] = e["command"].replace(e["file"], m).replace(f, m)
                yield m, entry
        else:
            yield f, e


def load_units(top, build, dirs):
    """(every unit of the build, the project's units under dirs), unity sources expanded."""
    with open(os.path.join(build, "compile_commands.json")) as fh:
        db = json.load(fh)
    every, chosen = {}, {}
    for f, e in expand_units(top, build, db):
        every.setdefault(f, e)
        rel = os.path.relpath(f, top)
        if rel.startswith(("..", "build/")):
            continue
        if any(rel.startswith(d) for d in dirs or [""]):
            chosen.setdefault(f, e)
    return every, chosen


def tool_version():
    out = subprocess.run(["clang-tidy", "--version"], capture_output=True, text=True)
    return out.stdout


def config_text(top):
    parts = []
    for root, dirnames, files in os.walk(top):
        dirnames[:] = [d for d in dirnames if d not in ("build", ".git")]
        if ".clang-tidy" in files:
            p = os.path.join(root, ".clang-tidy")
            with open(p) as fh:
                parts.append(os.path.relpath(p, top) + "\n" + fh.read())
    return "\n".join(sorted(parts))


_file_hashes = {}


def file_hash(path):
    h = _file_hashes.get(path)
    if h is None:
        with open(path, "rb") as fh:
            h = hashlib.sha256(fh.read()).hexdigest()
        _file_hashes[path] = h
    return h


def dependencies(entry):
    """Every file the compiler reads for the unit, from `c++ -M` with the unit's own command."""
    args = shlex.split(entry["command"])
    out = []
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        if a in ("-c", "-MD", "-MMD") or a.startswith("-Werror"):
            continue
        out.append(a)
    r = subprocess.run(out + ["-M", "-w"], cwd=entry["directory"], capture_output=True, text=True)
    if r.returncode != 0:
        return None
    deps = r.stdout.replace("\\\n", " ").split(":", 1)[1].split()
    return sorted(set(os.path.realpath(os.path.join(entry["directory"], d)) for d in deps))


def unit_key(common, top, build, entry):
    deps = dependencies(entry)
    if deps is None:
        return None
    h = hashlib.sha256(common.encode())
    command = entry["command"].replace(build, "<build>").replace(top, "<top>")
    h.update(command.encode())
    for d in deps:
        h.update(d.replace(top, "<top>").encode())
        h.update(file_hash(d).encode())
    return h.hexdigest()


def run_tidy(db_dir, f):
    r = subprocess.run(["clang-tidy", "-p", db_dir, "--quiet", f], capture_output=True, text=True)
    text = "\n".join(l for l in (r.stdout + r.stderr).splitlines() if not NOISE.search(l))
    clean = r.returncode == 0 and not FINDING.search(text)
    return clean, text


def main():
    parser = argparse.ArgumentParser(description="clang-tidy on a build's translation units")
    parser.add_argument("top", help="the source tree")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="clang-tidy processes at once (default: the number of CPUs)")
    parser.add_argument("build", help="a configured build directory")
    parser.add_argument("paths", nargs="*", help="directories or files under TOP (default: all)")
    args = parser.parse_args()
    top = os.path.realpath(args.top)
    build = os.path.realpath(os.path.join(top, args.build))
    dirs = args.paths
    if not os.path.isfile(os.path.join(build, "compile_commands.json")):
        print(f"no {build}/compile_commands.json: configure the build first", file=sys.stderr)
        return 1
    every, units = load_units(top, build, dirs)
    if not units:
        print(f"no translation units under: {' '.join(dirs)}", file=sys.stderr)
        return 1
    db_dir = os.path.join(build, "tidy")
    os.makedirs(db_dir, exist_ok=True)
    tmp = os.path.join(db_dir, f"compile_commands.json.{os.getpid()}")
    with open(tmp, "w") as fh:
        json.dump(list(every.values()), fh, indent=0)
    # Concurrent runs (one ctest test per unit) write the same database and rename: atomic.
    os.replace(tmp, os.path.join(db_dir, "compile_commands.json"))

    cache = os.environ.get("DXPU_TIDY_CACHE", "")
    if cache != "off":
        cache = cache or os.path.join(os.environ.get("XDG_CACHE_HOME") or
                                      os.path.join(os.path.expanduser("~"), ".cache"), "dxpu", "tidy")
        os.makedirs(cache, exist_ok=True)
    common = tool_version() + config_text(top)

    start = time.monotonic()
    failed, cached, checked = [], 0, 0

    def one(f):
        key = unit_key(common, top, build, units[f]) if cache != "off" else None
        if key and os.path.exists(os.path.join(cache, key)):
            return f, True, "", True
        clean, text = run_tidy(db_dir, f)
        if clean and key:
            with open(os.path.join(cache, key), "w") as fh:
                fh.write(os.path.relpath(f, top) + "\n")
        return f, clean, text, False

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for f, clean, text, hit in pool.map(one, sorted(units)):
            cached += hit
            checked += not hit
            if text.strip():
                print(text.strip(), file=sys.stderr)
            if not clean:
                failed.append(os.path.relpath(f, top))
    took = time.monotonic() - start
    where = " ".join(dirs) or "all"
    if failed:
        print(f"clang-tidy: findings in {len(failed)} of {len(units)} translation units "
              f"({where}): {' '.join(failed)}", file=sys.stderr)
        return 1
    print(f"clang-tidy: {len(units)} translation units clean ({where}; {checked} checked, "
          f"{cached} unchanged since a clean run; {took:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
