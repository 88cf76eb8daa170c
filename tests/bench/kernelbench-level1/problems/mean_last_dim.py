import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Simple model that takes the mean over the last dimension.
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, dim1, dim2).

        Returns:
            torch.Tensor: The mean over dim2, of shape (batch_size, dim1).
        """
        return torch.mean(x, dim=-1)


batch_size = 16
dim1 = 256
dim2 = 1024


def get_inputs():
    x = torch.randn(batch_size, dim1, dim2)
    return [x]


def get_init_inputs():
    return []
