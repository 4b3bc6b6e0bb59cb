"""The simulated side of the bus: controlled nodes, drives, plants, fault injection and the MuJoCo HIL."""
