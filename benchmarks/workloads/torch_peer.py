"""W1-W5 in PyTorch eager: the modules a PyTorch user writes, loaded from the Keras-layout
weights of ``spec`` and read back in that layout for the first-step guard.

Layout: Linear weights are Keras kernels transposed; Conv2d weights OIHW (from HWIO) and the
input NCHW, so W2's first Dense kernel has its rows permuted from NHWC's flatten order (h, w, c)
to NCHW's (c, h, w); LSTM gates are i, f, g, o in both, Keras's one bias goes to ``bias_ih``
and ``bias_hh`` is zero and frozen; MultiheadAttention packs q, k, v into ``in_proj``.
Adam: torch adds epsilon outside the bias correction, so ``eps = EPSILON / sqrt(1 - beta_2)``
makes its first step Keras's exactly (later steps differ by a hair; the timing does not care).
"""
import math

import numpy as np
import torch
from torch import nn

from .spec import BETA_1, BETA_2, EPSILON, FFN_DIM, LAYER_NORM_EPSILON, LEARNING_RATE, MHA_HEADS, \
    MODEL_DIM


class TransformerBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention = nn.MultiheadAttention(MODEL_DIM, MHA_HEADS, batch_first=True)
        self.norm1 = nn.LayerNorm(MODEL_DIM, eps=LAYER_NORM_EPSILON)
        self.ffn1, self.ffn2 = nn.Linear(MODEL_DIM, FFN_DIM), nn.Linear(FFN_DIM, MODEL_DIM)
        self.norm2 = nn.LayerNorm(MODEL_DIM, eps=LAYER_NORM_EPSILON)
        self.head = nn.Linear(MODEL_DIM, 2)

    def forward(self, x):
        h = self.norm1(x + self.attention(x, x, x, need_weights=False)[0])
        h = self.norm2(h + self.ffn2(torch.relu(self.ffn1(h))))
        return self.head(h.mean(1))


class LSTMClassifier(nn.Module):
    def __init__(self, vocab, embed, units):
        super().__init__()
        self.embedding = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, units, batch_first=True)
        self.head = nn.Linear(units, 2)

    def forward(self, ids):
        _, (h, _) = self.lstm(self.embedding(ids))
        return self.head(h[-1])


def _mlp(widths):
    layers = []
    for k, n in zip(widths[:-1], widths[1:]):
        layers += [nn.Linear(k, n), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


def _module(workload):
    if workload.name == "W1":
        return _mlp((784, 512, 512, 10))
    if workload.name == "W2":
        return nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3),
                             nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(1600, 128),
                             nn.ReLU(), nn.Linear(128, 10))
    if workload.name == "W3":
        return LSTMClassifier(2000, 64, 128)
    if workload.name == "W4":
        return TransformerBlock()
    return _mlp((8, 64, 64, 1))


def _nhwc_rows_to_nchw(kernel, hw=5, c=64):
    return kernel.reshape(hw, hw, c, -1).transpose(2, 0, 1, 3).reshape(hw * hw * c, -1)


def _nchw_rows_to_nhwc(kernel, hw=5, c=64):
    return kernel.reshape(c, hw, hw, -1).transpose(1, 2, 0, 3).reshape(hw * hw * c, -1)


def _to_torch(workload, weights):
    """The module's parameters (named) in torch's layout, from Keras-layout ``weights``."""
    w = weights
    if workload.name == "W2":
        return {"0.weight": w[0].transpose(3, 2, 0, 1), "0.bias": w[1],
                "3.weight": w[2].transpose(3, 2, 0, 1), "3.bias": w[3],
                "7.weight": _nhwc_rows_to_nchw(w[4]).T, "7.bias": w[5],
                "9.weight": w[6].T, "9.bias": w[7]}
    if workload.name == "W3":
        return {"embedding.weight": w[0], "lstm.weight_ih_l0": w[1].T,
                "lstm.weight_hh_l0": w[2].T, "lstm.bias_ih_l0": w[3],
                "lstm.bias_hh_l0": np.zeros_like(w[3]), "head.weight": w[4].T, "head.bias": w[5]}
    if workload.name == "W4":
        d = MODEL_DIM
        return {"attention.in_proj_weight": np.concatenate([w[i].reshape(d, d).T
                                                            for i in (0, 2, 4)]),
                "attention.in_proj_bias": np.concatenate([w[i].ravel() for i in (1, 3, 5)]),
                "attention.out_proj.weight": w[6].reshape(d, d).T,
                "attention.out_proj.bias": w[7], "norm1.weight": w[8], "norm1.bias": w[9],
                "ffn1.weight": w[10].T, "ffn1.bias": w[11], "ffn2.weight": w[12].T,
                "ffn2.bias": w[13], "norm2.weight": w[14], "norm2.bias": w[15],
                "head.weight": w[16].T, "head.bias": w[17]}
    return {f"{2 * (i // 2)}.{'weight' if i % 2 == 0 else 'bias'}": (a.T if a.ndim == 2 else a)
            for i, a in enumerate(w)}


def _to_keras(workload, params):
    """The inverse of ``_to_torch``: Keras-layout weights from the module's parameters."""
    p = {k: v.detach().numpy().copy() for k, v in params.items()}
    if workload.name == "W2":
        return [p["0.weight"].transpose(2, 3, 1, 0), p["0.bias"],
                p["3.weight"].transpose(2, 3, 1, 0), p["3.bias"],
                _nchw_rows_to_nhwc(p["7.weight"].T), p["7.bias"], p["9.weight"].T, p["9.bias"]]
    if workload.name == "W3":
        return [p["embedding.weight"], p["lstm.weight_ih_l0"].T, p["lstm.weight_hh_l0"].T,
                p["lstm.bias_ih_l0"] + p["lstm.bias_hh_l0"], p["head.weight"].T, p["head.bias"]]
    if workload.name == "W4":
        d, heads = MODEL_DIM, MHA_HEADS
        qkv, qkv_bias = p["attention.in_proj_weight"], p["attention.in_proj_bias"]
        out = []
        for i in range(3):
            out += [qkv[i * d:(i + 1) * d].T.reshape(d, heads, d // heads),
                    qkv_bias[i * d:(i + 1) * d].reshape(heads, d // heads)]
        out += [p["attention.out_proj.weight"].T.reshape(heads, d // heads, d),
                p["attention.out_proj.bias"], p["norm1.weight"], p["norm1.bias"],
                p["ffn1.weight"].T, p["ffn1.bias"], p["ffn2.weight"].T, p["ffn2.bias"],
                p["norm2.weight"], p["norm2.bias"], p["head.weight"].T, p["head.bias"]]
        return out
    return [v.T if v.ndim == 2 else v for v in p.values()]


class TorchEager:
    """zero_grad, forward, loss.backward(), Adam's step: the usual loop."""

    label = "torch eager"

    def __init__(self, workload, weights, batches):
        self.workload = workload
        self.net = _module(workload)
        params = dict(self.net.named_parameters())
        with torch.no_grad():
            for name, value in _to_torch(workload, weights).items():
                params[name].copy_(torch.from_numpy(np.ascontiguousarray(value)))
        if workload.name == "W3":
            self.net.lstm.bias_hh_l0.requires_grad_(False)  # Keras's LSTM has one bias
        self.optimizer = torch.optim.Adam(
            [q for q in self.net.parameters() if q.requires_grad], lr=LEARNING_RATE,
            betas=(BETA_1, BETA_2), eps=EPSILON / math.sqrt(1.0 - BETA_2))
        self.loss_fn = nn.MSELoss() if workload.loss == "mse" else nn.CrossEntropyLoss()
        self.batches = [(self._input(x), torch.from_numpy(y)) for x, y in batches]

    def _input(self, x):
        if self.workload.name == "W2":
            x = x.transpose(0, 3, 1, 2)
        return torch.from_numpy(np.ascontiguousarray(x.astype(np.int64) if x.dtype == np.int32
                                                     else x))

    def _step(self, x, y):
        self.optimizer.zero_grad()
        loss = self.loss_fn(self.net(x), y)
        loss.backward()
        self.optimizer.step()
        return loss

    def first_step(self):
        loss = float(self._step(*self.batches[0]).item())
        return loss, _to_keras(self.workload, dict(self.net.named_parameters()))

    def run_round(self):
        for x, y in self.batches:
            self._step(x, y)


def runners(workload, weights, batches):
    return [TorchEager(workload, weights, batches)]
