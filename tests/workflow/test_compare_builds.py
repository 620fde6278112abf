"""workflow/compare_builds.py on two hand-made builds: the stage whose inputs agree and outputs do
not is found, its downstream stages are told apart from it, and the first differing tensor is named."""

import torch
import yaml

from workflow import compare_builds


def build(root, bilm_md5, features_md5, weight):
    lock = {"schema": "2.0", "stages": {
        "vocab": {"cmd": "x", "deps": [{"path": "data/lm/train.txt", "md5": "t"}], "outs": [{"path": "data/vocab", "md5": "v.dir"}]},
        "pretrain_bilm": {"cmd": "x", "deps": [{"path": "data/vocab", "md5": "v.dir"}],
                          "params": {"params.yaml": {"bilm": {"dim": 4}}},
                          "outs": [{"path": "models/bilm", "md5": bilm_md5}]},
        "features": {"cmd": "x", "deps": [{"path": "models/bilm", "md5": bilm_md5}],
                     "outs": [{"path": "data/features", "md5": features_md5}]}}}
    root.mkdir()
    (root / "dvc.lock").write_text(yaml.safe_dump(lock))
    (root / "models/bilm").mkdir(parents=True)
    torch.save({"char_cnn.weight": torch.ones(3), "lstm.weight": torch.full((2, 2), weight)}, root / "models/bilm/weights.pt")
    (root / "models/bilm/options.json").write_text('{"dim": 4}')


def test_the_first_divergence_and_its_first_tensor(tmp_path, capsys):
    build(tmp_path / "a", "b1.dir", "f1.dir", 0.5)
    build(tmp_path / "b", "b2.dir", "f2.dir", 0.5 + 1e-3)
    classes = {name: kind for name, kind, _ in compare_builds.classify(compare_builds.read_locks(tmp_path / "a"),
                                                                        compare_builds.read_locks(tmp_path / "b"))}
    assert classes == {"vocab": "same", "pretrain_bilm": "diverges", "features": "follows"}
    assert compare_builds.main([str(tmp_path / "a"), str(tmp_path / "b")]) == 1
    out = capsys.readouterr().out
    assert "diverges  pretrain_bilm" in out and "follows   features" in out
    assert "models/bilm/weights.pt: lstm.weight: max |A − B| = 0.001 over 4 of 4 values" in out
    assert "options.json" not in out                                     # equal files are not listed
    assert out.strip().endswith("1 same, 1 diverges, 1 follows")


def test_equal_builds_agree(tmp_path):
    build(tmp_path / "a", "b1.dir", "f1.dir", 0.5)
    build(tmp_path / "b", "b1.dir", "f1.dir", 0.5)
    assert compare_builds.main([str(tmp_path / "a"), str(tmp_path / "b")]) == 0
