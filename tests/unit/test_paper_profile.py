"""The `paper` profile holds the paper's biLM (Peters et al. 2018 §3.4; bilm-tf train_elmo.py)."""

import math

import torch

from elmo_repro.bilm.model import BiLM, BiLMConfig
from elmo_repro.bilm.train import count_batches, pretrain_config
from workflow.profile import render

# bilm-tf README: n_train_tokens of the 1B Word Benchmark training shards
LM1B_TRAIN_TOKENS = 768_648_884


def test_paper_bilm_has_the_published_parameter_count():
    params = render("paper")
    config = BiLMConfig.from_options(params["bilm"], n_tokens_vocab=0)  # no softmax
    with torch.device("meta"):  # shapes only: no 375 MB allocation
        model = BiLM(config)
    n = sum(p.numel() for p in model.parameters())
    # by hand: char embedding 262*16 = 4,192; convolutions 199,168; 2 highway layers of 2048
    # 16,785,408; projection 2048->512 1,049,088; 4 LSTM layers of (1024*16384 + 16384 + 4096*512)
    assert n == 4_192 + 199_168 + 16_785_408 + 1_049_088 + 4 * 18_890_752 == 93_600_864
    assert round(n / 1e6, 1) == 93.6  # the paper's "93.6M parameters" (excluding the softmax)


def test_paper_hyperparameters():
    params = render("paper")
    cnn, lstm = params["bilm"]["char_cnn"], params["bilm"]["lstm"]
    assert cnn["filters"] == [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]]
    assert cnn["embedding"]["dim"] == 16 and cnn["n_highway"] == 2
    assert (lstm["dim"], lstm["projection_dim"], lstm["n_layers"]) == (4096, 512, 2)
    assert lstm["cell_clip"] == lstm["proj_clip"] == 3 and lstm["use_skip_connections"]
    assert params["bilm"]["dropout"] == 0.1
    cfg = pretrain_config(params["pretrain"])
    assert (cfg.n_negative_samples, cfg.unroll_steps, cfg.batch_size) == (8192, 20, 128)
    assert (cfg.learning_rate, cfg.initial_accumulator, cfg.grad_clip) == (0.2, 1.0, 10.0)
    assert cfg.softmax_bias_init == "zeros"
    # the number of updates comes from the data: 10 epochs over the training tokens
    assert cfg.epochs == 10
    assert count_batches(cfg, LM1B_TRAIN_TOKENS) == math.ceil(10 * LM1B_TRAIN_TOKENS / (128 * 20)) == 3_002_535
    assert count_batches(cfg, LM1B_TRAIN_TOKENS // 2) == math.ceil(10 * (LM1B_TRAIN_TOKENS // 2) / 2560)
    assert params["lm_data"]["train_sources"] == ["lm1b_train"]
    assert params["lm_data"]["heldout"] == "lm1b_heldout_00000"


def test_token_budget_is_used_when_no_epochs_are_set():
    cfg = pretrain_config(render("tiny")["pretrain"])
    assert cfg.epochs == 0
    assert count_batches(cfg, 123) == count_batches(cfg, 10**9) == math.ceil(4_800_000 / (16 * 20)) == 15000
