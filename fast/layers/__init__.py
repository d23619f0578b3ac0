"""The fast mirror of `weightfile.ref.layers`: the family-neutral block pieces on [T, width]
float32 arrays, each one C call in the contract's order (bit for bit the reference's)."""
