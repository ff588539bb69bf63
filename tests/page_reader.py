"""A reader of the report's pages, as written or as headless Chromium serialises them: a tree
of nodes to find elements in by tag, class and attributes."""

from __future__ import annotations

from html.parser import HTMLParser


class Node:
    def __init__(self, tag: str, attrs: dict[str, str], parent: Node | None):
        self.tag, self.attrs, self.parent, self.children, self.text = tag, attrs, parent, [], ""

    def all(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> list[Node]:
        """Descendants with this tag, this class among their classes and these attributes."""
        found = []
        for child in self.children:
            if (
                (tag is None or child.tag == tag)
                and (cls is None or cls in child.attrs.get("class", "").split())
                and all(child.attrs.get(key) == value for key, value in attrs.items())
            ):
                found.append(child)
            found.extend(child.all(tag, cls, **attrs))
        return found

    def one(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> Node:
        found = self.all(tag, cls, **attrs)
        assert len(found) == 1, (tag, cls, attrs, len(found))
        return found[0]

    def content(self) -> str:
        return self.text + "".join(child.content() for child in self.children)


class _Tree(HTMLParser):
    """Chromium's serialised DOM closes every element that is not void, SVG ones included."""

    VOID = {
        "area",
        "base",
        "br",
        "col",
        "embed",
        "hr",
        "img",
        "input",
        "link",
        "meta",
        "source",
        "track",
        "wbr",
    }

    def __init__(self):
        super().__init__()
        self.root = self.current = Node("#document", {}, None)

    def handle_starttag(self, tag, attrs):
        node = Node(tag, {k: v or "" for k, v in attrs}, self.current)
        self.current.children.append(node)
        if tag not in self.VOID:
            self.current = node

    def handle_endtag(self, tag):
        node = self.current
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None and node.parent is not None:
            self.current = node.parent

    def handle_data(self, data):
        self.current.text += data


def parse(html: str) -> Node:
    tree = _Tree()
    tree.feed(html)
    return tree.root
