"""The SST-5 BCN and the SNLI ESIM: masked helpers, maxout, variational dropout, shapes, padding
invariance, the ELMo penalty, initialisation, and learning a toy problem."""

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from fp_bounds import ELEMENTWISE, U32, gamma

from elmo_repro.experiments.specs import ElmoSpec
from elmo_repro.nn.masked import masked_max, masked_mean, masked_min, masked_softmax, weighted_sum
from elmo_repro.nn.maxout import Maxout
from elmo_repro.nn.variational_dropout import InputVariationalDropout

pytestmark = pytest.mark.usefixtures("one_thread")

TASKS_DIR = Path(__file__).resolve().parents[2] / "src" / "elmo_repro" / "tasks"
N_LAYERS, ELMO_DIM, VOCAB, WORD_DIM, MARKER = 3, 8, 12, 6, 2


def _load(task: str):
    """The task's model module from its file, without importing the task package's __init__."""
    spec = importlib.util.spec_from_file_location(f"elmo_repro.tasks.{task}.model", TASKS_DIR / task / "model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BiattentiveClassifier = _load("sst5").BiattentiveClassifier
Esim = _load("snli").Esim

BCN_CFG = {"freeze_embeddings": True, "embedding_dropout": 0.2, "pre_encode_dim": 8, "pre_encode_dropout": 0.1,
           "encoder_hidden": 6, "integrator_hidden": 5, "integrator_dropout": 0.1, "output_dims": [12, 8],
           "output_pool_size": 2, "output_dropout": [0.1, 0.1, 0.0]}
ESIM_CFG = {"freeze_embeddings": False, "dropout": 0.2, "encoder_hidden": 6, "projection_dim": 7,
            "inference_hidden": 5, "output_hidden": 9}


def elmo_spec(l2_coef=0.001):
    return ElmoSpec(placement="both", mix="learned", l2_coef=l2_coef)


def embeddings(seed=0):
    return np.random.default_rng(seed).normal(size=(VOCAB, WORD_DIM)).astype(np.float32)


def pad(seqs, fill=None, gen=None):
    """(B, T) word ids, mask and lengths; padding holds ``fill`` or, with None, random ids (which
    the models must ignore)."""
    lengths = torch.tensor([len(s) for s in seqs])
    t = int(lengths.max())
    words = torch.randint(0, VOCAB, (len(seqs), t), generator=gen) if fill is None else \
        torch.full((len(seqs), t), fill, dtype=torch.long)
    for i, s in enumerate(seqs):
        words[i, :len(s)] = torch.tensor(s)
    return words, torch.arange(t)[None, :] < lengths[:, None], lengths


def bcn_batch(seqs, labels=None, layers=None, fill=0, gen=None):
    words, mask, lengths = pad(seqs, fill, gen)
    return {"words": words, "mask": mask, "lengths": lengths,
            "labels": None if labels is None else torch.tensor(labels),
            "elmo": None if layers is None else {"tokens": layers}}


def esim_batch(premises, hypotheses, labels=None, layers=None, fill=0, gen=None):
    batch = {"labels": None if labels is None else torch.tensor(labels),
             "elmo": None if layers is None else {"premise": layers[0], "hypothesis": layers[1]}}
    for side, seqs in (("premise", premises), ("hypothesis", hypotheses)):
        batch[f"{side}_words"], batch[f"{side}_mask"], batch[f"{side}_lengths"] = pad(seqs, fill, gen)
    return batch


def random_layers(lengths, seed):
    """(B, L+1, T, D) biLM layers: random everywhere, padding included (garbage the models ignore)."""
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(len(lengths), N_LAYERS, max(lengths), ELMO_DIM, generator=gen)


# --- building blocks ------------------------------------------------------------------------------

def test_masked_softmax_ignores_masked_keys():
    logits = torch.tensor([[[1.0, 2.0, 50.0], [0.0, -3.0, float("nan")]]])      # (1, 2, 3)
    mask = torch.tensor([[True, True, False]])
    w = masked_softmax(logits.nan_to_num(0.0), mask[:, None, :])
    assert torch.all(w[..., 2] == 0)
    # softmax: w_i = e_i / sum(e) with the same rounded e_i on top and below, so the weights sum to
    # 1 within the 3-term sums' rounding (2 each, the row and this check) and the division (1)
    torch.testing.assert_close(w.sum(-1), torch.ones(1, 2), rtol=0, atol=gamma(5))
    # the same softmax over the unmasked entries (the masked one adds an exact 0 to the sum): max
    # shift (1), exp (2), sum (2), division (1) for each, so within twice gamma_6 relative
    torch.testing.assert_close(w[0, 0, :2], torch.softmax(torch.tensor([1.0, 2.0]), 0), rtol=2 * gamma(6), atol=0)
    assert torch.all(masked_softmax(logits[:, 0], torch.zeros(1, 3, dtype=torch.bool)) == 0)
    # weighted_sum does not let a non-finite padded value leak in.
    values = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [float("inf"), float("nan")]]])
    expected = w[0, 0, 0] * values[0, 0] + w[0, 0, 1] * values[0, 1]
    # 2 products and their sum (3 roundings; the padded term is an exact 0) either way
    bound = 2 * gamma(3) * float((w[0, 0, :2, None] * values[0, :2]).abs().sum(0).amax())
    torch.testing.assert_close(weighted_sum(values, w)[0, 0], expected, rtol=0, atol=bound)


def test_masked_pooling_known_values():
    x = torch.tensor([[[1.0, 5.0], [3.0, -2.0], [100.0, -100.0]]])              # (1, 3, 2)
    mask = torch.tensor([[True, True, False]])
    # small integers and halves: max, min, sums and the division by 2 are exact in float32
    torch.testing.assert_close(masked_max(x, mask), torch.tensor([[3.0, 5.0]]), rtol=0, atol=0)
    torch.testing.assert_close(masked_min(x, mask), torch.tensor([[1.0, -2.0]]), rtol=0, atol=0)
    torch.testing.assert_close(masked_mean(x, mask), torch.tensor([[2.0, 1.5]]), rtol=0, atol=0)


def test_maxout_hand_worked():
    m = Maxout(2, [2, 1], pool_sizes=2, dropout=[0.0, 0.0])
    with torch.no_grad():
        m.linears[0].weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [-1.0, 1.0]]))
        m.linears[0].bias.copy_(torch.tensor([0.0, 0.0, 1.0, 0.0]))
        m.linears[1].weight.copy_(torch.tensor([[1.0, -1.0], [0.5, 0.0]]))
        m.linears[1].bias.zero_()
    # x = (1, 2): affine (1, 2, 4, 1) -> pools (1,2), (4,1) -> (2, 4); affine (-2, 1) -> 1.
    # (Interleaved pools (1,4), (2,1) would give (4, 2) -> (2, 2) -> 2.)
    torch.testing.assert_close(m(torch.tensor([[1.0, 2.0]])), torch.tensor([[1.0]]), rtol=0, atol=0)  # integers: exact
    assert m.output_dim == 1


def test_variational_dropout_shares_mask_over_time():
    torch.manual_seed(0)
    drop, x = InputVariationalDropout(0.5), torch.ones(4, 7, 50)
    y = drop(x)
    assert torch.equal(y, y[:, :1].expand_as(y))
    assert set(y.unique().tolist()) == {0.0, 2.0}
    assert not torch.equal(y[0], y[1])                          # one mask per sequence
    drop.eval()
    assert torch.equal(drop(x), x)


# --- models ---------------------------------------------------------------------------------------

def make_bcn(elmo=None, seed=0):
    torch.manual_seed(seed)
    return BiattentiveClassifier(embeddings(), 5, BCN_CFG, elmo=elmo, elmo_shape=(N_LAYERS, ELMO_DIM))


def make_esim(elmo=None, seed=0):
    torch.manual_seed(seed)
    return Esim(embeddings(), 3, ESIM_CFG, elmo=elmo, elmo_shape=(N_LAYERS, ELMO_DIM))


SENTS = [[3, 4, 5], [6, 7, 8, 9, 10, 11], [2, 5]]


def bcn_example(with_elmo, fill=0, gen=None):
    layers = random_layers([len(s) for s in SENTS], seed=1) if with_elmo else None
    return bcn_batch(SENTS, [0, 4, 2], layers, fill, gen)


def esim_example(with_elmo, fill=0, gen=None):
    hyps = [[4, 4, 9, 10, 11], [2], [8, 7, 3]]
    layers = (random_layers([len(s) for s in SENTS], 1), random_layers([len(s) for s in hyps], 2)) \
        if with_elmo else None
    return esim_batch(SENTS, hyps, [0, 2, 1], layers, fill, gen)


def select(batch, i, keys_lengths):
    """Example ``i`` of a batch alone, cut to its own length."""
    one = {"labels": None, "elmo": None if batch["elmo"] is None else {}}
    for prefix, elmo_key in keys_lengths:
        n = int(batch[f"{prefix}lengths"][i])
        for k in ("words", "mask"):
            one[f"{prefix}{k}"] = batch[f"{prefix}{k}"][i:i + 1, :n]
        one[f"{prefix}lengths"] = batch[f"{prefix}lengths"][i:i + 1]
        if batch["elmo"] is not None:
            one["elmo"][elmo_key] = batch["elmo"][elmo_key][i:i + 1, :, :n]
    return one


BCN_KEYS, ESIM_KEYS = [("", "tokens")], [("premise_", "premise"), ("hypothesis_", "hypothesis")]


@pytest.mark.parametrize("with_elmo", [False, True])
@pytest.mark.parametrize("kind", ["bcn", "esim"])
def test_shapes_and_padding_invariance(kind, with_elmo):
    make, example, keys = {"bcn": (make_bcn, bcn_example, BCN_KEYS),
                           "esim": (make_esim, esim_example, ESIM_KEYS)}[kind]
    model = make(elmo_spec() if with_elmo else None).eval()
    assert (model.elmo is not None) == with_elmo
    # Random word ids at padding: they, and the random ELMo layers there, must not matter.
    batch = example(with_elmo, fill=None, gen=torch.Generator().manual_seed(3))
    logits = model.logits(batch)
    assert logits.shape == (3, 5 if kind == "bcn" else 3)
    assert len(model.predict(batch)) == 3
    # Alone vs in the padded batch: two float32 orderings, each within the chain bound of
    # fp_bounds.py: every LSTM (taken as run one after another) over the longest sequence, a step
    # being one dot product over input + hidden plus the elementwise gate roundings; every linear
    # layer's dot product; the attention softmax, weighted sums and poolings over the sequence
    # (3 x T); relative to the largest |value| among the inputs and the logits (about 1e-4 here).
    lstms = [m for m in model.modules() if isinstance(m, torch.nn.LSTM)]
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    steps = max(int(v.max()) for k, v in batch.items() if k.endswith("lengths"))
    width = max([m.input_size + m.hidden_size for m in lstms] + [m.in_features for m in linears])
    roundings = len(lstms) * steps * (width + ELEMENTWISE) + len(linears) * width + 3 * steps
    inputs = [model.words.weight.detach().abs().amax()] + [v.abs().amax() for v in (batch["elmo"] or {}).values()]
    bound = 2 * roundings * U32 * float(max(logits.detach().abs().amax(), *inputs))
    for i in range(3):
        torch.testing.assert_close(model.logits(select(batch, i, keys))[0], logits[i], atol=bound, rtol=0)


@pytest.mark.parametrize("kind", ["bcn", "esim"])
def test_loss_penalty_and_mix_gradients(kind):
    make, example = {"bcn": (make_bcn, bcn_example), "esim": (make_esim, esim_example)}[kind]
    with_penalty, without = make(elmo_spec(0.001)), make(elmo_spec(0.0))
    without.load_state_dict(with_penalty.state_dict())
    batch = example(True)
    loss = with_penalty.loss(batch)
    assert torch.isfinite(loss)
    loss.backward()
    for mix in with_penalty.elmo.mixes:
        assert mix.scalar_parameters.grad is not None and mix.scalar_parameters.grad.abs().sum() > 0
    with torch.no_grad():
        for model in (with_penalty, without):
            for mix in model.elmo.mixes:
                mix.scalar_parameters.copy_(torch.tensor([0.5, -1.0, 2.0]))
    with_penalty.eval(), without.eval()
    penalty = with_penalty.elmo.penalty()
    # 0.001 to float32 (1), the product (1), the sum over 2 mixes (1); the expected value rounded to
    # float32 (1): gamma_4 relative (squares and their sums are exact)
    torch.testing.assert_close(penalty, torch.tensor(0.001 * 2 * (0.25 + 1.0 + 4.0)), rtol=gamma(4), atol=0)
    # the task losses are the same computation; adding the penalty (1) and subtracting (1) round
    # relative to |loss| at most
    loss_with, loss_without = with_penalty.loss(batch), without.loss(batch)
    bound = gamma(2) * float(loss_with.detach().abs() + loss_without.detach().abs())
    torch.testing.assert_close(loss_with - loss_without, penalty, rtol=0, atol=bound)


def test_esim_initialisation():
    model = make_esim(elmo_spec())
    emb = torch.from_numpy(embeddings())
    assert torch.equal(model.words.weight.detach(), emb)              # pretrained matrix kept
    for mix in model.elmo.mixes:
        assert torch.all(mix.scalar_parameters == 0) and torch.all(mix.gamma == 1)
    lstms = [m for m in model.modules() if isinstance(m, torch.nn.LSTM)]
    assert len(lstms) == 4                                            # 2 biLSTMs x 2 directions
    for lstm in lstms:
        h = lstm.hidden_size
        assert torch.all(lstm.bias_hh_l0[h:2 * h] == 1)
        assert torch.all(lstm.bias_hh_l0[:h] == 0) and torch.all(lstm.bias_hh_l0[2 * h:] == 0)
        assert torch.all(lstm.bias_ih_l0 == 0)
        w = lstm.weight_hh_l0.detach()                                # (4H, H): orthonormal columns
        # float32 Householder QR (torch's orthogonal_) gives columns orthonormal to within about
        # sqrt(n) m n u for an m x n matrix (Higham, Accuracy and Stability, Thm 19.4, its small
        # constant taken as 1); w.T @ w sums 4H products with sum |w_i w_j| <= 1 (2e-5 in all)
        m, n = w.shape
        bound = math.sqrt(n) * m * n * U32 + gamma(m)
        torch.testing.assert_close(w.T @ w, torch.eye(h), atol=bound, rtol=0)
        bound = (6 / sum(lstm.weight_ih_l0.shape)) ** 0.5                 # xavier-uniform range
        assert lstm.weight_ih_l0.abs().max() <= bound
    for linear in (model.projection[0], model.output_hidden[0], model.output_logit):
        assert torch.all(linear.bias == 0)
        assert linear.weight.abs().max() <= (6 / sum(linear.weight.shape)) ** 0.5


# --- learning a toy problem -----------------------------------------------------------------------

def toy_sentences(n, seed):
    """Sentences of ids 3..VOCAB-1; the label is whether MARKER was inserted."""
    rng = np.random.default_rng(seed)
    sents, labels = [], []
    for i in range(n):
        s = rng.integers(3, VOCAB, size=rng.integers(2, 7)).tolist()
        if i % 2:
            s.insert(int(rng.integers(0, len(s) + 1)), MARKER)
        sents.append(s)
        labels.append(i % 2)
    return sents, labels


# Dropout off so 60 full-batch steps are plenty (over 20 seeds all fit within 25 steps).
TOY_BCN_CFG = dict(BCN_CFG, pre_encode_dim=16, embedding_dropout=0.0, pre_encode_dropout=0.0,
                   integrator_dropout=0.0, output_dropout=[0.0, 0.0, 0.0])
TOY_ESIM_CFG = dict(ESIM_CFG, dropout=0.0)


def fit(model, batch, steps=60, lr=0.02):
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=lr)
    for _ in range(steps):
        model.train()
        opt.zero_grad()
        model.loss(batch).backward()
        opt.step()
    model.eval()
    return float(np.mean(np.array(model.predict(batch)) == batch["labels"].numpy()))


def test_bcn_learns_marker_toy():
    sents, labels = toy_sentences(32, seed=0)
    torch.manual_seed(0)
    model = BiattentiveClassifier(embeddings(), 2, TOY_BCN_CFG)
    assert fit(model, bcn_batch(sents, labels)) == 1.0


def test_esim_learns_marker_toy():
    premises, _ = toy_sentences(32, seed=1)
    hypotheses, labels = toy_sentences(32, seed=2)                # the marker is in the hypothesis
    torch.manual_seed(0)
    model = Esim(embeddings(), 2, TOY_ESIM_CFG)
    assert fit(model, esim_batch(premises, hypotheses, labels)) == 1.0
