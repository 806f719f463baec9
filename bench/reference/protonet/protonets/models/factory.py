# Vendored from jakesnell/prototypical-networks, commit c9bb4d258267c11cb6e23f0a19242d24ca98ad8a,
# protonets/models/factory.py, unchanged below this header. Copyright (c) 2017 Jake Snell; MIT License, see
# bench/reference/protonet/LICENSE. tests/protonet/python/reference_protonet.py pickles the
# reference model with it, as its train.py saves best_model.pt, for the --init-from test.
MODEL_REGISTRY = {}

def register_model(model_name):
    def decorator(f):
        MODEL_REGISTRY[model_name] = f
        return f

    return decorator

def get_model(model_name, model_opt):
    if model_name in MODEL_REGISTRY:
        return MODEL_REGISTRY[model_name](**model_opt)
    else:
        raise ValueError("Unknown model {:s}".format(model_name))
