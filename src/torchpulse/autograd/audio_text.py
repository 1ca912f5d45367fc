"""Audio and text models of the functional-autograd suite, defined here (no torchaudio or
torchtext): Wav2Letter, DeepSpeech 2, a Transformer language model and torchtext's
multi-head attention container."""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from torchpulse.autograd.functional import LossFn, functionalize

Built = tuple[LossFn, tuple[Tensor, ...]]


class Wav2Letter(nn.Module):
    """torchaudio's Wav2Letter on waveforms (channel widths configurable for small sizes)."""

    def __init__(self, num_classes: int, width: int = 250, wide: int = 2000) -> None:
        super().__init__()
        layers: list[nn.Module] = [nn.Conv1d(1, width, 250, stride=160, padding=45), nn.ReLU(),
                                   nn.Conv1d(width, width, 48, stride=2, padding=23), nn.ReLU()]
        for _ in range(7):
            layers += [nn.Conv1d(width, width, 7, padding=3), nn.ReLU()]
        layers += [nn.Conv1d(width, wide, 32, padding=16), nn.ReLU(),
                   nn.Conv1d(wide, wide, 1), nn.ReLU(),
                   nn.Conv1d(wide, num_classes, 1), nn.ReLU()]
        self.acoustic_model = nn.Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        return F.log_softmax(self.acoustic_model(x), dim=1)


def wav2letter(device: torch.device, size: dict[str, Any]) -> Built:
    n, frames, vocab = size["batch"], size["frames"], 28
    model = Wav2Letter(vocab, size["width"], size["wide"])
    inputs = torch.rand(n, 1, frames).to(device)
    out_frames = model(inputs.cpu()).shape[-1]  # 3 at upstream's 700 frames
    labels = torch.rand(n, out_frames).mul(vocab).long().to(device)
    return functionalize(model, lambda call: F.nll_loss(call(inputs), labels), device)


class _BatchRNN(nn.Module):
    def __init__(self, input_size: int, hidden: int, batch_norm: bool) -> None:
        super().__init__()
        self.batch_norm = nn.BatchNorm1d(input_size) if batch_norm else None
        self.rnn = nn.LSTM(input_size, hidden, bidirectional=True, bias=True)

    def forward(self, x: Tensor, lengths: Tensor) -> Tensor:
        if self.batch_norm is not None:  # over every time step and sequence at once
            t, n = x.shape[:2]
            x = self.batch_norm(x.reshape(t * n, -1)).reshape(t, n, -1)
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths, enforce_sorted=False)
        x, _ = self.rnn(packed)
        x, _ = nn.utils.rnn.pad_packed_sequence(x)
        return x.view(x.shape[0], x.shape[1], 2, -1).sum(2)  # sum the two directions


class DeepSpeech(nn.Module):
    """DeepSpeech 2 as deepspeech.pytorch: two masked 2-D convolutions over the spectrogram,
    bidirectional LSTMs over packed sequences, a batch-normed linear output."""

    def __init__(self, num_classes: int, hidden: int, layers: int, spectrogram: int) -> None:
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(1, 32, (41, 11), stride=(2, 2), padding=(20, 5)), nn.BatchNorm2d(32),
            nn.Hardtanh(0, 20, inplace=True),
            nn.Conv2d(32, 32, (21, 11), stride=(2, 1), padding=(10, 5)), nn.BatchNorm2d(32),
            nn.Hardtanh(0, 20, inplace=True))
        features = math.floor((spectrogram + 2 * 20 - 41) / 2 + 1)
        features = math.floor((features + 2 * 10 - 21) / 2 + 1) * 32
        self.rnns = nn.ModuleList([_BatchRNN(features, hidden, batch_norm=False)] + [
            _BatchRNN(hidden, hidden, batch_norm=True) for _ in range(layers - 1)])
        self.fc_norm = nn.BatchNorm1d(hidden)
        self.fc = nn.Linear(hidden, num_classes, bias=False)

    @staticmethod
    def output_lengths(lengths: Tensor) -> Tensor:
        # the time axis: stride 2 in the first convolution only
        return ((lengths + 2 * 5 - 11) // 2 + 1).int()

    def forward(self, x: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor]:
        out_lengths = self.output_lengths(lengths)
        x = self.conv(x)
        # mask what lies past each sequence's end, as deepspeech's MaskConv does
        steps = torch.arange(x.shape[-1], device=x.device)
        x = x * (steps[None, :] < out_lengths.to(x.device)[:, None]).to(x.dtype)[:, None, None]
        n, c, f, t = x.shape
        x = x.view(n, c * f, t).permute(2, 0, 1)  # (time, batch, features)
        for rnn in self.rnns:
            x = rnn(x, out_lengths.cpu())
        t, n = x.shape[:2]
        x = self.fc(self.fc_norm(x.reshape(t * n, -1))).reshape(t, n, -1)
        return F.log_softmax(x, dim=-1), out_lengths


def deepspeech(device: torch.device, size: dict[str, Any]) -> Built:
    # 161 frequency bins, deepspeech.pytorch's; the instruction counts take fewer
    n, seq, spectrogram, classes = size["batch"], size["seq"], size.get("spectrogram", 161), 10
    model = DeepSpeech(classes, size["hidden"], size["layers"], spectrogram)
    inputs = torch.rand(n, 1, spectrogram, seq).to(device)
    lengths = torch.rand(n).mul(seq * 0.1).add(seq * 0.8).int()
    target_length = size["target"]
    targets = torch.randint(1, classes, (n, target_length)).to(device)
    target_lengths = torch.full((n,), target_length, dtype=torch.int)

    def loss(call: Any) -> Tensor:
        log_probs, out_lengths = call(inputs, lengths)  # (time, batch, classes) for CTC
        return F.ctc_loss(log_probs, targets, out_lengths.cpu(), target_lengths)

    return functionalize(model, loss, device)


class TransformerModel(nn.Module):
    """The word-language-model Transformer: embedding, sinusoidal positions, a causal
    nn.TransformerEncoder and a log-softmax decoder."""

    def __init__(self, ntoken: int, ninp: int, nhead: int, nhid: int, nlayers: int,
                 dropout: float = 0.5) -> None:
        super().__init__()
        self.ninp = ninp
        position = torch.arange(5000).unsqueeze(1)
        div = torch.exp(torch.arange(0, ninp, 2) * (-math.log(10000.0) / ninp))
        pe = torch.zeros(5000, 1, ninp)
        pe[:, 0, 0::2] = torch.sin(position * div)
        pe[:, 0, 1::2] = torch.cos(position * div)
        self.register_buffer("pe", pe)
        layer = nn.TransformerEncoderLayer(ninp, nhead, nhid, dropout)
        self.transformer_encoder = nn.TransformerEncoder(layer, nlayers,
                                                         enable_nested_tensor=False)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.decoder = nn.Linear(ninp, ntoken)

    def forward(self, src: Tensor) -> Tensor:
        mask = nn.Transformer.generate_square_subsequent_mask(src.shape[0], device=src.device)
        x = self.encoder(src) * math.sqrt(self.ninp) + self.pe[:src.shape[0]]
        return F.log_softmax(self.decoder(self.transformer_encoder(x, mask)), dim=-1)


def transformer(device: torch.device, size: dict[str, Any]) -> Built:
    n, seq, ntoken = size["batch"], size["seq"], 50
    model = TransformerModel(ntoken, size["ninp"], size["nhead"], size["nhid"], size["nlayers"])
    data = torch.rand(n, seq + 1).mul(ntoken).long().to(device)
    inputs, targets = data.narrow(1, 0, seq), data.narrow(1, 1, seq)

    def loss(call: Any) -> Tensor:
        # as upstream: the (batch, seq) tensor enters the sequence-first model as is
        out = call(inputs)
        return F.nll_loss(out.reshape(n * seq, ntoken), targets.reshape(n * seq))

    return functionalize(model, loss, device)


class MultiheadAttentionContainer(nn.Module):
    """torchtext's MultiheadAttentionContainer: separate q/k/v projections, scaled
    dot-product attention with bias_k/bias_v and a boolean mask, an output projection."""

    def __init__(self, nhead: int, embed_dim: int) -> None:
        super().__init__()
        self.nhead = nhead
        self.query_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.key_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.value_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=False)

    def forward(self, query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor,
                bias_k: Tensor, bias_v: Tensor) -> tuple[Tensor, Tensor]:
        tgt_len, src_len, bsz, embed = query.shape[0], key.shape[0], query.shape[1], query.shape[2]
        head = embed // self.nhead
        q = self.query_proj(query).reshape(tgt_len, bsz * self.nhead, head)
        k = self.key_proj(key).reshape(src_len, bsz * self.nhead, head)
        v = self.value_proj(value).reshape(src_len, bsz * self.nhead, head)
        k, v = torch.cat([k, bias_k]), torch.cat([v, bias_v])
        attn_mask = F.pad(attn_mask, (0, 1))
        q, k, v = q.transpose(0, 1) * head ** -0.5, k.transpose(0, 1), v.transpose(0, 1)
        weights = torch.matmul(q, k.transpose(-2, -1)).masked_fill(attn_mask, -1e8)
        weights = F.softmax(weights, dim=-1)
        out = torch.matmul(weights, v).transpose(0, 1).reshape(tgt_len, bsz, embed)
        return self.out_proj(out), weights


def multiheadattn(device: torch.device, size: dict[str, Any]) -> Built:
    embed, nhead, tgt_len, src_len, bsz = 10, 5, 6, 10, size["batch"]
    model = MultiheadAttentionContainer(nhead, embed)
    query = torch.rand(tgt_len, bsz, embed).to(device)
    key = value = torch.rand(src_len, bsz, embed).to(device)
    mask_2d = torch.randint(0, 2, (tgt_len, src_len)).to(torch.bool).to(device)
    bias = torch.rand(1, 1, embed).to(device)
    attn_mask = torch.stack([mask_2d] * (bsz * nhead))
    bias_k = bias_v = bias.repeat(1, bsz, 1).reshape(1, bsz * nhead, -1)

    def loss(call: Any) -> Tensor:
        out, weights = call(query, key, value, attn_mask, bias_k, bias_v)
        return out.sum() + weights.sum()  # backprop ones through both outputs, as upstream

    return functionalize(model, loss, device)
