"""PyTorch's dtype names, as numpy dtypes: `mg.float32`, `mg.long`, `mg.bool`...

`t.dtype == mg.float32` and `t.to(mg.float64)` read as in PyTorch. Kept in their own module
because `float`, `int` and `bool` here shadow Python's own names.
"""

import numpy as np

float16 = half = np.float16
float32 = float = np.float32
float64 = double = np.float64
int8 = np.int8
int16 = short = np.int16
int32 = int = np.int32
int64 = long = np.int64
uint8 = np.uint8
bool = np.bool_

__all__ = ["bool", "double", "float", "float16", "float32", "float64", "half", "int", "int8", "int16",
           "int32", "int64", "long", "short", "uint8"]
