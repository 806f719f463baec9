# Vendored from jakesnell/prototypical-networks, commit c9bb4d258267c11cb6e23f0a19242d24ca98ad8a,
# protonets/models/__init__.py, unchanged below this header. Copyright (c) 2017 Jake Snell; MIT License, see
# bench/reference/protonet/LICENSE. tests/protonet/python/reference_protonet.py pickles the
# reference model with it, as its train.py saves best_model.pt, for the --init-from test.
from protonets.models.factory import get_model, register_model

import protonets.models.few_shot
