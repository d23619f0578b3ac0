"""The Chinese national primitives the protected VQF variants use (spec/vqf.md §protected).

SM3, HMAC-SM3 and SM4 are computed by `cryptography` (OpenSSL), never by hand-written ciphers.
SM2 is the one exception: textbook affine arithmetic (sm2.py), because no maintained library
offers it with the VQF signer ID and gmssl got some keys wrong; OpenSSL checks it in the tests.
The rest is the glue the format fixes: the CTR counter rule, Z_A with the fixed ID, the order of
the hashed bytes.
"""
