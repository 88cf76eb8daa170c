#!/usr/bin/env python3
"""Every figure in the README and the User Guide that names a committed results file is found there.

The README and the User Guide's chapters (resources/guide/*.md) quote measurements and names the file they come from (`tests/bench/results/...`,
`tests/gpu/results/...`, a glob, a folder, or a `...-suffix` abbreviation of a file named
earlier). For every paragraph, list item or table row that names such a file, each figure in it
(a number with a fractional part, such as 0.021 s, 84.34% or x1.034, or a number followed by a
unit of measure, unless a bound precedes it: "within 15%", "under 50 ms", "at least 512 MiB") is
checked against the files cited in its own sentence, or, when its sentence cites none, every
file the block cites. The figure must occur in one of them: some number there, as
written or in a unit 1,000 or 1,000,000 times larger or smaller (ns/us/ms/s), must round to it at
the figure's own precision. A figure not found is reported with its file and line and the results
file.

Figures that are not measurements of that file (limits, thresholds, settings, figures from the
sentence's other source) are listed in EXEMPT below, each with its reason; an exemption that no
longer matches anything in any of the files checked is an error too, so the list cannot go stale
(checked when README.md and every chapter of the guide are among the files).

  tests/readme/check-cited-figures.py [FILE.md...]   exit 0: all found; 1: figures not found
  With no FILE: README.md and resources/guide/*.md, named relative to the repository's root.
"""
import glob
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
RESULT_DIRS = ("tests/bench/results", "tests/gpu/results")
GUIDE_DIR = "resources/guide"

# (text the figure sits in, the figure, why it is not a measurement of the cited file)
EXEMPT = [
    ("64 KiB of memcheck", "64", "compute-sanitizer's padding, a setting"),
    ("61% of the 2026-11-30 cuBLAS figure", "61", "the file's expert time against another run's cuBLAS time"),
    ("an earlier 9 to 34 ms had no", "34", "the text says it has no committed output"),
    ('("at 50% of the memory bound', "50", "an example of the message"),
    ("an earlier session's 4233, 64.6 and 641 have no committed output", "64.6",
     "the text says it has no committed output"),
    ("(15–28 ms on this repository's Debian machine, printed by the test)", "28", "printed by a test, not a results file"),
    ("(4.5 at Beta(1.5, 1))", "4.5", "the difference of two solve rates in the file"),
    ("about 40 to 60 ms per MiB", "60", "a slope read from the file's payload sizes, stated as approximate"),
    ("about 70 to 100 ms through srun", "100", "a slope read from the file's payload sizes, stated as approximate"),
    ("step 12 is at **84% of cuBLAS**", "84", "the ratio of the file's 1394 and 1666 µs"),
    ("120 s of CPU time and 256 MiB of output", "256", "a limit"),
]

CITATION = re.compile(r"`((?:tests/(?:bench|gpu)/results/[^`\s]*)|(?:\.\.\.[-\w.]+(?:/|\.\w+)))`")
UNITS = r"(?:s|ms|us|µs|ns|%|x|GB/s|TB/s|TFLOP/s|GFLOP/s|MiB|GiB|KiB|MB|GB|KB|MHz|C|W|pt)"
FIGURE = re.compile(
    r"(?<![\w.\-/])(?:x|×)?(\d+(?:,\d{3})*\.\d+|\d+(?:,\d{3})*(?=\s?" + UNITS + r"(?![\w/])))")
BOUND = re.compile(r"(?:within|under|below|above|limit|limited to|at least|at most|up to|over|factor in \[)\s*[\d.,\[ ]*$", re.I)
SENTENCE_END = re.compile(r"(?<=[.;!?])\s+(?=[A-Z(`*])")
NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def blocks(lines):
    """Paragraphs, list items and table rows, as (first line number, text)."""
    start, text, in_code = None, [], False
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if stripped.startswith("```"):
            in_code = not in_code
        new_item = re.match(r"^\s*([-*]|\d+\.)\s", line) or stripped.startswith("|")
        if in_code or not stripped or new_item or stripped.startswith("#"):
            if text:
                yield start, " ".join(text)
            start, text = None, []
            if in_code or not stripped or stripped.startswith("#") or stripped.startswith("```"):
                continue
        if start is None:
            start = number
        text.append(stripped)
    if text:
        yield start, " ".join(text)


def sentence_of(text, position):
    """The (start, end) of the sentence around position."""
    start = 0
    for m in SENTENCE_END.finditer(text):
        if m.end() > position:
            return start, m.start()
        start = m.end()
    return start, len(text)


def resolve(citation):
    if citation.startswith("..."):
        suffix = citation[3:].rstrip("/")
        found = []
        for folder in RESULT_DIRS:
            for path in glob.glob(os.path.join(ROOT, folder, "**", "*"), recursive=True):
                if os.path.basename(path.rstrip("/")).endswith(suffix):
                    found.append(path)
        paths = found
    else:
        paths = glob.glob(os.path.join(ROOT, citation))
    files = []
    for path in paths:
        if os.path.isdir(path):
            files += [p for p in glob.glob(os.path.join(path, "**", "*"), recursive=True) if os.path.isfile(p)]
        elif os.path.isfile(path):
            files.append(path)
    return sorted(files)


_numbers = {}


def numbers_in(path):
    if path not in _numbers:
        with open(path, encoding="utf-8", errors="replace") as f:
            _numbers[path] = [float(n) for n in NUMBER.findall(f.read().replace(",", ""))]
    return _numbers[path]


def found_in(figure, files):
    decimals = len(figure.split(".")[1]) if "." in figure else 0
    want = round(float(figure.replace(",", "")), decimals)
    for path in files:
        for n in numbers_in(path):
            for scale in (1, 1e3, 1e-3, 1e6, 1e-6):
                if round(n * scale, decimals) == want:
                    return True
    return False


def default_files():
    """README.md and the guide's chapters, as paths relative to the repository's root."""
    guide = sorted(glob.glob(os.path.join(ROOT, GUIDE_DIR, "*.md")))
    return ["README.md"] + [os.path.relpath(p, ROOT) for p in guide]


def check_file(path, name, exempt_used, problems):
    """Checks one file's cited figures; returns how many were checked."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    checked = 0
    for first_line, text in blocks(lines):
        citations = [(m.start(), m.group(1)) for m in CITATION.finditer(text)]
        if not citations:
            continue
        spans = [m.span() for m in CITATION.finditer(text)]
        for m in FIGURE.finditer(text):
            if any(a <= m.start() < b for a, b in spans):
                continue  # a number inside a file name
            figure = m.group(1)
            if BOUND.search(text[max(0, m.start() - 24):m.start()]):
                continue  # a limit or threshold, not a measurement
            sentence = sentence_of(text, m.start())
            cited = [c for pos, c in citations if sentence[0] <= pos < sentence[1]] or [c for _, c in citations]
            skip = False
            for i, (context, exempt_figure, _why) in enumerate(EXEMPT):
                if exempt_figure == figure and context in text:
                    exempt_used[i] = skip = True
            if skip:
                continue
            files = []
            for citation in cited:
                resolved = resolve(citation)
                if not resolved:
                    problems.append(f"{name}:{first_line}: `{citation}` names no committed file")
                files += resolved
            checked += 1
            if files and not found_in(figure, files):
                window = text[max(0, m.start() - 50):m.end() + 20]
                names = ", ".join(f"`{c}`" for c in cited)
                problems.append(f"{name}:{first_line}: {figure} is in none of {names} (…{window}…)")
    return checked


def main():
    if len(sys.argv) > 1:
        names = sys.argv[1:]
        paths = names
    else:
        names = default_files()
        paths = [os.path.join(ROOT, n) for n in names]
    exempt_used = [False] * len(EXEMPT)
    problems, checked = [], 0
    for path, given in zip(paths, names):
        name = os.path.relpath(path, ROOT) if os.path.isabs(given) else given
        checked += check_file(path, name, exempt_used, problems)
    # The exemptions are for the README and the guide together: one used in any of them stands.
    everything = {os.path.realpath(os.path.join(ROOT, n)) for n in default_files()}
    if everything <= {os.path.realpath(p) for p in paths}:
        for used, (context, figure, _why) in zip(exempt_used, EXEMPT):
            if not used:
                problems.append(f"check-cited-figures.py: the exemption of {figure} in '{context}' matches nothing; remove it")
    for p in problems:
        print(p)
    print(f"{checked} cited figures checked in {len(paths)} file(s), {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
