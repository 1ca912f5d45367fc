"""ResNet-18 and ResNet-50: torchvision's when it imports, else the same architecture here.

torchvision from PyPI is a CUDA build that fails to import next to a CPU torch, so the project
carries its own definition (torchvision's layout: identical layer names and parameter counts,
11,689,512 and 25,557,032 with 1000 classes).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import torch
from torch import Tensor, nn


def conv3x3(in_planes: int, out_planes: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)


def conv1x1(in_planes: int, out_planes: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(
        self, inplanes: int, planes: int, stride: int = 1, downsample: nn.Module | None = None
    ) -> None:
        super().__init__()
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x: Tensor) -> Tensor:
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        return self.relu(out + identity)


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(
        self, inplanes: int, planes: int, stride: int = 1, downsample: nn.Module | None = None,
        dilation: int = 1,
    ) -> None:
        super().__init__()
        self.conv1 = conv1x1(inplanes, planes)
        self.bn1 = nn.BatchNorm2d(planes)
        # stride on the 3x3, as torchvision (v1.5); dilation for segmentation backbones
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=stride, padding=dilation,
                               dilation=dilation, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = conv1x1(planes, planes * self.expansion)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x: Tensor) -> Tensor:
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        return self.relu(out + identity)


class ResNet(nn.Module):
    def __init__(
        self, block: type[BasicBlock] | type[Bottleneck], layers: list[int],
        num_classes: int = 1000, dilate: tuple[bool, bool, bool] = (False, False, False),
        width: int = 64,
    ) -> None:
        """``dilate``: replace the stride of layer2..4 by dilation (torchvision's
        replace_stride_with_dilation; Bottleneck only), as FCN and DeepLab backbones do.
        ``width``: channels of the stem and the first stage (torchvision's 64), doubling per
        stage; narrower backbones keep every layer and op at a fraction of the work (the
        cpu preset's backbones)."""
        super().__init__()
        self.inplanes = width
        self.dilation = 1
        self.conv1 = nn.Conv2d(3, width, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, width, layers[0])
        self.layer2 = self._make_layer(block, 2 * width, layers[1], stride=2, dilate=dilate[0])
        self.layer3 = self._make_layer(block, 4 * width, layers[2], stride=2, dilate=dilate[1])
        self.layer4 = self._make_layer(block, 8 * width, layers[3], stride=2, dilate=dilate[2])
        self.out_channels = 8 * width * block.expansion
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(self.out_channels, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def _make_layer(
        self, block: type[BasicBlock] | type[Bottleneck], planes: int, blocks: int,
        stride: int = 1, dilate: bool = False,
    ) -> nn.Sequential:
        previous = self.dilation
        if dilate:
            self.dilation *= stride
            stride = 1
        kw = (lambda d: {"dilation": d}) if block is Bottleneck else (lambda d: {})
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                conv1x1(self.inplanes, planes * block.expansion, stride),
                nn.BatchNorm2d(planes * block.expansion),
            )
        layers = [block(self.inplanes, planes, stride, downsample, **kw(previous))]
        self.inplanes = planes * block.expansion
        layers += [block(self.inplanes, planes, **kw(self.dilation)) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def features(self, x: Tensor) -> Tensor:
        """The last stage's feature map (what detection and segmentation heads use)."""
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        return self.layer4(self.layer3(self.layer2(self.layer1(x))))

    def forward(self, x: Tensor) -> Tensor:
        return self.fc(torch.flatten(self.avgpool(self.features(x)), 1))


def own_resnet18(num_classes: int = 1000, width: int = 64) -> ResNet:
    return ResNet(BasicBlock, [2, 2, 2, 2], num_classes, width=width)


def own_resnet50(num_classes: int = 1000, width: int = 64) -> ResNet:
    return ResNet(Bottleneck, [3, 4, 6, 3], num_classes, width=width)


def _torchvision_models():  # -> module | None
    try:
        import torchvision.models  # noqa: F401  (import can raise RuntimeError on CPU torch)
    except Exception:
        return None
    import torchvision.models as tvm

    return tvm


def resnet_builder(name: str, width: int = 64) -> tuple[Callable[[], nn.Module], str]:
    """The constructor for ``resnet18``/``resnet50`` and where it comes from: torchvision's
    when it is installed and ``width`` is its 64, else this project's."""
    own = {"resnet18": own_resnet18, "resnet50": own_resnet50}[name]
    if width != 64:
        return partial(own, width=width), "torchpulse"
    tvm = _torchvision_models()
    if tvm is not None:
        return getattr(tvm, name), "torchvision"
    return own, "torchpulse"
