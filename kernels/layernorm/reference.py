# The task's PyTorch twin (KernelBench's format): forward takes the task's in/inout tensors in
# manifest order and returns its out tensors. kwb eval --reference pytorch checks against it;
# kwb eval --time times it for the speedup over PyTorch eager and torch.compile.
import torch
import torch.nn as nn


class Model(nn.Module):
    """Row-wise layer normalisation, eps 1e-5, biased variance, per-column gamma and beta."""

    def forward(self, x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.layer_norm(x, (x.shape[1],), gamma, beta, eps=1e-5)
