"""DETR's loss: boxes in (cx, cy, w, h), a Hungarian matching of predictions to targets
(scipy's linear_sum_assignment) and the set criterion over the matched pairs.

scipy is imported when a matcher is made, not with this module: the instruction family's
counted process imports every workload's module at its start, under valgrind, and scipy's
321 modules cost it 6-10 s of every commit's count (docs/instructions.md, "Cost")."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def box_cxcywh_to_xyxy(boxes: Tensor) -> Tensor:
    cx, cy, w, h = boxes.unbind(-1)
    return torch.stack((cx - 0.5 * w, cy - 0.5 * h, cx + 0.5 * w, cy + 0.5 * h), dim=-1)


def box_area(boxes: Tensor) -> Tensor:
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def generalized_box_iou(a: Tensor, b: Tensor) -> Tensor:
    """Pairwise generalised IoU of xyxy boxes: (len(a), len(b))."""
    area_a, area_b = box_area(a), box_area(b)
    lt = torch.max(a[:, None, :2], b[:, :2])
    rb = torch.min(a[:, None, 2:], b[:, 2:])
    inter = (rb - lt).clamp(min=0).prod(-1)
    union = area_a[:, None] + area_b - inter
    iou = inter / union
    lt_c = torch.min(a[:, None, :2], b[:, :2])
    rb_c = torch.max(a[:, None, 2:], b[:, 2:])
    hull = (rb_c - lt_c).clamp(min=0).prod(-1)
    return iou - (hull - union) / hull


class HungarianMatcher(nn.Module):
    """One-to-one assignment of predictions to targets minimising the weighted sum of class,
    L1-box and generalised-IoU costs (computed without gradient, as in DETR)."""

    def __init__(self, cost_class: float = 1, cost_bbox: float = 5, cost_giou: float = 2):
        super().__init__()
        from scipy.optimize import linear_sum_assignment

        self.assign = linear_sum_assignment
        self.cost_class, self.cost_bbox, self.cost_giou = cost_class, cost_bbox, cost_giou

    def cost_matrices(self, outputs: dict[str, Tensor], targets: list[dict[str, Tensor]]
                      ) -> list[Tensor]:
        """Per image, the (queries, targets) cost matrix."""
        probs = outputs["pred_logits"].softmax(-1)
        boxes = outputs["pred_boxes"]
        out = []
        for i, t in enumerate(targets):
            cost = (-self.cost_class * probs[i][:, t["labels"]]
                    + self.cost_bbox * torch.cdist(boxes[i], t["boxes"], p=1)
                    - self.cost_giou * generalized_box_iou(box_cxcywh_to_xyxy(boxes[i]),
                                                           box_cxcywh_to_xyxy(t["boxes"])))
            out.append(cost)
        return out

    @torch.no_grad()
    def forward(self, outputs: dict[str, Tensor], targets: list[dict[str, Tensor]]
                ) -> list[tuple[Tensor, Tensor]]:
        pairs = []
        for cost in self.cost_matrices(outputs, targets):
            rows, cols = self.assign(cost.cpu().numpy())
            pairs.append((torch.as_tensor(rows, dtype=torch.int64),
                          torch.as_tensor(cols, dtype=torch.int64)))
        return pairs


class SetCriterion(nn.Module):
    """DETR's losses over matched pairs: class cross-entropy (the no-object class weighted
    by ``eos_coef``), L1 and generalised IoU of the boxes, and the cardinality error."""

    def __init__(self, num_classes: int, matcher: HungarianMatcher,
                 weight_dict: dict[str, float], eos_coef: float) -> None:
        super().__init__()
        self.num_classes, self.matcher, self.weight_dict = num_classes, matcher, weight_dict
        weight = torch.ones(num_classes + 1)
        weight[-1] = eos_coef
        self.register_buffer("empty_weight", weight)

    def forward(self, outputs: dict[str, Tensor], targets: list[dict[str, Tensor]]
                ) -> dict[str, Tensor]:
        pairs = self.matcher(outputs, targets)
        logits, boxes = outputs["pred_logits"], outputs["pred_boxes"]
        batch = torch.cat([torch.full_like(src, i) for i, (src, _) in enumerate(pairs)])
        src = torch.cat([s for s, _ in pairs])
        classes = torch.full(logits.shape[:2], self.num_classes, dtype=torch.int64,
                             device=logits.device)
        classes[batch, src] = torch.cat([t["labels"][j] for t, (_, j) in zip(targets, pairs,
                                                                            strict=True)])
        loss_ce = F.cross_entropy(logits.transpose(1, 2), classes, self.empty_weight)
        matched = boxes[batch, src]
        target_boxes = torch.cat([t["boxes"][j] for t, (_, j) in zip(targets, pairs,
                                                                    strict=True)])
        num_boxes = max(float(len(target_boxes)), 1.0)
        loss_bbox = F.l1_loss(matched, target_boxes, reduction="none").sum() / num_boxes
        giou = generalized_box_iou(box_cxcywh_to_xyxy(matched), box_cxcywh_to_xyxy(target_boxes))
        loss_giou = (1 - torch.diag(giou)).sum() / num_boxes
        with torch.no_grad():  # a logged metric, not a loss to differentiate
            predicted = (logits.argmax(-1) != logits.shape[-1] - 1).sum(1).float()
            lengths = torch.as_tensor([len(t["labels"]) for t in targets], device=logits.device)
            cardinality = F.l1_loss(predicted, lengths.float())
        return {"loss_ce": loss_ce, "loss_bbox": loss_bbox, "loss_giou": loss_giou,
                "cardinality_error": cardinality}
