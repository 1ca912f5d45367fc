"""LSTM implementations of the fastrnns family.

The functions are plain Python that TorchScript can compile: the ``py`` runners call them
eagerly, the ``jit*`` runners call ``torch.jit.script`` of the very same functions. Weights come
from a native ``nn.LSTM`` built with the same seed, so every variant can be checked against it.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


def gates_to_state(gates: Tensor, cx: Tensor) -> tuple[Tensor, Tensor]:
    """The LSTM nonlinearity shared by every cell: gate pre-activations to (h, c).

    TorchScript inlines this call, so the scripted cells compile to the same graph as
    upstream's, which repeats these lines in each cell.
    """
    ingate, forgetgate, cellgate, outgate = gates.chunk(4, 1)
    ingate = ingate.sigmoid()
    forgetgate = forgetgate.sigmoid()
    cellgate = cellgate.tanh()
    outgate = outgate.sigmoid()
    cy = (forgetgate * cx) + (ingate * cellgate)
    hy = outgate * cy.tanh()
    return hy, cy


def lstm_cell(
    input: Tensor, hidden: tuple[Tensor, Tensor], w_ih: Tensor, w_hh: Tensor, b_ih: Tensor,
    b_hh: Tensor,
) -> tuple[Tensor, Tensor]:
    hx, cx = hidden
    gates = torch.mm(input, w_ih.t()) + torch.mm(hx, w_hh.t()) + b_ih + b_hh
    return gates_to_state(gates, cx)


def flat_lstm_cell(
    input: Tensor, hx: Tensor, cx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor, b_hh: Tensor
) -> tuple[Tensor, Tensor]:
    gates = torch.mm(input, w_ih.t()) + torch.mm(hx, w_hh.t()) + b_ih + b_hh
    return gates_to_state(gates, cx)


def premul_lstm_cell(
    igates: Tensor, hidden: tuple[Tensor, Tensor], w_hh: Tensor, b_ih: Tensor, b_hh: Tensor
) -> tuple[Tensor, Tensor]:
    hx, cx = hidden
    gates = igates + torch.mm(hx, w_hh.t()) + b_ih + b_hh
    return gates_to_state(gates, cx)


def premul_lstm_cell_no_bias(
    igates: Tensor, hidden: tuple[Tensor, Tensor], w_hh: Tensor, b_hh: Tensor
) -> tuple[Tensor, Tensor]:
    hx, cx = hidden
    gates = igates + torch.mm(hx, w_hh.t()) + b_hh
    return gates_to_state(gates, cx)


def lstm_layer(
    input: Tensor, hidden: tuple[Tensor, Tensor], wih: Tensor, whh: Tensor, bih: Tensor,
    bhh: Tensor,
) -> tuple[Tensor, tuple[Tensor, Tensor]]:
    """One layer, one cell call per time step (runners ``jit`` and ``py``)."""
    hx, cx = hidden
    outputs: list[Tensor] = []
    inputs = input.unbind(0)
    hy, cy = hx[0], cx[0]
    for seq_idx in range(len(inputs)):
        hy, cy = lstm_cell(inputs[seq_idx], (hy, cy), wih, whh, bih, bhh)
        outputs += [hy]
    return torch.stack(outputs), (hy.unsqueeze(0), cy.unsqueeze(0))


def lstm_layer_premul(
    input: Tensor, hidden: tuple[Tensor, Tensor], wih: Tensor, whh: Tensor, bih: Tensor,
    bhh: Tensor,
) -> tuple[Tensor, tuple[Tensor, Tensor]]:
    """Input projection for all time steps in one matmul (runner ``jit_premul``)."""
    hx, cx = hidden
    outputs: list[Tensor] = []
    inputs = torch.matmul(input, wih.t()).unbind(0)
    hy, cy = hx[0], cx[0]
    for seq_idx in range(len(inputs)):
        hy, cy = premul_lstm_cell(inputs[seq_idx], (hy, cy), whh, bih, bhh)
        outputs += [hy]
    return torch.stack(outputs), (hy.unsqueeze(0), cy.unsqueeze(0))


def lstm_layer_premul_bias(
    input: Tensor, hidden: tuple[Tensor, Tensor], wih: Tensor, whh: Tensor, bih: Tensor,
    bhh: Tensor,
) -> tuple[Tensor, tuple[Tensor, Tensor]]:
    """Premultiplied input with the input bias added once for all steps (``jit_premul_bias``).

    mm + view rather than matmul, as upstream: it gives one reduction kernel in the backward.
    """
    hx, cx = hidden
    outputs: list[Tensor] = []
    inp_size = input.size()
    inputs = torch.mm(input.view(-1, inp_size[2]), wih.t()) + bih
    inputs = inputs.view(inp_size[0], inp_size[1], -1).unbind(0)
    hy, cy = hx[0], cx[0]
    for seq_idx in range(len(inputs)):
        hy, cy = premul_lstm_cell_no_bias(inputs[seq_idx], (hy, cy), whh, bhh)
        outputs += [hy]
    return torch.stack(outputs), (hy.unsqueeze(0), cy.unsqueeze(0))


def lstm_layer_simple(
    input: Tensor, hx: Tensor, cx: Tensor, wih: Tensor, whh: Tensor, bih: Tensor, bhh: Tensor
) -> tuple[Tensor, Tensor]:
    """Flat arguments, returns only the final state (runner ``jit_simple``)."""
    hy = hx
    cy = cx
    inputs = input.unbind(0)
    for seq_idx in range(len(inputs)):
        hy, cy = flat_lstm_cell(inputs[seq_idx], hy, cy, wih, whh, bih, bhh)
    return hy, cy


def lstm_multilayer(
    input: Tensor, hidden: tuple[Tensor, Tensor], params: list[Tensor]
) -> tuple[Tensor, tuple[Tensor, Tensor]]:
    """Stacked layers, one per row of the hidden state (runner ``jit_multilayer``)."""
    params_stride = 4  # wih, whh, bih, bhh per layer
    hx, cx = hidden
    hy, cy = hx[0], cx[0]
    inputs = input.unbind(0)
    for layer in range(hx.size(0)):
        hy = hx[layer]
        cy = cx[layer]
        base_idx = layer * params_stride
        wih = params[base_idx]
        whh = params[base_idx + 1]
        bih = params[base_idx + 2]
        bhh = params[base_idx + 3]
        # a fresh list per layer: TorchScript mis-compiles upstream's
        # `inputs, outputs = outputs, []` swap (a 3-layer run returned 2x the time steps)
        outputs: list[Tensor] = []
        for seq_idx in range(len(inputs)):
            hy, cy = lstm_cell(inputs[seq_idx], (hy, cy), wih, whh, bih, bhh)
            outputs += [hy]
        inputs = outputs
    return torch.stack(inputs), (hy.unsqueeze(0), cy.unsqueeze(0))


def varlen_lstm(
    sequences: list[Tensor], hidden: tuple[Tensor, Tensor], wih: Tensor, whh: Tensor,
    bih: Tensor, bhh: Tensor,
) -> tuple[list[Tensor], tuple[list[Tensor], list[Tensor]]]:
    """Each sequence of the batch runs on its own (runners ``vl_jit`` and ``vl_py``)."""
    hx, cx = hidden
    hxs = hx.unbind(1)
    cxs = cx.unbind(1)
    outputs: list[Tensor] = []
    hx_outs: list[Tensor] = []
    cx_outs: list[Tensor] = []
    for batch in range(len(sequences)):
        output: list[Tensor] = []
        hy, cy = hxs[batch], cxs[batch]
        inputs = sequences[batch].unbind(0)
        for seq_idx in range(len(inputs)):
            hy, cy = lstm_cell(inputs[seq_idx].unsqueeze(0), (hy, cy), wih, whh, bih, bhh)
            output += [hy]
        outputs += [torch.cat(output)]  # (length, hidden): steps are (1, hidden) each
        hx_outs += [hy.unsqueeze(0)]
        cx_outs += [cy.unsqueeze(0)]
    return outputs, (hx_outs, cx_outs)


class DecomposedLayerNorm(nn.Module):
    """Layer norm written out in elementary ops, as the ``jit_layernorm_decom`` runner measures.

    The eps sits under the square root as in ``nn.LayerNorm`` so both agree to rounding.
    """

    def __init__(self, normalized_shape: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(normalized_shape))
        self.bias = nn.Parameter(torch.zeros(normalized_shape))
        self.eps = eps

    def forward(self, input: Tensor) -> Tensor:
        mu = input.mean(-1, keepdim=True)
        var = input.var(-1, keepdim=True, unbiased=False)
        return (input - mu) / torch.sqrt(var + self.eps) * self.weight + self.bias


class LayerNormLSTMCell(nn.Module):
    """LSTM cell with layer norm on input, hidden and cell paths (the norms carry the biases)."""

    def __init__(self, w_ih: Tensor, w_hh: Tensor, decompose_layernorm: bool = False) -> None:
        super().__init__()
        hidden_size = w_hh.size(1)
        self.weight_ih = nn.Parameter(w_ih.detach().clone())
        self.weight_hh = nn.Parameter(w_hh.detach().clone())
        norm = DecomposedLayerNorm if decompose_layernorm else nn.LayerNorm
        self.layernorm_i = norm(4 * hidden_size)
        self.layernorm_h = norm(4 * hidden_size)
        self.layernorm_c = norm(hidden_size)

    def forward(
        self, input: Tensor, state: tuple[Tensor, Tensor]
    ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        hx, cx = state
        igates = self.layernorm_i(torch.mm(input, self.weight_ih.t()))
        hgates = self.layernorm_h(torch.mm(hx, self.weight_hh.t()))
        gates = igates + hgates
        ingate, forgetgate, cellgate, outgate = gates.chunk(4, 1)
        ingate = torch.sigmoid(ingate)
        forgetgate = torch.sigmoid(forgetgate)
        cellgate = torch.tanh(cellgate)
        outgate = torch.sigmoid(outgate)
        cy = self.layernorm_c((forgetgate * cx) + (ingate * cellgate))
        hy = outgate * torch.tanh(cy)
        return hy, (hy, cy)


class LSTMCell(nn.Module):
    """A plain LSTM cell as a module, weights copied from a native LSTM layer."""

    def __init__(self, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor, b_hh: Tensor) -> None:
        super().__init__()
        self.weight_ih = nn.Parameter(w_ih.detach().clone())
        self.weight_hh = nn.Parameter(w_hh.detach().clone())
        self.bias_ih = nn.Parameter(b_ih.detach().clone())
        self.bias_hh = nn.Parameter(b_hh.detach().clone())

    def forward(
        self, input: Tensor, state: tuple[Tensor, Tensor]
    ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        hy, cy = lstm_cell(
            input, state, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh
        )
        return hy, (hy, cy)


class LSTMLayer(nn.Module):
    """Runs a cell module over the time dimension."""

    def __init__(self, cell: nn.Module) -> None:
        super().__init__()
        self.cell = cell

    def forward(
        self, input: Tensor, state: tuple[Tensor, Tensor]
    ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        inputs = input.unbind(0)
        outputs: list[Tensor] = []
        for i in range(len(inputs)):
            out, state = self.cell(inputs[i], state)
            outputs += [out]
        return torch.stack(outputs), state


class StackedLSTM(nn.Module):
    """Layers of cell modules with dropout between layers (not after the last), as nn.LSTM.

    Returns the last layer's output sequence and one (h, c) state per layer.
    """

    def __init__(self, layers: list[nn.Module], dropout: float = 0.0) -> None:
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.num_layers = len(layers)
        self.dropout_layer = nn.Dropout(dropout)

    def forward(
        self, input: Tensor, states: list[tuple[Tensor, Tensor]]
    ) -> tuple[Tensor, list[tuple[Tensor, Tensor]]]:
        output_states: list[tuple[Tensor, Tensor]] = []
        output = input
        i = 0
        for layer in self.layers:
            output, out_state = layer(output, states[i])
            if i < self.num_layers - 1:
                output = self.dropout_layer(output)
            output_states += [out_state]
            i += 1
        return output, output_states
