"""Closed-form dynamics of bip2000_trunk_yaw (3 DOF), GENERATED: do not edit.

Rebuild with ``python -m models.codegen deploy/robots/bip2000.yaml --chain trunk_yaw --out models/generated/bip2000_trunk_yaw.py``
(tests/models/test_generated.py fails when this file is stale).
A(q) qdd + C(q, qd) qd + G(q) = tau (docs/conventions.md), from the augmented-body
recursion of models/codegen/symbolic.py (Liégeois & Aldon 1980, §3.1, eq. 3-17,
3-18 corrected); operation counts per kernel in the docstrings
(docs/generated_models.md).
"""
from math import cos, sin

from numba import njit

SOURCE = 'deploy/robots/bip2000.yaml'
CHAIN = 'trunk_yaw'
SOURCE_SHA256 = '1d4193a2f7d5176672c573e3f2d247fe8511dcc103a365b392616d5f8dbeea42'
GENERATOR_SHA256 = '0e9250da3b580e558c6908e2aab97f3289b4c820bb48514b20103a7d56a41e24'
SYMPY = '1.14.0'
N = 3


@njit(cache=True)
def inertia(q, A):
    """A(q), rotor inertia included (18 mul, 12 add, 4 fun)."""
    c1 = cos(q[1] + 1.5707963267948966)
    s1 = sin(q[1] + 1.5707963267948966)
    c2 = cos(q[2])
    s2 = sin(q[2])
    x0 = 0.276*s2
    x1 = 0.9783999999999999*c2 + x0
    x2 = 0.276*c2
    x3 = -6.13*s2 - x2
    A[0, 0] = 5.8942*c1*c1 + s1*s1*(c2*x1 - s2*x3 + 0.005) + 0.003
    A[0, 1] = s1*(c2*x3 + s2*x1)
    A[0, 2] = -5.8884*c1
    A[1, 1] = c2*(6.13*c2 - x0) + s2*(0.9783999999999999*s2 - x2) + 0.0058
    A[1, 2] = 0
    A[2, 2] = 5.8884
    A[1, 0] = A[0, 1]
    A[2, 0] = A[0, 2]
    A[2, 1] = A[1, 2]


@njit(cache=True)
def gravity(q, g, G):
    """G(q) for gravity g in base coordinates (20 mul, 13 add, 6 fun)."""
    c0 = cos(q[0] + 1.5707963267948966)
    s0 = sin(q[0] + 1.5707963267948966)
    c1 = cos(q[1] + 1.5707963267948966)
    s1 = sin(q[1] + 1.5707963267948966)
    c2 = cos(q[2])
    s2 = sin(q[2])
    g0 = g[0]
    g1 = g[1]
    g2 = g[2]
    x0 = 13.799999999999999*s2
    x1 = 0.92*c2
    x2 = c0*g0 + g1*s0
    x3 = c0*g1 - g0*s0
    x4 = 13.799999999999999*c2
    x5 = 0.92*s2
    x6 = x4 - x5 + 0.06
    x7 = c1*x2 + g2*s1
    x8 = -x3
    G[0] = -c1*x3*x6 - x2*(x0 + x1)
    G[1] = -x6*(c1*g2 - s1*x2)
    G[2] = x0*x7 + x1*x7 - x4*x8 + x5*x8


@njit(cache=True)
def coriolis(q, qd, C):
    """C(q, qd), Christoffel form (55 mul, 27 add, 4 fun)."""
    c1 = cos(q[1] + 1.5707963267948966)
    s1 = sin(q[1] + 1.5707963267948966)
    c2 = cos(q[2])
    s2 = sin(q[2])
    qd0 = qd[0]
    qd1 = qd[1]
    qd2 = qd[2]
    x0 = c1*s1
    x1 = 0.9783999999999999*c2 + 0.276*s2
    x2 = -0.276*c2 - 6.13*s2
    x3 = 2*x0*(c2*x1 - s2*x2 + 0.005) - 11.7884*x0
    x4 = (0.5)*x3
    x5 = s1*s1
    x6 = 0.552*c2
    x7 = 0.552*s2
    x8 = c2*x5*(12.26*s2 + x6) - s2*x5*(1.9567999999999999*c2 + x7)
    x9 = (0.5)*qd2
    x10 = 5.8884*s1
    x11 = -x7
    x12 = -5.151599999999999*c2 - x11
    x13 = s1*s2*(-5.151599999999999*s2 - x6)
    x14 = c2*s1*x12 + x10 - x13
    x15 = (0.5)*qd0
    x16 = (0.5)*qd1
    x17 = -c2*s1*x12 + x10 + x13
    x18 = -x17
    x19 = c2*(1.9567999999999999*s2 - x6) - s2*(12.26*c2 + x11)
    C[0, 0] = qd1*x4 + x8*x9
    C[0, 1] = c1*qd1*(c2*x2 + s2*x1) + qd0*x4 + x14*x9
    C[0, 2] = x14*x16 + x15*x8
    C[1, 0] = -x15*x3 + x18*x9
    C[1, 1] = x19*x9
    C[1, 2] = x15*x18 + x16*x19
    C[2, 0] = -x15*x8 + x16*x17
    C[2, 1] = x15*x17 - x16*x19
    C[2, 2] = 0


@njit(cache=True)
def dynamics(q, qd, g, A, C, G):
    """A, C and G in one pass (84 mul, 45 add, 6 fun)."""
    c0 = cos(q[0] + 1.5707963267948966)
    s0 = sin(q[0] + 1.5707963267948966)
    c1 = cos(q[1] + 1.5707963267948966)
    s1 = sin(q[1] + 1.5707963267948966)
    c2 = cos(q[2])
    s2 = sin(q[2])
    qd0 = qd[0]
    qd1 = qd[1]
    qd2 = qd[2]
    g0 = g[0]
    g1 = g[1]
    g2 = g[2]
    x0 = s1*s1
    x1 = 0.276*s2
    x2 = 0.9783999999999999*c2 + x1
    x3 = 0.276*c2
    x4 = -6.13*s2 - x3
    x5 = c2*x2 - s2*x4 + 0.005
    x6 = c2*x4 + s2*x2
    x7 = c1*s1
    x8 = 2*x5*x7 - 11.7884*x7
    x9 = (0.5)*x8
    x10 = 0.552*c2
    x11 = 0.552*s2
    x12 = c2*x0*(12.26*s2 + x10) - s2*x0*(1.9567999999999999*c2 + x11)
    x13 = (0.5)*qd2
    x14 = 5.8884*s1
    x15 = -x11
    x16 = -5.151599999999999*c2 - x15
    x17 = s1*s2*(-5.151599999999999*s2 - x10)
    x18 = c2*s1*x16 + x14 - x17
    x19 = (0.5)*qd0
    x20 = (0.5)*qd1
    x21 = -c2*s1*x16 + x14 + x17
    x22 = -x21
    x23 = c2*(1.9567999999999999*s2 - x10) - s2*(12.26*c2 + x15)
    x24 = 13.799999999999999*s2
    x25 = 0.92*c2
    x26 = c0*g0 + g1*s0
    x27 = c0*g1 - g0*s0
    x28 = 13.799999999999999*c2
    x29 = 0.92*s2
    x30 = x28 - x29 + 0.06
    x31 = c1*x26 + g2*s1
    x32 = -x27
    A[0, 0] = 5.8942*c1*c1 + x0*x5 + 0.003
    A[0, 1] = s1*x6
    A[0, 2] = -5.8884*c1
    A[1, 1] = c2*(6.13*c2 - x1) + s2*(0.9783999999999999*s2 - x3) + 0.0058
    A[1, 2] = 0
    A[2, 2] = 5.8884
    C[0, 0] = qd1*x9 + x12*x13
    C[0, 1] = c1*qd1*x6 + qd0*x9 + x13*x18
    C[0, 2] = x12*x19 + x18*x20
    C[1, 0] = x13*x22 - x19*x8
    C[1, 1] = x13*x23
    C[1, 2] = x19*x22 + x20*x23
    C[2, 0] = -x12*x19 + x20*x21
    C[2, 1] = x19*x21 - x20*x23
    C[2, 2] = 0
    G[0] = -c1*x27*x30 - x26*(x24 + x25)
    G[1] = -x30*(c1*g2 - s1*x26)
    G[2] = x24*x31 + x25*x31 - x28*x32 + x29*x32
    A[1, 0] = A[0, 1]
    A[2, 0] = A[0, 2]
    A[2, 1] = A[1, 2]
