"""Tensor codecs, one subpackage per container (vqf/, ninfer3/), one module per codec."""
