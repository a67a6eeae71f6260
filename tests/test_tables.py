"""Table cells shared by every table (probemeter._tables)."""

import pytest

from probemeter._tables import CLASSES_SHOWN, classes_line, markdown_row, render_table


def test_markdown_cells_cannot_inject_html():
    row = markdown_row(["<script>alert(1)</script>", "a|b", "R&D", "> 1297"])
    assert row == r"| &lt;script>alert(1)&lt;/script> | a\|b | R&amp;D | > 1297 |"


def test_classes_line_shows_one_shared_mapping_with_its_size():
    tags = ("ADJ", "ADP", "PRP$")
    assert classes_line([tags, tags, list(tags)]) == "classes: 0 = ADJ, 1 = ADP, 2 = PRP$ (K = 3)"
    assert classes_line([(False, True)]) == "classes: 0 = False, 1 = True (K = 2)"
    assert classes_line([("a\nb", "c")]) == "classes: 0 = 'a\\nb', 1 = c (K = 2)"  # one line


def test_classes_line_shortens_long_mappings_and_gives_k():
    labels = [f"t{index}" for index in range(45)]
    line = classes_line([labels])
    shown = ", ".join(f"{index} = t{index}" for index in range(CLASSES_SHOWN))
    assert line == f"classes: {shown}, … (K = 45)"
    assert CLASSES_SHOWN == 20 and "20 = t20" not in line


def test_classes_line_says_when_mappings_differ_or_is_absent():
    different = "classes: the results compared have different label mappings (see their classes)"
    assert classes_line([("a", "b"), ("a", "c")]) == different
    assert classes_line([("a", "b"), None]) == different  # some results lack labels
    assert classes_line([(0, 1), (False, True)]) == different  # 0 == False, yet not the same
    assert classes_line([None, None]) is None and classes_line([]) is None


@pytest.mark.parametrize(
    ("fmt", "ending"),
    [
        ("text", "1  2\nclasses: 0 = PRP$, 1 = <unk>, … (K = 21)"),
        ("markdown", "| 1 | 2 |\n\nclasses: 0 = PRP$, 1 = &lt;unk>, … (K = 21)"),
        (
            "latex",
            "\\bottomrule\n\\multicolumn{2}{l}{classes: 0 = PRP\\$, 1 = <unk>, \\ldots{} (K = 21)}"
            " \\\\\n\\end{tabular}",
        ),
        (
            "html",
            '<tfoot><tr><td colspan="2">classes: 0 = PRP$, 1 = &lt;unk&gt;, … (K = 21)</td></tr>'
            "</tfoot>\n</table>",
        ),
    ],
)
def test_every_format_renders_the_footer_escaped(fmt, ending):
    footer = "classes: 0 = PRP$, 1 = <unk>, … (K = 21)"  # plain text, as classes_line writes
    table = render_table(["a", "b"], [["1", "2"]], fmt, footer=footer)
    assert table.endswith(ending)
    assert render_table(["a", "b"], [["1", "2"]], fmt).count("classes") == 0
