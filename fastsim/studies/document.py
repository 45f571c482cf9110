"""A report as a list of blocks, written out as Markdown or as one self-contained HTML page.

The optimize memo is read in a repository (Markdown) and forwarded by mail (HTML): both come from
the same blocks, so they cannot say different things. The HTML inlines every figure as a base64
PNG and needs no stylesheet or script from elsewhere. Inline markup is the Markdown subset the
reports use: ``**bold**``, ```code``` and ``[text](link)``.
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
            out.append("")
        return "\n".join(out)

    def html(self, root: Path) -> str:
        """One page; images read from ``root`` (the report's directory) and inlined."""
        body = [f"<h1>{_inline(self.title)}</h1>"]
        for kind, x in self.blocks:
            if kind == "heading":
                body.append(f"<h{x[0]}>{_inline(x[1])}</h{x[0]}>")
            elif kind == "paragraph":
                body.append(f"<p>{_inline(x)}</p>")
            elif kind == "table":
                header, rows = x
                head = "".join(f"<th>{_inline(h)}</th>" for h in header)
                cells = "".join("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in row) + "</tr>" for row in rows)
                body.append(f"<table><thead><tr>{head}</tr></thead><tbody>{cells}</tbody></table>")
            elif kind == "bullets":
                body.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in x) + "</ul>")
            elif kind == "code":
                body.append(f"<pre><code>{html.escape(x)}</code></pre>")
            elif kind == "image":
                data = base64.b64encode((root / x[1]).read_bytes()).decode("ascii")
                body.append(f'<figure><img alt="{html.escape(x[0])}" src="data:image/png;base64,{data}">'
                            f"<figcaption>{html.escape(x[0])}</figcaption></figure>")
        return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(self.title)}'
                f"</title><style>{_STYLE}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


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
        s = re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", lambda m: f'<a href="{html.escape(m[2])}">{m[1]}</a>', s)
        out.append(s)
    return "".join(out)
