"""Qwen35Model offers Qwen3Model's public surface, so generation and sampling take either."""

from __future__ import annotations

import inspect

import numpy as np
from strategies.qwen35 import random_parameters, tiny_config

from weightfile.frontend.generate import stream_tokens
from weightfile.ref.layers.sampling import SplitMix64, sample
from weightfile.ref.numerics.kernels import kernels_for
from weightfile.ref.qwen3.decoder import Qwen3Model
from weightfile.ref.qwen35.model import Qwen35Model
from weightfile.ref.qwen35.weights import weights_from_parameters
from weightfile.spec.numerics.profile import CANONICAL

SURFACE = ("new_cache", "forward", "forward_batch")


def tiny_model() -> Qwen35Model:
    config = tiny_config()
    return Qwen35Model(config, weights_from_parameters(config, random_parameters(config, 11)))


def test_the_methods_have_qwen3_signatures() -> None:
    for name in SURFACE:
        want = list(inspect.signature(getattr(Qwen3Model, name)).parameters)
        assert list(inspect.signature(getattr(Qwen35Model, name)).parameters) == want, name


def test_config_and_kernels_are_public() -> None:
    model = tiny_model()
    assert model.config.num_hidden_layers == len(model.weights.layers)
    assert model.kernels == kernels_for(CANONICAL)


def test_sampled_generation_draws_with_the_models_kernels() -> None:
    """stream_tokens samples with `model.kernels`; a hand loop with the canonical kernels
    gives the same tokens."""
    model, prompt, temperature, seed = tiny_model(), [5, 17, 3], 0.9, 7
    got = list(stream_tokens(model, prompt, 6, temperature=temperature, seed=seed))
    cache, rng, kernels = model.new_cache(), SplitMix64(seed), kernels_for(CANONICAL)
    logits: np.ndarray = model.forward(prompt, cache)[-1]
    want = []
    for _ in range(6):
        want.append(sample(list(logits), temperature, rng, kernels))
        logits = model.forward([want[-1]], cache)[0]
    assert got == want
