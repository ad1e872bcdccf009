"""A scheduler preload for the tests: the scheduler's own transition log, counted.

``dask scheduler --preload tests/worker/_counting.py``; read with
``client.run_on_scheduler(counting_state)``.
"""

from collections import Counter, defaultdict

from distributed.diagnostics.plugin import SchedulerPlugin

NAME = "mars-test-counting"


class CountingPlugin(SchedulerPlugin):
    name = NAME

    def __init__(self):
        self.executed = Counter()  # key -> times it ran (processing -> memory with a compute)
        self.finished = Counter()  # key -> times it reached memory from processing
        self.removed = []  # (worker, stimulus_id)
        self.starts = defaultdict(list)  # key -> [(worker, start, stop)]

    def transition(self, key, start, finish, *args, **kwargs):
        if start == "processing" and finish == "memory":
            self.finished[key] += 1
            computes = [s for s in kwargs.get("startstops") or () if s.get("action") == "compute"]
            if computes:
                self.executed[key] += 1
                self.starts[key].append((kwargs.get("worker"), computes[0]["start"], computes[0]["stop"]))

    def remove_worker(self, scheduler, worker, *, stimulus_id=None, **kwargs):
        self.removed.append((worker, stimulus_id))


def dask_setup(scheduler):
    scheduler.add_plugin(CountingPlugin())


def counting_state(dask_scheduler):
    p = dask_scheduler.plugins[NAME]
    return {
        "executed": {str(k): v for k, v in p.executed.items()},
        "finished": {str(k): v for k, v in p.finished.items()},
        "removed": list(p.removed),
        "starts": {str(k): v for k, v in p.starts.items()},
    }
