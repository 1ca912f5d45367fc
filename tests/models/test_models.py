import pytest
import torch

from torchpulse.models.resnet import Bottleneck, ResNet, own_resnet18, own_resnet50, resnet_builder


def n_params(model):
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize(("build", "count"), [(own_resnet18, 11_689_512),
                                              (own_resnet50, 25_557_032)])
def test_own_resnets_have_torchvisions_parameter_counts(build, count):
    assert n_params(build()) == count


def test_a_narrow_resnet50_keeps_every_layer_at_a_fraction_of_the_weights():
    """The cpu preset's FCN and DETR backbones: width 16 instead of 64."""
    full, narrow = own_resnet50(), ResNet(Bottleneck, [3, 4, 6, 3], width=16)
    assert narrow.out_channels == 512 and full.out_channels == 2048
    assert [type(m) for m in narrow.modules()] == [type(m) for m in full.modules()]
    assert n_params(narrow) < n_params(full) / 10
    with torch.no_grad():
        assert narrow.eval().features(torch.randn(1, 3, 32, 32)).shape == (1, 512, 1, 1)


def test_own_resnet_runs_on_small_images():
    model = own_resnet18(num_classes=10).eval()
    with torch.no_grad():
        out = model(torch.randn(2, 3, 32, 32))
    assert out.shape == (2, 10)
    assert torch.isfinite(out).all()


@pytest.mark.parametrize("name", ["resnet18", "resnet50"])
def test_builder_falls_back_to_the_own_definition(name):
    build, source = resnet_builder(name)
    assert source in ("torchvision", "torchpulse")
    if source == "torchpulse":
        assert build.__name__ == f"own_{name}"


def test_builder_uses_own_definition_when_torchvision_fails(monkeypatch):
    from torchpulse.models import resnet

    monkeypatch.setattr(resnet, "_torchvision_models", lambda: None)
    build, source = resnet.resnet_builder("resnet50")
    assert source == "torchpulse" and build is own_resnet50


def test_a_counting_width_builds_this_projects_resnet_with_every_layer(monkeypatch):
    """The instruction family counts the ResNets at sizes.INSTRUCTIONS's width: the same
    layers and ops as torchvision's width, a sixteenth of the weights; torchvision's models
    take no width, so its own definition builds them even where torchvision imports."""
    from torchpulse import sizes
    from torchpulse.models import resnet

    monkeypatch.setattr(resnet, "_torchvision_models", lambda: pytest.fail("not asked"))
    width = sizes.INSTRUCTIONS["fastrnns"]["image_width"]
    assert width == sizes.INSTRUCTIONS["autograd"]["resnet18"]["width"] < 64
    for name, full in (("resnet18", own_resnet18()), ("resnet50", own_resnet50())):
        build, source = resnet.resnet_builder(name, width)
        narrow = build()
        assert source == "torchpulse"
        assert [type(m) for m in narrow.modules()] == [type(m) for m in full.modules()]
        assert n_params(narrow) < n_params(full) / 10


def test_the_autograd_resnet18_takes_the_counting_width():
    from torchpulse.autograd import vision

    _, narrow = vision.resnet18(torch.device("cpu"), {"batch": 2, "image": 16, "width": 16})
    _, full = vision.resnet18(torch.device("cpu"), {"batch": 2, "image": 16})
    assert sum(p.numel() for p in full) == 11_689_512
    assert sum(p.numel() for p in narrow) < 11_689_512 / 10


def test_the_counting_width_calls_the_same_convolution_kernels():
    """What the instruction family counts is a code path: the narrow ResNets must reach the
    same convolution implementations as the full ones (oneDNN, and THNN for ResNet-50's 1x1
    convolutions on one thread), at the counting sizes."""
    import collections

    from torchpulse import sizes

    kernels = ("aten::mkldnn_convolution", "aten::thnn_conv2d", "aten::_slow_conv2d_backward")
    rows = sizes.INSTRUCTIONS["fastrnns"]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for build in (own_resnet18, own_resnet50):
            seen = []
            for width in (64, rows["image_width"]):
                torch.manual_seed(0)
                model = build(width=width)
                x = torch.randn(rows["image_batch"], 3, rows["image_size"], rows["image_size"])
                with torch.autograd.profiler.profile() as prof:
                    model(x).sum().backward()
                seen.append(collections.Counter(e.name for e in prof.function_events
                                                if e.name in kernels))
            assert seen[0] == seen[1] and seen[0]["aten::mkldnn_convolution"] == 20
    finally:
        torch.set_num_threads(threads)
