#!/usr/bin/env python3
"""Every figure in the README that names a committed results file is found in that file.

The README quotes measurements and names the file they come from (`tests/bench/results/...`,
`tests/gpu/results/...`, a glob, a folder, or a `...-suffix` abbreviation of a file named
earlier). For every paragraph, list item or table row that names such a file, each figure in it
(a number with a fractional part, such as 0.021 s, 84.34% or x1.034, or a number followed by a
unit of measure, unless a bound precedes it: "within 15%", "under 50 ms", "at least 512 MiB") is
checked against the files cited in its own sentence, or, when its sentence cites none, every
file the block cites. The figure must occur in one of them: some number there, as
written or in a unit 1,000 or 1,000,000 times larger or smaller (ns/us/ms/s), must round to it at
the figure's own precision. A figure not found is reported with the README line and the file.

Figures that are not measurements of that file (limits, thresholds, settings, figures from the
sentence's other source) are listed in EXEMPT below, each with its reason; an exemption that no
longer matches anything is an error too, so the list cannot go stale.

  tests/readme/check-cited-figures.py [README.md]     exit 0: all found; 1: figures not found
"""
import glob
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
RESULT_DIRS = ("tests/bench/results", "tests/gpu/results")

# (README text the figure sits in, the figure, why it is not a measurement of the cited file)
EXEMPT = [
    ("64 KiB of memcheck", "64", "compute-sanitizer's padding, a setting"),
    ("61% of the 2026-11-30 cuBLAS figure", "61", "the file's expert time against another run's cuBLAS time"),
    ("an earlier 9 to 34 ms had no", "34", "the README says it has no committed output"),
    ('("at 50% of the memory bound', "50", "an example of the message"),
    ("an earlier session's 4233, 64.6 and 641 have no committed output", "64.6",
     "the README says it has no committed output"),
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


def main():
    readme = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "README.md")
    with open(readme, encoding="utf-8") as f:
        lines = f.read().split("\n")
    name = os.path.relpath(readme, ROOT) if os.path.isabs(readme) else readme
    exempt_used = [False] * len(EXEMPT)
    problems, checked = [], 0
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
    own_readme = os.path.realpath(readme) == os.path.join(ROOT, "README.md")
    for used, (context, figure, _why) in zip(exempt_used, EXEMPT):
        if own_readme and not used:
            problems.append(f"check-cited-figures.py: the exemption of {figure} in '{context}' matches nothing; remove it")
    for p in problems:
        print(p)
    print(f"{checked} cited figures checked, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
