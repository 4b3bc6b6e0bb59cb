"""Hardware abstraction for the bipd controller: axes, a simulated POWERLINK network, CiA 402 drives.

The controller only needs :func:`drivers.hal.open_bus` and the :class:`drivers.hal.Bus` /
:class:`drivers.hal.Axis` API; see ``drivers/README.md`` for the ``bus:`` YAML section.
"""
