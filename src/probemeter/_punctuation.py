"""Which words are punctuation for dependency-tree scores (UUAS, root accuracy): Hewitt &
Manning's Penn Treebank tags where a treebank's XPOS are PTB-style, else the UPOS tag
``PUNCT``. Shared by the datasets layer, which lays out the tags a structural run reads, and
the structural probes, which leave those words out.

References:
    Hewitt, J. & Manning, C. D. (2019). A structural probe for finding syntax in word
    representations. *NAACL 2019*. doi:10.18653/v1/N19-1419 (their ``reporter.py`` in
    john-hewitt/structural-probes lists the tags)
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["PUNCTUATION_TAGS", "XPOS_PUNCTUATION_TAGS", "ptb_style"]

#: UPOS tags whose words are left out of UUAS and root accuracy where no PTB-style XPOS tags
#: are at hand
PUNCTUATION_TAGS = ("PUNCT",)
#: Penn Treebank (XPOS) tags whose words Hewitt & Manning leave out of UUAS and root accuracy
XPOS_PUNCTUATION_TAGS = ("''", ",", ".", ":", "``", "-LRB-", "-RRB-")


def ptb_style(tags: Sequence[str]) -> bool:
    """Whether the tag vocabulary ``tags`` is PTB-style XPOS: it holds one of
    :data:`XPOS_PUNCTUATION_TAGS`."""
    return bool(set(tags) & set(XPOS_PUNCTUATION_TAGS))
