"""Shared test settings.

Probes in these tests are tiny, so intra-op threading only adds overhead; with a busy
neighbour on a 2-core machine torch's default two threads made small matmuls ~1000x slower
(measured on the development machine). One thread keeps the suite fast and its timings stable.
"""

import torch

torch.set_num_threads(1)
