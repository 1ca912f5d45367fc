"""The probabilistic-programming models: Bayesian logistic and robust (Student-t)
regression, scored with torch.distributions (as upstream's ppl_models)."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor
from torch import distributions as dist

from torchpulse.autograd.functional import LossFn


def simple_regression(device: torch.device, size: dict[str, Any]
                      ) -> tuple[LossFn, tuple[Tensor, ...]]:
    n, k = size["n"], size["k"]
    beta_prior = dist.Normal(0.0, 1.0)
    x = torch.rand(n, k + 1).to(device)
    y = torch.rand(n, 1).to(device)
    beta = beta_prior.sample((k + 1, 1)).to(device).requires_grad_(True)

    def loss_fn(beta_value: Tensor) -> Tensor:
        mu = x.mm(beta_value)
        # Y is a relaxed (not 0/1) value: no Bernoulli validation
        return (dist.Bernoulli(logits=mu, validate_args=False).log_prob(y).sum()
                + beta_prior.log_prob(beta_value).sum())

    return loss_fn, (beta,)


def robust_regression(device: torch.device, size: dict[str, Any]
                      ) -> tuple[LossFn, tuple[Tensor, ...]]:
    """Upstream's model as upstream computes it (sizes.REVISIONS: 2): the Student-t
    likelihood built and scored once per score, three times in all, and the priors' draws
    used as they come (a Gamma draw may be tiny; every task stays finite)."""
    n, k = size["n"], size["k"]
    x = torch.rand(n, k + 1).to(device)
    y = torch.rand(n, 1).to(device)
    nu = dist.Gamma(torch.rand(1, 1).to(device), torch.rand(1, 1).to(device))
    sigma = dist.Exponential(torch.rand(n, 1).to(device))
    beta = dist.Normal(torch.rand(k + 1, 1).to(device), torch.rand(k + 1, 1).to(device))
    nu_value = nu.sample().requires_grad_(True)
    sigma_unconstrained = sigma.sample().log().requires_grad_(True)
    beta_value = beta.sample().requires_grad_(True)

    def loss_fn(nu_v: Tensor, sigma_u: Tensor, beta_v: Tensor) -> Tensor:
        sigma_c = sigma_u.exp()
        mu = x.mm(beta_v)
        nu_score = dist.StudentT(nu_v, mu, sigma_c).log_prob(y).sum() + nu.log_prob(nu_v)
        sigma_score = (dist.StudentT(nu_v, mu, sigma_c).log_prob(y).sum()
                       + sigma.log_prob(sigma_c) + sigma_u)
        beta_score = dist.StudentT(nu_v, mu, sigma_c).log_prob(y).sum() + beta.log_prob(beta_v)
        return nu_score.sum() + sigma_score.sum() + beta_score.sum()

    return loss_fn, (nu_value, sigma_unconstrained, beta_value)
