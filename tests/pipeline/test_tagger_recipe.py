"""The training recipe is reproducible: the same data, options and seed give the same weights on
the same machine (seeded generators and torch's deterministic kernels), and another seed does not."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")


def _train(root, seed: int):
    from safetensors.numpy import load_file

    from pipeline.synthetic import generate_corpus
    from pipeline.tagger import TrainConfig, train_tagger

    data = generate_corpus(6, seed=3, max_messages=6, id_prefix="r")
    info = train_tagger(TrainConfig(data, name="tiny", out_dir=root, epochs=1, num_layers=1, seed=seed,
                                    batch_size=4, dev_fraction=0.34, check_precision=False, export_onnx=False))
    return load_file(f"{info.path}/model.safetensors")


def test_the_same_seed_gives_the_same_weights_and_another_seed_does_not(tmp_path):
    import numpy as np
    import torch

    first, again = _train(tmp_path / "a", 5), _train(tmp_path / "b", 5)
    assert first.keys() == again.keys()
    assert all(np.array_equal(first[k], again[k]) for k in first)
    other = _train(tmp_path / "c", 6)
    assert not np.array_equal(first["classifier.weight"], other["classifier.weight"])
    assert not torch.are_deterministic_algorithms_enabled()  # the process's setting is given back
