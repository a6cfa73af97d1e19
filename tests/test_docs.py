"""What a newcomer reads holds: README.md is a guide that runs as written, and the README, the
design pages, the man pages and the source's comments describe what is, not how it came to be.

Runnable blocks: a fenced block in README.md whose info string is `sh runnable` is run by
this test, as written, with the build's `specx` first on PATH, in an empty directory of its
own (removed afterwards, with anything mounted below it); `sh runnable root` marks a block
that needs root, skipped otherwise. A runnable block must be quick (a few seconds) and leave
nothing behind outside its directory. Other blocks (`sh`, or none) are shown, not run.

History stays in git and beside the measurements in docs/results/: no issue numbers, commit
hashes or references to files outside the repository in README.md, docs/design/, the man
pages or the comments of src/. CHANGES.md, which records changes per version, is not
checked."""
import os
import pathlib
import re
import shutil
import subprocess
import tempfile

import pytest

from conftest import BUILD, REPO

README = REPO / "README.md"
DESIGN = REPO / "docs" / "design"
MAN_PAGES = sorted((REPO / "docs").glob("*.1"))
README_MAX_LINES = 250

ISSUE = re.compile(r"\bissues? ?#?\d+", re.IGNORECASE)
# A commit hash as one would cite it: 7 to 40 hex digits with a digit and a letter among them,
# not part of a longer word, a number (0x...) or a path of dashes (a UUID, a date).
HASH = re.compile(r"(?<![\w./-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![\w-])")
OUTSIDE = re.compile(r"\.\./shared\b|DESIGN-NOTES|/work/")
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
C_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.DOTALL)


def prose_files():
    """README, the design pages and the man pages: read whole."""
    return [README, *sorted(DESIGN.glob("*.md")), *MAN_PAGES]


def source_comments():
    """(path, comment) for every comment of the C sources under src/."""
    for path in sorted((REPO / "src").rglob("*.[ch]")):
        for comment in C_COMMENT.findall(path.read_text(errors="replace")):
            yield path, comment


def texts():
    for path in prose_files():
        yield path, path.read_text()
    yield from source_comments()


def offences(pattern):
    found = []
    for path, text in texts():
        for match in pattern.finditer(text):
            found.append(f"{path.relative_to(REPO)}: {match.group(0)!r}")
    return found


def test_no_issue_numbers():
    assert offences(ISSUE) == []


def test_no_commit_hashes():
    assert offences(HASH) == []


def test_no_references_outside_the_repository():
    assert offences(OUTSIDE) == []


def test_the_readme_is_short():
    lines = README.read_text().count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines"


def slug(heading):
    """The anchor a Markdown renderer gives HEADING (GitHub's rule)."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path):
    return {slug(m.group(1)) for m in re.finditer(r"^#+ (.*)$", path.read_text(), re.MULTILINE)}


def broken_links(path):
    broken = []
    text = FENCE.sub("", path.read_text())
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue
        file_part, _, anchor = target.partition("#")
        resolved = (path.parent / file_part).resolve() if file_part else path
        if REPO.resolve() not in resolved.parents and resolved != REPO.resolve():
            broken.append(f"{target} leaves the repository")
        elif not resolved.exists():
            broken.append(f"{target} does not exist")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no heading for #{anchor}")
    return broken


@pytest.mark.parametrize("path", [README, *sorted(DESIGN.glob("*.md"))],
                         ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(path):
    assert broken_links(path) == []


def runnable_blocks():
    blocks = []
    for info, body in FENCE.findall(README.read_text()):
        words = info.split()
        if "runnable" in words[1:]:
            blocks.append(pytest.param(body, marks=[pytest.mark.root] if "root" in words else [],
                                       id=f"block{len(blocks) + 1}"))
    return blocks


def test_the_readme_has_runnable_blocks():
    assert runnable_blocks(), "no ```sh runnable block in README.md"


def unmount_below(directory):
    """Lazily unmounts whatever a block left mounted below DIRECTORY, deepest first."""
    with open("/proc/self/mounts") as mounts:
        points = [line.split()[1] for line in mounts]
    for point in sorted((p for p in points if p.startswith(f"{directory}/")), reverse=True):
        subprocess.run(["umount", "-l", point], check=False)


@pytest.mark.parametrize("block", runnable_blocks())
def test_runnable_block_runs_as_written(block):
    env = dict(os.environ, PATH=f"{BUILD}:{os.environ.get('PATH', '')}")
    directory = tempfile.mkdtemp(prefix="specx-readme-")
    try:
        done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block], cwd=directory,
                              env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    finally:
        unmount_below(directory)
        shutil.rmtree(directory, ignore_errors=True)
