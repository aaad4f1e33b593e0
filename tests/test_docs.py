"""The documentation is part of the repository and is checked like code: the README's repository layout names every
top-level directory and every sub-package (so adding or removing one without updating it fails), the README stays a
landing page, every relative Markdown link and every `docs/<page>.md#<section>` citation in the tree resolves, and no
tracked file points outside the repository (the facts the code relies on live in docs/aws-facts.md)."""

from __future__ import annotations

import ast
import io
import re
import subprocess
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
MAX_README_LINES = 200
# Text that names a file outside the repository, or the retired notes files (their history is in git).
FORBIDDEN = ("REFERENCE.md", "REFERENCE §", "../shared", "/work/shared", "NOTES.md", "NOTES.round")
THIS_FILE = Path(__file__).resolve().relative_to(REPO).as_posix()

_FENCE = re.compile(r"^(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_CITATION = re.compile(r"(?<![\w/.-])(docs/[\w./-]+?\.md)(?:#([\w-]+))?")
_DIR_TOKEN = re.compile(r"(?<![\w./-])([A-Za-z_][\w-]*)/(?=[\s,;:)]|$)")


# ---- pure helpers (tested below on small inputs, then applied to the repository) ----


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading: lower case, inline code marks and punctuation dropped (letters,
    digits, `_`, `-` and spaces kept), spaces turned into hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def outside_fences(lines: Iterable[str]) -> list[str]:
    """The lines of a Markdown document that are not inside a fenced code block."""
    out, fenced = [], False
    for line in lines:
        if _FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if not fenced:
            out.append(line)
    return out


def anchors(markdown: str) -> set[str]:
    """Every heading anchor of a Markdown document; a repeated heading gets GitHub's `-1`, `-2`, ... suffix."""
    seen: dict[str, int] = {}
    found = set()
    for line in outside_fences(markdown.splitlines()):
        m = _HEADING.match(line)
        if not m:
            continue
        slug = github_slug(m.group(2))
        n = seen.get(slug, 0)
        found.add(slug if n == 0 else f"{slug}-{n}")
        seen[slug] = n + 1
    return found


def relative_links(markdown: str) -> list[str]:
    """Link targets of a Markdown document that point into the repository (no scheme, not mail)."""
    targets = []
    for line in outside_fences(markdown.splitlines()):
        for m in _LINK.finditer(line):
            target = m.group(1)
            if not re.match(r"^[a-z][a-z0-9+.-]*:", target):
                targets.append(target)
    return targets


def layout_block(readme: str) -> list[str]:
    """The lines of the first fenced block after the README's `## Repository layout` heading."""
    lines = readme.splitlines()
    start = lines.index("## Repository layout")
    block: list[str] = []
    inside = False
    for line in lines[start + 1 :]:
        if line.startswith("## "):
            break
        if _FENCE.match(line.strip()):
            if inside:
                return block
            inside = True
            continue
        if inside:
            block.append(line)
    raise AssertionError("README: '## Repository layout' has no fenced block")


@dataclass(frozen=True)
class LayoutEntry:
    directory: str
    mentioned: frozenset[str]  # `name/` tokens in the description: directories inside `directory`


def parse_layout(block: list[str]) -> dict[str, LayoutEntry]:
    """`<dir>/   description naming sub/ directories` per line -> {dir: entry}."""
    entries: dict[str, LayoutEntry] = {}
    for line in block:
        if not line.strip():
            continue
        head, _, rest = line.partition(" ")
        assert head.endswith("/"), f"layout line does not start with a directory: {line!r}"
        name = head.removesuffix("/")
        assert name not in entries, f"layout names {name}/ twice"
        entries[name] = LayoutEntry(name, frozenset(_DIR_TOKEN.findall(rest)))
    return entries


def layout_problems(entries: dict[str, LayoutEntry], root: Path, top_level: set[str]) -> list[str]:
    """What the layout gets wrong about the tree under `root` (empty when it is right)."""
    problems = [f"{d}/ exists but the layout does not name it" for d in sorted(top_level - set(entries))]
    problems += [f"the layout names {d}/, which does not exist" for d in sorted(set(entries) - top_level)]
    for name, entry in sorted(entries.items()):
        base = root / name
        if not base.is_dir():
            continue
        problems += [
            f"the layout's {name}/ line names {sub}/, which is not a directory of {name}/"
            for sub in sorted(entry.mentioned)
            if not (base / sub).is_dir()
        ]
        if (base / "__init__.py").is_file():
            packages = {p.name for p in base.iterdir() if (p / "__init__.py").is_file()}
            problems += [
                f"{name}/{sub}/ is a package but the layout's {name}/ line does not name {sub}/"
                for sub in sorted(packages - entry.mentioned)
            ]
    return problems


def link_problems(doc: Path, root: Path) -> list[str]:
    """Relative links of the Markdown file `doc` that do not resolve to a file (and heading) in the repository."""
    text = doc.read_text(encoding="utf-8")
    problems = []
    for target in relative_links(text):
        path, _, fragment = target.partition("#")
        dest = (doc.parent / path).resolve() if path else doc
        where = f"{doc.relative_to(root).as_posix()}: ({target})"
        if not dest.is_relative_to(root):
            problems.append(f"{where} leaves the repository")
        elif not dest.exists():
            problems.append(f"{where} does not exist")
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest.read_text(encoding="utf-8")):
            problems.append(f"{where} names no heading of {dest.relative_to(root).as_posix()}")
    return problems


def citation_problems(name: str, text: str, root: Path) -> list[str]:
    """`docs/<page>.md[#section]` citations in a file's text that name no page or no heading of it."""
    problems = []
    for page, section in _CITATION.findall(text):
        dest = root / page
        if not dest.is_file():
            problems.append(f"{name}: cites {page}, which does not exist")
        elif section and section not in anchors(dest.read_text(encoding="utf-8")):
            problems.append(f"{name}: cites {page}#{section}, which names no heading of {page}")
    return problems


# ---- the repository ----


def tracked_files() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    return [p for p in out.decode().split("\0") if p and (REPO / p).is_file()]


def tracked_texts() -> dict[str, str]:
    texts = {}
    for rel in tracked_files():
        try:
            texts[rel] = (REPO / rel).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # binary
    return texts


def top_level_directories() -> set[str]:
    """Top-level directories holding tracked files, plus any top-level Python package (tracked yet or not)."""
    tracked = {rel.split("/", 1)[0] for rel in tracked_files() if "/" in rel}
    packages = {p.name for p in REPO.iterdir() if (p / "__init__.py").is_file()}
    return {d for d in tracked | packages if not d.startswith(".")}


def markdown_docs() -> list[Path]:
    return [README, *sorted((REPO / "docs").rglob("*.md"))]


def test_readme_is_a_landing_page() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines (at most {MAX_README_LINES})"
    fence = lines.index("```bash")
    opening = lines[2 : fence - 1]
    assert lines[1] == lines[fence - 1] == "" and 2 <= len(opening) <= 4 and all(opening), (
        "the README opens with a paragraph of 2-4 lines saying what the kit is"
    )
    assert lines[fence + 1].startswith("make demo") and lines[fence + 2].startswith("make test"), (
        "the paragraph is followed by the two commands, the README's first code block"
    )
    assert not any(_FENCE.match(line.strip()) for line in lines[:fence]), "the two commands are the first code block"


def test_layout_names_every_top_level_directory_and_package() -> None:
    entries = parse_layout(layout_block(README.read_text(encoding="utf-8")))
    assert layout_problems(entries, REPO, top_level_directories()) == []


def test_every_relative_link_in_the_docs_resolves() -> None:
    assert (REPO / "docs").is_dir()
    assert [p for doc in markdown_docs() for p in link_problems(doc, REPO)] == []


def test_every_docs_citation_in_the_tree_resolves() -> None:
    texts = tracked_texts()
    cited = [rel for rel, text in texts.items() if _CITATION.search(text) and not rel.startswith("docs/")]
    assert len(cited) >= 10, "the code cites docs/aws-facts.md sections; this check must see them"
    problems = [p for rel, text in texts.items() if rel != THIS_FILE for p in citation_problems(rel, text, REPO)]
    assert problems == []


def test_no_tracked_file_refers_outside_the_repository() -> None:
    hits = [
        f"{rel}:{n}: {line.strip()}"
        for rel, text in tracked_texts().items()
        if rel != THIS_FILE
        for n, line in enumerate(text.splitlines(), 1)
        if any(f in line for f in FORBIDDEN)
    ]
    assert hits == []


def test_every_decision_page_has_context_decision_and_consequences() -> None:
    pages = sorted((REPO / "docs" / "decisions").glob("[0-9][0-9][0-9][0-9]-*.md"))
    assert len(pages) >= 10
    numbers = [int(p.name[:4]) for p in pages]
    assert numbers == list(range(1, len(pages) + 1)), "decisions are numbered 0001, 0002, ... without gaps"
    index = (REPO / "docs" / "decisions" / "README.md").read_text(encoding="utf-8")
    for page in pages:
        assert {"context", "decision", "consequences"} <= anchors(page.read_text(encoding="utf-8")), page.name
        assert f"]({page.name})" in index, f"docs/decisions/README.md does not list {page.name}"


# ---- the checks can fail ----


def test_github_slug_and_duplicate_anchors() -> None:
    assert github_slug("Copy modes: file copy or CTAS (`--copy-mode auto|files`)") == (
        "copy-modes-file-copy-or-ctas---copy-mode-autofiles"
    )
    assert github_slug("Deploy end to end on the local stand-in (`make e2e`)") == (
        "deploy-end-to-end-on-the-local-stand-in-make-e2e"
    )
    doc = "# A\n## Limits\n```\n## not a heading\n```\n### Limits\n"
    assert anchors(doc) == {"a", "limits", "limits-1"}


def test_layout_check_names_what_is_missing_or_stale(tmp_path: Path) -> None:
    for d in ("pkg/sub", "pkg/other", "data"):
        (tmp_path / d).mkdir(parents=True)
    for f in ("pkg/__init__.py", "pkg/sub/__init__.py", "pkg/other/__init__.py"):
        (tmp_path / f).touch()
    block = ["pkg/     code; sub/ (a part), gone/ (removed), bench-out/results.json", "old/     removed"]
    problems = layout_problems(parse_layout(block), tmp_path, {"pkg", "data"})
    assert problems == [
        "data/ exists but the layout does not name it",
        "the layout names old/, which does not exist",
        "the layout's pkg/ line names gone/, which is not a directory of pkg/",
        "pkg/other/ is a package but the layout's pkg/ line does not name other/",
    ]
    fixed = ["pkg/     code; sub/ and other/", "data/    files"]
    assert layout_problems(parse_layout(fixed), tmp_path, {"pkg", "data"}) == []


def test_link_and_citation_checks_catch_broken_targets(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "facts.md").write_text("# Facts\n\n## Replication\n")
    page = tmp_path / "docs" / "page.md"
    page.write_text(
        "[ok](facts.md#replication) [no file](missing.md) [no heading](facts.md#tags) [out](../../x.md) "
        "[web](https://example.com) [self](#nothing)\n```\n[in code](nowhere.md)\n```\n"
    )
    assert link_problems(page, tmp_path) == [
        "docs/page.md: (missing.md) does not exist",
        "docs/page.md: (facts.md#tags) names no heading of docs/facts.md",
        "docs/page.md: (../../x.md) leaves the repository",
        "docs/page.md: (#nothing) names no heading of docs/page.md",
    ]
    text = "see docs/facts.md#replication, docs/facts.md#gone and docs/other.md"
    assert citation_problems("a.py", text, tmp_path) == [
        "a.py: cites docs/facts.md#gone, which names no heading of docs/facts.md",
        "a.py: cites docs/other.md, which does not exist",
    ]


@pytest.mark.parametrize("line", ["see REFERENCE §4", "../shared/REFERENCE.md", "profile in NOTES.md, round 4"])
def test_forbidden_references_are_recognised(line: str) -> None:
    assert any(f in line for f in FORBIDDEN)


# ---- what the docs tell a reader to run exists; no internal issue numbers or notes about one machine ----

DOC_TEXTS = ("README.md", "docs/", "examples/")
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_MAKE = re.compile(r"(?:^|[\s;(]|&&)make\s+(?:-\S+\s+)*([a-z][\w-]*)")
_FLAG = re.compile(r"(?<![\w>-])(--[a-z][a-z0-9]*(?:-[a-z0-9]+)*)(?![\w-])")
_REPO_PATH = re.compile(
    r"(?<![\w./-])((?:infra|jobs|policies|topology|harness|tests|docs|examples|scripts|emulator|bench|jars|\.ci|\.github)"
    r"/[\w.-]+(?:/[\w.-]+)*/?)"
)
# The kit's command lines: every flag the docs show must be one of theirs (argparse, read from `--help`).
TOOL_MODULES = (
    *(
        f"s3tables_kit.{m}"
        for m in (
            "jobs.recover.cli", "jobs.emr_submit", "jobs.rehearse", "jobs.failover.cli", "jobs.failover.writer",
            "jobs.vault.cli",
            "jobs.ops.status", "jobs.ops.harden", "jobs.ops.audit", "jobs.ops.monitor", "jobs.ops.discover",
            "infra.validate", "infra.golden", "policies.render", "policies.access_analyzer", "infra.live.run",
            "infra.lockcheck", "infra.adoptgate", "topology.reference", "policies.explain", "jobs.jars",
        )
    ),
    "harness.drills.demo", "harness.drills.failover", "harness.e2e.run", "harness.e2e.adopt_worlds",
    "harness.sandbox", "harness.live_standin",
)  # fmt: skip
# Flags of other programs the docs show (cdktf, spark-submit, Glue, pytest, Terraform).
FOREIGN_FLAGS = frozenset({
    "--outputs-file", "--outputs-file-include-sensitive-outputs", "--py-files", "--extra-jars", "--jars", "--conf",
    "--no-install", "--maxprocesses", "--dist", "--auto-approve", "--skip-synth", "--version-token",
    "--table-bucket-arn", "--table-arn", "--query", "--output",  # the AWS CLI's, in the #46675 way out
})  # fmt: skip
# An internal tracker number ("issue 12", "(#31)"): an upstream one names its repository ("owner/repo issue #24",
# "terraform-cdk#2871") or is a five-digit provider bug ("#46033").
_INTERNAL_ISSUE = re.compile(r"(?<![\w-])(?:[Ii]ssues? #?\d{1,3}\b|(?<![\w/-])#\d{1,3}\b)")
_MACHINE_NOTE = re.compile(
    r"this machine|this kind of machine|the machine (?:image|has)|development machine|my (?:machine|laptop)|"
    r"(?<![\w.])/(?:root|home/\w+|work)/",
    re.I,
)


def doc_files(root: Path) -> list[Path]:
    files = [root / "README.md", *sorted((root / "docs").rglob("*.md")), *sorted((root / "examples").rglob("*.toml"))]
    return [f for f in files if f.is_file()]


def code_lines(markdown: str) -> list[str]:
    """What a reader would type: the lines of fenced blocks and every inline code span."""
    out, fenced = [], False
    for line in markdown.splitlines():
        if _FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if fenced:
            out.append(line.split(" # ", 1)[0] if not line.lstrip().startswith("#") else "")
        else:
            out += _CODE_SPAN.findall(line)
    return out


def makefile_targets(makefile: str) -> set[str]:
    return {m.group(1) for m in re.finditer(r"^([a-zA-Z0-9][\w-]*)\s*:(?!=)", makefile, re.M)}


def make_target_problems(name: str, markdown: str, targets: set[str]) -> list[str]:
    found = {t for line in code_lines(markdown) for t in _MAKE.findall(line)}
    return [f"{name}: `make {t}` is not a target of the Makefile" for t in sorted(found - targets)]


def flag_problems(name: str, markdown: str, known: set[str]) -> list[str]:
    found = {f for line in code_lines(markdown) for f in _FLAG.findall(line) if not f.endswith("-s3")}
    return [f"{name}: {f} is a flag of none of the kit's tools" for f in sorted(found - known - FOREIGN_FLAGS)]


def path_problems(name: str, text: str, root: Path) -> list[str]:
    """Repository paths in `text` (a pattern such as `failover--*` or `stacks/<stack>/` is checked up to where its
    placeholder starts) that do not exist."""
    found = {
        m.group(1).rstrip(".")
        for m in _REPO_PATH.finditer(text)
        if text[m.end() : m.end() + 1] not in ("*", "<", "{") and not m.group(1).endswith("-")
    }
    return [f"{name}: {p} does not exist" for p in sorted(found) if not (root / p).exists()]


def _upstream(line: str, start: int) -> bool:
    """`owner/repo issue #24`: the word before the number names another repository."""
    before = line[:start].split()
    return bool(before) and "/" in before[-1]


def hygiene_problems(name: str, text: str) -> list[str]:
    return [
        f"{name}:{n}: {m.group(0)!r}"
        for n, line in enumerate(text.splitlines(), 1)
        for m in (
            *(m for m in _INTERNAL_ISSUE.finditer(line) if not _upstream(line, m.start())),
            *_MACHINE_NOTE.finditer(line),
        )
    ]


def tool_flags() -> set[str]:
    """Every option string of the kit's command lines, from their own `--help`."""
    import contextlib
    import importlib
    import io

    from s3tables_kit import cli

    flags = set(_FLAG.findall(cli.usage()))  # the command's own (--version)
    for module in TOOL_MODULES:
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), pytest.raises(SystemExit):
            importlib.import_module(module).main(["--help"])
        flags |= set(_FLAG.findall(buf.getvalue()))
    return flags


def test_documented_make_targets_flags_and_paths_exist() -> None:
    targets = makefile_targets((REPO / "Makefile").read_text(encoding="utf-8"))
    known = tool_flags()
    problems = []
    for doc in doc_files(REPO):
        name, text = doc.relative_to(REPO).as_posix(), doc.read_text(encoding="utf-8")
        if doc.suffix == ".md":
            problems += make_target_problems(name, text, targets) + flag_problems(name, text, known)
            if not name.startswith("docs/decisions/"):  # decision records keep the history of what was removed
                problems += path_problems(name, "\n".join(code_lines(text)), REPO)
        else:
            problems += path_problems(name, text, REPO)
    assert problems == []


def test_docs_and_examples_carry_no_internal_issue_numbers_or_machine_notes() -> None:
    problems = [
        p for doc in doc_files(REPO) for p in hygiene_problems(doc.relative_to(REPO).as_posix(), doc.read_text())
    ]
    assert problems == []


def test_the_docs_check_catches_what_does_not_exist(tmp_path: Path) -> None:
    (tmp_path / "harness" / "drills").mkdir(parents=True)
    (tmp_path / "harness" / "drills" / "demo.py").touch()
    page = (
        "```bash\nmake demo\nmake outputs CONFIG=kit.toml   # then make nothing\nmake sandboxx\n```\n"
        'Run `make recover ARGS="--outputs o.json --namespce x"` or `python -m harness.drills.demo --dry-run`; see '
        "harness/drills/demo.py and jobs/gone.py, `--ol-s3` is a suffix. Make sure it works.\n"
    )
    assert make_target_problems("p.md", page, {"demo", "outputs", "recover"}) == [
        "p.md: `make sandboxx` is not a target of the Makefile"
    ]
    assert flag_problems("p.md", page, {"--outputs", "--dry-run"}) == [
        "p.md: --namespce is a flag of none of the kit's tools"
    ]
    assert path_problems("p.md", page, tmp_path) == ["p.md: jobs/gone.py does not exist"]
    text = (
        "Failover (issue 17): ...\nfixed in #31.\nsee awslabs/s3-tables-catalog issue #24 and terraform-cdk#2871, "
        "bug (#46033)\nTimings on this machine; cache in /root/.cache\n"
    )
    assert hygiene_problems("x.md", text) == [
        "x.md:1: 'issue 17'", "x.md:2: '#31'", "x.md:4: 'this machine'", "x.md:4: '/root/'"
    ]  # fmt: skip


# ---- comments and docstrings of the code say the reason, not an internal tracker number ----

CODE_PACKAGES = ("infra", "jobs", "policies", "topology", "emulator", "bench", "tests")


def comment_and_docstring_lines(source: str) -> list[tuple[int, str]]:
    """(line number, text) of every comment and every docstring line (module, class, function, or a bare string
    statement documenting an attribute) of Python source; other string literals are code and are not returned."""
    found = [
        (tok.start[0], tok.string)
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT
    ]
    lines = source.splitlines()
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
            and node.end_lineno is not None
        ):
            found += [(n, lines[n - 1]) for n in range(node.lineno, node.end_lineno + 1)]
    return sorted(found)


# A loose superset of `_INTERNAL_ISSUE` over the raw text: a file it misses has no comment or docstring to tokenize.
_MAYBE_ISSUE = re.compile(r"[Ii]ssues? #?\d|#\d")


def code_issue_problems(name: str, source: str) -> list[str]:
    if not _MAYBE_ISSUE.search(source):
        return []
    return [
        f"{name}:{n}: {m.group(0)!r}"
        for n, text in comment_and_docstring_lines(source)
        for m in _INTERNAL_ISSUE.finditer(text)
        if not _upstream(text, m.start())
    ]


def test_code_comments_and_docstrings_carry_no_internal_issue_numbers() -> None:
    problems: dict[str, list[str]] = {}
    for rel in tracked_files():
        if rel.endswith(".py") and rel.split("/", 1)[0] in CODE_PACKAGES and rel != THIS_FILE:
            found = code_issue_problems(rel, (REPO / rel).read_text(encoding="utf-8"))
            if found:
                problems[rel] = found
    assert problems == {}


def test_the_code_issue_check_reads_comments_and_docstrings_only() -> None:
    source = (
        '"""Recovery (issue 4)."""\n\n'
        "X = 1  # see #31 and awslabs/s3-tables-catalog issue #24\n"
        'MSG = "## Failover (issue 17)"\n'
        "\n\ndef f() -> None:\n"
        '    """Two lines;\n    the second names issue 26."""\n'
        "    return None  # bug #46033\n"
    )
    assert code_issue_problems("m.py", source) == ["m.py:1: 'issue 4'", "m.py:3: '#31'", "m.py:9: 'issue 26'"]
