"""Catalogs as data: accelerators and models (TOML files with a source and date per entry) and loaders.

    get_accelerator("l4")            -> Accelerator (memory, bandwidth, peaks, roofline priors)
    resolve_accelerator("v6e-4")     -> (Accelerator tpu-v6e, 4): the one alias table plan, cost, capacity use
    load_model("gemma-4-12b")        -> ModelSpec   (per-layer attention, KV shapes, params, weight bytes)
    load_model("/path/to/checkpoint")  any Hugging Face config.json directory loads too

Prices live elsewhere (issue 4's price catalog); the planner takes a price per device-hour.
"""

from inferctl.catalog.accelerators import Accelerator, accelerators, get_accelerator, resolve_accelerator
from inferctl.catalog.models import LayerSpec, ModelSpec, catalog_models, load_model, spec_from_config

__all__ = [
    "Accelerator",
    "LayerSpec",
    "ModelSpec",
    "accelerators",
    "catalog_models",
    "get_accelerator",
    "load_model",
    "resolve_accelerator",
    "spec_from_config",
]
