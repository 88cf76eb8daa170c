# The task's PyTorch twin (KernelBench's format): forward takes the task's in/inout tensors in
# manifest order and returns its out tensors. kwb eval --reference pytorch checks against it;
# kwb eval --time times it for the speedup over PyTorch eager and torch.compile.
import torch
import torch.nn as nn


class Model(nn.Module):
    """C (f32) = A (bf16, M x K) @ B (bf16, N x K) transposed, products summed in f32."""

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.mm(A.float(), B.float().t())
