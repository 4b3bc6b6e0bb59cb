"""SPD kernels of models.linalg against numpy.linalg (thesis §2.4.3.2, eq. 33-35)."""
from __future__ import annotations

import numpy as np
import pytest

from models.linalg import cholesky, cholesky_solve, spd_inverse4, spd_solve


def random_spd(rng: np.random.Generator, n: int, cond: float) -> np.ndarray:
    """Q diag(eig) Q^T with eigenvalues spread log-uniformly over [1, cond], scaled."""
    qr, _ = np.linalg.qr(rng.normal(size=(n, n)))
    eig = np.geomspace(1.0, cond, n) * rng.uniform(0.1, 10.0)
    a = qr @ np.diag(eig) @ qr.T
    return (a + a.T) / 2


def rel_err(x: np.ndarray, ref: np.ndarray) -> float:
    return float(np.linalg.norm(x - ref) / np.linalg.norm(ref))


@pytest.mark.parametrize("cond", [1.0, 10.0, 1e4, 1e8])
def test_schur_inverse_matches_numpy(cond):
    """Eq. 33-35: A^-1 by the Schur complement equals numpy.linalg.inv within
    eps·κ(A)·κ(B) (the explicit 2×2 inverses cost the extra κ(B)), exactly symmetric."""
    rng = np.random.default_rng(int(cond))
    out = np.empty((4, 4))
    eps = np.finfo(float).eps
    for _ in range(200):
        a = random_spd(rng, 4, cond)
        assert spd_inverse4(a, out) == 0
        bound = 4 * eps * np.linalg.cond(a) * np.linalg.cond(a[:2, :2])
        assert rel_err(out, np.linalg.inv(a)) < bound
        assert np.array_equal(out, out.T)


def test_schur_inverse_reads_only_the_lower_triangle():
    rng = np.random.default_rng(1)
    a = random_spd(rng, 4, 100.0)
    garbage = a + np.triu(rng.normal(size=(4, 4)), 1)
    x, y = np.empty((4, 4)), np.empty((4, 4))
    assert spd_inverse4(a, x) == 0 and spd_inverse4(garbage, y) == 0
    assert np.array_equal(x, y)


def non_spd_cases() -> list[tuple[str, np.ndarray]]:
    rng = np.random.default_rng(2)
    qr, _ = np.linalg.qr(rng.normal(size=(4, 4)))
    nan = random_spd(rng, 4, 10.0)
    nan[3, 2] = nan[2, 3] = np.nan
    return [
        ("indefinite", qr @ np.diag([3.0, 1.0, -0.5, 2.0]) @ qr.T),
        ("rank 3", qr @ np.diag([3.0, 1.0, 0.0, 2.0]) @ qr.T),
        ("zero", np.zeros((4, 4))),
        ("negative pivot 3", np.diag([1.0, 2.0, -3.0, 4.0])),
        ("singular leading 2x2", np.array([[1.0, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])),
        ("nan", nan),
    ]


@pytest.mark.parametrize("name,a", non_spd_cases(), ids=[c[0] for c in non_spd_cases()])
def test_non_spd_is_reported_never_nan(name, a):
    """A non-SPD matrix gives a nonzero status (the failing pivot, same for both
    kernels) and leaves the outputs untouched: no silent NaN."""
    out = np.full((4, 4), 7.0)
    status = spd_inverse4(a, out)
    assert status > 0
    assert np.all(out == 7.0)
    b = np.arange(4.0)
    assert spd_solve(a.copy(), b) == status
    assert np.array_equal(b, np.arange(4.0))


def test_failing_pivot_index():
    assert spd_inverse4(np.diag([1.0, 2.0, -3.0, 4.0]), np.empty((4, 4))) == 3
    assert cholesky(np.diag([1.0, 2.0, 3.0, 4.0, -5.0, 6.0])) == 5


@pytest.mark.parametrize("n", [1, 2, 3, 4, 6, 9])
def test_cholesky_matches_numpy(n):
    rng = np.random.default_rng(n)
    for _ in range(50):
        a = random_spd(rng, n, 1e3)
        l = a.copy()
        assert cholesky(l) == 0
        np.testing.assert_allclose(l, np.linalg.cholesky(a), rtol=0, atol=1e-12 * np.abs(a).max())
        assert np.all(np.triu(l, 1) == 0.0)
        b = rng.normal(size=n)
        x = b.copy()
        cholesky_solve(l, x)
        assert rel_err(x, np.linalg.solve(a, b)) < 1e-11
        y = b.copy()
        assert spd_solve(a.copy(), y) == 0
        np.testing.assert_array_equal(x, y)


def test_cholesky_of_nearly_singular_matrix_is_rejected():
    """A rank-deficient Gram matrix with rounding noise: pivot below the relative tolerance."""
    rng = np.random.default_rng(3)
    v = rng.normal(size=(3, 5))
    assert cholesky(v.T @ v) > 0
