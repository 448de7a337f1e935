"""``manage.py train_tagger --export-only NAME/VERSION``: an existing version gains verified ONNX files."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

pytest.importorskip("torch")
pytest.importorskip("onnxruntime")


def test_export_only_adds_verified_onnx_to_a_saved_version(tmp_path, settings, monkeypatch):
    from pipeline.tagger import TrainConfig, read_info, train_tagger
    from pipeline.types import Dialogue, Message, Span

    def m(text, name, i):
        start = text.index(name)
        return Message(text, "tutor", "tutor", i, None, (Span(start, start + len(name), "NAME"),))

    dialogues = [
        Dialogue(id=f"d{k}", messages=(m(f"hi {n}", n, 0), m(f"well done {n}", n, 1)), anchor="")
        for k, n in enumerate(["Maria", "Tom", "Ana", "Luis"])
    ]
    info = train_tagger(TrainConfig(dialogues, name="tiny", out_dir=tmp_path, epochs=1, num_layers=1,
                                    dev_fraction=0.25, check_precision=False,
                                    export_onnx=False))  # an older version: trained without export
    assert read_info(info.path).onnx == {}
    settings.BLINDSPOT_MODELS_DIR = str(tmp_path)
    # without a dev set the export verifies on a generated sample; on which a one-epoch toy model
    # is near-uniform and int8 rightly flips words, so the toy verifies on its own dialogues
    monkeypatch.setattr("pipeline.tagger.onnx_export.sample_dialogues", lambda n: dialogues)

    call_command("train_tagger", export_only=info.full_version)

    onnx = read_info(info.path).onnx
    assert onnx["fp32"]["verified"] and onnx["int8"]["verified"]
    assert onnx["fp32"]["sample"] == {"dialogues": 4, "given": False, "generated": 4}  # no dev set at hand
    with pytest.raises(CommandError, match="not a model version"):
        call_command("train_tagger", export_only="../x")
