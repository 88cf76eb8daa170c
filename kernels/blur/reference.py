# The task's PyTorch twin (KernelBench's format): forward takes the task's in/inout tensors in
# manifest order and returns its out tensors. kwb eval --reference pytorch checks against it;
# kwb eval --time times it for the speedup over PyTorch eager and torch.compile.
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Separable 9-tap blur (wy down the rows, wx along them), edges clamped."""

    def forward(self, img: torch.Tensor, wx: torch.Tensor, wy: torch.Tensor) -> torch.Tensor:
        padded = F.pad(img[None, None], (4, 4, 4, 4), mode="replicate")
        return F.conv2d(padded, (wy[:, None] * wx[None, :])[None, None])[0, 0]
