"""Reference comparisons: tmhw against SCALE-Sim, DRAMsim3, MQSim, SSD data sheets and
published energy figures, each with its reference data and provenance in ``data/``.

``registry.checks(component, quick=...)`` lists them; ``Check.run()`` computes tmhw's
figure and gives a ``Result`` (``holds``, ``error``); ``tmhw validate`` prints them all.
"""
