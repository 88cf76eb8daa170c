import math

import torch
import torch.nn as nn


class Model(nn.Module):
    """
    GELU with the tanh approximation, written out (as in minGPT's NewGELU).
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): Input tensor of any shape.

        Returns:
            torch.Tensor: 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))), elementwise.
        """
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


batch_size = 2000
dim = 2000


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
