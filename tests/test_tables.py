"""Table cells shared by every table (probemeter._tables)."""

from probemeter._tables import markdown_row


def test_markdown_cells_cannot_inject_html():
    row = markdown_row(["<script>alert(1)</script>", "a|b", "R&D", "> 1297"])
    assert row == r"| &lt;script>alert(1)&lt;/script> | a\|b | R&amp;D | > 1297 |"
