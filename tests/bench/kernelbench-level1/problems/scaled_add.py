import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Adds a scaled tensor to another: x + alpha * y.
    """

    def __init__(self, alpha: float):
        """
        Args:
            alpha (float): the scale applied to y.
        """
        super(Model, self).__init__()
        self.alpha = alpha

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, dim).
            y (torch.Tensor): Input tensor of the same shape.

        Returns:
            torch.Tensor: x + alpha * y, of shape (batch_size, dim).
        """
        return x + self.alpha * y


batch_size = 128
dim = 4096
alpha = 0.75


def get_inputs():
    x = torch.randn(batch_size, dim)
    y = torch.rand(batch_size, dim) * 2 - 1  # uniform on [-1, 1)
    return [x, y]


def get_init_inputs():
    return [alpha]
