"""Markdown to Telegram HTML: what agents write must arrive formatted, and never as broken markup."""

from __future__ import annotations

import pytest

from channels.telegram.format import to_html


@pytest.mark.parametrize(("markdown", "html"), [
    ("plain words", "plain words"),
    ("**bold**, *italic*, ~~gone~~ and `x < y`", "<b>bold</b>, <i>italic</i>, <s>gone</s> and <code>x &lt; y</code>"),
    ("a & b < c > d", "a &amp; b &lt; c &gt; d"),
    ("<b>not a tag</b>", "&lt;b&gt;not a tag&lt;/b&gt;"),  # raw HTML from a model is text
    ("```python\nif a < b:\n    print('&')\n```",
     "<pre><code class=\"language-python\">if a &lt; b:\n    print('&amp;')</code></pre>"),
    ("    indented code", "<pre><code>indented code</code></pre>"),
    ("- one\n- two\n  - nested", "• one\n• two\n  • nested"),
    ("3. three\n4. four", "3. three\n4. four"),
    ("# Title\n\nBody", "<b>Title</b>\n\nBody"),
    ("> quoted\n> text", "<blockquote>quoted\ntext</blockquote>"),
    ("[docs](https://example.com/?a=1&b=2)", '<a href="https://example.com/?a=1&amp;b=2">docs</a>'),
    ("[x](javascript:alert(1))", "[x](javascript:alert(1))"),  # no unsafe links
    ("snake_case_name and 2*3*4", "snake_case_name and 2<i>3</i>4"),
    ("line one\nline two", "line one\nline two"),
    ("echo: [Ada] question", "echo: [Ada] question"),
])
def test_to_html(markdown: str, html: str) -> None:
    assert to_html(markdown) == html


def test_the_visible_text_is_never_longer_than_the_markdown() -> None:
    import re
    from html import unescape

    text = ("# Plan\n\n1. read `a.py`\n2. **fix** it\n\n- x\n  - y\n\n> note\n\n```sh\nmake test\n```\n\n"
            "[site](https://example.com) & done")
    visible = unescape(re.sub(r"<[^>]+>", "", to_html(text)))
    assert len(visible) <= len(text)
