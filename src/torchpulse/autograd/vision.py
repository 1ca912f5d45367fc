"""Vision models of the functional-autograd suite: ResNet-18 classification, FCN-ResNet50
segmentation and DETR detection, built from this project's ResNets (no torchvision)."""

from __future__ import annotations

import warnings
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from torchpulse.autograd.functional import LossFn, functionalize
from torchpulse.autograd.matcher import HungarianMatcher, SetCriterion
from torchpulse.models.resnet import Bottleneck, ResNet, own_resnet18


def resnet18(device: torch.device, size: dict[str, Any]) -> tuple[LossFn, tuple[Tensor, ...]]:
    n, image = size["batch"], size["image"]
    model = own_resnet18(width=size.get("width", 64))
    inputs = torch.rand(n, 3, image, image).to(device)
    labels = torch.rand(n).mul(10).long().to(device)
    return functionalize(model, lambda call: F.cross_entropy(call(inputs), labels), device)


class FCN(nn.Module):
    """FCN-ResNet50 as torchvision's fcn_resnet50 (no auxiliary head): a dilated backbone
    (output stride 8), a 3x3 head and bilinear upsampling to the input size."""

    def __init__(self, num_classes: int = 21, width: int = 64) -> None:
        super().__init__()
        self.backbone = ResNet(Bottleneck, [3, 4, 6, 3], dilate=(False, True, True),
                               width=width)
        del self.backbone.fc
        channels = self.backbone.out_channels  # 2048 at torchvision's width
        self.head = nn.Sequential(nn.Conv2d(channels, channels // 4, 3, padding=1, bias=False),
                                  nn.BatchNorm2d(channels // 4), nn.ReLU(), nn.Dropout(0.1),
                                  nn.Conv2d(channels // 4, num_classes, 1))

    def forward(self, x: Tensor) -> dict[str, Tensor]:
        out = self.head(self.backbone.features(x))
        return {"out": F.interpolate(out, size=x.shape[-2:], mode="bilinear",
                                     align_corners=False)}


def fcn_resnet(device: torch.device, size: dict[str, Any]) -> tuple[LossFn, tuple[Tensor, ...]]:
    n, image, classes = size["batch"], size["image"], 21
    inputs = torch.rand(n, 3, image, image).to(device)
    labels = torch.rand(n, classes, image, image).to(device)
    model = FCN(classes, size.get("backbone_width", 64))
    return functionalize(model, lambda call: F.mse_loss(call(inputs)["out"], labels), device)


class DETR(nn.Module):
    """DETR as in its paper's minimal version: ResNet-50 features, a 1x1 projection, learned
    row/column positional encodings, nn.Transformer, class and box heads."""

    def __init__(self, num_classes: int, hidden_dim: int, nheads: int, encoder_layers: int,
                 decoder_layers: int, queries: int = 100, width: int = 64) -> None:
        super().__init__()
        self.backbone = ResNet(Bottleneck, [3, 4, 6, 3], width=width)
        del self.backbone.fc
        self.conv = nn.Conv2d(self.backbone.out_channels, hidden_dim, 1)
        with warnings.catch_warnings():  # nested tensors need batch_first; not used here
            warnings.filterwarnings("ignore", message="enable_nested_tensor")
            self.transformer = nn.Transformer(hidden_dim, nheads, encoder_layers,
                                              decoder_layers)
        self.linear_class = nn.Linear(hidden_dim, num_classes + 1)
        self.linear_bbox = nn.Linear(hidden_dim, 4)
        self.query_pos = nn.Parameter(torch.rand(queries, hidden_dim))
        self.row_embed = nn.Parameter(torch.rand(50, hidden_dim // 2))
        self.col_embed = nn.Parameter(torch.rand(50, hidden_dim // 2))

    def forward(self, x: Tensor) -> dict[str, Tensor]:
        h = self.conv(self.backbone.features(x))
        n, _, height, width = h.shape
        pos = torch.cat([self.col_embed[:width].unsqueeze(0).repeat(height, 1, 1),
                         self.row_embed[:height].unsqueeze(1).repeat(1, width, 1)],
                        dim=-1).flatten(0, 1).unsqueeze(1)
        src = pos + 0.1 * h.flatten(2).permute(2, 0, 1)
        tgt = self.query_pos.unsqueeze(1).repeat(1, n, 1)
        h = self.transformer(src, tgt).transpose(0, 1)
        return {"pred_logits": self.linear_class(h),
                "pred_boxes": self.linear_bbox(h).sigmoid()}


def detr_targets(n: int, image: int, generator: torch.Generator) -> list[dict[str, Tensor]]:
    """5 to 9 objects per image, classes 5..9, boxes as normalised (cx, cy, w, h)."""
    targets = []
    for _ in range(n):
        count = int(torch.randint(5, 10, (), generator=generator))
        corners = torch.randint(image // 8, image - image // 8, (count, 4),
                                generator=generator).float() / image
        x0, x1 = corners[:, 0].minimum(corners[:, 2]), corners[:, 0].maximum(corners[:, 2])
        y0, y1 = corners[:, 1].minimum(corners[:, 3]), corners[:, 1].maximum(corners[:, 3])
        boxes = torch.stack(((x0 + x1) / 2, (y0 + y1) / 2, (x1 - x0).clamp(min=0.01),
                             (y1 - y0).clamp(min=0.01)), dim=-1)
        targets.append({"labels": torch.randint(5, 10, (count,), generator=generator),
                        "boxes": boxes})
    return targets


def detr(device: torch.device, size: dict[str, Any]) -> tuple[LossFn, tuple[Tensor, ...]]:
    n, height, width = size["batch"], size["height"], size["width"]
    num_classes = 91
    model = DETR(num_classes, size["hidden"], size["heads"], size["encoder_layers"],
                 size["decoder_layers"], size["queries"], size.get("backbone_width", 64))
    weights = {"loss_ce": 1.0, "loss_bbox": 5.0, "loss_giou": 2.0}
    criterion = SetCriterion(num_classes, HungarianMatcher(1, 5, 2), weights, 0.1).to(device)
    inputs = torch.rand(n, 3, height, width).to(device)
    generator = torch.Generator().manual_seed(int(torch.initial_seed()) % 2**63)
    targets = [{k: v.to(device) for k, v in t.items()}
               for t in detr_targets(n, min(height, width), generator)]

    def loss(call: Any) -> Tensor:
        losses = criterion(call(inputs), targets)
        return sum(losses[k] * w for k, w in weights.items())

    return functionalize(model, loss, device)
