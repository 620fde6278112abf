"""Rounding-error bounds for tests that compare two computations of the same math (issue 14
part 6): tolerances derived from what float32 arithmetic guarantees, not tuned to one CPU.

The model (first order, worst case, any summation order, so any CPU's BLAS blocking):

* every float32 operation rounds to nearest, a relative error of at most u = 2^-24 (the unit
  roundoff, half of float32's eps 2^-23); float64: 2^-53; bfloat16 (8 significant bits): 2^-8;
  a transcendental (exp, tanh, sigmoid; Sleef/libm within 1 ulp) counts as two roundings;
* a sum or dot product of n terms, in any order, is within (n - 1) u sum|terms| of the exact
  value; ``gamma(n)`` is Higham's rigorous gamma_n = n u / (1 - n u) for a chain of n roundings;
* along a chain of dependent operations (a layer feeding the next, a time step feeding the next)
  the errors add up, each at most u times the largest magnitude in play, taken as the largest
  |value| of the result (the reference-parity test, test_reference.py, uses the same model);
* two float32 computations of the same math (another batch, another kernel, a float64 reference
  rounded back) each lie within that bound of the exact result, so they differ by at most twice it.

Where the worst case grows past what the test must tell apart (bfloat16 over a sentence, a
3,000-token document), a test uses the typical bound instead, independent roundings adding in
quadrature (sqrt(n) u M for n roundings), and says so. The worst-case bounds stay below 2.5e-2 of
the values (the 315 carried steps of the stateful parity test), most below 1e-4; a real bug moves
values by their own order (2e-2..1 in these tests).
"""

from __future__ import annotations

U32 = 2.0 ** -24      # float32 unit roundoff
U64 = 2.0 ** -53      # float64 unit roundoff
UBF16 = 2.0 ** -8     # bfloat16 unit roundoff (8 significant bits)
UF16 = 2.0 ** -11     # float16 unit roundoff (11 significant bits)
ELEMENTWISE = 12      # one LSTM step's elementwise roundings: 3 sigmoids and 2 tanh (2 each), f*c + i*j (2),
                      # o * tanh(c) (1), the forget bias and the residual add (1 each)


def gamma(n: int, u: float = U32) -> float:
    """Higham's gamma_n: the relative error bound of a chain of n roundings."""
    return n * u / (1 - n * u)


def lstm_step_roundings(input_dim: int, cell_dim: int, projection_dim: int, n_layers: int = 1) -> int:
    """Roundings one time step adds along the longest dependency chain of an LSTM-with-projection
    stack: per layer the gate dot products (input + projection + bias terms), the elementwise
    gate arithmetic and the projection's dot product (cell_dim terms)."""
    per_layer = max(input_dim, projection_dim) + projection_dim + 1 + ELEMENTWISE + cell_dim
    return n_layers * per_layer


def token_roundings(config) -> int:
    """Roundings of the char-CNN token layer along its longest chain: the widest filter's
    convolution (char_dim x width terms), each highway layer (a dot product over all filters plus
    5 elementwise roundings) and the projection (a dot product over all filters)."""
    width = max(w for w, _ in config.filters)
    total = sum(n for _, n in config.filters)
    return config.char_dim * width + config.n_highway * (total + 5) + total


def bilm_step_roundings(config) -> int:
    """One biLM time step: the token layer, then every LSTM layer (``BiLMConfig`` terms)."""
    return token_roundings(config) + lstm_step_roundings(config.projection_dim, config.cell_dim,
                                                         config.projection_dim, config.n_layers)


def bilm_bound(config, steps: int, magnitude: float, u: float = U32) -> float:
    """How far one float32 run of the biLM over ``steps`` time steps (every step the state carried
    through, boundaries included) may be from the exact result; ``magnitude`` is the largest
    |value| of the output. Twice this bounds the difference of two orderings."""
    if hasattr(magnitude, "detach"):                 # a tensor, possibly part of an autograd graph
        magnitude = magnitude.detach()
    return steps * bilm_step_roundings(config) * u * float(magnitude)


def bilm_typical_bound(config, steps: int, magnitude: float, u: float = U32) -> float:
    """The typical counterpart of :func:`bilm_bound`: the same roundings, independent, adding in
    quadrature (sqrt(n) u M). For long recurrences, where the worst case grows past the size of
    the bugs a parity test must catch (a lost state, a wrong gate order: 2e-2..1 of the values)."""
    if hasattr(magnitude, "detach"):
        magnitude = magnitude.detach()
    return (steps * bilm_step_roundings(config)) ** 0.5 * u * float(magnitude)
