"""The Chinese national primitives the protected VQF variants use (spec/vqf.md §4).

The bytes are computed by libraries, never by hand-written ciphers: SM3, HMAC-SM3 and SM4 by
`cryptography` (OpenSSL), SM2 point arithmetic by `gmssl`. What is ours is only the glue that the
format fixes: the CTR counter rule, Z_A with the fixed ID, the order of the hashed bytes.
"""
