"""CoNLL and Hugging Face rows of a gold export (no database)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from pipeline.exports import split_of
from pipeline.formats.conll import conll_block, word_tags
from pipeline.formats.hf import dataset_card, hf_row
from pipeline.tags import LabelMap
from pipeline.types import Dialogue, Span

TEXT = "Hi Maria Lopez, is 3/4 bigger?"
SPANS = [Span(3, 14, "NAME")]


@pytest.mark.parametrize(
    ("scheme", "tags"),
    [("bio", ["O", "B-NAME", "I-NAME", "O", "O", "O", "O", "O"]),
     ("io", ["O", "I-NAME", "I-NAME", "O", "O", "O", "O", "O"])],
)
def test_word_tags(scheme, tags):
    pairs = word_tags(TEXT, SPANS, scheme)
    assert [w for w, _ in pairs] == ["Hi", "Maria", "Lopez", ",", "is", "3/4", "bigger", "?"]
    assert [t for _, t in pairs] == tags


def test_conll_block_has_an_id_comment_and_ends_with_a_blank_line():
    block = conll_block("d1", 0, TEXT, SPANS, "bio")
    assert block.startswith("# id = d1:0\nHi\tO\nMaria\tB-NAME\n") and block.endswith("?\tO\n\n")


def test_hf_row_aligns_tokens_tags_and_offsets():
    label_map = LabelMap("bio", ("NAME", "EMAIL"))
    row = hf_row("d1", 0, TEXT, SPANS, label_map, speaker="Tutor", role="tutor")
    assert [label_map.tags[t] for t in row["ner_tags"]][:3] == ["O", "B-NAME", "I-NAME"]
    assert all(TEXT[a:b] == tok for tok, (a, b) in zip(row["tokens"], row["token_offsets"], strict=True))
    assert row["spans"] == [{"start": 3, "end": 14, "label": "NAME"}]
    assert "ner_tags" in dataset_card(name="P", label_map=label_map, counts={"train": 1, "test": 0}, version=1)


def test_split_is_by_dialogue_stable_and_near_the_share():
    ids = [f"d{i}" for i in range(2000)]
    first = [split_of(i, test_fraction=0.2, seed=3) for i in ids]
    assert first == [split_of(i, test_fraction=0.2, seed=3) for i in ids]
    share = Counter(first)["test"] / len(ids)
    assert 0.17 < share < 0.23
    assert first != [split_of(i, test_fraction=0.2, seed=4) for i in ids]
    assert {split_of(i, test_fraction=0.0) for i in ids} == {"train"}


# --- the writer pipeline ------------------------------------------------------------------------


def _gold_dialogue(did: str = "d1") -> Dialogue:
    from pipeline.types import Message

    gold = {"decision": "unanimous", "decided_by": None,
            "spans": [{"start": 3, "end": 8, "label": "NAME", "provenance": "unanimous",
                       "annotators": ["A01", "A02"], "model_matched": True}]}
    return Dialogue(did, (Message("Hi Maria!", speaker="Tutor", role="tutor", index=0,
                                  spans=(Span(3, 8, "NAME"),), meta={"gold": gold}),))


def test_gold_bundle_writes_each_registered_writer_once_over_one_pass(tmp_path):
    from pipeline.exports import write_gold_bundle
    from pipeline.formats import CATALOG, Format
    from pipeline.formats.bundle import BundleSpec

    seen = []

    class Texts:  # a format plugged in from elsewhere: one entry in the catalog
        def __init__(self, spec):
            self.path = spec.root / "texts.txt"
            self.fh = open(self.path, "w", encoding="utf-8")  # noqa: SIM115

        def write(self, dialogue, split):
            seen.append(split)
            self.fh.writelines(m.text + "\n" for m in dialogue.messages)

        def close(self):
            self.fh.close()
            return ["texts.txt"]

    CATALOG["texts"] = Format("texts", write=Texts)
    try:
        spec = BundleSpec(root=tmp_path, name="P", version=1, labels=("NAME",))
        dialogues = iter([_gold_dialogue("d1"), _gold_dialogue("d2")])  # one pass only
        counts = write_gold_bundle(dialogues, spec, test_fraction=0.0, writers=("gold", "conll", "hf", "texts"))
    finally:
        del CATALOG["texts"]
    assert counts.files == ["gold.jsonl", "conll/gold.io.conll", "conll/gold.bio.conll", "hf/train.jsonl",
                            "hf/test.jsonl", "hf/labels.json", "hf/README.md", "texts.txt"]
    assert seen == ["train", "train"] and (tmp_path / "texts.txt").read_text() == "Hi Maria!\nHi Maria!\n"
    assert counts.messages == 2 and counts.by_provenance == {"unanimous": 2}
    row = json.loads((tmp_path / "gold.jsonl").read_text().splitlines()[0])
    assert row["spans"] == [{"start": 3, "end": 8, "label": "NAME", "text": "Maria", "provenance": "unanimous",
                             "annotators": ["A01", "A02"], "model_matched": True}]
    assert "Maria\tB-NAME" in (tmp_path / "conll" / "gold.bio.conll").read_text()
