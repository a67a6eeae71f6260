"""The Python API page's "From a model in memory, and back" run as written, offline on the tiny
GPT-2 (issue 43, items 4 and 5)."""

import re
from pathlib import Path

import numpy as np
import pytest

PAGE = Path(__file__).resolve().parents[2] / "docs" / "python-api.md"
TITLE = "## From a model in memory, and back"


def _blocks() -> list[str]:
    text = PAGE.read_text()
    section = text[text.index(TITLE) :]
    section = section[: section.index("\n## ", len(TITLE))]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore:LanguageModel is deprecated")
def test_the_section_runs_and_steers_as_it_says(tmp_path, monkeypatch):
    pytest.importorskip("nnsight", reason="nnsight is an optional extra")
    pytest.importorskip("transformer_lens", reason="needs transformer-lens")
    import torch

    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    blocks = _blocks()
    assert len(blocks) == 2
    for block in blocks:
        exec(compile(block, str(PAGE), "exec"), namespace)
    direction, model, texts = namespace["direction"], namespace["model"], namespace["texts"]
    assert (tmp_path / "direction.safetensors").is_file()
    assert set(namespace["found"].curves) == {"blocks.1.hook_resid_post", "blocks.1.hook_mlp_out"}
    # the steered logit moved by 2‖v‖² at every position's mean, as the page says
    means, kept = [], {}

    def read(value, hook):
        kept["x"] = value[0].double().mean(dim=0, keepdim=True).numpy()

    for hooks in ([], [(direction.hook_name, namespace["steer"])]):
        with torch.no_grad():
            model.run_with_hooks(
                model.to_tokens(texts[0]), fwd_hooks=[*hooks, (direction.hook_name, read)]
            )
        means.append(direction.logits(kept["x"])[0])
    v = direction.direction.astype(np.float64)
    assert means[1] - means[0] == pytest.approx(2.0 * v @ v, rel=1e-5, abs=1e-4)
