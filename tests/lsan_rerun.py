#!/usr/bin/env python3
"""lsan_rerun.py — after a failed sanitizer ctest run in the current folder: runs the failed tests
once more when, and only when, every one of them failed by LeakSanitizer's own tracer crashing at
exit ("Tracer caught signal ... LeakSanitizer has encountered a fatal error", a known flake of
the stop-the-world tracer on busy machines: github.com/google/sanitizers/issues/1353) and by
nothing else: no leak report, no AddressSanitizer or UndefinedBehaviorSanitizer report, no failed
assertion. Any other failure fails at once, and a test that fails again fails.

usage (the Makefile's sanitizer pass): ctest ... || python3 tests/lsan_rerun.py [ctest options]
"""
import os
import re
import subprocess
import sys

TRACER = ("Tracer caught signal", "LeakSanitizer has encountered a fatal error")
OTHER = ("ERROR: LeakSanitizer: detected memory leaks", "ERROR: AddressSanitizer", "runtime error:",
         "[  FAILED  ]", "[  ERROR   ]", "Traceback (most recent call last)")


def outputs(log):
    """Each test's output in ctest's LastTest.log, by test name."""
    found, name, lines = {}, None, []
    for line in log.splitlines():
        m = re.match(r"\d+/\d+ Test: (.+)$", line)
        if m:
            name, lines = m.group(1).strip(), []
        elif name and line.startswith('"%s" end time' % name):
            found[name] = "\n".join(lines)
            name = None
        elif name:
            lines.append(line)
    return found


def main():
    tmp = os.path.join("Testing", "Temporary")
    try:
        failed = [l.split(":", 1)[1].strip() for l in open(os.path.join(tmp, "LastTestsFailed.log")) if ":" in l]
        log = outputs(open(os.path.join(tmp, "LastTest.log"), errors="replace").read())
    except OSError as e:
        print("lsan_rerun: no ctest logs here (%s)" % e, file=sys.stderr)
        return 1
    if not failed:
        print("lsan_rerun: ctest failed but named no failed test", file=sys.stderr)
        return 1
    for name in failed:
        out = log.get(name, "")
        if not all(s in out for s in TRACER) or any(s in out for s in OTHER):
            print("lsan_rerun: %s failed for a reason of its own: not run again" % name, file=sys.stderr)
            return 1
    print("lsan_rerun: LeakSanitizer's tracer crashed at the exit of %s (google/sanitizers#1353); "
          "running %s once more" % (", ".join(failed), "it" if len(failed) == 1 else "them"), file=sys.stderr)
    return subprocess.call(["ctest", "--rerun-failed", "--output-on-failure"] + sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
