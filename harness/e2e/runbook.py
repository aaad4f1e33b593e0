"""docs/adoption.md's runbook as the page gives it: the commands of its one `bash` block under "The runbook, command by
command", read in order. `make e2e-adopt ARGS="--world one"` (harness/e2e/adopt_one.py) runs these lines, and
tests/test_adoption_runbook.py checks what can be checked without Terraform (the steps and their order, each
`s3tables-kit` line parsed by its command's own parser, the stacks' names and order), so that an edit of the page that
reorders or renames a step breaks the walk rather than leaving it walking a sequence of its own."""

from __future__ import annotations

import argparse
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

from s3tables_kit.topology.paths import ROOT

DOC = ROOT / "docs" / "adoption.md"
HEADING = "## The runbook, command by command"
# The adoption walk, as step names (`step_of`): discover, render the adopter's policies, the stacks in their order,
# each gated then applied, then the backfill watched. The page must give exactly these, in this order.
STEPS = (
    "s3tables-kit discover",
    "s3tables-kit policies",
    "cdktf synth",
    "for stack",
    "terraform init",
    "terraform plan",
    "terraform show",
    "s3tables-kit adopt-gate",
    "terraform apply",
    "done",
    "s3tables-kit outputs",
    "s3tables-kit status",
)
LOOP = ("for stack", "done")
PLACEHOLDER = re.compile(r"<[^>]+>")


@dataclass(frozen=True)
class Line:
    """One command of the runbook: its words (without `VAR=value` before it and `> file` after it)."""

    number: int  # line number in the page
    words: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    stdout: str | None = None  # `> file`

    def __str__(self) -> str:
        env = [f"{k}={v}" for k, v in self.env]
        return " ".join([*env, *self.words, *(["> " + self.stdout] if self.stdout else [])])

    @property
    def step(self) -> str:
        return step_of(self.words)

    @property
    def args(self) -> tuple[str, ...]:
        """An `s3tables-kit <command>` line's arguments; a `terraform` line's, without `-chdir`."""
        if self.words[0] == "s3tables-kit":
            return self.words[2:]
        return tuple(w for w in self.words[1:] if not w.startswith("-chdir="))


def step_of(words: Sequence[str]) -> str:
    """The step a command is: `s3tables-kit <command>`, `terraform <subcommand>`, `cdktf <command>`, the loop's
    `for stack` and `done`; ValueError for anything else (the walk cannot run what it does not know)."""
    head = words[0] if words else ""
    if head == "s3tables-kit" and len(words) > 1:
        return f"s3tables-kit {words[1]}"
    if head == "terraform":
        return f"terraform {next(w for w in words[1:] if not w.startswith('-'))}"
    if head == "npx" and tuple(words[1:2]) == ("cdktf",) and len(words) > 2:
        return f"cdktf {words[2]}"
    if head == "for" and tuple(words[1:3]) == ("stack", "in"):
        return "for stack"
    if head == "done":
        return "done"
    raise ValueError(f"not a step the runbook's walk knows: {' '.join(words)}")


def _block(text: str) -> list[tuple[int, str]]:
    """(line number, line) of the first `bash` block after HEADING."""
    lines = text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == HEADING)
        fence = next(i for i in range(start, len(lines)) if lines[i].strip() in ("```bash", "```sh"))
        end = next(i for i in range(fence + 1, len(lines)) if lines[i].strip() == "```")
    except StopIteration:
        raise ValueError(f"{DOC.name}: no `bash` block under {HEADING!r}") from None
    return [(i + 1, lines[i]) for i in range(fence + 1, end)]


def read(text: str | None = None) -> list[Line]:
    """The runbook's commands in the page's order (`text`: the page, read from docs/adoption.md by default)."""
    out: list[Line] = []
    for number, raw in _block(DOC.read_text() if text is None else text):
        words = shlex.split(raw.replace(";", " ; "), comments=True)
        words = [w for w in words if w != ";"]
        if words[-1:] == ["do"]:
            words = words[:-1]
        if not words:
            continue
        env = []
        while "=" in words[0] and words[0].split("=", 1)[0].isidentifier():
            key, value = words.pop(0).split("=", 1)
            env.append((key, value))
        stdout = None
        if ">" in words:
            i = words.index(">")
            stdout, words = words[i + 1], words[:i]
        line = Line(number, tuple(words), tuple(env), stdout)
        line.step  # noqa: B018 (an unknown step refuses the page here)
        out.append(line)
    return out


def order_problems(lines: Sequence[Line]) -> list[str]:
    """Where the page's steps differ from STEPS (one line per difference); empty when it gives them in order."""
    got = tuple(line.step for line in lines)
    if got == STEPS:
        return []
    return [f"{DOC.name}: the runbook gives {list(got)}, the walk needs {list(STEPS)}"]


def config_problems(lines: Sequence[Line]) -> list[str]:
    """Where a line names another configuration than the proposal `discover` writes (`<its --out>/kit.toml`): the
    synth's `KIT_CONFIG`, the gate's and the outputs' `--config`."""
    discover = line_of(lines, STEPS[0]).args
    out = discover[discover.index("--out") + 1] if "--out" in discover else "discover-out"
    proposal = f"{out.rstrip('/')}/kit.toml"
    named = [(line, dict(line.env).get("KIT_CONFIG")) for line in lines if line.step == "cdktf synth"]
    named += [(line, line.args[line.args.index("--config") + 1] if "--config" in line.args else None)
              for line in lines if line.step in ("s3tables-kit adopt-gate", "s3tables-kit outputs")]  # fmt: skip
    return [f"{DOC.name}:{line.number}: {line.step} names {config}, discover writes {proposal}"
            for line, config in named if config != proposal]  # fmt: skip


def loop_body(lines: Sequence[Line]) -> list[Line]:
    """The lines run for each stack (between `for stack ... do` and `done`)."""
    steps = [line.step for line in lines]
    return list(lines[steps.index(LOOP[0]) + 1 : steps.index(LOOP[1])])


def line_of(lines: Sequence[Line], step: str) -> Line:
    return next(line for line in lines if line.step == step)


def stack_patterns(lines: Sequence[Line]) -> tuple[str, ...]:
    """The `for stack in <patterns>` of the runbook: the stacks' names (`<...>` a placeholder) in deploy order."""
    return line_of(lines, LOOP[0]).words[3:]


def stack_problems(patterns: Sequence[str], stacks: Sequence[str]) -> list[str]:
    """Where synthesized stacks in their deploy order (`harness.e2e.run.stack_order`) differ from the runbook's
    names and order: a stack no name matches, one that deploys before a stack of an earlier name, a name no stack
    has."""
    rules = [re.compile("^" + PLACEHOLDER.sub(".+", re.escape(p).replace(r"\<", "<").replace(r"\>", ">")) + "$")
             for p in patterns]  # fmt: skip
    problems, last, seen = [], 0, set()
    for stack in stacks:
        matched = [i for i, rule in enumerate(rules) if rule.match(stack)]
        if len(matched) != 1:
            problems.append(
                f"stack {stack}: matches {[patterns[i] for i in matched]} of the runbook's {list(patterns)}"
            )
            continue
        if matched[0] < last:
            problems.append(f"stack {stack} ({patterns[matched[0]]}) deploys after a {patterns[last]} stack")
        last = max(last, matched[0])
        seen.add(matched[0])
    problems += [f"the runbook's {patterns[i]}: no stack of the synth" for i in range(len(rules)) if i not in seen]
    return problems


def localized(words: Sequence[str], values: Mapping[str, str]) -> list[str]:
    """The words with each of the page's example values (a whole word, or a path's first part) replaced."""
    out = []
    for word in words:
        head, sep, rest = word.partition("=") if word.startswith("--") else ("", "", word)
        for example, value in sorted(values.items(), key=lambda kv: -len(kv[0])):
            if rest == example or rest.startswith(example.rstrip("/") + "/"):
                rest = value + rest[len(example.rstrip("/")) :] if rest != example else value
                break
        out.append(f"{head}{sep}{rest}")
    return out


class _Parsed(Exception):
    def __init__(self, namespace: argparse.Namespace) -> None:
        self.namespace = namespace


def parse(words: Sequence[str]) -> argparse.Namespace:
    """An `s3tables-kit <command> ...` line parsed by that command's own parser (its module's `main`, stopped once its
    arguments are parsed: nothing runs); ValueError, one line, for an unknown command or arguments it refuses."""
    from s3tables_kit import cli

    command = cli.BY_NAME.get(words[1]) if len(words) > 1 and words[0] == "s3tables-kit" else None
    if command is None:
        raise ValueError(f"{' '.join(words)}: not an s3tables-kit command ({', '.join(cli.BY_NAME)})")
    original = argparse.ArgumentParser.parse_args

    def parse_then_stop(self: argparse.ArgumentParser, *args: object, **kwargs: object) -> argparse.Namespace:
        raise _Parsed(original(self, *args, **kwargs))  # type: ignore[arg-type]

    with mock.patch.object(argparse.ArgumentParser, "parse_args", parse_then_stop):
        try:
            cli.load(command)(list(words[2:]))
        except _Parsed as done:
            return done.namespace
        except SystemExit as refused:
            raise ValueError(f"{' '.join(words)}: refused by its parser (exit {refused.code})") from None
    raise ValueError(f"{' '.join(words)}: its command parsed no arguments")


def example_values(proposal: Path, review: Path, outputs: Path, regions: Mapping[str, str]) -> dict[str, str]:
    """The page's example paths and Regions and what a walk uses for them."""
    return {"discover-out": str(proposal), "review/": str(review), "outputs.json": str(outputs), **regions}
