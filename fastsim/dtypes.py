"""The data types fastsim knows: bytes per element, and the dtype a matmul of each writes.

The one table of dtypes: cost, mapping and the front ends read it from here.
"""
DTYPE_BYTES = {"int4": 0.5, "int8": 1, "int16": 2, "bf16": 2, "int32": 4, "f32": 4}
# the output (accumulator) dtype of a matmul over each input dtype; others write their own dtype
OUT_DTYPE = {"bf16": "bf16", "int8": "int32", "int16": "int32"}
