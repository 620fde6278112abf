r"""Stanford Sentiment Treebank (Socher et al. 2013) in its PTB tree format, five classes.

Each line of ``trees/{train,dev,test}.txt`` is one binarised tree with a sentiment label 0-4
(very negative .. very positive) on every node, e.g. ``(3 (2 It) (4 (2 's) (3 good)))``; the
root's label is the sentence's. Tokens are the leaves as written (brackets appear as ``-LRB-`` /
``-RRB-``, ``/`` as ``\/``); a leaf holding several space-separated words (``8 1\/2``) gives
one token per word, as nltk's tree reader (allennlp's) does. The phrase-level training set of the original BCN setup (allennlp's
``use_subtrees``) is every subtree of every training tree, root first, each its own example.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Iterator

from ...io import InputError, iter_lines

LABELS = (0, 1, 2, 3, 4)
_TOKEN = re.compile(r"\(|\)|[^\s()]+")


@dataclass
class Tree:
    """A labelled tree node: a leaf has ``words`` (usually one) and no children."""

    label: int
    children: list["Tree"] = field(default_factory=list)
    words: list[str] = field(default_factory=list)

    def leaves(self) -> list[str]:
        if self.words:
            return list(self.words)
        return [w for child in self.children for w in child.leaves()]

    def subtrees(self) -> Iterator["Tree"]:
        """Every node, this one first (pre-order)."""
        yield self
        for child in self.children:
            yield from child.subtrees()


def parse_tree(text: str) -> Tree:
    """Parse one PTB-style sentiment tree.

    Raises:
        ValueError: unbalanced brackets, a node without a label or with a label outside 0-4, a
            node with neither children nor a word, or text after the tree.
    """
    tokens = _TOKEN.findall(text)
    position = 0

    def node() -> Tree:
        nonlocal position
        if position >= len(tokens) or tokens[position] != "(":
            raise ValueError(f"expected '(' at token {position + 1}")
        position += 1
        if position >= len(tokens) or tokens[position] in "()":
            raise ValueError(f"a node without a label at token {position + 1}")
        raw = tokens[position]
        if not raw.isdigit() or int(raw) not in LABELS:
            raise ValueError(f"label {raw!r} is not one of 0-4")
        position += 1
        tree = Tree(int(raw))
        if position < len(tokens) and tokens[position] not in "()":
            while position < len(tokens) and tokens[position] not in "()":
                tree.words.append(tokens[position])
                position += 1
        else:
            while position < len(tokens) and tokens[position] == "(":
                tree.children.append(node())
            if not tree.children:
                raise ValueError(f"node at token {position} has neither a word nor children")
        if position >= len(tokens) or tokens[position] != ")":
            raise ValueError("unbalanced brackets (a node is not closed)")
        position += 1
        return tree

    tree = node()
    if position != len(tokens):
        raise ValueError(f"unexpected text after the tree (token {position + 1} of {len(tokens)})")
    return tree


def read_trees(path: str | os.PathLike, subtrees: bool = False) -> list[dict[str, Any]]:
    """Examples ``{"tokens": [...], "label": 0-4}`` of a tree file, in file order: one per tree
    (its root label), or with ``subtrees`` one per node of every tree (phrase-level training).

    Raises:
        InputError: naming the file and line, for a blank line or a malformed tree; naming the
            file when it is missing or holds no tree.
    """
    examples = []
    for number, line in iter_lines(path):
        if not line.strip():
            raise InputError(path, "blank line (one tree per line)", line=number)
        try:
            tree = parse_tree(line)
        except ValueError as err:
            raise InputError(path, f"malformed tree: {err}", line=number) from None
        nodes = tree.subtrees() if subtrees else [tree]
        examples.extend({"tokens": node.leaves(), "label": node.label} for node in nodes)
    if not examples:
        raise InputError(path, "no trees")
    return examples
