"""Bus backends, chosen by name in the ``bus:`` YAML section (see :mod:`drivers.hal`)."""
