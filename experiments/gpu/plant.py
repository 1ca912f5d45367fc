"""The planted GPU regression of docs/gpu.md: one more elementwise kernel at every time step of
the LSTM cell the ``py`` and ``jit*`` runners share (forward, and its gradient backward), and
a finiteness check of the final state after the loop (a host synchronisation: ``if`` on a
CUDA tensor waits for it). Edits src/torchpulse/models/lstm.py in place; ``--undo`` puts it
back.

    python experiments/gpu/plant.py [--undo]
"""

from __future__ import annotations

import sys
from pathlib import Path

LSTM = Path(__file__).resolve().parents[2] / "src" / "torchpulse" / "models" / "lstm.py"
EDITS = [
    ("""    hx, cx = hidden
    gates = torch.mm(input, w_ih.t()) + torch.mm(hx, w_hh.t()) + b_ih + b_hh
    return gates_to_state(gates, cx)
""", """    hx, cx = hidden
    gates = torch.mm(input, w_ih.t()) + torch.mm(hx, w_hh.t()) + b_ih + b_hh
    gates = gates * 1.0  # planted: one more elementwise kernel a step
    return gates_to_state(gates, cx)
"""),
    ("""        hy, cy = lstm_cell(inputs[seq_idx], (hy, cy), wih, whh, bih, bhh)
        outputs += [hy]
    return torch.stack(outputs), (hy.unsqueeze(0), cy.unsqueeze(0))
""", """        hy, cy = lstm_cell(inputs[seq_idx], (hy, cy), wih, whh, bih, bhh)
        outputs += [hy]
    if not torch.isfinite(hy).all():  # planted: a host synchronisation a call
        raise ValueError("the LSTM's state is not finite")
    return torch.stack(outputs), (hy.unsqueeze(0), cy.unsqueeze(0))
"""),
]


def main(undo: bool) -> int:
    text = LSTM.read_text()
    for original, planted in EDITS:
        old, new = (planted, original) if undo else (original, planted)
        if text.count(old) != 1:
            print(f"plant.py: the {'planted' if undo else 'original'} code is not in {LSTM}",
                  file=sys.stderr)
            return 2
        text = text.replace(old, new)
    LSTM.write_text(text)
    print(f"plant.py: {'removed from' if undo else 'planted in'} {LSTM}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main("--undo" in sys.argv[1:]))
