"""A report as a list of blocks, written out as Markdown or as one self-contained HTML page.

The optimize memo is read in a repository (Markdown) and forwarded by mail (HTML): both come from
the same blocks, so they cannot say different things. The HTML stands alone: it inlines every
figure as a base64 PNG, embeds each piece of evidence (a study's report, read from its Markdown
file, its own figure inlined too) where the Markdown links to it, and needs no stylesheet, script
or file from elsewhere. Inline markup is the Markdown subset the reports use: ``**bold**``,
```code``` and ``[text](link)``.
"""
from __future__ import annotations

import base64
import html
import re
from dataclasses import dataclass, field
from pathlib import Path

_STYLE = ("body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;line-height:1.45}"
          "table{border-collapse:collapse;margin:0.5rem 0}td,th{border:1px solid #bbb;padding:2px 6px;"
          "text-align:left}th{background:#eee}code,pre{background:#f4f4f4}pre{padding:0.5rem;overflow-x:auto}"
          "img{max-width:100%}")


@dataclass
class Document:
    """Blocks in order: (kind, payload) with kind one of heading, paragraph, table, bullets, code, image."""

    title: str
    blocks: list = field(default_factory=list)

    def heading(self, text: str, level: int = 2) -> None:
        self.blocks.append(("heading", (level, text)))

    def paragraph(self, text: str) -> None:
        self.blocks.append(("paragraph", text))

    def table(self, header: list[str], rows: list[list]) -> None:
        self.blocks.append(("table", (header, [[str(x) for x in row] for row in rows])))

    def bullets(self, items: list[str]) -> None:
        if items:
            self.blocks.append(("bullets", list(items)))

    def code(self, text: str) -> None:
        self.blocks.append(("code", text))

    def image(self, alt: str, path: str) -> None:
        """A figure, ``path`` relative to the report's directory."""
        self.blocks.append(("image", (alt, path)))

    def evidence(self, title: str, path: str, data: str = "") -> None:
        """A report the memo rests on, ``path`` (Markdown) relative to the report's directory: a
        link in the Markdown, its content embedded in the HTML. ``data``: what else the directory
        holds for it (named, not embedded)."""
        self.blocks.append(("evidence", (title, path, data)))

    def markdown(self) -> str:
        out = [f"# {self.title}", ""]
        for kind, x in self.blocks:
            if kind == "heading":
                out.append("#" * x[0] + " " + x[1])
            elif kind == "paragraph":
                out.append(x)
            elif kind == "table":
                header, rows = x
                out += ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
                out += ["| " + " | ".join(row) + " |" for row in rows]
            elif kind == "bullets":
                out += [f"- {item}" for item in x]
            elif kind == "code":
                out += ["```", x.rstrip("\n"), "```"]
            elif kind == "image":
                out.append(f"![{x[0]}]({x[1]})")
            elif kind == "evidence":
                out.append(f"Evidence: {x[0]}, [{x[1]}]({x[1]})" + (f", data {x[2]}" if x[2] else "") + ".")
            out.append("")
        return "\n".join(out)

    def html(self, root: Path) -> str:
        """One page that needs nothing else: images read from ``root`` (the report's directory) and
        inlined, evidence read from there and embedded."""
        shown = {(root / x[1]).resolve() for kind, x in self.blocks if kind == "image"}
        body = [f"<h1>{_inline(self.title)}</h1>"]
        body += [_evidence(x, root, shown) if kind == "evidence" else _html_block(kind, x, root) for kind, x in self.blocks]
        return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(self.title)}'
                f"</title><style>{_STYLE}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def _html_block(kind: str, x, root: Path, shown: set = frozenset()) -> str:
    """One block as HTML; ``shown``: figures the page already holds (evidence refers to them
    instead of inlining them twice)."""
    if kind == "heading":
        return f"<h{x[0]}>{_inline(x[1])}</h{x[0]}>"
    if kind == "paragraph":
        return f"<p>{_inline(x)}</p>"
    if kind == "table":
        header, rows = x
        head = "".join(f"<th>{_inline(h)}</th>" for h in header)
        cells = "".join("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in row) + "</tr>" for row in rows)
        return f"<table><thead><tr>{head}</tr></thead><tbody>{cells}</tbody></table>"
    if kind == "bullets":
        return "<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in x) + "</ul>"
    if kind == "code":
        return f"<pre><code>{html.escape(x)}</code></pre>"
    if kind == "image" and (root / x[1]).resolve() in shown:
        return f"<p><em>Figure: {html.escape(x[0])}, shown above.</em></p>"
    if kind == "image":
        data = base64.b64encode((root / x[1]).read_bytes()).decode("ascii")
        return (f'<figure><img alt="{html.escape(x[0])}" src="data:image/png;base64,{data}">'
                f"<figcaption>{html.escape(x[0])}</figcaption></figure>")
    raise ValueError(f"unknown block kind {kind!r}")


def _evidence(x: tuple, root: Path, shown: set) -> str:
    """A report the page rests on, embedded: its blocks, its figures unless the page shows them."""
    title, path, data = x
    where = root / path
    inner = [_html_block(k, y, where.parent, shown) for k, y in read_markdown(where.read_text(), shift=2)]
    note = f" Data: {html.escape(data)} in the run's directory (not embedded)." if data else ""
    return (f"<details><summary>Evidence: {_inline(title)} ({html.escape(path)}, embedded below).{note}</summary>"
            + "\n".join(inner) + "</details>")


def read_markdown(text: str, shift: int = 0) -> list[tuple]:
    """The blocks of Markdown written by fastsim's reports (headings, paragraphs, pipe tables,
    bullets, fenced code, images on their own line), headings ``shift`` levels deeper: to embed a
    study's report in the memo's HTML."""
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
        elif line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            blocks.append(("heading", (min(6, level + shift), line[level:].strip())))
            i += 1
        elif line.startswith("```"):
            end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), len(lines))
            blocks.append(("code", "\n".join(lines[i + 1:end])))
            i = end + 1
        elif re.fullmatch(r"!\[[^\]]*\]\([^)\s]+\)", line.strip()):
            alt, path = re.fullmatch(r"!\[([^\]]*)\]\(([^)\s]+)\)", line.strip()).groups()
            blocks.append(("image", (alt, path)))
            i += 1
        else:
            kind = "table" if line.startswith("|") else "bullets" if line.startswith("- ") else "paragraph"
            j = i
            while j < len(lines) and lines[j].strip() and _kind(lines[j]) == kind:
                j += 1
            blocks.append(_block(kind, lines[i:j]))
            i = j
    return blocks


def _kind(line: str) -> str:
    if line.startswith("|"):
        return "table"
    return "bullets" if line.startswith("- ") else "paragraph" if not line.startswith(("#", "```", "![")) else ""


def _block(kind: str, lines: list[str]) -> tuple:
    if kind == "table":
        rows = [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in lines]
        return "table", (rows[0], [r for r in rows[2:]])
    if kind == "bullets":
        return "bullets", [ln[2:] for ln in lines]
    return "paragraph", " ".join(ln.strip() for ln in lines)


def _link(m: re.Match) -> str:
    """A link to the web stays a link; one to a file of the run's directory is named, not linked
    (the page is read away from that directory: what it points to is embedded where it matters)."""
    if m[2].startswith(("http://", "https://", "#")):
        return f'<a href="{html.escape(m[2])}">{m[1]}</a>'
    return m[1] if m[1] == m[2] else f"{m[1]} ({m[2]})"


def _inline(text: str) -> str:
    """``**bold**``, ```code``` and ``[text](link)`` as HTML, everything else escaped."""
    parts = re.split(r"(`[^`]*`)", text)
    out = []
    for part in parts:
        if part.startswith("`") and part.endswith("`") and len(part) >= 2:
            out.append(f"<code>{html.escape(part[1:-1])}</code>")
            continue
        s = html.escape(part, quote=False)
        s = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", s)
        s = re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", _link, s)
        out.append(s)
    return "".join(out)
