"""The Stewart–Gough ground-motion rig under the bench leg: platform motions (``motions``),
recorded earthquakes (``earthquake``), the stroke check every motion passes before it is played
(``stroke``) and motion specifications by name or file (``spec``). The daemon's loop plays them
(docs/rig.md)."""
