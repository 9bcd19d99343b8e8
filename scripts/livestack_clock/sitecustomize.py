"""The live stack's clock in each of its Python processes (``scripts/livestack.py``, ``clock``).

Python imports ``sitecustomize`` at start-up from ``PYTHONPATH``; the stack puts this folder
there for its own processes only. With ``CONTRACT_ASSETS_CLOCK_OFFSET`` (seconds, a float) set,
the process's wall clock (``time.time``, ``datetime.now`` and the rest that ``time-machine``
patches; never the monotonic clocks) reads real time plus the offset and advances in real time.
Every process of the stack gets the same offset, and reads its clock once at start (time-machine
ticks from the first reading), so their clocks agree with each other and with the PostgreSQL
server, which runs under libfaketime with the same offset.
"""

from __future__ import annotations

import os

_OFFSET = os.environ.get("CONTRACT_ASSETS_CLOCK_OFFSET")
if _OFFSET:
    import time

    import time_machine

    _TRAVELLER = time_machine.travel(time.time() + float(_OFFSET), tick=True)
    _TRAVELLER.start()
    # time-machine starts a ticking clock from its first reading, not from start(): read it now,
    # or this process lags by whatever its imports take before they first ask the time (up to
    # half a second apart between the stack's processes under load, seen on Asset-hop timings)
    time.time()
